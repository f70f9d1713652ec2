//! What a host is for, and so which services it exposes: a web server exposes HTTP and HTTPS
//! and often SSH, a mail server SMTP, IMAP and POP3, a home router telnet and UPnP, and so on.
//!
//! A role offers services with independent probabilities, plus at most one service from a
//! "one of" list (the database of a database host, the controller protocol of an industrial
//! device). Which roles an organisation's hosts take depends on the kind of organisation.

use super::names;
use crate::world::OrgKind;

/// What a host is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A web server.
    Web,
    /// A mail server.
    Mail,
    /// A shell, build or developer host.
    Shell,
    /// A database host.
    Database,
    /// A Windows server.
    Windows,
    /// A customer router or gateway on an access network.
    Router,
    /// A camera or video recorder.
    Camera,
    /// An industrial or building controller.
    Ics,
    /// DNS, NTP, directory and routing infrastructure.
    Infra,
    /// A VPN gateway.
    Vpn,
}

/// A role's service offer.
#[derive(Debug)]
pub(crate) struct RoleSpec {
    /// Exactly one of these, by weight (empty: none).
    pub one_of: &'static [(u32, (&'static str, u16))],
    /// Each with its own probability: (token, port, probability).
    pub offers: &'static [(&'static str, u16, f64)],
    /// First labels of host names.
    pub labels: &'static [&'static str],
}

