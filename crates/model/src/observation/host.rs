//! The `host` block of a service line: location, ASN attributions, network provider, WHOIS
//! and the stored DNS names. Every member is optional; an absent block is an empty record.

use std::net::IpAddr;

use serde_json::Number;

use super::check::{
    At, DEFAULT_MAX_CHARS, Invalid, at_most, domain_name, integer, number_in, opt_text, parsed,
    required, unique,
};
use super::raw::{RawAsn, RawAsns, RawHost, RawLocation, RawProvider, RawWhois, Text};
use crate::record::{
    AsnAttribution, AsnAttributions, HostEnrichment, Location, NetworkProvider, Position, Whois,
};
use crate::{Asn, CountryCode, DomainName, IpCidr};

/// At most this many reverse-DNS names per observation.
const MAX_REVERSE_DNS: usize = 16;

/// Validates `host` for an observation of `ip` (IPv6 observations carry no reverse DNS).
pub(super) fn host(raw: RawHost<'_>, ip: IpAddr) -> Result<HostEnrichment, Invalid> {
    Ok(HostEnrichment {
        location: raw.location.map(location).transpose().at("location")?,
        asn: raw.asn.map(asns).transpose().at("asn")?.unwrap_or_default(),
        provider: raw.provider.map(provider).transpose().at("provider")?,
        whois: raw.whois.map(whois).transpose().at("whois")?,
        reverse_dns: reverse_dns(raw.reverse_dns.unwrap_or_default(), ip).at("reverse_dns")?,
        dns_name: opt_domain(raw.dns_name).at("dns_name")?,
        domain: opt_domain(raw.domain).at("domain")?,
    })
}

fn opt_domain(raw: Option<Text<'_>>) -> Result<Option<DomainName>, Invalid> {
    raw.map(|d| domain_name(&d)).transpose()
}

fn country(raw: Option<Text<'_>>) -> Result<Option<CountryCode>, Invalid> {
    raw.map(|c| parsed(&c, CountryCode::parse)).transpose()
}

fn location(raw: RawLocation<'_>) -> Result<Location, Invalid> {
    Ok(Location {
        continent: opt_text(raw.continent, 128).at("continent")?,
        country_code: country(raw.country_code).at("country_code")?,
        country_name: opt_text(raw.country_name, 128).at("country_name")?,
        subdivision_1: opt_text(raw.subdivision_1, 128).at("subdivision_1")?,
        subdivision_2: opt_text(raw.subdivision_2, 128).at("subdivision_2")?,
        city: opt_text(raw.city, 128).at("city")?,
        position: position(raw.latitude, raw.longitude, raw.accuracy_radius_km)?,
    })
}

/// Latitude and longitude come together; the accuracy radius needs them.
fn position(
    latitude: Option<f64>,
    longitude: Option<f64>,
    accuracy_radius_km: Option<Number>,
) -> Result<Option<Position>, Invalid> {
    let latitude = latitude
        .map(|x| number_in(x, -90.0, 90.0))
        .transpose()
        .at("latitude")?;
    let longitude = longitude
        .map(|x| number_in(x, -180.0, 180.0))
        .transpose()
        .at("longitude")?;
    let accuracy = accuracy_radius_km
        .map(|n| integer(&n, 0, 20_000).map(|r| r as u32))
        .transpose()
        .at("accuracy_radius_km")?;
    match (latitude, longitude) {
        (Some(latitude), Some(longitude)) => Ok(Some(Position {
            latitude,
            longitude,
            accuracy_radius_km: accuracy,
        })),
        (Some(_), None) => Err(Invalid::member(
            "longitude",
            "missing: latitude is given, and the two come together",
        )),
        (None, Some(_)) => Err(Invalid::member(
            "latitude",
            "missing: longitude is given, and the two come together",
        )),
        (None, None) if accuracy.is_some() => Err(Invalid::member(
            "accuracy_radius_km",
            "a radius needs a position: give latitude and longitude, or drop the radius",
        )),
        (None, None) => Ok(None),
    }
}

fn asns(raw: RawAsns<'_>) -> Result<AsnAttributions, Invalid> {
    Ok(AsnAttributions {
        research: raw.research.map(asn).transpose().at("research")?,
        bgp: raw.bgp.map(asn).transpose().at("bgp")?,
        network: raw.network.map(asn).transpose().at("network")?,
    })
}

fn asn(raw: RawAsn<'_>) -> Result<AsnAttribution, Invalid> {
    Ok(AsnAttribution {
        asn: required(raw.asn)
            .and_then(|n| integer(&n, 1, i64::from(u32::MAX)))
            // In range 1..=u32::MAX: the cast is exact.
            .and_then(|n| Ok(Asn::new(n as u32)?))
            .at("asn")?,
        organization: opt_text(raw.organization, DEFAULT_MAX_CHARS).at("organization")?,
    })
}

fn provider(raw: RawProvider<'_>) -> Result<NetworkProvider, Invalid> {
    Ok(NetworkProvider {
        organization: opt_text(raw.organization, 256).at("organization")?,
        as_organization: opt_text(raw.as_organization, 256).at("as_organization")?,
        isp: opt_text(raw.isp, 256).at("isp")?,
    })
}

fn whois(raw: RawWhois<'_>) -> Result<Whois, Invalid> {
    Ok(Whois {
        description: opt_text(raw.description, 256).at("description")?,
        netname: opt_text(raw.netname, 256).at("netname")?,
        organization: opt_text(raw.organization, 256).at("organization")?,
        cidr: raw
            .cidr
            .map(|c| parsed(&c, IpCidr::parse))
            .transpose()
            .at("cidr")?,
        registry: opt_text(raw.registry, 64).at("registry")?,
        country_code: country(raw.country_code).at("country_code")?,
    })
}

fn reverse_dns(raw: Vec<Text<'_>>, ip: IpAddr) -> Result<Vec<DomainName>, Invalid> {
    if ip.is_ipv6() && !raw.is_empty() {
        return Err(Invalid::here(
            "IPv6 observations carry no reverse DNS; leave reverse_dns out or empty",
        ));
    }
    at_most(&raw, MAX_REVERSE_DNS)?;
    let names = raw
        .iter()
        .enumerate()
        .map(|(i, n)| domain_name(n).at_index(i))
        .collect::<Result<Vec<_>, _>>()?;
    unique(&names)?;
    Ok(names)
}
