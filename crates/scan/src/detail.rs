//! Host-detail pages ([`page`]) and their continuation: an opaque string naming the last service of a page
//! (`port/protocol`) and bound to the address by its host-order key, so a continuation of one
//! address is refused for another. Layout: `hd1.<32 hex digits of the key>.<port>.<token>`.

use std::net::IpAddr;

use periscope_model::{DomainName, Port, ProtocolToken, ip_order_key};

use crate::api::{HostDetail, IndexError};
use crate::matching::HostView;
use crate::records::{self, DomainScope, ServicePick};

/// The largest page of services host detail returns.
pub const MAX_LIMIT: usize = 20;

const VERSION: &str = "hd1";

/// One page of host detail: at most `limit` (clamped to 1..=[`MAX_LIMIT`]) current services
/// strictly after the service `after` names, and the continuation when more follow.
/// `listed`: the names of the domain-scan records listing the address, by name.
pub fn page(
    view: &HostView<'_>,
    after: Option<(Port, ProtocolToken)>,
    limit: usize,
    listed: Vec<&DomainName>,
) -> HostDetail {
    let ip = view.ip();
    let limit = limit.clamp(1, MAX_LIMIT);
    let rest: Vec<_> = view
        .services
        .iter()
        .copied()
        .filter(|s| after.is_none_or(|key| (s.port, s.protocol) > key))
        .collect();
    let page = &rest[..limit.min(rest.len())];
    let next = (rest.len() > page.len())
        .then(|| page.last().map(|s| encode(ip, s.port, s.protocol)))
        .flatten();
    let mut host = records::host(
        view,
        ServicePick::Page(page),
        DomainScope::WithScans(listed),
    );
    host.services_has_more = next.is_some();
    HostDetail { host, next }
}

/// The continuation after the service `port`/`protocol` of `ip`.
pub fn encode(ip: IpAddr, port: Port, protocol: ProtocolToken) -> String {
    format!("{VERSION}.{:032x}.{port}.{protocol}", ip_order_key(ip))
}

/// The service key a continuation names, when it was issued for `ip` and is well formed.
pub fn decode(text: &str, ip: IpAddr) -> Result<(Port, ProtocolToken), IndexError> {
    let mut parts = text.split('.');
    let (Some(VERSION), Some(key), Some(port), Some(protocol), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(IndexError::InvalidContinuation);
    };
    let canonical_key =
        key.len() == 32 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !canonical_key || u128::from_str_radix(key, 16).ok() != Some(ip_order_key(ip)) {
        return Err(IndexError::InvalidContinuation);
    }
    let port = Port::parse(port)
        .ok()
        .filter(|p| p.to_string() == port)
        .ok_or(IndexError::InvalidContinuation)?;
    let protocol = ProtocolToken::parse(protocol).map_err(|_| IndexError::InvalidContinuation)?;
    Ok((port, protocol))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_binds_to_the_address() {
        let a: IpAddr = "240.0.0.1".parse().unwrap();
        let b: IpAddr = "3fff::1".parse().unwrap();
        let port = Port::new(443).unwrap();
        let https = ProtocolToken::parse("https").unwrap();
        for ip in [a, b] {
            let text = encode(ip, port, https);
            assert_eq!(decode(&text, ip), Ok((port, https)));
        }
        assert_eq!(
            decode(&encode(a, port, https), b),
            Err(IndexError::InvalidContinuation)
        );
    }

    #[test]
    fn malformed_is_refused() {
        let ip: IpAddr = "240.0.0.1".parse().unwrap();
        let key = format!("{:032x}", ip_order_key(ip));
        for bad in [
            String::new(),
            "garbage".into(),
            format!("hd2.{key}.443.https"),
            format!("hd1.{key}.443"),
            format!("hd1.{key}.443.https.x"),
            format!("hd1.{key}.0443.https"),
            format!("hd1.{key}.0.https"),
            format!("hd1.{key}.443.HTTPS"),
            format!("hd1.{key}.443.web"),
            format!("hd1.{}.443.https", key.to_uppercase()),
            format!("hd1.{}.443.https", &key[1..]),
            format!("hd1.+{}.443.https", &key[1..]),
        ] {
            assert_eq!(
                decode(&bad, ip),
                Err(IndexError::InvalidContinuation),
                "{bad:?}"
            );
        }
    }
}
