//! Host views (spec "Host result", "Location", "Domain names", "Service"): the investigation
//! view of one address — the exact-IP view, the Selected host panel (`GET /app/host?ip=…`, a
//! fragment) and the free host page (`GET /host?ip=…[&cursor=…]`, where "More services" leads
//! without a script) — all from `host_detail`, and the pieces a result row shares with them
//! (network, place, service label, matched evidence).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use periscope_index::{AsnSource, DomainMatchSource, HostResult, OrganizationSource};
use periscope_model::record::{DomainSource, Evidence, Host, Location, Service};
use periscope_service::{DetailRequest, ServiceError};

use super::{error_html, search_href};
use crate::extract::{Params, Search, SignedFragment, SignedPage};
use crate::html::{column_heads, page_with};
use crate::session::Signed;

/// Services per host-detail page (the API's maximum).
pub(crate) const DETAIL_SERVICES: u32 = 20;

/// The caution of spec "Location" rule 5, shown with every place.
pub(crate) const CAUTION: &str = "GeoIP is evidence of an address's location, not a person's \
     location. Anything finer than country is unreliable.";

/// `AS64500 Example Networks`, or empty (plain text).
pub(crate) fn network(host: &Host) -> String {
    match &host.network {
        Some(n) => match &n.organization {
            Some(org) => format!("AS{} {}", n.asn, org),
            None => format!("AS{}", n.asn),
        },
        None => String::new(),
    }
}

/// The place from coarsest to finest (continent, country, subdivisions, city), a level not
/// recorded left out, neighbouring duplicates once (spec "Location" rules 1–2). Plain text.
pub(crate) fn place(l: &Location) -> String {
    let country = l
        .country_name
        .clone()
        .or_else(|| l.country_code.map(|c| c.to_string()));
    let levels = [
        l.continent.clone(),
        country,
        l.subdivision_1.clone(),
        l.subdivision_2.clone(),
        l.city.clone(),
    ];
    let mut out: Vec<String> = Vec::new();
    for level in levels.into_iter().flatten() {
        let level = level.trim().to_owned();
        if level.is_empty()
            || out
                .last()
                .is_some_and(|prev| prev.eq_ignore_ascii_case(&level))
        {
            continue;
        }
        out.push(level);
    }
    out.join(" › ")
}

/// `48.1374, 11.5755 (accuracy radius 50 km)`, or `None` without a position. Plain text.
pub(crate) fn coordinates(l: &Location) -> Option<String> {
    let p = l.position?;
    let mut out = format!("{:.4}, {:.4}", p.latitude, p.longitude);
    match p.accuracy_radius_km {
        Some(r) => out.push_str(&format!(" (accuracy radius {r} km)")),
        None => out.push_str(" (accuracy radius not recorded)"),
    }
    Some(out)
}

/// The place of a result row (plain text).
pub(crate) fn row_place(host: &Host) -> String {
    host.location.as_ref().map(place).unwrap_or_default()
}

fn domain_source(s: DomainSource) -> &'static str {
    match s {
        DomainSource::ReverseDns => "Reverse DNS",
        DomainSource::DnsName => "DNS name",
        DomainSource::Domain => "Domain",
        DomainSource::CertificateSubject => "Certificate subject",
        DomainSource::DomainScan => "Domain scan",
    }
}

fn organization_source(s: OrganizationSource) -> &'static str {
    match s {
        OrganizationSource::AsOrganization => "AS organization",
        OrganizationSource::WhoisDescription => "WHOIS description",
        OrganizationSource::WhoisNetname => "WHOIS netname",
        OrganizationSource::NetworkProvider => "Network provider",
        OrganizationSource::CertificateSubject => "Certificate subject",
        OrganizationSource::CertificateIssuer => "Certificate issuer",
    }
}

fn domain_match_source(s: DomainMatchSource) -> &'static str {
    match s {
        DomainMatchSource::DnsResolution => "DNS resolution",
        DomainMatchSource::StoredDomain => "Stored domain",
        DomainMatchSource::StoredDnsName => "Stored DNS name",
        DomainMatchSource::StoredReverseDns => "Stored reverse DNS",
        DomainMatchSource::DomainScan => "Stored domain scan",
    }
}

fn asn_source(s: AsnSource) -> &'static str {
    match s {
        AsnSource::ResearchBestAsn => "Research-dataset best ASN",
        AsnSource::BgpBestAsn => "BGP best ASN",
        AsnSource::NetworkAsn => "Network/location ASN",
    }
}

