//! Which addresses are public routable: the special-purpose ranges a DNS answer may not use.
//!
//! [`SPECIAL_PURPOSE`] is the table: every block of the IANA IPv4 and IPv6 special-purpose
//! address registries that is not globally reachable as a whole, plus multicast in both
//! families and the deprecated 6to4 relay anycast block. [`is_public`] is "in no block of the
//! table, and for IPv6 inside 2000::/3" (the only IPv6 space allocated for global unicast, so
//! reserved space outside it is excluded too, listed or not).
//!
//! Decisions where the registries leave room:
//! - Whole blocks are excluded even where IANA marks a few addresses inside them globally
//!   reachable: 192.0.0.0/24 (it holds PCP and TURN anycast, 192.0.0.9 and 192.0.0.10) and
//!   2001::/23 (Teredo, benchmarking, ORCHID, and a few anycast service addresses). Those
//!   addresses are protocol infrastructure, never a host that a name of an organisation
//!   stands for.
//! - Blocks that IANA marks globally reachable as a whole, and that lie outside those two,
//!   stay public: AS112 (192.31.196.0/24, 192.175.48.0/24, 2620:4f:8000::/48) and AMT
//!   (192.52.193.0/24). Their IPv6 siblings inside 2001::/23 (2001:4:112::/48,
//!   2001:3::/32) are excluded with it.
//! - 6to4 (2002::/16) is excluded: the protocol is deprecated (RFC 7526), and a 6to4 address
//!   names a site behind a relay, not the host the index knows by its IPv4 address.
//! - An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is not public as an IPv6 address. The
//!   resolvers first turn a mapped answer into the IPv4 address it maps
//!   ([`std::net::IpAddr::to_canonical`], as the observation format does), and judge that.
//!   NAT64 addresses (64:ff9b::/96) are not translated back: they are excluded.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One special-purpose range: an address block and why it is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialRange {
    network: IpAddr,
    prefix_len: u8,
    /// What the block is for, e.g. "private use" or "documentation (TEST-NET-1)".
    pub purpose: &'static str,
    /// The RFC that reserves it, e.g. "RFC 1918".
    pub reference: &'static str,
}

impl SpecialRange {
    const fn v4(
        network: [u8; 4],
        prefix_len: u8,
        purpose: &'static str,
        rfc: &'static str,
    ) -> Self {
        let [a, b, c, d] = network;
        Self {
            network: IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
            prefix_len,
            purpose,
            reference: rfc,
        }
    }

    const fn v6(
        network: [u16; 8],
        prefix_len: u8,
        purpose: &'static str,
        rfc: &'static str,
    ) -> Self {
        let [a, b, c, d, e, f, g, h] = network;
        Self {
            network: IpAddr::V6(Ipv6Addr::new(a, b, c, d, e, f, g, h)),
            prefix_len,
            purpose,
            reference: rfc,
        }
    }

    /// The first address of the block.
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// The prefix length of the block.
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// True when `ip` lies in the block (an IPv4 block never contains an IPv6 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u32::from(ip) & mask == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u128::from(ip) & mask == u128::from(net)
            }
            _ => false,
        }
    }
}

