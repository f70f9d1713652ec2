//! Which hosts a query matches, and why: the five search types, the clause-by-clause rules of
//! filter queries (service-level clauses on one and the same service, host-level clauses on
//! the host), the word rules of product and organization phrases, and the match evidence
//! lists (`asn_matches`, `domain_matches`, `organization_matches`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use periscope_model::observation::ScanStatus;
use periscope_model::record::{AsnAttributions, HostEnrichment};
use periscope_model::{CountryCode, DomainName, ip_order_key};
use periscope_query::{Clause, Phrase, Query};

use crate::api::{
    AsnMatch, AsnSource, DomainMatch, DomainMatchSource, OrganizationMatch, OrganizationSource,
};
use crate::store::{DomainScans, HostRecord, StoredService};

/// A host as it stands at one instant: its record and its current services (port, then
/// protocol). Only built for addresses that are hosts (at least one current service).
#[derive(Debug, Clone)]
pub struct HostView<'a> {
    /// The record.
    pub rec: &'a HostRecord,
    /// Current services, by port then protocol; never empty.
    pub services: Vec<&'a StoredService>,
}

impl<'a> HostView<'a> {
    /// The view of `rec` at `now`, or `None` when it has no current service.
    pub fn current(
        rec: &'a HostRecord,
        now: periscope_model::Timestamp,
        retention: i64,
    ) -> Option<Self> {
        let services: Vec<&StoredService> = rec.current_services(now, retention).collect();
        (!services.is_empty()).then_some(Self { rec, services })
    }

    /// The address.
    pub fn ip(&self) -> IpAddr {
        self.rec.ip
    }

    /// The GeoIP country of the stored location.
    pub fn country(&self) -> Option<CountryCode> {
        self.rec.location.as_ref().and_then(|(l, _)| l.country_code)
    }
}

/// A matching host with the evidence that links it to the query.
#[derive(Debug, Clone)]
pub struct Hit<'a> {
    /// The host.
    pub view: HostView<'a>,
    /// Organization queries only.
    pub organization: Vec<OrganizationMatch>,
    /// Domain queries only.
    pub domain: Vec<DomainMatch>,
    /// ASN queries only.
    pub asn: Vec<AsnMatch>,
}

impl<'a> Hit<'a> {
    fn bare(view: HostView<'a>) -> Self {
        Self {
            view,
            organization: Vec::new(),
            domain: Vec::new(),
            asn: Vec::new(),
        }
    }
}

/// The clauses of a filter query split by level. Facets build variants of it with one clause
/// replaced, which may hold more clauses than a query can.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    /// Service-level clauses in canonical order: one service must satisfy all of them.
    pub service: Vec<Clause>,
    /// Host-level clauses (organization, country).
    pub host: Vec<Clause>,
}

impl Conditions {
    /// Splits `clauses` by level, keeping their order.
    pub fn of<'c>(clauses: impl IntoIterator<Item = &'c Clause>) -> Self {
        let (service, host) = clauses
            .into_iter()
            .cloned()
            .partition(Clause::is_service_level);
        Self { service, host }
    }

    /// True when the host satisfies every clause.
    pub fn matches(&self, view: &HostView<'_>) -> bool {
        self.hit(view).is_some()
    }

    /// The organization matches when the host satisfies every clause (empty unless there is
    /// an organization clause), `None` when it does not.
    pub fn hit(&self, view: &HostView<'_>) -> Option<Vec<OrganizationMatch>> {
        if !self.service.is_empty()
            && !view
                .services
                .iter()
                .any(|s| satisfies_all(&self.service, s))
        {
            return None;
        }
        let mut organization = Vec::new();
        for clause in &self.host {
            match clause {
                Clause::Organization(phrase) => {
                    organization = organization_matches(phrase, view);
                    if organization.is_empty() {
                        return None;
                    }
                }
                Clause::Country(cc) => {
                    if view.country() != Some(*cc) {
                        return None;
                    }
                }
                // Service-level clauses never sit here ([`Conditions::of`]); held to the
                // same-service rule anyway.
                other => {
                    if !view.services.iter().any(|s| satisfies(other, s)) {
                        return None;
                    }
                }
            }
        }
        Some(organization)
    }
}

