//! The protocol registry: the 87 protocol tokens a scanner may report and a query may name.
//!
//! Each entry is `{value, ports, ipv4, ipv6, evidence_kind}` as `GET /v1/search/capabilities`
//! publishes it, plus two internal facts the search semantics need: whether the protocol can
//! carry TLS (certificate-name search reads only those), and whether its certificate
//! organisation is organisation evidence (DECISIONS.md lists those families).
//!
//! **Invariant:** [`REGISTRY`] is sorted by value with unique values, every entry's ports are
//! sorted and unique, and it holds exactly [`REGISTRY_LEN`] entries; tests enforce all three.

use std::fmt;
use std::sync::OnceLock;

use crate::error::InvalidValue;

/// The fixed query registry version of the specification.
pub const QUERY_REGISTRY_VERSION: &str = "service-v5";

/// The number of registered tokens.
pub const REGISTRY_LEN: usize = 87;

/// Which typed evidence a protocol's services carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvidenceKind {
    /// HTTP status, title, server, and TLS for HTTPS.
    Http,
    /// SSH versions, host key, comments, HASSH.
    Ssh,
    /// A bounded summary of string fields.
    Summary,
}

impl EvidenceKind {
    /// The wire string: `http`, `ssh` or `summary`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Ssh => "ssh",
            Self::Summary => "summary",
        }
    }
}

/// One registry entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolEntry {
    /// The exact lowercase token.
    pub value: &'static str,
    /// Registered ports, sorted and unique.
    pub ports: &'static [u16],
    /// Scanned over IPv4.
    pub ipv4: bool,
    /// Scanned over IPv6.
    pub ipv6: bool,
    /// The kind of typed evidence.
    pub evidence_kind: EvidenceKind,
    /// Can present a TLS certificate (directly or after STARTTLS).
    pub tls: bool,
    /// Its leaf-certificate subject and issuer organisations are organisation evidence.
    pub certificate_organization: bool,
}

const fn entry(
    value: &'static str,
    ports: &'static [u16],
    ipv6: bool,
    tls: bool,
    certificate_organization: bool,
) -> ProtocolEntry {
    let evidence_kind = match value.as_bytes() {
        b"http" | b"https" => EvidenceKind::Http,
        b"ssh" => EvidenceKind::Ssh,
        _ => EvidenceKind::Summary,
    };
    ProtocolEntry {
        value,
        ports,
        ipv4: true,
        ipv6,
        evidence_kind,
        tls,
        certificate_organization,
    }
}

// Flags: (ipv6, tls, certificate_organization).
const Y: bool = true;
const N: bool = false;

