//! The result records: one function, [`host`], turns a host view into the [`Host`] that a
//! search row ([`row`]) or a host detail shows, applying the "Host results" rules of the semantics doc
//! (location and position, network, WHOIS without the description, reverse DNS for IPv4, the
//! capped `domains` list, services with evidence that never carries error text).

use std::borrow::Cow;
use std::net::IpAddr;

use periscope_model::DomainName;
use periscope_model::EvidenceKind;
use periscope_model::domain::certificate_name;
use periscope_model::record::{
    DomainEntry, DomainSource, Evidence, Host, Location, Network, Service, TlsEvidence,
    VulnerabilityView, Whois,
};
use periscope_query::{Clause, Query};

use crate::api::HostResult;
use crate::matching::{Hit, HostView, enrichment, satisfies_all, stored_reverse_dns};
use crate::store::StoredService;

/// At most this many names per source in a `domains` list.
pub const NAMES_PER_SOURCE: usize = 10;
/// At most this many names per host in a `domains` list.
pub const NAMES_PER_HOST: usize = 25;
/// At most this many services in a search row's preview.
pub const PREVIEW_LEN: usize = 5;

/// Which services a host result carries.
#[derive(Debug, Clone, Copy)]
pub enum ServicePick<'a> {
    /// None (domain and ASN results).
    None,
    /// A search-row preview for a query with these service-level clauses (maybe none).
    Preview(&'a [Clause]),
    /// Exactly these services, unmarked (a host-detail page).
    Page(&'a [&'a StoredService]),
}

/// Whether domain-scan records contribute names to the `domains` list.
#[derive(Debug, Clone)]
pub enum DomainScope<'a> {
    /// Stored names and certificate names only (search rows other than domain queries).
    Stored,
    /// Also these names: of the domain-scan records listing the address, by name (domain
    /// rows, host detail). Each engine finds them its own way.
    WithScans(Vec<&'a DomainName>),
}

/// One search row: the result record of a matching host as the query's type shows it
/// (domain and ASN rows carry no services; filter rows mark the services satisfying every
/// service-level clause), with the hit's evidence. `listed` gives the names of the
/// domain-scan records listing the address; it is called for domain queries only.
pub fn row<'a>(
    hit: Hit<'_>,
    query: &Query,
    service_clauses: &[Clause],
    listed: impl FnOnce(IpAddr) -> Vec<&'a DomainName>,
) -> HostResult {
    let (pick, domains) = match query {
        Query::Domain(_) => (
            ServicePick::None,
            DomainScope::WithScans(listed(hit.view.ip())),
        ),
        Query::Asn(_) => (ServicePick::None, DomainScope::Stored),
        Query::Ip(_) | Query::Cidr(_) => (ServicePick::Preview(&[]), DomainScope::Stored),
        Query::Filter(_) => (ServicePick::Preview(service_clauses), DomainScope::Stored),
    };
    HostResult {
        host: host(&hit.view, pick, domains),
        organization_matches: hit.organization,
        domain_matches: hit.domain,
        asn_matches: hit.asn,
    }
}

/// The result record of a host.
pub fn host(view: &HostView<'_>, pick: ServicePick<'_>, scope: DomainScope<'_>) -> Host {
    let rec = view.rec;
    let e = enrichment(rec);
    let (domains, domains_has_more) = domains(view, scope);
    let (services, services_has_more) = services(view, pick);
    Host {
        ip: rec.ip,
        location: location(view),
        network: [&e.asn.research, &e.asn.bgp, &e.asn.network]
            .into_iter()
            .flatten()
            .next()
            .map(|a| Network {
                asn: a.asn,
                organization: a.organization.clone(),
            }),
        whois: e.whois.as_ref().map(|w| Whois {
            description: None,
            ..w.clone()
        }),
        reverse_dns: if rec.ip.is_ipv4() {
            stored_reverse_dns(rec).first().cloned()
        } else {
            None
        },
        domains,
        domains_has_more,
        services,
        services_has_more,
    }
}