/// The matched evidence of a result row with the spec's display labels (plain text, one
/// list item each).
pub(crate) fn matched_evidence(r: &HostResult) -> Vec<String> {
    let mut out = Vec::new();
    for m in &r.organization_matches {
        let mut text = format!("{}: {}", organization_source(m.source), m.value);
        if let Some((port, protocol)) = &m.service {
            text.push_str(&format!(" ({port}/{protocol})"));
        }
        out.push(text);
    }
    for m in &r.domain_matches {
        out.push(format!("{}: {}", domain_match_source(m.source), m.value));
    }
    for m in &r.asn_matches {
        out.push(format!("{}: AS{}", asn_source(m.source), m.asn));
    }
    out
}

/// `443/https nginx 1.25` (plain text).
pub(crate) fn service_label(s: &Service) -> String {
    let mut out = format!("{}/{}", s.port, s.protocol);
    if let Some(p) = &s.product {
        out.push(' ');
        out.push_str(p);
        if let Some(v) = &s.version {
            out.push(' ');
            out.push_str(v);
        }
    }
    out
}

/// A term and its description, when there is a value.
fn pair(label: &str, value: Option<String>) -> Markup {
    html! {
        @if let Some(v) = value.filter(|v| !v.is_empty()) {
            dt { (label) }
            dd { (v) }
        }
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

/// The typed evidence of a service: HTTP, TLS, SSH or the bounded summary. Never a banner.
fn evidence(e: &Evidence) -> Markup {
    match e {
        Evidence::Http {
            status_code,
            title,
            server,
            tls,
        } => html! {
            dl.evidence.http {
                (pair("HTTP status", status_code.map(|c| c.to_string())))
                (pair("Title", title.clone()))
                (pair("Server", server.clone()))
                @if let Some(t) = tls {
                    (pair("TLS version", t.version.clone()))
                    (pair("Cipher suite", t.cipher_suite.clone()))
                    (pair("Issuer CN", t.issuer_common_name.clone()))
                    (pair("Valid", match (t.valid_from, t.valid_until) {
                        (Some(a), Some(b)) => Some(format!("{a} to {b}")),
                        (Some(a), None) => Some(format!("from {a}")),
                        (None, Some(b)) => Some(format!("until {b}")),
                        (None, None) => None,
                    }))
                    (pair("SHA-256 fingerprint", t.fingerprint_sha256.clone()))
                    (pair("Browser-trusted", t.browser_trusted.map(yes_no)))
                }
            }
        },
        Evidence::Ssh(s) => html! {
            dl.evidence.ssh {
                (pair("SSH protocol", s.protocol_version.clone()))
                (pair("Software version", s.software_version.clone()))
                (pair("Host-key algorithm", s.host_key_algorithm.clone()))
                (pair("Host-key fingerprint", s.host_key_fingerprint.clone()))
                (pair("Comments", s.comments.clone()))
                (pair("HASSH", s.hassh.clone()))
            }
        },
        Evidence::Summary(s) => html! {
            @if !s.fields.is_empty() {
                dl.evidence.summary {
                    @for (k, v) in &s.fields { (pair(k, Some(v.clone()))) }
                }
            }
        },
    }
}

/// One service of the inventory as a table row.
pub(crate) fn service_row(s: &Service) -> Markup {
    let product = match (&s.product, &s.version) {
        (Some(p), Some(v)) => format!("{p} {v}"),
        (Some(p), None) => p.clone(),
        _ => String::new(),
    };
    let (cves, cvss, exploit) = match &s.vulnerabilities {
        Some(v) => (
            v.cve_count.to_string(),
            v.max_cvss
                .map(|c| c.to_string())
                .unwrap_or_else(|| "–".into()),
            if v.has_exploits {
                "Exploit known"
            } else {
                "No exploit flag"
            },
        ),
        None => ("Enrichment unavailable".into(), String::new(), ""),
    };
    html! {
        tr.service {
            td { (s.port) }
            td { (s.protocol) }
            td {
                (product)
                @if !s.certificate_names.is_empty() {
                    p.names { "Certificate names: " (s.certificate_names.join(", ")) }
                }
                @for e in &s.evidence { (evidence(e)) }
            }
            td { (cves) }
            td { (cvss) }
            td { (exploit) }
            td { (s.observed_at) }
        }
    }
}

fn sorted(services: &[Service]) -> Vec<&Service> {
    let mut v: Vec<&Service> = services.iter().collect();
    v.sort_by(|a, b| (a.port.get(), a.protocol.as_str()).cmp(&(b.port.get(), b.protocol.as_str())));
    v
}

fn more_href(ip: &str, cursor: &str) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    s.append_pair("ip", ip).append_pair("cursor", cursor);
    format!("/host?{}", s.finish())
}

fn more_fragment_href(ip: &str, cursor: &str) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    s.append_pair("ip", ip).append_pair("cursor", cursor);
    format!("/app/host?{}", s.finish())
}

