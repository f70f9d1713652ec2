//! From a scanner's service names to registry tokens, one documented table per scanner
//! (`docs/importers.md` prints them; a test keeps the two in step), and the registry's
//! well-known ports for Masscan ports without protocol evidence.
//!
//! A name is looked up with its transport and whether the scanner found it inside TLS: Nmap's
//! `http` inside TLS is `https`, `smtp` is `smtps`. A name with no row maps to nothing: the
//! importer counts and reports it by name instead of guessing.

use periscope_model::ProtocolToken;
use periscope_model::protocol::REGISTRY;

/// Which transport a row applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    /// TCP only.
    Tcp,
    /// UDP only.
    Udp,
    /// Both.
    Any,
}

/// One row: the scanner's name, the transport, whether found inside TLS, the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The scanner's service name.
    pub name: &'static str,
    /// The transport it applies to.
    pub on: On,
    /// True: only inside TLS (Nmap `tunnel="ssl"`); false: in the clear or inside TLS when
    /// no TLS row exists and the token can carry TLS.
    pub tls: bool,
    /// The registry token.
    pub token: &'static str,
}

const fn row(name: &'static str, on: On, tls: bool, token: &'static str) -> Row {
    Row {
        name,
        on,
        tls,
        token,
    }
}

use On::{Any, Tcp, Udp};

/// Nmap's service names (`nmap-services`, `-sV` probes) to tokens.
pub static NMAP: &[Row] = &[
    row("amqp", Tcp, false, "amqp"),
    row("amqps", Tcp, false, "amqp"),
    row("asf-rmcp", Udp, false, "ipmi"),
    row("bacnet", Udp, false, "bacnet"),
    row("bgp", Tcp, false, "bgp"),
    row("coap", Udp, false, "coap"),
    row("domain", Tcp, false, "dnstcp"),
    row("ftp", Tcp, false, "ftp"),
    row("ftps", Tcp, false, "ftp"),
    row("ganglia", Tcp, false, "ganglia"),
    row("http", Tcp, false, "http"),
    row("http", Tcp, true, "https"),
    row("http-alt", Tcp, false, "http"),
    row("http-alt", Tcp, true, "https"),
    row("http-proxy", Tcp, false, "http"),
    row("http-proxy", Tcp, true, "https"),
    row("https", Tcp, false, "https"),
    row("https-alt", Tcp, false, "https"),
    row("imap", Tcp, false, "imap"),
    row("imap", Tcp, true, "imaps"),
    row("imaps", Tcp, false, "imaps"),
    row("ipp", Tcp, false, "ipp"),
    row("isakmp", Udp, false, "isakmp"),
    row("iscsi", Tcp, false, "iscsi"),
    row("java-rmi", Tcp, false, "jmxrmi"),
    row("kerberos", Any, false, "kerberos"),
    row("kerberos-sec", Any, false, "kerberos"),
    row("l2tp", Udp, false, "l2tp"),
    row("ldap", Tcp, false, "ldaptcp"),
    row("ldap", Udp, false, "ldapudp"),
    row("ldapssl", Tcp, false, "ldaptcp"),
    row("mdns", Udp, false, "mdns"),
    row("memcached", Any, false, "memcached"),
    row("microsoft-ds", Tcp, false, "samba"),
    row("modbus", Tcp, false, "modbus"),
    row("mongod", Tcp, false, "mongodb"),
    row("mongodb", Tcp, false, "mongodb"),
    row("ms-sql-s", Tcp, false, "mssql"),
    row("ms-wbt-server", Tcp, false, "rdp"),
    row("mysql", Tcp, false, "mysql"),
    row("nat-pmp", Udp, false, "natpmp"),
    row("netbios-ns", Udp, false, "netbiosns"),
    row("netbios-ssn", Tcp, false, "samba"),
    row("niagara-fox", Tcp, false, "fox"),
    row("nntp", Tcp, false, "nntp"),
    row("nntps", Tcp, false, "nntp"),
    row("ntp", Udp, false, "ntp"),
    row("openvpn", Tcp, false, "openvpntcp"),
    row("openvpn", Udp, false, "openvpnudp"),
    row("oracle-tns", Tcp, false, "oracletns"),
    row("pop3", Tcp, false, "pop3"),
    row("pop3", Tcp, true, "pop3s"),
    row("pop3s", Tcp, false, "pop3s"),
    row("postgresql", Tcp, false, "postgres"),
    row("pptp", Tcp, false, "pptp"),
    row("rdp", Tcp, false, "rdp"),
    row("redis", Tcp, false, "redis"),
    row("rmiregistry", Tcp, false, "jmxrmi"),
    row("rpcbind", Tcp, false, "portmaptcp"),
    row("rpcbind", Udp, false, "portmap"),
    row("rsync", Tcp, false, "rsync"),
    row("rtsp", Tcp, false, "rtsp"),
    row("sip", Any, false, "sip"),
    row("sip-tls", Tcp, false, "sip"),
    row("smtp", Tcp, false, "smtp"),
    row("smtp", Tcp, true, "smtps"),
    row("smtps", Tcp, false, "smtps"),
    row("ssdp", Udp, false, "upnp"),
    row("ssh", Tcp, false, "ssh"),
    row("submission", Tcp, false, "smtp"),
    row("submission", Tcp, true, "smtps"),
    row("svn", Tcp, false, "subversion"),
    row("telnet", Tcp, false, "telnet"),
    row("tftp", Udp, false, "tftp"),
    row("upnp", Any, false, "upnp"),
    row("vmware-auth", Tcp, false, "vmwareauthd"),
    row("vnc", Tcp, false, "vnc"),
    row("ws-discovery", Udp, false, "wsd"),
    row("wsman", Tcp, false, "winrm"),
    row("wsmans", Tcp, false, "winrms"),
    row("zookeeper", Tcp, false, "zookeeper"),
];