/// The stored location with the position of the most recent observation recording one.
fn location(view: &HostView<'_>) -> Option<Location> {
    let position = view.rec.position.as_ref().map(|(p, _)| *p);
    match (&view.rec.location, position) {
        (Some((l, _)), position) => Some(Location {
            position,
            ..l.clone()
        }),
        (None, Some(position)) => Some(Location {
            position: Some(position),
            ..Location::default()
        }),
        (None, None) => None,
    }
}

/// The `domains` list and whether names were left out by the caps.
fn domains(view: &HostView<'_>, scope: DomainScope<'_>) -> (Vec<DomainEntry>, bool) {
    let rec = view.rec;
    let mut sources: Vec<(DomainSource, Vec<String>)> = Vec::new();
    let names = |list: &[DomainName]| list.iter().map(|d| d.as_str().to_owned()).collect();
    if rec.ip.is_ipv4() {
        sources.push((DomainSource::ReverseDns, names(stored_reverse_dns(rec))));
    }
    sources.push((
        DomainSource::DnsName,
        names(enrichment(rec).dns_name.as_slice()),
    ));
    sources.push((
        DomainSource::Domain,
        names(enrichment(rec).domain.as_slice()),
    ));
    sources.push((
        DomainSource::CertificateSubject,
        view.services
            .iter()
            .flat_map(|s| certificate_names(s))
            .collect(),
    ));
    if let DomainScope::WithScans(listed) = scope {
        sources.push((
            DomainSource::DomainScan,
            listed.iter().map(|name| name.as_str().to_owned()).collect(),
        ));
    }
    cap_names(sources)
}

/// Lists each name once under its first source, at most [`NAMES_PER_SOURCE`] per source and
/// [`NAMES_PER_HOST`] in all; a name left out by a cap is not listed under a later source.
pub fn cap_names(sources: Vec<(DomainSource, Vec<String>)>) -> (Vec<DomainEntry>, bool) {
    let mut seen: Vec<String> = Vec::new();
    let mut out: Vec<DomainEntry> = Vec::new();
    let mut has_more = false;
    for (source, names) in sources {
        let mut listed = 0;
        for name in names {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name.clone());
            if listed == NAMES_PER_SOURCE || out.len() == NAMES_PER_HOST {
                has_more = true;
                continue;
            }
            listed += 1;
            out.push(DomainEntry { name, source });
        }
    }
    (out, has_more)
}

/// The leaf certificate's names: SANs, then the common name when it is a DNS name not
/// already listed.
pub fn certificate_names(s: &StoredService) -> Vec<String> {
    let Some(c) = s.tls.as_ref().and_then(|t| t.certificate.as_ref()) else {
        return Vec::new();
    };
    let mut names = c.subject_alt_names.clone();
    if let Some(cn) = c.common_name.as_deref().and_then(dns_name)
        && !names.contains(&cn)
    {
        names.push(cn);
    }
    names
}

/// A common name that is a DNS name (optionally with a leading `*.` label, as SANs may
/// have), in canonical form: [`certificate_name`].
fn dns_name(cn: &str) -> Option<String> {
    certificate_name(cn).ok().map(Cow::into_owned)
}

/// The services of a result and whether the host has more than it shows.
fn services(view: &HostView<'_>, pick: ServicePick<'_>) -> (Vec<Service>, bool) {
    match pick {
        ServicePick::None => (Vec::new(), false),
        ServicePick::Page(page) => (page.iter().map(|s| service(s, Vec::new())).collect(), false),
        ServicePick::Preview(clauses) => {
            let matches = |s: &&&StoredService| !clauses.is_empty() && satisfies_all(clauses, s);
            let reasons: Vec<String> = clauses.iter().map(Clause::to_string).collect();
            let (marked, others): (Vec<&&StoredService>, Vec<&&StoredService>) =
                view.services.iter().partition(matches);
            let preview = marked
                .into_iter()
                .map(|s| service(s, reasons.clone()))
                .chain(others.into_iter().map(|s| service(s, Vec::new())))
                .take(PREVIEW_LEN)
                .collect();
            (preview, view.services.len() > PREVIEW_LEN)
        }
    }
}