/// The "More services" control: a link to the host page (without script); `search.js` fetches
/// `data-fragment` and appends its rows instead.
fn more_services(ip: &str, next: Option<&str>) -> Markup {
    html! {
        @if let Some(cursor) = next {
            p.more {
                a.button.secondary.more-services href=(more_href(ip, cursor))
                    data-fragment=(more_fragment_href(ip, cursor)) { "More services" }
            }
        }
    }
}

/// The services of one detail page (rows only) and the next "More services" control: the
/// fragment "More services" appends to the inventory of [`host_view`].
pub(crate) fn services_part(host: &Host, next: Option<&str>) -> Markup {
    html! {
        table {
            tbody.service-rows {
                @for s in sorted(&host.services) { (service_row(s)) }
            }
        }
        (more_services(&host.ip.to_string(), next))
    }
}

/// The level of the host view's heading: `h1` on its own page, `h2` inside a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Heading {
    H1,
    H2,
}

/// The host investigation view of one address (exact-IP view, Selected host panel, host
/// page): place, coordinates with the caution, network, WHOIS, reverse DNS, domains with
/// their sources, and the services with their typed evidence. No map.
pub(crate) fn host_view(host: &Host, next: Option<&str>, heading: Heading) -> Markup {
    let ip = host.ip.to_string();
    let net = network(host);
    html! {
        section.host aria-label={ "Host " (ip) } {
            @match heading {
                Heading::H1 => h1.host-ip tabindex="-1" { (ip) },
                Heading::H2 => h2.host-ip tabindex="-1" { (ip) },
            }
            dl.facts {
                @if !net.is_empty() {
                    dt { "Network" }
                    dd { (net) }
                }
                @match &host.location {
                    Some(l) => {
                        @let place = place(l);
                        @if !place.is_empty() {
                            dt { "Location" }
                            dd.place { (place) }
                        }
                        @if let Some(c) = coordinates(l) {
                            dt { "Coordinates" }
                            dd.coordinates { (c) }
                        }
                        dt { "Caution" }
                        dd.caution { (CAUTION) }
                    },
                    None => {
                        dt { "Location" }
                        dd { "Not recorded" }
                    },
                }
                @if let Some(r) = &host.reverse_dns {
                    dt { "Reverse DNS" }
                    dd.reverse-dns { (r.as_str()) }
                }
            }
            @if let Some(w) = &host.whois {
                h3 { "WHOIS" }
                dl.whois {
                    (pair("Organization", w.organization.clone()))
                    (pair("Netname", w.netname.clone()))
                    (pair("CIDR", w.cidr.map(|c| c.to_string())))
                    (pair("Registry", w.registry.clone()))
                    (pair("Country", w.country_code.map(|c| c.to_string())))
                }
            }
            @if !host.domains.is_empty() {
                h3 { "Domains" }
                ul.domains {
                    @for d in &host.domains {
                        li { span.name { (d.name) } " " span.source { (domain_source(d.source)) } }
                    }
                }
                @if host.domains_has_more {
                    p.note.more-names { "More names exist." }
                }
                p.note { "Stored names, not looked up; they may be stale." }
            }
            h3 { "Services" }
            table.services {
                (column_heads(&["Port", "Protocol", "Product and evidence", "CVEs", "Max CVSS", "Exploit", "Observed"]))
                tbody.service-rows {
                    @for s in sorted(&host.services) { (service_row(s)) }
                }
            }
            (more_services(&ip, next))
        }
    }
}

/// The `ip` and `cursor` of the host routes, as sent (anything else is ignored).
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct HostParams {
    #[serde(default)]
    ip: String,
    cursor: Option<String>,
}

impl HostParams {
    /// The address, trimmed.
    fn ip(&self) -> &str {
        self.ip.trim()
    }