impl fmt::Display for SpecialRange {
    /// CIDR notation, e.g. `100.64.0.0/10` or `2001:db8::/32`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

/// Every range whose addresses are never used as a DNS-derived target, IPv4 then IPv6, each
/// ascending. Nested blocks (Teredo, benchmarking and ORCHID inside 2001::/23; the limited
/// broadcast address inside 240.0.0.0/4) are listed for what they are; [`special_purpose`]
/// answers the most specific one.
pub static SPECIAL_PURPOSE: &[SpecialRange] = &[
    SpecialRange::v4([0, 0, 0, 0], 8, "\"this network\"", "RFC 791"),
    SpecialRange::v4([10, 0, 0, 0], 8, "private use", "RFC 1918"),
    SpecialRange::v4(
        [100, 64, 0, 0],
        10,
        "shared address space (carrier-grade NAT)",
        "RFC 6598",
    ),
    SpecialRange::v4([127, 0, 0, 0], 8, "loopback", "RFC 1122"),
    SpecialRange::v4([169, 254, 0, 0], 16, "link-local", "RFC 3927"),
    SpecialRange::v4([172, 16, 0, 0], 12, "private use", "RFC 1918"),
    SpecialRange::v4([192, 0, 0, 0], 24, "IETF protocol assignments", "RFC 6890"),
    SpecialRange::v4([192, 0, 2, 0], 24, "documentation (TEST-NET-1)", "RFC 5737"),
    SpecialRange::v4(
        [192, 88, 99, 0],
        24,
        "6to4 relay anycast (deprecated)",
        "RFC 7526",
    ),
    SpecialRange::v4([192, 168, 0, 0], 16, "private use", "RFC 1918"),
    SpecialRange::v4([198, 18, 0, 0], 15, "benchmarking", "RFC 2544"),
    SpecialRange::v4(
        [198, 51, 100, 0],
        24,
        "documentation (TEST-NET-2)",
        "RFC 5737",
    ),
    SpecialRange::v4(
        [203, 0, 113, 0],
        24,
        "documentation (TEST-NET-3)",
        "RFC 5737",
    ),
    SpecialRange::v4([224, 0, 0, 0], 4, "multicast", "RFC 5771"),
    SpecialRange::v4(
        [240, 0, 0, 0],
        4,
        "reserved (and the synthetic demo data)",
        "RFC 1112",
    ),
    SpecialRange::v4([255, 255, 255, 255], 32, "limited broadcast", "RFC 919"),
    SpecialRange::v6(
        [0, 0, 0, 0, 0, 0, 0, 0],
        128,
        "unspecified address",
        "RFC 4291",
    ),
    SpecialRange::v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback", "RFC 4291"),
    SpecialRange::v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, "IPv4-mapped", "RFC 4291"),
    SpecialRange::v6(
        [0x64, 0xff9b, 0, 0, 0, 0, 0, 0],
        96,
        "IPv4/IPv6 translation (NAT64)",
        "RFC 6052",
    ),
    SpecialRange::v6(
        [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
        48,
        "local-use IPv4/IPv6 translation",
        "RFC 8215",
    ),
    SpecialRange::v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only", "RFC 6666"),
    SpecialRange::v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        23,
        "IETF protocol assignments",
        "RFC 2928",
    ),
    SpecialRange::v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "Teredo", "RFC 4380"),
    SpecialRange::v6(
        [0x2001, 2, 0, 0, 0, 0, 0, 0],
        48,
        "benchmarking",
        "RFC 5180",
    ),
    SpecialRange::v6(
        [0x2001, 0x10, 0, 0, 0, 0, 0, 0],
        28,
        "ORCHID (deprecated)",
        "RFC 4843",
    ),
    SpecialRange::v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28, "ORCHIDv2", "RFC 7343"),
    SpecialRange::v6(
        [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
        32,
        "documentation",
        "RFC 3849",
    ),
    SpecialRange::v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "6to4", "RFC 3056"),
    SpecialRange::v6(
        [0x3fff, 0, 0, 0, 0, 0, 0, 0],
        20,
        "documentation (and the synthetic demo data)",
        "RFC 9637",
    ),
    SpecialRange::v6(
        [0x5f00, 0, 0, 0, 0, 0, 0, 0],
        16,
        "SRv6 segment identifiers",
        "RFC 9602",
    ),
    SpecialRange::v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique local", "RFC 4193"),
    SpecialRange::v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local", "RFC 4291"),
    SpecialRange::v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast", "RFC 4291"),
];

/// The global unicast space, 2000::/3: an IPv6 address outside it is never public, listed in
/// [`SPECIAL_PURPOSE`] or not.
const GLOBAL_UNICAST_V6: SpecialRange = SpecialRange::v6(
    [0x2000, 0, 0, 0, 0, 0, 0, 0],
    3,
    "global unicast",
    "RFC 4291",
);

/// The most specific special-purpose range that holds `ip`, if any.
pub fn special_purpose(ip: IpAddr) -> Option<&'static SpecialRange> {
    SPECIAL_PURPOSE
        .iter()
        .filter(|range| range.contains(ip))
        .max_by_key(|range| range.prefix_len)
}