/// One query, prepared for testing hosts one by one.
#[derive(Debug)]
pub struct Matcher<'a> {
    query: &'a Query,
    kind: Kind<'a>,
}

#[derive(Debug)]
enum Kind<'a> {
    Ip(u128),
    Cidr(u128, u128),
    Asn(periscope_model::Asn),
    Domain {
        name: &'a DomainName,
        /// Host-order keys of the addresses DNS resolved.
        resolved: BTreeSet<u128>,
        /// Per address: names of current domain-scan records (of the name or a subdomain)
        /// listing it, by name.
        scans: BTreeMap<u128, Vec<&'a DomainName>>,
    },
    Filter(Conditions),
}

impl<'a> Matcher<'a> {
    /// Prepares `query`. `resolved` is used by domain queries only.
    pub fn new(query: &'a Query, resolved: &[IpAddr], domains: &'a DomainScans) -> Self {
        let kind = match query {
            Query::Ip(ip) => Kind::Ip(ip_order_key(ip.to_canonical())),
            Query::Cidr(c) => Kind::Cidr(
                ip_order_key(IpAddr::V4(c.network())),
                ip_order_key(IpAddr::V4(c.last())),
            ),
            Query::Asn(a) => Kind::Asn(*a),
            Query::Domain(name) => {
                let mut scans: BTreeMap<u128, Vec<&DomainName>> = BTreeMap::new();
                for scan in domains.of_name(name) {
                    for address in &scan.addresses {
                        let names = scans
                            .entry(ip_order_key(address.to_canonical()))
                            .or_default();
                        if !names.contains(&&scan.name) {
                            names.push(&scan.name);
                        }
                    }
                }
                Kind::Domain {
                    name,
                    resolved: resolved
                        .iter()
                        .map(|ip| ip_order_key(ip.to_canonical()))
                        .collect(),
                    scans,
                }
            }
            Query::Filter(f) => Kind::Filter(Conditions::of(f.clauses())),
        };
        Self { query, kind }
    }

    /// The query.
    pub fn query(&self) -> &'a Query {
        self.query
    }

    /// The host-order keys that can match, as an inclusive range.
    pub fn key_range(&self) -> (u128, u128) {
        match self.kind {
            Kind::Ip(key) => (key, key),
            Kind::Cidr(low, high) => (low, high),
            _ => (0, u128::MAX),
        }
    }

    /// The service-level clauses of a filter query; empty for every other query.
    pub fn service_clauses(&self) -> &[Clause] {
        match &self.kind {
            Kind::Filter(c) => &c.service,
            _ => &[],
        }
    }

    /// The host as a match of the query, or `None`.
    pub fn hit(&self, view: HostView<'a>) -> Option<Hit<'a>> {
        let key = ip_order_key(view.ip());
        match &self.kind {
            Kind::Ip(k) => (*k == key).then(|| Hit::bare(view)),
            Kind::Cidr(low, high) => {
                (view.ip().is_ipv4() && (*low..=*high).contains(&key)).then(|| Hit::bare(view))
            }
            Kind::Asn(asn) => {
                let asn_matches = asn_matches(*asn, view.rec);
                (!asn_matches.is_empty()).then(|| Hit {
                    asn: asn_matches,
                    ..Hit::bare(view)
                })
            }
            Kind::Domain {
                name,
                resolved,
                scans,
            } => {
                let listed: &[&DomainName] = scans.get(&key).map_or(&[], Vec::as_slice);
                let domain = domain_matches(name, resolved.contains(&key), listed, view.rec);
                (!domain.is_empty()).then(|| Hit {
                    domain,
                    ..Hit::bare(view)
                })
            }
            Kind::Filter(conditions) => {
                let organization = conditions.hit(&view)?;
                Some(Hit {
                    organization,
                    ..Hit::bare(view)
                })
            }
        }
    }
}

