//! The `host` block of a service line: location, ASN attributions, network provider, WHOIS
//! and the stored DNS names. Every member is optional; an absent block is an empty record.

use std::net::IpAddr;

use serde_json::Number;

use super::check::{
    At, DEFAULT_MAX_CHARS, Invalid, at_most, domain_name, integer, number_in, opt_text, parsed,
    required, unique,
};
use std::borrow::Cow;

use super::raw::{RawAsn, RawAsns, RawHost, RawLocation, RawProvider, RawWhois, Text};
use super::view::{AsnView, AsnsView, HostView, LocationView, ProviderView, WhoisView};
use crate::record::HostEnrichment;
use crate::record::Position;
use crate::{Asn, CountryCode, DomainName, IpCidr};

/// At most this many reverse-DNS names per observation.
const MAX_REVERSE_DNS: usize = 16;

/// Validates `host` for an observation of `ip` (IPv6 observations carry no reverse DNS).
pub(super) fn host<'r>(raw: &'r RawHost<'_>, ip: IpAddr) -> Result<HostView<'r>, Invalid> {
    Ok(HostView {
        location: raw
            .location
            .as_ref()
            .map(location)
            .transpose()
            .at("location")?,
        asn: raw
            .asn
            .as_ref()
            .map(asns)
            .transpose()
            .at("asn")?
            .unwrap_or_default(),
        provider: raw
            .provider
            .as_ref()
            .map(provider)
            .transpose()
            .at("provider")?,
        whois: raw.whois.as_ref().map(whois).transpose().at("whois")?,
        reverse_dns: reverse_dns(raw.reverse_dns.as_deref().unwrap_or_default(), ip)
            .map(Cow::Owned)
            .at("reverse_dns")?,
        dns_name: opt_domain(&raw.dns_name).at("dns_name")?,
        domain: opt_domain(&raw.domain).at("domain")?,
    })
}

/// A block that repeats, byte for byte, one that [`host`] accepted as `enrichment`: the view of
/// it, after the one rule that depends on the line rather than the block (an IPv6 observation
/// carries no reverse DNS), with the error [`host`] would give.
pub(super) fn repeated(enrichment: &HostEnrichment, ip: IpAddr) -> Result<HostView<'_>, Invalid> {
    if ip.is_ipv6() && !enrichment.reverse_dns.is_empty() {
        return Err(no_reverse_dns_on_ipv6()).at("reverse_dns");
    }
    Ok(HostView::of(enrichment))
}

fn opt_domain<'r>(raw: &Option<Text<'_>>) -> Result<Option<Cow<'r, DomainName>>, Invalid> {
    raw.as_ref()
        .map(|d| domain_name(d).map(Cow::Owned))
        .transpose()
}

fn country(raw: &Option<Text<'_>>) -> Result<Option<CountryCode>, Invalid> {
    raw.as_ref()
        .map(|c| parsed(c, CountryCode::parse))
        .transpose()
}

fn location<'r>(raw: &'r RawLocation<'_>) -> Result<LocationView<'r>, Invalid> {
    Ok(LocationView {
        continent: opt_text(&raw.continent, 128).at("continent")?,
        country_code: country(&raw.country_code).at("country_code")?,
        country_name: opt_text(&raw.country_name, 128).at("country_name")?,
        subdivision_1: opt_text(&raw.subdivision_1, 128).at("subdivision_1")?,
        subdivision_2: opt_text(&raw.subdivision_2, 128).at("subdivision_2")?,
        city: opt_text(&raw.city, 128).at("city")?,
        position: position(raw.latitude, raw.longitude, raw.accuracy_radius_km.as_ref())?,
    })
}

/// Latitude and longitude come together; the accuracy radius needs them.
fn position(
    latitude: Option<f64>,
    longitude: Option<f64>,
    accuracy_radius_km: Option<&Number>,
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
        .map(|n| integer(n, 0, 20_000).map(|r| r as u32))
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

fn asns<'r>(raw: &'r RawAsns<'_>) -> Result<AsnsView<'r>, Invalid> {
    Ok(AsnsView {
        research: raw.research.as_ref().map(asn).transpose().at("research")?,
        bgp: raw.bgp.as_ref().map(asn).transpose().at("bgp")?,
        network: raw.network.as_ref().map(asn).transpose().at("network")?,
    })
}

fn asn<'r>(raw: &'r RawAsn<'_>) -> Result<AsnView<'r>, Invalid> {
    Ok(AsnView {
        asn: required(raw.asn.as_ref())
            .and_then(|n| integer(n, 1, i64::from(u32::MAX)))
            // In range 1..=u32::MAX: the cast is exact.
            .and_then(|n| Ok(Asn::new(n as u32)?))
            .at("asn")?,
        organization: opt_text(&raw.organization, DEFAULT_MAX_CHARS).at("organization")?,
    })
}

fn provider<'r>(raw: &'r RawProvider<'_>) -> Result<ProviderView<'r>, Invalid> {
    Ok(ProviderView {
        organization: opt_text(&raw.organization, 256).at("organization")?,
        as_organization: opt_text(&raw.as_organization, 256).at("as_organization")?,
        isp: opt_text(&raw.isp, 256).at("isp")?,
    })
}

fn whois<'r>(raw: &'r RawWhois<'_>) -> Result<WhoisView<'r>, Invalid> {
    Ok(WhoisView {
        description: opt_text(&raw.description, 256).at("description")?,
        netname: opt_text(&raw.netname, 256).at("netname")?,
        organization: opt_text(&raw.organization, 256).at("organization")?,
        cidr: raw
            .cidr
            .as_ref()
            .map(|c| parsed(c, IpCidr::parse))
            .transpose()
            .at("cidr")?,
        registry: opt_text(&raw.registry, 64).at("registry")?,
        country_code: country(&raw.country_code).at("country_code")?,
    })
}

fn reverse_dns(raw: &[Text<'_>], ip: IpAddr) -> Result<Vec<DomainName>, Invalid> {
    if ip.is_ipv6() && !raw.is_empty() {
        return Err(no_reverse_dns_on_ipv6());
    }
    at_most(raw, MAX_REVERSE_DNS)?;
    let names = raw
        .iter()
        .enumerate()
        .map(|(i, n)| domain_name(n).at_index(i))
        .collect::<Result<Vec<_>, _>>()?;
    unique(&names)?;
    Ok(names)
}

fn no_reverse_dns_on_ipv6() -> Invalid {
    Invalid::here("IPv6 observations carry no reverse DNS; leave reverse_dns out or empty")
}
