//! How services look per protocol token: transport, the alternative ports a service is
//! sometimes moved to, how likely a TLS handshake is, and what a bounded summary holds.
//!
//! Ports always come from the registry entry of the token, or from [`ALTERNATE_PORTS`] (the
//! "documented alternates"; about one service in twenty-five of a token that has alternates
//! runs on one).

/// Ports that services of a token sometimes run on besides its registered ports.
pub static ALTERNATE_PORTS: &[(&str, &[u16])] = &[
    ("ftp", &[2121]),
    ("http", &[81, 3000, 5000, 8001, 8081, 8181, 9000, 10080]),
    ("https", &[4433, 8843, 9443, 10443]),
    ("mongodb", &[27018]),
    ("mysql", &[3307]),
    ("postgres", &[5433]),
    ("rdp", &[3390, 13389]),
    ("redis", &[6380]),
    ("rtsp", &[10554]),
    ("smtp", &[2525]),
    ("ssh", &[2200, 10022, 22222]),
    ("telnet", &[8023]),
    ("vnc", &[5902]),
];

/// The alternate ports of a token (empty when it has none).
pub fn alternate_ports(token: &str) -> &'static [u16] {
    ALTERNATE_PORTS
        .iter()
        .find(|(t, _)| *t == token)
        .map_or(&[], |(_, p)| p)
}

/// The transport a token is scanned over on `port`.
pub(crate) fn transport(token: &str, port: u16) -> &'static str {
    match token {
        "bacnet" | "coap" | "crestron" | "ipmi" | "isakmp" | "knx" | "l2tp" | "lantronix"
        | "ldapudp" | "mdns" | "natpmp" | "netbiosns" | "ntp" | "openvpnudp" | "pcanq"
        | "portmap" | "ripv1" | "ripv2" | "sentinel" | "snmpv1" | "snmpv2" | "snmpv3" | "tftp"
        | "ubiquiti" | "upnp" | "wdbrpc" | "wsd" => "udp",
        "sip" if port != 5061 => "udp",
        _ => "tcp",
    }
}

/// Which certificate a TLS-capable service presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CertKind {
    /// The site certificate of the host's names (public CA, private CA or self-signed).
    Site,
    /// A self-signed device or appliance certificate for the host name.
    Device,
}

/// How likely a completed scan of `token` on `port` recorded a TLS handshake, and which
/// certificate it saw. `None` for tokens that never carry TLS.
pub(crate) fn tls_profile(token: &str, port: u16) -> Option<(f64, CertKind)> {
    use CertKind::{Device, Site};
    Some(match (token, port) {
        ("https" | "imaps" | "pop3s" | "smtps", _) => (1.0, Site),
        ("smtp", _) | ("imap", _) => (0.7, Site),
        ("pop3", _) => (0.6, Site),
        ("ftp", _) => (0.3, Site),
        ("ldaptcp", 636) | ("nntp", 563) | ("amqp", 5671) | ("sip", 5061) => (1.0, Site),
        ("ldaptcp", _) | ("nntp", _) => (0.2, Site),
        ("amqp", _) | ("sip", _) => (0.0, Site),
        ("mikrotikapi", 8729) | ("fox", 4911) => (1.0, Device),
        ("mikrotikapi", _) | ("fox", _) => (0.0, Device),
        ("rdp", _) => (0.95, Device),
        ("mssql", _) => (0.9, Device),
        ("winrms" | "vmwareauthd" | "webmin", _) => (1.0, Device),
        ("mysql" | "postgres", _) => (0.5, Site),
        ("redis", _) => (0.05, Site),
        ("mongodb", _) => (0.2, Site),
        ("ipp", _) => (0.4, Device),
        ("opcua", _) => (0.3, Device),
        ("openvpntcp" | "openvpnudp", _) => (0.3, Site),
        ("mumble", _) => (0.9, Device),
        _ => return None,
    })
}