/// Masscan's banner names (`--banners`) to tokens. `ssl`, `X509`, `title` and `html` name
/// evidence, not a protocol: they decide nothing alone (see [`crate::masscan`]).
pub static MASSCAN: &[Row] = &[
    row("dns", Tcp, false, "dnstcp"),
    row("ftp", Tcp, false, "ftp"),
    row("http", Tcp, false, "http"),
    row("http", Tcp, true, "https"),
    row("imap", Tcp, false, "imap"),
    row("imap", Tcp, true, "imaps"),
    row("memcached", Any, false, "memcached"),
    row("ntp", Udp, false, "ntp"),
    row("pop", Tcp, false, "pop3"),
    row("pop", Tcp, true, "pop3s"),
    row("rdp", Tcp, false, "rdp"),
    row("smb", Tcp, false, "samba"),
    row("smtp", Tcp, false, "smtp"),
    row("smtp", Tcp, true, "smtps"),
    row("ssh", Tcp, false, "ssh"),
    row("telnet", Tcp, false, "telnet"),
    row("vnc", Tcp, false, "vnc"),
];

/// Shodan's module names (`_shodan.module`, after dropping a `-simple-new`, `-simple` or
/// `-old` suffix) that are not themselves registry tokens. A module named like a token
/// (`ftp`, `mysql`, `redis`, …) is that token.
pub static SHODAN: &[Row] = &[
    row("dns-tcp", Tcp, false, "dnstcp"),
    row("http", Tcp, true, "https"),
    row("ike", Udp, false, "isakmp"),
    row("imap-ssl", Tcp, false, "imaps"),
    row("ldap", Tcp, false, "ldaptcp"),
    row("ldap", Udp, false, "ldapudp"),
    row("memcache", Any, false, "memcached"),
    row("ms-sql", Tcp, false, "mssql"),
    row("netbios", Udp, false, "netbiosns"),
    row("pop3-ssl", Tcp, false, "pop3s"),
    row("postgresql", Tcp, false, "postgres"),
    row("rtsp-tcp", Tcp, false, "rtsp"),
    row("smb", Tcp, false, "samba"),
    row("smtp", Tcp, true, "smtps"),
];

/// Censys `service_name`s (lowercased) that are not themselves registry tokens. A name like a
/// token (`ssh`, `ftp`, `mysql`, …) is that token; `http` with TLS is `https`.
pub static CENSYS: &[Row] = &[
    row("dns", Tcp, false, "dnstcp"),
    row("http", Tcp, true, "https"),
    row("imap", Tcp, true, "imaps"),
    row("ldap", Tcp, false, "ldaptcp"),
    row("ldap", Udp, false, "ldapudp"),
    row("mongodb", Tcp, false, "mongodb"),
    row("pop3", Tcp, true, "pop3s"),
    row("postgres", Tcp, false, "postgres"),
    row("smb", Tcp, false, "samba"),
    row("smtp", Tcp, true, "smtps"),
];