/// `asn_matches`: each attribution equal to `asn`, in the order research, BGP, network.
pub fn asn_matches(asn: periscope_model::Asn, rec: &HostRecord) -> Vec<AsnMatch> {
    let a = &enrichment(rec).asn;
    [
        (AsnSource::ResearchBestAsn, &a.research),
        (AsnSource::BgpBestAsn, &a.bgp),
        (AsnSource::NetworkAsn, &a.network),
    ]
    .into_iter()
    .filter(|(_, attribution)| attribution.as_ref().is_some_and(|x| x.asn == asn))
    .map(|(source, _)| AsnMatch { source, asn })
    .collect()
}

/// `domain_matches` of a host for a domain query on `name`.
pub fn domain_matches(
    name: &DomainName,
    resolved: bool,
    listed: &[&DomainName],
    rec: &HostRecord,
) -> Vec<DomainMatch> {
    let mut out: Vec<DomainMatch> = Vec::new();
    let mut push = |source: DomainMatchSource, value: &DomainName| {
        let m = DomainMatch {
            source,
            value: value.as_str().to_owned(),
        };
        if !out.contains(&m) {
            out.push(m);
        }
    };
    if resolved {
        push(DomainMatchSource::DnsResolution, name);
    }
    let within = |stored: &&DomainName| stored.is_within(name);
    if let Some(d) = enrichment(rec).domain.as_ref().filter(within) {
        push(DomainMatchSource::StoredDomain, d);
    }
    if let Some(d) = enrichment(rec).dns_name.as_ref().filter(within) {
        push(DomainMatchSource::StoredDnsName, d);
    }
    if rec.ip.is_ipv4() {
        for d in stored_reverse_dns(rec).iter().filter(within) {
            push(DomainMatchSource::StoredReverseDns, d);
        }
    }
    for d in listed {
        push(DomainMatchSource::DomainScan, d);
    }
    out
}

/// The enrichment of the most recent counting observation (empty when none was recorded).
pub fn enrichment(rec: &HostRecord) -> &HostEnrichment {
    static NONE: HostEnrichment = HostEnrichment {
        location: None,
        asn: AsnAttributions {
            research: None,
            bgp: None,
            network: None,
        },
        provider: None,
        whois: None,
        reverse_dns: Vec::new(),
        dns_name: None,
        domain: None,
    };
    rec.enrichment.as_ref().map_or(&NONE, |(e, _)| e)
}

/// The stored reverse-DNS names (the most recent observation carrying any).
pub fn stored_reverse_dns(rec: &HostRecord) -> &[DomainName] {
    rec.reverse_dns
        .as_ref()
        .map_or(&[], |(names, _)| names.as_slice())
}

/// True when `s` satisfies every clause (vacuously true for none).
pub fn satisfies_all(clauses: &[Clause], s: &StoredService) -> bool {
    clauses.iter().all(|c| satisfies(c, s))
}

/// The rule of one service-level clause for one service. Host-level clauses are not about a
/// service and are never satisfied by one.
pub fn satisfies(clause: &Clause, s: &StoredService) -> bool {
    let vulns = s.vulnerabilities.as_ref();
    match clause {
        Clause::Port(p) => s.port == *p,
        Clause::Protocol(t) => s.protocol == *t,
        Clause::Product(phrase) => s.product.as_ref().is_some_and(|p| {
            let wanted = words(phrase.as_str());
            let title: BTreeSet<String> = words(&p.title).into_iter().collect();
            !wanted.is_empty() && wanted.iter().all(|w| title.contains(w))
        }),
        Clause::CertificateName(name) => {
            s.protocol.entry().tls
                && s.status == ScanStatus::Completed
                && s.error.is_none()
                && s.tls
                    .as_ref()
                    .and_then(|t| t.certificate.as_ref())
                    .is_some_and(|c| {
                        c.subject_alt_names
                            .iter()
                            .map(String::as_str)
                            .chain(c.common_name.as_deref())
                            .any(|n| comparable_name(n) == name.as_str())
                    })
        }
        Clause::Cpe(cpe) => s
            .product
            .as_ref()
            .and_then(|p| p.cpe.as_ref())
            .is_some_and(|c| c.as_str().to_lowercase() == cpe.as_str().to_lowercase()),
        Clause::Cve(id) => vulns.is_some_and(|v| v.cves.contains(id)),
        Clause::Cvss(range) => vulns
            .and_then(|v| v.max_cvss)
            .is_some_and(|x| range.contains(x)),
        Clause::Exploit(flag) => vulns.is_some_and(|v| v.has_exploits == *flag),
        Clause::Organization(_) | Clause::Country(_) => false,
    }
}