/// One service as a result shows it.
pub fn service(s: &StoredService, match_reasons: Vec<String>) -> Service {
    let product = s.product.as_ref();
    Service {
        port: s.port,
        protocol: s.protocol,
        observed_at: s.observed_at,
        product: product.map(|p| p.title.clone()),
        version: product.and_then(|p| p.version.clone()),
        certificate_names: certificate_names(s),
        vulnerabilities: s.vulnerabilities.as_ref().map(|v| VulnerabilityView {
            cve_count: u32::try_from(v.cves.len()).unwrap_or(u32::MAX),
            has_exploits: v.has_exploits,
            max_cvss: v.max_cvss,
        }),
        evidence: evidence(s),
        match_reasons,
    }
}

/// Typed evidence: HTTP (with TLS for HTTPS), SSH, summary; each withheld when nothing of it
/// would be shown. Error text and raw data are never part of it.
fn evidence(s: &StoredService) -> Vec<Evidence> {
    let mut out = Vec::new();
    let entry = s.protocol.entry();
    if entry.evidence_kind == EvidenceKind::Http {
        let complete = s.http.as_ref().filter(|h| h.complete);
        let tls = if entry.value == "https" {
            s.tls.as_ref().and_then(tls_evidence)
        } else {
            None
        };
        let status_code = complete.and_then(|h| h.status_code);
        let title = complete.and_then(|h| h.title.clone());
        let server = complete.and_then(|h| h.server.clone());
        if status_code.is_some() || title.is_some() || server.is_some() || tls.is_some() {
            out.push(Evidence::Http {
                status_code,
                title,
                server,
                tls,
            });
        }
    }
    if let Some(ssh) = &s.ssh {
        let empty = periscope_model::record::Ssh::default();
        if *ssh != empty {
            out.push(Evidence::Ssh(ssh.clone()));
        }
    }
    if let Some(summary) = s.summary.as_ref().filter(|x| !x.fields.is_empty()) {
        out.push(Evidence::Summary(summary.clone()));
    }
    out
}

/// The `tls` object: session facts and the leaf certificate's safe fields; `None` when all
/// are missing.
fn tls_evidence(t: &periscope_model::record::Tls) -> Option<TlsEvidence> {
    let c = t.certificate.clone().unwrap_or_default();
    let tls = TlsEvidence {
        version: t.version.clone(),
        cipher_suite: t.cipher_suite.clone(),
        issuer_common_name: c.issuer_common_name,
        valid_from: c.valid_from,
        valid_until: c.valid_until,
        fingerprint_sha256: c.fingerprint_sha256,
        browser_trusted: t.browser_trusted,
    };
    (tls != TlsEvidence::default()).then_some(tls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}.example")).collect()
    }

    #[test]
    fn caps_per_source_and_per_host() {
        let (list, more) = cap_names(vec![
            (DomainSource::ReverseDns, names("r", 12)),
            (DomainSource::DnsName, names("d", 1)),
            (DomainSource::CertificateSubject, names("c", 12)),
            (DomainSource::DomainScan, names("s", 12)),
        ]);
        assert!(more);
        assert_eq!(list.len(), 25);
        assert_eq!(
            list.iter()
                .filter(|e| e.source == DomainSource::ReverseDns)
                .count(),
            10
        );
        assert_eq!(list[10].name, "d0.example");
        assert_eq!(list[20].name, "c9.example");
        assert_eq!(list[24].name, "s3.example");
    }

    #[test]
    fn a_name_is_listed_once_under_its_first_source() {
        let (list, more) = cap_names(vec![
            (DomainSource::ReverseDns, vec!["a.example".into()]),
            (
                DomainSource::DnsName,
                vec!["a.example".into(), "b.example".into()],
            ),
        ]);
        assert!(!more);
        assert_eq!(
            list,
            vec![
                DomainEntry {
                    name: "a.example".into(),
                    source: DomainSource::ReverseDns
                },
                DomainEntry {
                    name: "b.example".into(),
                    source: DomainSource::DnsName
                },
            ]
        );
    }

    #[test]
    fn common_names_that_are_dns_names() {
        assert_eq!(
            dns_name("WWW.Example.com.").as_deref(),
            Some("www.example.com")
        );
        assert_eq!(dns_name("*.example.com").as_deref(), Some("*.example.com"));
        assert_eq!(dns_name("Example Corp Root CA"), None);
    }
}