/// The token of `name` in `table`, else `name` itself when it is a registry token (and a
/// TLS name has no TLS row).
pub fn lookup_or_token(
    table: &[Row],
    name: &str,
    transport: &str,
    tls: bool,
) -> Option<ProtocolToken> {
    lookup(table, name, transport, tls).or_else(|| {
        let t = token(&name.to_ascii_lowercase())?;
        (UDP_TOKENS.contains(&t.as_str()) == (transport == "udp")).then_some(t)
    })
}

/// Tokens scanned over UDP; every other token is TCP (kerberos, memcached and sip, which
/// use both, count as TCP). The registry does not record the transport, so the
/// well-known-port rule needs it here.
pub static UDP_TOKENS: &[&str] = &[
    "bacnet",
    "coap",
    "ipmi",
    "isakmp",
    "l2tp",
    "ldapudp",
    "mdns",
    "natpmp",
    "netbiosns",
    "ntp",
    "openvpnudp",
    "portmap",
    "ripv1",
    "ripv2",
    "snmpv1",
    "snmpv2",
    "snmpv3",
    "tftp",
    "ubiquiti",
    "upnp",
    "wsd",
];

/// The token of `name` in `table` for `transport` (`tcp`/`udp`) and `tls`. A TLS name with no
/// TLS row takes the clear row when its token can carry TLS.
pub fn lookup(table: &[Row], name: &str, transport: &str, tls: bool) -> Option<ProtocolToken> {
    let fits = |r: &&Row| {
        r.name.eq_ignore_ascii_case(name)
            && match r.on {
                Any => true,
                Tcp => transport == "tcp",
                Udp => transport == "udp",
            }
    };
    let found = table
        .iter()
        .filter(fits)
        .find(|r| r.tls == tls)
        .or_else(|| {
            tls.then(|| {
                table
                    .iter()
                    .filter(fits)
                    .find(|r| !r.tls && token(r.token).is_some_and(|t| t.entry().tls))
            })
            .flatten()
        })?;
    token(found.token)
}

fn token(s: &str) -> Option<ProtocolToken> {
    ProtocolToken::parse(s).ok()
}

/// The token the registry names for `port` over `transport`, when it names exactly one.
pub fn well_known(port: u16, transport: &str) -> Option<ProtocolToken> {
    let mut found = REGISTRY.iter().filter(|e| {
        e.ports.contains(&port) && (UDP_TOKENS.contains(&e.value) == (transport == "udp"))
    });
    let first = found.next()?;
    if found.next().is_some() {
        return None;
    }
    token(first.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_a_token() {
        for table in [NMAP, MASSCAN, SHODAN, CENSYS] {
            for r in table {
                assert!(token(r.token).is_some(), "{r:?}");
            }
        }
        for t in UDP_TOKENS {
            assert!(token(t).is_some(), "{t}");
        }
    }

    #[test]
    fn lookups() {
        let name = |t: Option<ProtocolToken>| t.map(|t| t.as_str());
        assert_eq!(name(lookup(NMAP, "http", "tcp", true)), Some("https"));
        assert_eq!(name(lookup(NMAP, "http", "tcp", false)), Some("http"));
        assert_eq!(
            name(lookup(NMAP, "ms-wbt-server", "tcp", false)),
            Some("rdp")
        );
        assert_eq!(
            name(lookup(NMAP, "microsoft-ds", "tcp", false)),
            Some("samba")
        );
        assert_eq!(
            name(lookup(NMAP, "postgresql", "tcp", true)),
            Some("postgres")
        );
        assert_eq!(name(lookup(NMAP, "ssh", "tcp", true)), None);
        assert_eq!(name(lookup(NMAP, "unknown", "tcp", false)), None);
        assert_eq!(name(lookup(NMAP, "ldap", "udp", false)), Some("ldapudp"));
        assert_eq!(name(well_known(443, "tcp")), Some("https"));
        assert_eq!(name(well_known(22, "tcp")), Some("ssh"));
        assert_eq!(name(well_known(8000, "tcp")), None, "http and hikvision");
        assert_eq!(name(well_known(161, "udp")), None, "three SNMP versions");
        assert_eq!(name(well_known(123, "udp")), Some("ntp"));
        assert_eq!(name(well_known(123, "tcp")), None);
        assert_eq!(name(well_known(31337, "tcp")), None);
    }
}