/// The registry, sorted by value.
pub static REGISTRY: [ProtocolEntry; REGISTRY_LEN] = [
    entry("amqp", &[5671, 5672], Y, Y, N),
    entry("apc", &[3551], N, N, N),
    entry("bacnet", &[47808], N, N, N),
    entry("bgp", &[179], Y, N, N),
    entry("checkpointtopo", &[264], Y, N, N),
    entry("ciscosmi", &[4786], Y, N, N),
    entry("coap", &[5683], Y, N, N),
    entry("crestron", &[41794], N, N, N),
    entry("dahuadvr", &[37777], N, N, N),
    entry("dnstcp", &[53], Y, N, N),
    entry("eniptcp", &[44818], N, N, N),
    entry("fox", &[1911, 4911], N, Y, N),
    entry("ftp", &[21], Y, Y, N),
    entry("ganglia", &[8649], Y, N, N),
    entry("hikvision", &[8000], N, N, N),
    entry("http", &[80, 8000, 8008, 8080, 8888], Y, N, Y),
    entry("https", &[443, 4443, 8443], Y, Y, Y),
    entry("iec104", &[2404], N, N, N),
    entry("imap", &[143], Y, Y, Y),
    entry("imaps", &[993], Y, Y, Y),
    entry("ipmi", &[623], N, N, N),
    entry("ipp", &[631], Y, Y, N),
    entry("isakmp", &[500, 4500], Y, N, N),
    entry("iscsi", &[3260], Y, N, N),
    entry("jmxrmi", &[1099], Y, N, N),
    entry("kerberos", &[88], Y, N, N),
    entry("knx", &[3671], N, N, N),
    entry("l2tp", &[1701], Y, N, N),
    entry("lantronix", &[30718], N, N, N),
    entry("ldaptcp", &[389, 636], Y, Y, N),
    entry("ldapudp", &[389], Y, N, N),
    entry("mdns", &[5353], N, N, N),
    entry("memcached", &[11211], Y, N, N),
    entry("mikrotikapi", &[8728, 8729], Y, Y, Y),
    entry("modbus", &[502], N, N, N),
    entry("mongodb", &[27017], Y, Y, N),
    entry("mssql", &[1433], Y, Y, Y),
    entry("mumble", &[64738], Y, Y, N),
    entry("mysql", &[3306], Y, Y, Y),
    entry("natpmp", &[5351], N, N, N),
    entry("netbiosns", &[137], N, N, N),
    entry("nntp", &[119, 563], Y, Y, N),
    entry("ntp", &[123], Y, N, N),
    entry("opcua", &[4840], Y, Y, N),
    entry("openvpntcp", &[1194], Y, Y, Y),
    entry("openvpnudp", &[1194], Y, Y, Y),
    entry("oracletns", &[1521], Y, N, N),
    entry("pcanq", &[5632], N, N, N),
    entry("pcom", &[20256], N, N, N),
    entry("phoenix", &[1962], N, N, N),
    entry("pop3", &[110], Y, Y, Y),
    entry("pop3s", &[995], Y, Y, Y),
    entry("portmap", &[111], Y, N, N),
    entry("portmaptcp", &[111], Y, N, N),
    entry("postgres", &[5432], Y, Y, Y),
    entry("pptp", &[1723], Y, N, N),
    entry("rdp", &[3389], Y, Y, Y),
    entry("redis", &[6379], Y, Y, N),
    entry("ripv1", &[520], N, N, N),
    entry("ripv2", &[520], N, N, N),
    entry("rsync", &[873], Y, N, N),
    entry("rtsp", &[554, 8554], Y, N, N),
    entry("s7", &[102], N, N, N),
    entry("samba", &[139, 445], Y, N, N),
    entry("saprouter", &[3299], Y, N, N),
    entry("sentinel", &[5093], Y, N, N),
    entry("sip", &[5060, 5061], Y, Y, N),
    entry("smtp", &[25, 587], Y, Y, Y),
    entry("smtps", &[465], Y, Y, Y),
    entry("snmpv1", &[161], Y, N, N),
    entry("snmpv2", &[161], Y, N, N),
    entry("snmpv3", &[161], Y, N, N),
    entry("ssh", &[22, 2222], Y, N, N),
    entry("subversion", &[3690], Y, N, N),
    entry("teamviewer", &[5938], Y, N, N),
    entry("telnet", &[23, 2323], Y, N, N),
    entry("tftp", &[69], Y, N, N),
    entry("ubiquiti", &[10001], N, N, N),
    entry("upnp", &[1900], Y, N, N),
    entry("vmwareauthd", &[902], Y, Y, Y),
    entry("vnc", &[5900, 5901], Y, N, N),
    entry("wdbrpc", &[17185], N, N, N),
    entry("webmin", &[10000], Y, Y, N),
    entry("winrm", &[5985], Y, N, N),
    entry("winrms", &[5986], Y, Y, N),
    entry("wsd", &[3702], N, N, N),
    entry("zookeeper", &[2181], Y, N, N),
];

/// A registered protocol token; it can only name an entry of [`REGISTRY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProtocolToken(u8);