/// True when `ip` is a public routable address: in no special-purpose range and, for IPv6,
/// inside global unicast (2000::/3). An IPv4-mapped IPv6 address is not public as written;
/// see the module docs for how the resolvers treat mapped answers.
pub fn is_public(ip: IpAddr) -> bool {
    let global = match ip {
        IpAddr::V4(_) => true,
        IpAddr::V6(_) => GLOBAL_UNICAST_V6.contains(ip),
    };
    global && special_purpose(ip).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// One row per entry of [`SPECIAL_PURPOSE`], written out by hand (not derived from the
    /// table): the range, its first and last address, and the neighbours just outside it with
    /// whether each is public (`None` at the ends of the address space).
    struct Edge {
        range: &'static str,
        first: &'static str,
        last: &'static str,
        below: Option<(&'static str, bool)>,
        above: Option<(&'static str, bool)>,
    }

    const fn edge(
        range: &'static str,
        first: &'static str,
        last: &'static str,
        below: Option<(&'static str, bool)>,
        above: Option<(&'static str, bool)>,
    ) -> Edge {
        Edge {
            range,
            first,
            last,
            below,
            above,
        }
    }

    #[rustfmt::skip]
    const EDGES: &[Edge] = &[
        edge("0.0.0.0/8", "0.0.0.0", "0.255.255.255", None, Some(("1.0.0.0", true))),
        edge("10.0.0.0/8", "10.0.0.0", "10.255.255.255", Some(("9.255.255.255", true)), Some(("11.0.0.0", true))),
        edge("100.64.0.0/10", "100.64.0.0", "100.127.255.255", Some(("100.63.255.255", true)), Some(("100.128.0.0", true))),
        edge("127.0.0.0/8", "127.0.0.0", "127.255.255.255", Some(("126.255.255.255", true)), Some(("128.0.0.0", true))),
        edge("169.254.0.0/16", "169.254.0.0", "169.254.255.255", Some(("169.253.255.255", true)), Some(("169.255.0.0", true))),
        edge("172.16.0.0/12", "172.16.0.0", "172.31.255.255", Some(("172.15.255.255", true)), Some(("172.32.0.0", true))),
        edge("192.0.0.0/24", "192.0.0.0", "192.0.0.255", Some(("191.255.255.255", true)), Some(("192.0.1.0", true))),
        edge("192.0.2.0/24", "192.0.2.0", "192.0.2.255", Some(("192.0.1.255", true)), Some(("192.0.3.0", true))),
        edge("192.88.99.0/24", "192.88.99.0", "192.88.99.255", Some(("192.88.98.255", true)), Some(("192.88.100.0", true))),
        edge("192.168.0.0/16", "192.168.0.0", "192.168.255.255", Some(("192.167.255.255", true)), Some(("192.169.0.0", true))),
        edge("198.18.0.0/15", "198.18.0.0", "198.19.255.255", Some(("198.17.255.255", true)), Some(("198.20.0.0", true))),
        edge("198.51.100.0/24", "198.51.100.0", "198.51.100.255", Some(("198.51.99.255", true)), Some(("198.51.101.0", true))),
        edge("203.0.113.0/24", "203.0.113.0", "203.0.113.255", Some(("203.0.112.255", true)), Some(("203.0.114.0", true))),
        edge("224.0.0.0/4", "224.0.0.0", "239.255.255.255", Some(("223.255.255.255", true)), Some(("240.0.0.0", false))),
        edge("240.0.0.0/4", "240.0.0.0", "255.255.255.255", Some(("239.255.255.255", false)), None),
        edge("255.255.255.255/32", "255.255.255.255", "255.255.255.255", Some(("255.255.255.254", false)), None),
        edge("::/128", "::", "::", None, Some(("::1", false))),
        edge("::1/128", "::1", "::1", Some(("::", false)), Some(("::2", false))),
        edge("::ffff:0.0.0.0/96", "::ffff:0.0.0.0", "::ffff:255.255.255.255", Some(("::fffe:ffff:ffff", false)), Some(("::1:0:0:0", false))),
        edge("64:ff9b::/96", "64:ff9b::", "64:ff9b::ffff:ffff", Some(("64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", false)), Some(("64:ff9b::1:0:0", false))),
        edge("64:ff9b:1::/48", "64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", Some(("64:ff9b:0:ffff:ffff:ffff:ffff:ffff", false)), Some(("64:ff9b:2::", false))),
        edge("100::/64", "100::", "100::ffff:ffff:ffff:ffff", Some(("ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false)), Some(("100:0:0:1::", false))),
        edge("2001::/23", "2001::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", Some(("2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true)), Some(("2001:200::", true))),
        edge("2001::/32", "2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", Some(("2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true)), Some(("2001:1::", false))),
        edge("2001:2::/48", "2001:2::", "2001:2:0:ffff:ffff:ffff:ffff:ffff", Some(("2001:1:ffff:ffff:ffff:ffff:ffff:ffff", false)), Some(("2001:2:1::", false))),
        edge("2001:10::/28", "2001:10::", "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", Some(("2001:f:ffff:ffff:ffff:ffff:ffff:ffff", false)), Some(("2001:20::", false))),
        edge("2001:20::/28", "2001:20::", "2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", Some(("2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", false)), Some(("2001:30::", false))),
        edge("2001:db8::/32", "2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", Some(("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", true)), Some(("2001:db9::", true))),
        edge("2002::/16", "2002::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some(("2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true)), Some(("2003::", true))),
        edge("3fff::/20", "3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", Some(("3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true)), Some(("3fff:1000::", true))),
        edge("5f00::/16", "5f00::", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some(("5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false)), Some(("5f01::", false))),
        edge("fc00::/7", "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some(("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false)), Some(("fe00::", false))),
        edge("fe80::/10", "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some(("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false)), Some(("fec0::", false))),
        edge("ff00::/8", "ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some(("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false)), None),
    ];

    /// The row of the table written as `range`.
    fn row(range: &str) -> &'static SpecialRange {
        SPECIAL_PURPOSE
            .iter()
            .find(|r| r.to_string() == range)
            .unwrap_or_else(|| panic!("{range} is not in the table"))
    }

    #[test]
    fn every_range_has_its_edges_checked_and_no_other() {
        let mut table: Vec<String> = SPECIAL_PURPOSE.iter().map(ToString::to_string).collect();
        let mut checked: Vec<String> = EDGES.iter().map(|e| e.range.to_owned()).collect();
        table.sort();
        checked.sort();
        assert_eq!(table, checked);
    }

    #[test]
    fn first_and_last_address_are_inside_and_not_public() {
        for e in EDGES {
            for addr in [e.first, e.last] {
                assert!(row(e.range).contains(ip(addr)), "{addr} in {}", e.range);
                assert!(special_purpose(ip(addr)).is_some(), "{addr}");
                assert!(!is_public(ip(addr)), "{addr} ({})", e.range);
            }
        }
    }

    #[test]
    fn neighbours_just_outside_are_outside() {
        for e in EDGES {
            for (addr, public) in [e.below, e.above].into_iter().flatten() {
                assert!(
                    !row(e.range).contains(ip(addr)),
                    "{addr} outside {}",
                    e.range
                );
                assert_eq!(is_public(ip(addr)), public, "{addr} next to {}", e.range);
            }
        }
    }

    #[test]
    fn the_most_specific_range_answers() {
        for (addr, range) in [
            ("2001::1", "2001::/32"),
            ("2001:1::1", "2001::/23"),
            ("2001:2::1", "2001:2::/48"),
            ("2001:3::1", "2001::/23"),
            ("2001:4:112::1", "2001::/23"),
            ("2001:10::1", "2001:10::/28"),
            ("2001:20::1", "2001:20::/28"),
            ("255.255.255.255", "255.255.255.255/32"),
            ("255.255.255.254", "240.0.0.0/4"),
            ("10.1.2.3", "10.0.0.0/8"),
        ] {
            let found = special_purpose(ip(addr)).map(ToString::to_string);
            assert_eq!(found.as_deref(), Some(range), "{addr}");
        }
    }

    #[test]
    fn ipv6_outside_global_unicast_is_never_public() {
        for (addr, public) in [
            ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
            ("2000::", true),
            ("3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true),
            ("4000::", false),
            // Deprecated site-local and IPv4-compatible addresses: outside 2000::/3, unlisted.
            ("fec0::1", false),
            ("::8.8.8.8", false),
            // Reserved by the IETF, unlisted.
            ("400::1", false),
            ("e000::1", false),
        ] {
            assert_eq!(is_public(ip(addr)), public, "{addr}");
        }
    }

    #[test]
    fn ordinary_addresses_are_public() {
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "223.255.255.255",
            // Globally reachable special-purpose blocks stay public (AS112, AMT).
            "192.31.196.1",
            "192.52.193.1",
            "192.175.48.1",
            "2620:4f:8000::1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
        ] {
            assert!(is_public(ip(addr)), "{addr}");
            assert_eq!(special_purpose(ip(addr)), None, "{addr}");
        }
    }

    #[test]
    fn mapped_addresses_are_not_public_as_written() {
        assert!(!is_public(ip("::ffff:8.8.8.8")));
        assert!(is_public(ip("::ffff:8.8.8.8").to_canonical()));
    }

    #[test]
    fn families_do_not_mix() {
        let zero_v4 = &SPECIAL_PURPOSE[0];
        assert!(zero_v4.contains(ip("0.0.0.1")));
        assert!(!zero_v4.contains(ip("::1")));
    }

    #[test]
    fn the_table_is_sorted_and_every_network_is_the_first_address_of_its_block() {
        for range in SPECIAL_PURPOSE {
            assert!(range.contains(range.network()), "{range}");
            let max = if range.network().is_ipv4() { 32 } else { 128 };
            assert!(range.prefix_len() <= max, "{range}");
        }
        let keys: Vec<_> = SPECIAL_PURPOSE
            .iter()
            .map(|r| (r.network().is_ipv6(), r.network(), r.prefix_len()))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
    }
}