/// A summary field: key and value templates (one is chosen). Templates may hold `{v}`
/// (product version), `{d}` (version detail), `{name}` (host name), `{banner}` (the product
/// banner), `{org}` (the first label of the organisation's domain), `{ORG}` (its handle),
/// `{dom}` (its domain), `{tls}` (`true` when the observation recorded TLS) and `{n}` (a
/// small number).
pub(crate) type Field = (&'static str, &'static [&'static str]);

/// The summary fields recorded for a token (at most 16; most record two to four).
pub(crate) fn summary_fields(token: &str) -> &'static [Field] {
    match token {
        "amqp" => &[
            ("product", &["RabbitMQ"]),
            ("version", &["{v}"]),
            ("mechanisms", &["PLAIN AMQPLAIN", "AMQPLAIN PLAIN EXTERNAL"]),
        ],
        "apc" => &[
            ("status", &["ONLINE", "ONBATT"]),
            ("model", &["Back-UPS ES 700", "Smart-UPS 1500"]),
        ],
        "bacnet" => &[
            ("vendor_id", &["5", "7", "24"]),
            ("object_name", &["AHU-{n}", "BMS-CONTROLLER-{n}"]),
            ("firmware", &["3.{n}"]),
        ],
        "bgp" => &[
            ("open_version", &["4"]),
            ("hold_time", &["90", "180"]),
            ("router_software", &["{v}"]),
        ],
        "checkpointtopo" => &[
            ("firewall_host", &["fw{n}.{dom}"]),
            ("smartcenter_host", &["mgmt{n}"]),
        ],
        "ciscosmi" => &[("smart_install", &["director", "client"])],
        "coap" => &[("resources", &["/.well-known/core", "/sensors,/actuators"])],
        "crestron" => &[
            ("hostname", &["CP3-{n}", "DMPS-{n}"]),
            ("firmware", &["1.{n}.0"]),
        ],
        "dahuadvr" => &[
            ("serial_prefix", &["4K0", "5F0"]),
            ("channels", &["4", "8", "16"]),
        ],
        "dnstcp" => &[
            ("version_bind", &["{v}", "{banner}", "unknown"]),
            ("recursion", &["enabled", "disabled"]),
        ],
        "eniptcp" => &[
            ("vendor", &["Rockwell Automation/Allen-Bradley"]),
            ("product_name", &["1769-L33ER/A LOGIX5333ER", "1756-EN2T/D"]),
            ("revision", &["{n}.11"]),
        ],
        "fox" => &[
            ("fox_version", &["1.0.1"]),
            ("host_name", &["{name}"]),
            ("app_name", &["Station"]),
        ],
        "ftp" => &[("banner", &["{banner}"]), ("auth_tls", &["{tls}"])],
        "ganglia" => &[
            ("cluster", &["unspecified", "hpc-{n}"]),
            ("hosts", &["{n}"]),
        ],
        "hikvision" => &[
            ("device_type", &["IP Camera", "NVR"]),
            ("firmware", &["V{v}"]),
        ],
        "iec104" => &[("asdu_address", &["{n}"]), ("startdt", &["confirmed"])],
        "imap" | "imaps" => &[
            (
                "banner",
                &[
                    "* OK [CAPABILITY IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+ AUTH=PLAIN] {banner}",
                ],
            ),
            ("starttls", &["{tls}"]),
        ],
        "ipmi" => &[
            ("ipmi_version", &["2.0"]),
            ("auth_types", &["MD5 password", "none MD5 password"]),
        ],
        "ipp" => &[
            ("printer_name", &["{name}"]),
            ("server", &["{banner}"]),
            ("state", &["idle", "processing"]),
        ],
        "isakmp" => &[
            ("ike_version", &["1", "2"]),
            ("vendor_ids", &["RFC 3947 NAT-T", "Dead Peer Detection"]),
        ],
        "iscsi" => &[
            ("target_name", &["iqn.2004-04.example:storage:{n}"]),
            ("auth", &["CHAP", "none"]),
        ],
        "jmxrmi" => &[
            ("registry_names", &["jmxrmi"]),
            ("java_version", &["11.0.{n}", "1.8.0_{n}"]),
        ],
        "kerberos" => &[
            ("realm", &["{ORG}.EXAMPLE", "CORP.{ORG}.EXAMPLE"]),
            ("error_code", &["KDC_ERR_PREAUTH_REQUIRED"]),
        ],
        "knx" => &[
            ("device_name", &["KNX IP Router {n}"]),
            ("medium", &["TP1"]),
        ],
        "l2tp" => &[
            ("host_name", &["{name}"]),
            ("vendor", &["Linux", "MikroTik"]),
        ],
        "lantronix" => &[
            ("model", &["XPort", "UDS1100"]),
            ("firmware", &["6.{n}.0.0"]),
        ],
        "ldaptcp" | "ldapudp" => &[
            ("naming_context", &["dc={org},dc=example"]),
            ("vendor", &["OpenLDAP", "{banner}"]),
        ],
        "mdns" => &[(
            "services",
            &["_http._tcp.local", "_ipp._tcp.local,_printer._tcp.local"],
        )],
        "memcached" => &[("version", &["{v}"]), ("curr_connections", &["{n}"])],
        "mikrotikapi" => &[("login", &["required"]), ("version", &["{v}"])],
        "modbus" => &[
            ("unit_id", &["1", "255"]),
            ("function_codes", &["3,4,6,16"]),
        ],
        "mongodb" => &[("version", &["{v}"]), ("auth_required", &["true", "false"])],
        "mssql" => &[
            ("version", &["{v}"]),
            ("instance", &["MSSQLSERVER", "SQLEXPRESS"]),
        ],
        "mumble" => &[("version", &["1.5.634", "1.4.287"]), ("users", &["{n}"])],
        "mysql" => &[
            ("server_version", &["{banner}"]),
            ("protocol_version", &["10"]),
            (
                "auth_plugin",
                &["caching_sha2_password", "mysql_native_password"],
            ),
        ],
        "natpmp" => &[("external_address_reply", &["true"]), ("epoch", &["{n}"])],
        "netbiosns" => &[
            ("netbios_name", &["WORKSTATION{n}", "NAS{n}"]),
            ("workgroup", &["WORKGROUP"]),
        ],
        "nntp" => &[("banner", &["{banner}"])],
        "ntp" => &[
            ("version", &["4"]),
            ("stratum", &["1", "2", "3"]),
            ("monlist", &["false", "true"]),
        ],
        "opcua" => &[
            ("application_name", &["OPC UA Server {n}"]),
            ("security_policies", &["None Basic256Sha256"]),
        ],
        "openvpntcp" | "openvpnudp" => &[("hard_reset", &["P_CONTROL_HARD_RESET_SERVER_V2"])],
        "oracletns" => &[("tns_version", &["318", "314"]), ("version", &["{v}"])],
        "pcanq" => &[("host_name", &["PCA-{n}"])],
        "pcom" => &[("model", &["V130", "V570"]), ("os_version", &["3.{n}"])],
        "phoenix" => &[
            ("device_type", &["ILC 151 ETH", "AXC F 2152"]),
            ("firmware", &["4.{n}"]),
        ],
        "pop3" | "pop3s" => &[("banner", &["+OK {banner}"]), ("tls", &["{tls}"])],
        "portmap" | "portmaptcp" => &[(
            "programs",
            &["portmapper,status", "portmapper,nfs,mountd,nlockmgr"],
        )],
        "postgres" => &[
            ("version", &["{v}"]),
            ("ssl", &["{tls}"]),
            ("auth", &["scram-sha-256", "md5"]),
        ],
        "pptp" => &[
            ("vendor", &["MikroTik", "Linux"]),
            ("host_name", &["{name}"]),
            ("firmware", &["1"]),
        ],
        "rdp" => &[
            (
                "security_protocols",
                &["SSL, HYBRID", "SSL, HYBRID, HYBRID_EX", "RDP"],
            ),
            ("netbios_computer_name", &["WIN-{n}SRV", "TS{n}"]),
        ],
        "redis" => &[
            ("version", &["{v}"]),
            ("mode", &["standalone", "cluster"]),
            ("auth_required", &["true", "false"]),
        ],
        "ripv1" | "ripv2" => &[("routes", &["{n}"])],
        "rsync" => &[
            ("banner", &["{banner}"]),
            ("modules", &["backup", "www,backup", "pub"]),
        ],
        "rtsp" => &[
            (
                "server",
                &[
                    "Hikvision-Webs",
                    "Dahua Rtsp Server",
                    "GStreamer RTSP server",
                ],
            ),
            ("methods", &["OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN"]),
        ],
        "s7" => &[
            ("module", &["6ES7 214-1AG40-0XB0", "6ES7 315-2EH14-0AB0"]),
            ("firmware", &["V{v}"]),
            ("plant", &["{org}"]),
        ],
        "samba" => &[
            ("smb_dialects", &["2.1, 3.0, 3.1.1", "1.0, 2.1", "3.1.1"]),
            ("signing", &["required", "enabled"]),
        ],
        "saprouter" => &[
            ("version", &["40", "39"]),
            ("route_permission", &["denied"]),
        ],
        "sentinel" => &[("server_version", &["8.{n}"])],
        "sip" => &[
            ("user_agent", &["{banner}"]),
            ("methods", &["INVITE, ACK, CANCEL, OPTIONS, BYE"]),
        ],
        "smtp" | "smtps" => &[
            ("banner", &["{banner}"]),
            ("tls", &["{tls}"]),
            ("auth", &["PLAIN LOGIN", "none"]),
        ],
        "snmpv1" | "snmpv2" | "snmpv3" => &[
            (
                "sys_descr",
                &[
                    "Linux {name} 5.15.0-{n}-generic",
                    "RouterOS RB4011",
                    "Cisco IOS Software, C2960",
                ],
            ),
            ("sys_name", &["{name}"]),
        ],
        "subversion" => &[("greeting", &["{banner}"])],
        "teamviewer" => &[("version", &["{v}"])],
        "telnet" => &[(
            "banner",
            &["{banner}", "login:", "User Access Verification"],
        )],
        "tftp" => &[("read_response", &["file not found", "access violation"])],
        "ubiquiti" => &[
            ("model", &["UAP-AC-Lite", "EdgeRouter X"]),
            ("firmware", &["v4.{n}.0"]),
        ],
        "upnp" => &[
            ("server", &["{banner}"]),
            (
                "device_type",
                &["urn:schemas-upnp-org:device:InternetGatewayDevice:1"],
            ),
        ],
        "vmwareauthd" => &[("banner", &["{banner}"])],
        "vnc" => &[
            ("protocol_version", &["RFB 003.008", "RFB 003.003"]),
            ("security_types", &["VNC authentication", "None"]),
        ],
        "wdbrpc" => &[("target_version", &["VxWorks 5.5", "VxWorks 6.9"])],
        "webmin" => &[("server", &["{banner}"])],
        "winrm" | "winrms" => &[("auth", &["Negotiate, Kerberos", "Basic, Negotiate"])],
        "wsd" => &[(
            "types",
            &[
                "wsdp:Device pub:Computer",
                "wsdp:Device print:PrintDeviceType",
            ],
        )],
        "zookeeper" => &[
            ("version", &["{v}"]),
            ("mode", &["standalone", "leader", "follower"]),
        ],
        _ => &[("banner", &["detected"])],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::is_plain;
    use periscope_model::protocol::{EvidenceKind, REGISTRY};

    #[test]
    fn tables_fit_the_registry() {
        for (token, ports) in ALTERNATE_PORTS {
            let e = REGISTRY.iter().find(|e| e.value == *token).unwrap();
            assert!(ports.iter().all(|p| !e.ports.contains(p)), "{token}");
        }
        for e in &REGISTRY {
            for &port in e.ports {
                if let Some((p, _)) = tls_profile(e.value, port) {
                    assert!(e.tls || p == 0.0, "{} cannot carry TLS", e.value);
                }
            }
            if e.evidence_kind == EvidenceKind::Summary {
                let fields = summary_fields(e.value);
                assert!(!fields.is_empty() && fields.len() <= 16, "{}", e.value);
                for (key, values) in fields {
                    assert!(
                        key.bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                    );
                    assert!(!values.is_empty() && values.iter().all(|v| is_plain(v)));
                }
            }
        }
    }
}
