//! Addresses that are never looked up: private, loopback, link-local and unspecified ones.
//! Companies scan their internal networks too; no public database places those addresses, so
//! they are counted as internal instead of being looked up.

use std::net::IpAddr;

/// Whether `ip` is an internal address: IPv4 private (10/8, 172.16/12, 192.168/16), shared
/// (100.64/10), loopback, link-local or unspecified; IPv6 loopback, unique local (fc00::/7),
/// link-local (fe80::/10) or unspecified. An IPv4-mapped IPv6 address is judged as IPv4.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_internal(IpAddr::V4(v4)),
            None => {
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_unique_local()
                    || v6.is_unicast_link_local()
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_and_public_addresses() {
        for (ip, internal) in [
            ("10.1.2.3", true),
            ("172.16.0.1", true),
            ("172.32.0.1", false),
            ("192.168.1.1", true),
            ("100.64.0.1", true),
            ("100.128.0.1", false),
            ("127.0.0.1", true),
            ("169.254.1.1", true),
            ("0.0.0.0", true),
            ("8.8.8.8", false),
            ("::1", true),
            ("::", true),
            ("fd00::1", true),
            ("fe80::1", true),
            ("::ffff:192.168.0.1", true),
            ("::ffff:8.8.8.8", false),
            ("2001:4860:4860::8888", false),
        ] {
            let parsed: IpAddr = ip.parse().expect("test address");
            assert_eq!(is_internal(parsed), internal, "{ip}");
        }
    }
}