/// A certificate name as certificate-name search compares it: lowercased, without one
/// trailing dot.
pub fn comparable_name(n: &str) -> String {
    let lower = n.to_lowercase();
    match lower.strip_suffix('.') {
        Some(stripped) => stripped.to_owned(),
        None => lower,
    }
}

/// The words of a text: maximal runs of Unicode letters and digits, lowercased.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// True when the phrase's words stand as one contiguous run, in order, among the value's
/// words. A phrase without words matches nothing.
pub fn contains_run(value: &str, phrase: &[String]) -> bool {
    !phrase.is_empty() && words(value).windows(phrase.len()).any(|w| w == phrase)
}

/// `organization_matches` of a host for an organization phrase: the six sources in order,
/// each distinct (source, value, service) once, certificate entries by port then protocol.
pub fn organization_matches(phrase: &Phrase, view: &HostView<'_>) -> Vec<OrganizationMatch> {
    let wanted = words(phrase.as_str());
    let mut out: Vec<OrganizationMatch> = Vec::new();
    let mut push = |source, value: Option<&String>, service| {
        if let Some(value) = value.filter(|v| contains_run(v, &wanted)) {
            let m = OrganizationMatch {
                source,
                value: value.clone(),
                service,
            };
            if !out.contains(&m) {
                out.push(m);
            }
        }
    };
    let e = enrichment(view.rec);
    for attribution in [&e.asn.research, &e.asn.bgp].into_iter().flatten() {
        push(
            OrganizationSource::AsOrganization,
            attribution.organization.as_ref(),
            None,
        );
    }
    let whois = e.whois.as_ref();
    push(
        OrganizationSource::WhoisDescription,
        whois.and_then(|w| w.description.as_ref()),
        None,
    );
    push(
        OrganizationSource::WhoisNetname,
        whois.and_then(|w| w.netname.as_ref()),
        None,
    );
    if let Some(p) = &e.provider {
        for value in [&p.organization, &p.as_organization, &p.isp] {
            push(OrganizationSource::NetworkProvider, value.as_ref(), None);
        }
    }
    let certificates: Vec<_> = view
        .services
        .iter()
        .filter(|s| s.protocol.entry().certificate_organization)
        .filter_map(|s| {
            let c = s.tls.as_ref()?.certificate.as_ref()?;
            Some((Some((s.port, s.protocol)), c))
        })
        .collect();
    for (service, c) in &certificates {
        push(
            OrganizationSource::CertificateSubject,
            c.subject_organization.as_ref(),
            *service,
        );
    }
    for (service, c) in &certificates {
        push(
            OrganizationSource::CertificateIssuer,
            c.issuer_organization.as_ref(),
            *service,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_runs_of_letters_and_digits() {
        let cases: &[(&str, &[&str])] = &[
            ("Example Corp., Ltd", &["example", "corp", "ltd"]),
            ("  ", &[]),
            ("NORTHWIND-NET", &["northwind", "net"]),
            ("Müller GmbH & Co.KG", &["müller", "gmbh", "co", "kg"]),
            ("OpenSSH_9.6p1", &["openssh", "9", "6p1"]),
        ];
        for (text, want) in cases {
            assert_eq!(words(text), *want, "{text:?}");
        }
    }

    #[test]
    fn runs_are_contiguous_and_ordered() {
        let run = |p: &str| words(p);
        assert!(contains_run("Example Corp Ltd", &run("Example Corp")));
        assert!(contains_run("The Example Corp", &run("example corp")));
        assert!(!contains_run("Corp Example", &run("Example Corp")));
        assert!(!contains_run("Example Big Corp", &run("Example Corp")));
        assert!(!contains_run("Examples Corp", &run("Example Corp")));
        assert!(!contains_run("anything", &run("--")));
    }

    #[test]
    fn comparable_names_drop_case_and_one_dot() {
        assert_eq!(comparable_name("WWW.Example.COM."), "www.example.com");
        assert_eq!(comparable_name("*.example.com"), "*.example.com");
    }
}