    /// The services' continuation; an empty one is none.
    fn cursor(&self) -> Option<&str> {
        self.cursor.as_deref().filter(|c| !c.is_empty())
    }
}

async fn detail(
    search: &Search,
    signed: &Signed,
    p: &HostParams,
) -> Result<periscope_index::HostDetail, ServiceError> {
    search
        .service()?
        .host_detail(
            &search.caller(signed),
            &search.request_id,
            DetailRequest {
                ip: p.ip(),
                limit: DETAIL_SERVICES,
                cursor: p.cursor(),
            },
        )
        .await
}

fn fragment(status: StatusCode, html: Markup) -> Response {
    let mut response = (status, html.into_string()).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    crate::html::secure_headers(h);
    response
}

/// `GET /app/host?ip=…` — the Selected host panel's content (free): the full inventory from
/// `host_detail`, whatever the query matched. With `cursor`, the next page of services only
/// (rows and the next "More services" control).
pub(crate) async fn panel(
    SignedFragment(signed): SignedFragment,
    search: Search,
    Params(p): Params<HostParams>,
) -> Response {
    match detail(&search, &signed, &p).await {
        Ok(d) if p.cursor().is_some() => {
            fragment(StatusCode::OK, services_part(&d.host, d.next.as_deref()))
        }
        Ok(d) => fragment(
            StatusCode::OK,
            html! {
                (host_view(&d.host, d.next.as_deref(), Heading::H2))
                p { a href=(search_href(&d.host.ip.to_string(), None, 1)) { "Open the exact-IP view" } }
            },
        ),
        Err(e) => {
            let (status, html) = error_html(&e);
            fragment(status, html)
        }
    }
}

/// `GET /host?ip=…[&cursor=…]` — the host view as a page (free), where "More services" leads
/// without a script.
pub(crate) async fn page(
    SignedPage(signed): SignedPage,
    search: Search,
    Params(p): Params<HostParams>,
) -> Response {
    let (status, body) = match detail(&search, &signed, &p).await {
        Ok(d) => (
            StatusCode::OK,
            host_view(&d.host, d.next.as_deref(), Heading::H1),
        ),
        Err(e) => error_html(&e),
    };
    page_with(
        status,
        &format!("Host {}", p.ip()),
        Some(&signed.top()),
        html! {
            main.search {
                (body)
                p { a href=(search_href(p.ip(), None, 1)) { "Back to the search" } }
            }
        },
        &["search.css", "search.js"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(levels: [Option<&str>; 5]) -> Location {
        let [continent, country, s1, s2, city] = levels.map(|l| l.map(str::to_owned));
        Location {
            continent,
            country_name: country,
            subdivision_1: s1,
            subdivision_2: s2,
            city,
            ..Location::default()
        }
    }

    #[test]
    fn places_read_coarse_to_fine_without_gaps_or_repeats() {
        let check = |levels, expect: &str| assert_eq!(place(&loc(levels)), expect);
        check(
            [
                Some("Europe"),
                Some("Germany"),
                Some("Bavaria"),
                Some("Upper Bavaria"),
                Some("Munich"),
            ],
            "Europe › Germany › Bavaria › Upper Bavaria › Munich",
        );
        check(
            [
                Some("Asia"),
                Some("Singapore"),
                None,
                None,
                Some("Singapore"),
            ],
            "Asia › Singapore",
        );
        check(
            [None, Some("Austria"), Some("Vienna"), None, Some("Vienna")],
            "Austria › Vienna",
        );
        check([None, None, None, None, None], "");
    }

    #[test]
    fn more_services_follow_the_continuation() {
        let host = Host {
            ip: "240.0.0.1".parse().unwrap(),
            location: None,
            network: None,
            whois: None,
            reverse_dns: None,
            domains: Vec::new(),
            domains_has_more: false,
            services: Vec::new(),
            services_has_more: true,
        };
        let view = host_view(&host, Some("c/1+"), Heading::H2).into_string();
        assert!(
            view.contains(
                "href=\"/host?ip=240.0.0.1&amp;cursor=c%2F1%2B\" \
                 data-fragment=\"/app/host?ip=240.0.0.1&amp;cursor=c%2F1%2B\">More services</a>"
            ),
            "{view}"
        );
        assert!(
            !host_view(&host, None, Heading::H2)
                .into_string()
                .contains("More services")
        );
    }
}
