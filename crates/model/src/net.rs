//! Network newtypes: ports, autonomous system numbers, CIDR blocks, and the host order.
//!
//! Host order (DECISIONS.md): IPv4 addresses first, then IPv6, each ascending numerically.
//! [`ip_order_key`] maps an address to a `u128` whose numeric order is exactly that order.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use crate::error::{InvalidValue, all_digits};

/// A TCP or UDP port, 1 through 65535.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Port(u16);

impl Port {
    /// Accepts 1..=65535.
    pub fn new(n: u16) -> Result<Self, InvalidValue> {
        if n == 0 {
            return Err(InvalidValue::new(
                "port",
                "0 is not a port; ports run from 1 to 65535",
            ));
        }
        Ok(Self(n))
    }

    /// Parses decimal digits only (no sign, no spaces); leading zeros are allowed.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        if !all_digits(s) {
            return Err(InvalidValue::new(
                "port",
                format!("{s:?} is not a decimal number"),
            ));
        }
        let significant = s.trim_start_matches('0');
        if significant.len() > 5 {
            return Err(InvalidValue::new(
                "port",
                format!("{s} is out of range 1..=65535"),
            ));
        }
        // At most five digits: fits u32 (an all-zero input is the empty string, i.e. 0).
        let n: u32 = significant.parse().unwrap_or(0);
        let n = u16::try_from(n)
            .map_err(|_| InvalidValue::new("port", format!("{s} is out of range 1..=65535")))?;
        Self::new(n)
    }

    /// The port number.
    pub fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An autonomous system number, 1 through 4294967295.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Asn(u32);

impl Asn {
    /// Accepts 1..=4294967295.
    pub fn new(n: u32) -> Result<Self, InvalidValue> {
        if n == 0 {
            return Err(InvalidValue::new(
                "ASN",
                "AS0 is reserved; ASNs run from 1 to 4294967295",
            ));
        }
        Ok(Self(n))
    }

    /// Parses the strict decimal form: digits only, no `AS` prefix, no leading zero.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        if !all_digits(s) {
            return Err(InvalidValue::new(
                "ASN",
                format!("{s:?} is not a plain decimal number"),
            ));
        }
        if s.starts_with('0') {
            return Err(InvalidValue::new("ASN", "leading zeros are not allowed"));
        }
        let n: u32 = s
            .parse()
            .map_err(|_| InvalidValue::new("ASN", format!("{s} is out of range 1..=4294967295")))?;
        Self::new(n)
    }

    /// The number.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for Asn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An IPv4 network with its host bits zeroed (any prefix 0..=32).
///
/// The query language narrows this to /24–/32; WHOIS records carry broader blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ipv4Cidr {
    network: Ipv4Addr,
    prefix: u8,
}

impl Ipv4Cidr {
    /// Builds a network, zeroing the host bits of `addr`.
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Result<Self, InvalidValue> {
        if prefix > 32 {
            return Err(InvalidValue::new(
                "CIDR",
                format!("prefix /{prefix} is longer than /32"),
            ));
        }
        let mask = Self::mask(prefix);
        Ok(Self {
            network: Ipv4Addr::from(u32::from(addr) & mask),
            prefix,
        })
    }

    /// Parses `a.b.c.d/n`; the prefix is 0..=32 without leading zeros.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let (addr, prefix) = s
            .split_once('/')
            .ok_or_else(|| InvalidValue::new("CIDR", "expected <ipv4>/<prefix>"))?;
        let addr = Ipv4Addr::from_str(addr)
            .map_err(|_| InvalidValue::new("CIDR", format!("{addr:?} is not an IPv4 address")))?;
        Self::new(addr, parse_prefix(prefix, 32)?)
    }

    fn mask(prefix: u8) -> u32 {
        if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(prefix))
        }
    }

    /// The network address (host bits zero).
    pub fn network(self) -> Ipv4Addr {
        self.network
    }

    /// The prefix length.
    pub fn prefix(self) -> u8 {
        self.prefix
    }

    /// The last address of the block.
    pub fn last(self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network) | !Self::mask(self.prefix))
    }

    /// True when `ip` lies in this block.
    pub fn contains(self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & Self::mask(self.prefix) == u32::from(self.network)
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// An IPv4 or IPv6 network with its host bits zeroed, as WHOIS records carry them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpCidr {
    /// An IPv4 block.
    V4(Ipv4Cidr),
    /// An IPv6 block: network address and prefix 0..=128.
    V6(Ipv6Addr, u8),
}