impl ProtocolToken {
    /// Looks up an exact lowercase token.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        REGISTRY
            .binary_search_by(|e| e.value.cmp(s))
            .map(|i| Self(i as u8))
            .map_err(|_| {
                InvalidValue::new(
                    "protocol",
                    format!("{s:?} is not a registered protocol token"),
                )
            })
    }

    /// Lowercases `s` first, as the query language does with user input.
    pub fn parse_case_insensitive(s: &str) -> Result<Self, InvalidValue> {
        Self::parse(&s.to_ascii_lowercase())
    }

    /// Every token, in registry order.
    pub fn all() -> impl Iterator<Item = ProtocolToken> {
        (0..REGISTRY_LEN as u8).map(Self)
    }

    /// The position in the registry (dense, `0..REGISTRY_LEN`).
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The registry entry.
    pub fn entry(self) -> &'static ProtocolEntry {
        &REGISTRY[self.index()]
    }

    /// The token text.
    pub fn as_str(self) -> &'static str {
        self.entry().value
    }
}

impl fmt::Display for ProtocolToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The opaque catalog version: `cat-` and a 64-bit FNV-1a digest of the content of every
/// registry entry, so it changes exactly when the supported set (or an entry) changes.
pub fn catalog_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| catalog_version_of(&REGISTRY))
}