impl Role {
    /// The role's service offer.
    pub(crate) fn spec(self) -> &'static RoleSpec {
        match self {
            Self::Web => &RoleSpec {
                one_of: &[],
                offers: &[
                    ("http", 80, 0.86),
                    ("https", 443, 0.88),
                    ("ssh", 22, 0.42),
                    ("http", 8080, 0.07),
                    ("https", 8443, 0.05),
                    ("ftp", 21, 0.05),
                    ("mysql", 3306, 0.03),
                    ("smtp", 25, 0.03),
                    ("webmin", 10000, 0.01),
                ],
                labels: names::WEB_LABELS,
            },
            Self::Mail => &RoleSpec {
                one_of: &[],
                offers: &[
                    ("smtp", 25, 0.95),
                    ("smtp", 587, 0.55),
                    ("smtps", 465, 0.45),
                    ("imap", 143, 0.55),
                    ("imaps", 993, 0.7),
                    ("pop3", 110, 0.4),
                    ("pop3s", 995, 0.45),
                    ("https", 443, 0.45),
                    ("http", 80, 0.35),
                    ("ssh", 22, 0.3),
                ],
                labels: names::MAIL_LABELS,
            },
            Self::Shell => &RoleSpec {
                one_of: &[(20, ("ssh", 22)), (1, ("ssh", 2222))],
                offers: &[
                    ("http", 80, 0.2),
                    ("https", 443, 0.12),
                    ("rsync", 873, 0.04),
                    ("subversion", 3690, 0.02),
                    ("vnc", 5900, 0.02),
                ],
                labels: names::SHELL_LABELS,
            },
            Self::Database => &RoleSpec {
                one_of: &[
                    (30, ("mysql", 3306)),
                    (22, ("postgres", 5432)),
                    (16, ("redis", 6379)),
                    (10, ("mongodb", 27017)),
                    (6, ("memcached", 11211)),
                    (6, ("mssql", 1433)),
                    (3, ("oracletns", 1521)),
                    (3, ("zookeeper", 2181)),
                    (2, ("amqp", 5672)),
                    (2, ("jmxrmi", 1099)),
                ],
                offers: &[
                    ("ssh", 22, 0.6),
                    ("redis", 6379, 0.1),
                    ("http", 80, 0.1),
                    ("memcached", 11211, 0.04),
                ],
                labels: names::DB_LABELS,
            },
            Self::Windows => &RoleSpec {
                one_of: &[],
                offers: &[
                    ("rdp", 3389, 0.85),
                    ("samba", 445, 0.3),
                    ("samba", 139, 0.08),
                    ("winrm", 5985, 0.25),
                    ("winrms", 5986, 0.08),
                    ("mssql", 1433, 0.12),
                    ("http", 80, 0.35),
                    ("https", 443, 0.3),
                    ("netbiosns", 137, 0.05),
                    ("teamviewer", 5938, 0.03),
                ],
                labels: names::WINDOWS_LABELS,
            },
            Self::Router => &RoleSpec {
                one_of: &[],
                offers: &[
                    ("http", 80, 0.5),
                    ("https", 443, 0.2),
                    ("telnet", 23, 0.25),
                    ("ssh", 22, 0.25),
                    ("upnp", 1900, 0.15),
                    ("snmpv2", 161, 0.15),
                    ("dnstcp", 53, 0.1),
                    ("mikrotikapi", 8728, 0.1),
                    ("mikrotikapi", 8729, 0.03),
                    ("pptp", 1723, 0.05),
                    ("ntp", 123, 0.08),
                    ("tftp", 69, 0.03),
                    ("natpmp", 5351, 0.04),
                    ("telnet", 2323, 0.04),
                    ("ubiquiti", 10001, 0.03),
                ],
                labels: names::INFRA_LABELS,
            },
            Self::Camera => &RoleSpec {
                one_of: &[(6, ("rtsp", 554)), (1, ("rtsp", 8554))],
                offers: &[
                    ("http", 80, 0.6),
                    ("hikvision", 8000, 0.3),
                    ("dahuadvr", 37777, 0.25),
                    ("https", 443, 0.1),
                    ("telnet", 23, 0.08),
                ],
                labels: names::DEVICE_LABELS,
            },
            Self::Ics => &RoleSpec {
                one_of: &[
                    (20, ("modbus", 502)),
                    (12, ("s7", 102)),
                    (12, ("bacnet", 47808)),
                    (10, ("eniptcp", 44818)),
                    (6, ("iec104", 2404)),
                    (6, ("fox", 1911)),
                    (2, ("fox", 4911)),
                    (5, ("knx", 3671)),
                    (4, ("pcom", 20256)),
                    (4, ("phoenix", 1962)),
                    (6, ("opcua", 4840)),
                    (3, ("wdbrpc", 17185)),
                    (3, ("lantronix", 30718)),
                    (3, ("crestron", 41794)),
                    (2, ("apc", 3551)),
                ],
                offers: &[("http", 80, 0.3), ("telnet", 23, 0.1), ("snmpv1", 161, 0.1)],
                labels: names::DEVICE_LABELS,
            },
            Self::Infra => &RoleSpec {
                one_of: &[],
                offers: &[
                    ("dnstcp", 53, 0.5),
                    ("ntp", 123, 0.4),
                    ("snmpv2", 161, 0.2),
                    ("snmpv3", 161, 0.1),
                    ("bgp", 179, 0.1),
                    ("kerberos", 88, 0.1),
                    ("ldaptcp", 389, 0.15),
                    ("ldaptcp", 636, 0.08),
                    ("ssh", 22, 0.6),
                    ("http", 80, 0.2),
                    ("ipmi", 623, 0.05),
                    ("portmap", 111, 0.04),
                ],
                labels: names::INFRA_LABELS,
            },
            Self::Vpn => &RoleSpec {
                one_of: &[],
                offers: &[
                    ("openvpnudp", 1194, 0.45),
                    ("openvpntcp", 1194, 0.15),
                    ("isakmp", 500, 0.4),
                    ("isakmp", 4500, 0.2),
                    ("l2tp", 1701, 0.1),
                    ("pptp", 1723, 0.1),
                    ("https", 443, 0.5),
                    ("ssh", 22, 0.2),
                ],
                labels: names::VPN_LABELS,
            },
        }
    }

    /// The roles of an organisation kind's hosts, with their relative frequency.
    pub(crate) fn mix(kind: OrgKind) -> &'static [(u32, Role)] {
        use Role::*;
        match kind {
            OrgKind::Cloud => &[
                (48, Web),
                (20, Shell),
                (10, Database),
                (8, Windows),
                (5, Mail),
                (4, Infra),
                (5, Vpn),
            ],
            OrgKind::Hosting => &[
                (50, Web),
                (15, Mail),
                (15, Shell),
                (8, Database),
                (7, Windows),
                (3, Infra),
                (2, Vpn),
            ],
            OrgKind::Isp => &[
                (40, Router),
                (14, Web),
                (12, Camera),
                (10, Shell),
                (6, Windows),
                (4, Ics),
                (6, Infra),
                (4, Vpn),
                (4, Mail),
            ],
            OrgKind::Company => &[
                (40, Web),
                (15, Mail),
                (10, Vpn),
                (10, Shell),
                (10, Windows),
                (5, Database),
                (5, Infra),
                (3, Camera),
                (2, Ics),
            ],
            OrgKind::University => &[
                (35, Web),
                (20, Shell),
                (10, Mail),
                (10, Infra),
                (5, Database),
                (10, Windows),
                (5, Vpn),
                (3, Camera),
                (2, Ics),
            ],
            OrgKind::Public => &[
                (40, Web),
                (15, Mail),
                (15, Vpn),
                (15, Windows),
                (10, Infra),
                (3, Camera),
                (2, Ics),
            ],
        }
    }

    /// Whether the role's devices run embedded software (Dropbear rather than OpenSSH).
    pub(crate) fn embedded(self) -> bool {
        matches!(self, Self::Router | Self::Camera | Self::Ics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use periscope_model::protocol::REGISTRY;

    #[test]
    fn offers_name_registered_ports() {
        for role in [
            Role::Web,
            Role::Mail,
            Role::Shell,
            Role::Database,
            Role::Windows,
            Role::Router,
            Role::Camera,
            Role::Ics,
            Role::Infra,
            Role::Vpn,
        ] {
            let spec = role.spec();
            let all = spec
                .offers
                .iter()
                .map(|(t, p, _)| (*t, *p))
                .chain(spec.one_of.iter().map(|(_, tp)| *tp));
            for (token, port) in all {
                let e = REGISTRY.iter().find(|e| e.value == token).unwrap();
                assert!(e.ports.contains(&port), "{token}/{port}");
            }
        }
    }
}