impl IpCidr {
    /// Parses `addr/prefix` for either family, zeroing host bits.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let (addr, prefix) = s
            .split_once('/')
            .ok_or_else(|| InvalidValue::new("CIDR", "expected <address>/<prefix>"))?;
        if addr.contains(':') {
            let a = Ipv6Addr::from_str(addr).map_err(|_| {
                InvalidValue::new("CIDR", format!("{addr:?} is not an IPv6 address"))
            })?;
            let p = parse_prefix(prefix, 128)?;
            let mask = if p == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(p))
            };
            Ok(Self::V6(Ipv6Addr::from(u128::from(a) & mask), p))
        } else {
            Ipv4Cidr::parse(s).map(Self::V4)
        }
    }

    /// True when `ip` lies in this block.
    pub fn contains(self, ip: IpAddr) -> bool {
        match (self, ip) {
            (Self::V4(c), IpAddr::V4(a)) => c.contains(a),
            (Self::V6(n, p), IpAddr::V6(a)) => {
                let mask = if p == 0 {
                    0
                } else {
                    u128::MAX << (128 - u32::from(p))
                };
                u128::from(a) & mask == u128::from(n)
            }
            _ => false,
        }
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4(c) => c.fmt(f),
            Self::V6(a, p) => write!(f, "{a}/{p}"),
        }
    }
}

fn parse_prefix(s: &str, max: u8) -> Result<u8, InvalidValue> {
    if !all_digits(s) || (s.len() > 1 && s.starts_with('0')) {
        return Err(InvalidValue::new(
            "CIDR",
            format!("prefix {s:?} is not a decimal number"),
        ));
    }
    s.parse::<u8>()
        .ok()
        .filter(|p| *p <= max)
        .ok_or_else(|| InvalidValue::new("CIDR", format!("prefix /{s} is longer than /{max}")))
}

/// The position of `ip` in host order: IPv4 first, then IPv6, each ascending.
///
/// IPv4 addresses map to `0..2^32`; IPv6 addresses to `2^32 + addr`, saturating for the top
/// 2^32 addresses of IPv6, which no scanner observes (they are reserved space).
pub fn ip_order_key(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a).saturating_add(1 << 32),
    }
}

/// Parses an address for the observation format and the query language: IPv4 in dotted
/// decimal (no leading zeros), IPv6 in any RFC 4291 text form without a zone; an IPv4-mapped
/// IPv6 address (`::ffff:a.b.c.d`) is the IPv4 address it maps.
pub fn parse_ip(s: &str) -> Result<IpAddr, InvalidValue> {
    let ip = IpAddr::from_str(s).map_err(|_| {
        InvalidValue::new(
            "IP address",
            format!("{s:?} is not an IPv4 or IPv6 address"),
        )
    })?;
    Ok(match ip {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports() {
        assert_eq!(Port::parse("22").unwrap().get(), 22);
        assert_eq!(Port::parse("0022").unwrap().get(), 22);
        assert_eq!(Port::parse("65535").unwrap().get(), 65535);
        for bad in [
            "",
            "0",
            "000",
            "65536",
            "99999999999999999999",
            "+22",
            "-1",
            "2 2",
            "x",
        ] {
            assert!(Port::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn asns() {
        assert_eq!(Asn::parse("4294967295").unwrap().get(), u32::MAX);
        for bad in ["", "0", "01", "AS1", "4294967296", "1-2", "1*", "+1"] {
            assert!(Asn::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn cidrs_normalise_host_bits() {
        let c = Ipv4Cidr::parse("10.1.2.3/24").unwrap();
        assert_eq!(c.to_string(), "10.1.2.0/24");
        assert_eq!(c.last(), Ipv4Addr::new(10, 1, 2, 255));
        assert!(c.contains(Ipv4Addr::new(10, 1, 2, 200)));
        assert!(!c.contains(Ipv4Addr::new(10, 1, 3, 0)));
        assert_eq!(
            Ipv4Cidr::parse("1.2.3.4/0").unwrap().to_string(),
            "0.0.0.0/0"
        );
        for bad in [
            "10.1.2.3",
            "10.1.2.3/33",
            "10.1.2.3/024",
            "10.1.2/24",
            "010.1.2.3/24",
            "/24",
        ] {
            assert!(Ipv4Cidr::parse(bad).is_err(), "{bad:?}");
        }
        let v6 = IpCidr::parse("3fff:1::5/32").unwrap();
        assert_eq!(v6.to_string(), "3fff:1::/32");
        assert!(v6.contains("3fff:1:2::9".parse().unwrap()));
    }

    #[test]
    fn host_order_puts_ipv4_first() {
        let v4: IpAddr = "255.255.255.255".parse().unwrap();
        let v6: IpAddr = "::".parse().unwrap();
        assert!(ip_order_key(v4) < ip_order_key(v6));
        let a: IpAddr = "3fff::1".parse().unwrap();
        let b: IpAddr = "3fff::2".parse().unwrap();
        assert!(ip_order_key(a) < ip_order_key(b));
    }

    #[test]
    fn mapped_addresses_become_ipv4() {
        assert_eq!(
            parse_ip("::ffff:240.0.0.1").unwrap(),
            "240.0.0.1".parse::<IpAddr>().unwrap()
        );
        assert!(parse_ip("fe80::1%eth0").is_err());
        assert!(parse_ip("1.2.3.04").is_err());
    }
}