/// The catalog version of `entries`: every field of every entry goes into the digest, the
/// internal flags (`tls`, `certificate_organization`) too, since they change what is accepted
/// and searched. Fields are separated unambiguously: tokens are lowercase letters and digits.
fn catalog_version_of(entries: &[ProtocolEntry]) -> String {
    let mut text = String::from(QUERY_REGISTRY_VERSION);
    for e in entries {
        let ports: Vec<String> = e.ports.iter().map(u16::to_string).collect();
        text.push_str(&format!(
            "\n{}|{}|{}|{}|{}|{}|{}",
            e.value,
            ports.join(","),
            e.ipv4,
            e.ipv6,
            e.evidence_kind.as_str(),
            e.tls,
            e.certificate_organization
        ));
    }
    format!("cat-{:016x}", fnv1a(text.as_bytes()))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 74 tokens listed in the specification.
    const SPEC_TOKENS: &str = "amqp apc bacnet bgp coap dnstcp eniptcp fox ftp ganglia http https iec104 \
        imap imaps ipmi ipp isakmp iscsi jmxrmi kerberos knx l2tp ldaptcp ldapudp mdns memcached modbus \
        mumble mysql natpmp netbiosns nntp ntp opcua openvpntcp openvpnudp pcanq pcom phoenix pop3 pop3s \
        portmap portmaptcp postgres pptp rdp redis ripv1 ripv2 rsync rtsp s7 samba saprouter sentinel sip \
        smtp smtps snmpv1 snmpv2 snmpv3 ssh subversion telnet tftp upnp vnc wdbrpc webmin winrm winrms wsd \
        zookeeper";
    /// The 13 vendor-named tokens of DECISIONS.md.
    const VENDOR_TOKENS: &str = "mssql oracletns mongodb ciscosmi lantronix ubiquiti crestron dahuadvr \
        hikvision mikrotikapi teamviewer vmwareauthd checkpointtopo";
    /// DECISIONS.md: families whose certificate organisation is organisation evidence.
    const CERT_ORG: &str = "http https smtp smtps imap imaps pop3 pop3s postgres mysql mssql rdp \
        openvpntcp openvpnudp vmwareauthd mikrotikapi";

    #[test]
    fn registry_is_exactly_spec_plus_decisions() {
        let spec: Vec<&str> = SPEC_TOKENS.split_whitespace().collect();
        let vendor: Vec<&str> = VENDOR_TOKENS.split_whitespace().collect();
        assert_eq!(spec.len(), 74);
        assert_eq!(vendor.len(), 13);
        let mut want: Vec<&str> = spec.into_iter().chain(vendor).collect();
        want.sort_unstable();
        let have: Vec<&str> = REGISTRY.iter().map(|e| e.value).collect();
        assert_eq!(have, want);
    }

    #[test]
    fn registry_invariants() {
        assert!(REGISTRY.windows(2).all(|w| w[0].value < w[1].value));
        for e in &REGISTRY {
            assert!(!e.ports.is_empty(), "{}", e.value);
            assert!(e.ports.windows(2).all(|w| w[0] < w[1]), "{}", e.value);
            assert!(e.ports.iter().all(|p| *p > 0));
            assert!(
                e.value
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            );
            assert!(e.ipv4);
            let kind = match e.value {
                "http" | "https" => EvidenceKind::Http,
                "ssh" => EvidenceKind::Ssh,
                _ => EvidenceKind::Summary,
            };
            assert_eq!(e.evidence_kind, kind);
            assert_eq!(
                e.certificate_organization,
                CERT_ORG.split_whitespace().any(|t| t == e.value)
            );
            // Certificate organisation needs a certificate, except plain http, which is in the
            // family of https by DECISIONS.md but never presents one itself.
            assert!(
                !e.certificate_organization || e.tls || e.value == "http",
                "{}",
                e.value
            );
        }
    }

    #[test]
    fn tokens() {
        assert_eq!(ProtocolToken::parse("https").unwrap().as_str(), "https");
        assert_eq!(
            ProtocolToken::parse_case_insensitive("SSH")
                .unwrap()
                .as_str(),
            "ssh"
        );
        for bad in ["HTTP", "", "http ", "web", "heartbleed", "tls"] {
            assert!(ProtocolToken::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(ProtocolToken::all().count(), REGISTRY_LEN);
        assert!(
            ProtocolToken::all()
                .enumerate()
                .all(|(i, t)| t.index() == i)
        );
    }

    #[test]
    fn catalog_version_is_stable_and_opaque() {
        let v = catalog_version();
        assert!(v.starts_with("cat-") && v.len() == 20);
        assert_eq!(v, catalog_version());
        assert_eq!(v, catalog_version_of(&REGISTRY));
        assert_eq!(QUERY_REGISTRY_VERSION, "service-v5");
    }

    /// Every way of changing one entry of the registry, applied to entry `i`.
    fn changes(i: usize) -> Vec<(&'static str, Vec<ProtocolEntry>)> {
        let with = |change: &dyn Fn(&mut ProtocolEntry)| {
            let mut entries = REGISTRY.to_vec();
            change(&mut entries[i]);
            entries
        };
        let mut ports = REGISTRY[i].ports.to_vec();
        ports[0] += 1;
        let moved: &'static [u16] = Box::leak(ports.into_boxed_slice());
        let mut more = REGISTRY[i].ports.to_vec();
        more.push(1);
        let added: &'static [u16] = Box::leak(more.into_boxed_slice());
        let renamed: &'static str = Box::leak(format!("{}x", REGISTRY[i].value).into_boxed_str());
        let mut dropped = REGISTRY.to_vec();
        dropped.remove(i);
        vec![
            ("port", with(&|e| e.ports = moved)),
            ("extra port", with(&|e| e.ports = added)),
            ("token", with(&|e| e.value = renamed)),
            ("ipv4", with(&|e| e.ipv4 = !e.ipv4)),
            ("ipv6", with(&|e| e.ipv6 = !e.ipv6)),
            ("tls", with(&|e| e.tls = !e.tls)),
            (
                "certificate organisation",
                with(&|e| e.certificate_organization = !e.certificate_organization),
            ),
            (
                "evidence kind",
                with(&|e| {
                    e.evidence_kind = match e.evidence_kind {
                        EvidenceKind::Summary => EvidenceKind::Http,
                        _ => EvidenceKind::Summary,
                    }
                }),
            ),
            ("entry removed", dropped),
        ]
    }

    #[test]
    fn catalog_version_changes_with_any_entry() {
        let original = catalog_version_of(&REGISTRY);
        let mut seen = std::collections::BTreeSet::from([original.clone()]);
        for i in [0, 15, 16, 72, REGISTRY_LEN - 1] {
            for (what, entries) in changes(i) {
                let changed = catalog_version_of(&entries);
                assert_ne!(changed, original, "{what} of {}", REGISTRY[i].value);
                assert!(
                    seen.insert(changed),
                    "{what} of {} collides",
                    REGISTRY[i].value
                );
            }
        }
    }
}
