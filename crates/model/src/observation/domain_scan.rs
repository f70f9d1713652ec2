//! A `kind: "domain"` line: one resolution of a DNS name to the addresses it answered with.

use std::net::IpAddr;

use super::DomainScan;
use super::check::{At, Invalid, at_most, domain_name, ip, observed_at, required, unique};
use super::raw::{RawDomain, Text};
use crate::Timestamp;

/// At most this many addresses per resolution.
const MAX_ADDRESSES: usize = 256;

/// Validates a domain line; `now` is the reader's clock.
pub(super) fn domain_scan(raw: RawDomain<'_>, now: Timestamp) -> Result<DomainScan, Invalid> {
    Ok(DomainScan {
        name: required(raw.name)
            .and_then(|n| domain_name(&n))
            .at("name")?,
        addresses: required(raw.addresses)
            .and_then(addresses)
            .at("addresses")?,
        observed_at: required(raw.observed_at)
            .and_then(|t| observed_at(&t, now))
            .at("observed_at")?,
    })
}

fn addresses(raw: Vec<Text<'_>>) -> Result<Vec<IpAddr>, Invalid> {
    if raw.is_empty() {
        return Err(Invalid::here(
            "empty; a resolution lists at least one address (leave out names that did not resolve)",
        ));
    }
    at_most(&raw, MAX_ADDRESSES)?;
    let ips = raw
        .iter()
        .enumerate()
        .map(|(i, a)| ip(a).at_index(i))
        .collect::<Result<Vec<_>, _>>()?;
    unique(&ips)?;
    Ok(ips)
}
