//! Which address a request comes from when the server runs behind a reverse proxy.
//!
//! A connection from an address in the configured trusted proxies (`[http] trusted_proxies`,
//! a list of [`Cidr`]) has its client address taken from `X-Forwarded-For`: the entries are
//! read from the right (the one the nearest proxy appended) and the first address that is not
//! itself a trusted proxy is the client. A connection from anywhere else keeps its peer address
//! and its `X-Forwarded-For` is ignored, so a client cannot name an address of its choosing.
//! The address chosen replaces the peer address for everything downstream (the sign-in
//! service's per-address limits, the audit of sign-ins, logs).

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use axum::http::HeaderMap;

/// The header a proxy appends the client address to.
pub const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// An address block, such as `10.0.0.0/8`, `127.0.0.1` (one address) or `::1/128`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

/// Why a [`Cidr`] did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not an address block: write an IP address with an optional /prefix, such as 10.0.0.0/8 or ::1/128"
)]
pub struct CidrError(pub String);

impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || CidrError(s.to_owned());
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s.trim(), None),
        };
        let network: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(Self { network, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl Cidr {
    /// Whether `ip` lies in this block (an IPv4-mapped IPv6 address counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 @ IpAddr::V4(_) => v4,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The client's address for a connection from `peer` carrying `headers` (see the module
/// documentation). An `X-Forwarded-For` from a trusted proxy that holds no usable address
/// leaves the peer address.
pub fn client_address(peer: SocketAddr, headers: &HeaderMap, trusted: &[Cidr]) -> SocketAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if trusted.is_empty() || !is_trusted(peer.ip()) {
        return peer;
    }
    let entries = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    for entry in entries.iter().rev() {
        let Some(ip) = parse_entry(entry) else {
            // Garbage where an address should be: stop trusting what lies further left.
            return peer;
        };
        if !is_trusted(ip) {
            return SocketAddr::new(ip, peer.port());
        }
    }
    // Every entry is a proxy of ours (or there is none): the leftmost one is the client.
    entries
        .first()
        .and_then(|e| parse_entry(e))
        .map_or(peer, |ip| SocketAddr::new(ip, peer.port()))
}

/// An `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:5`, `[::1]:5`).
fn parse_entry(entry: &str) -> Option<IpAddr> {
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.
    use super::*;
    use axum::http::HeaderValue;

    fn cidrs(list: &[&str]) -> Vec<Cidr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn xff(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(X_FORWARDED_FOR, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn blocks_parse_and_contain() {
        let c: Cidr = "10.1.0.0/16".parse().unwrap();
        assert!(c.contains("10.1.200.3".parse().unwrap()));
        assert!(!c.contains("10.2.0.1".parse().unwrap()));
        assert!(c.contains("::ffff:10.1.0.9".parse().unwrap()));
        let one: Cidr = "::1".parse().unwrap();
        assert_eq!(one.to_string(), "::1/128");
        assert!(one.contains("::1".parse().unwrap()));
        assert!(!one.contains("127.0.0.1".parse().unwrap()));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("203.0.113.9".parse().unwrap()));
        for bad in ["10.0.0.0/33", "10.0.0/8", "proxy", "::1/129", ""] {
            let e = bad.parse::<Cidr>().unwrap_err();
            assert!(
                e.to_string().contains("is not an address block"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn only_trusted_proxies_name_the_client() {
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let trusted = cidrs(&["127.0.0.1/32", "10.0.0.0/8"]);
        // Through nginx on loopback.
        let got = client_address(peer, &xff("203.0.113.7"), &trusted);
        assert_eq!(got, "203.0.113.7:40000".parse().unwrap());
        // A client's own forged entry to the left of what our proxies appended is ignored.
        let got = client_address(peer, &xff("198.51.100.1, 203.0.113.7, 10.0.0.5"), &trusted);
        assert_eq!(got.ip(), "203.0.113.7".parse::<IpAddr>().unwrap());
        // Not configured, or not from a trusted proxy: the peer, whatever the header says.
        assert_eq!(client_address(peer, &xff("203.0.113.7"), &[]), peer);
        let stranger: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        assert_eq!(
            client_address(stranger, &xff("203.0.113.7"), &trusted),
            stranger
        );
        // No header, or garbage: the peer.
        assert_eq!(client_address(peer, &HeaderMap::new(), &trusted), peer);
        assert_eq!(client_address(peer, &xff("unknown"), &trusted), peer);
        // With a port, and IPv6.
        let got = client_address(peer, &xff("[2001:db8::7]:1234"), &trusted);
        assert_eq!(got.ip(), "2001:db8::7".parse::<IpAddr>().unwrap());
    }
}
