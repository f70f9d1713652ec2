//! The search bar of the signed-in home page over a synthetic index: entry recognition and the
//! prefixed form that ran, the host view of an exact IP, a host list of 25 with a working next
//! page (each page one charged search, shared with the API's allowance), and the conditions in
//! the spec's wording.

use std::sync::{Arc, OnceLock};

use periscope_index::{EmbeddedIndex, IndexConfig, LineLoader, ReferenceIndex, ScanIndex};
use periscope_model::Timestamp;
use periscope_resolve::FixedResolver;
use periscope_service::{SearchService, SystemClock};
use periscope_state::testing::on_each_backend;

use crate::journey::{register_via_outbox, sign_in_via_web};
use crate::support::*;

pub struct Data {
    engine: Arc<EmbeddedIndex>,
    pub reference: ReferenceIndex,
}

pub fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let now = Timestamp::from_unix(real_now()).unwrap();
        let as_of = Timestamp::from_unix(real_now() - 3600).unwrap();
        let mut loader = LineLoader::new(IndexConfig::default(), as_of);
        let cfg = periscope_synth::SynthConfig {
            hosts: 2000,
            seed: 11,
            as_of,
        };
        periscope_synth::write_dataset(&cfg, &mut loader).unwrap();
        let reference = loader.into_index();
        let engine = EmbeddedIndex::build(
            IndexConfig::default(),
            now,
            reference.records().cloned(),
            reference.domain_scans().clone(),
        )
        .unwrap();
        Data {
            engine: Arc::new(engine),
            reference,
        }
    })
}

pub fn service(fixture: &periscope_state::testing::Fixture) -> SearchService {
    service_on(&fixture.state)
}

/// A search service over the test index and `state`.
pub fn service_on(state: &periscope_state::State) -> SearchService {
    SearchService::builder(
        Arc::clone(&data().engine) as Arc<dyn ScanIndex>,
        state.clone(),
        Arc::new(FixedResolver::new()),
    )
    .clock(Arc::new(SystemClock))
    .build()
}

/// The value of the search input.
fn bar(page: &Page) -> String {
    let at = page.body.find("name=\"q\"").expect("a search bar");
    let rest = &page.body[at..];
    let v = rest.find("value=\"").unwrap() + 7;
    let end = rest[v..].find('"').unwrap();
    rest[v..v + end]
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

pub(crate) fn rows(page: &Page) -> usize {
    page.body.matches("class=\"host-row\"").count()
}

fn next_href(page: &Page) -> Option<String> {
    let at = page.body.find("rel=\"next\" href=\"")? + 17;
    let end = page.body[at..].find('"')?;
    Some(page.body[at..at + end].replace("&amp;", "&"))
}

pub(crate) fn search_url(app: &App, q: &str) -> String {
    let q: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
    app.url(&format!("/?q={q}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_bar_recognises_runs_pages_and_words_conditions() {
    on_each_backend("web_search", |fixture| async move {
        let app = App::embedded_searching(&fixture, service(&fixture)).await;
        let browser = Browser::new();
        let (email, password) = ("sam@example.com", "a long enough password 1");
        register_via_outbox(&app, &browser, email, "Example Ltd", password).await;
        let start = "/signin?return_to=%2F";
        sign_in_via_web(&app, &browser, start, email, password).await;

        let home = browser.get(&app.url("/")).await;
        assert_eq!(home.status, 200, "{}", home.body);
        assert!(home.body.contains("role=\"search\""), "{}", home.body);
        assert_eq!(bar(&home), "");

        // An exact IP: the host view directly, with the prefixed form in the bar.
        let record = data()
            .reference
            .records()
            .find(|r| r.ip.is_ipv4())
            .expect("an IPv4 host");
        let ip = record.ip.to_string();
        let host = browser.get(&search_url(&app, &ip)).await;
        assert_eq!(host.status, 200, "{}", host.body);
        assert_eq!(
            bar(&host),
            ip,
            "the canonical form of an address is the address"
        );
        assert!(
            host.body.contains(&format!("aria-label=\"Host {ip}\"")),
            "{}",
            host.body
        );
        assert_eq!(rows(&host), 0, "no intermediate row");

        // A pasted URL and an AS number become their prefixed forms.
        let url_page = browser
            .get(&search_url(&app, &format!("http://{ip}/x")))
            .await;
        assert_eq!(bar(&url_page), ip);
        assert!(url_page.body.contains(&format!("aria-label=\"Host {ip}\"")));
        let asn = browser.get(&search_url(&app, "AS64894")).await;
        assert_eq!(bar(&asn), "asn:64894", "{}", asn.body);

        // A filter query: 25 rows, and a next page that works.
        let list = browser.get(&search_url(&app, "port:443")).await;
        assert_eq!(list.status, 200, "{}", list.body);
        assert_eq!(rows(&list), 25, "{}", list.body);
        let next = next_href(&list).expect("a next page");
        let second = browser.get(&app.url(&next)).await;
        assert_eq!(second.status, 200, "{}", second.body);
        assert!(rows(&second) > 0);
        assert_ne!(list.body, second.body);
        // A cursor is used once, but the page already shown comes back from the cache.
        let again = browser.get(&app.url(&next)).await;
        assert_eq!(again.status, 200, "{}", again.body);
        assert_eq!(rows(&again), rows(&second));

        // Not guessed, and refused, in the spec's words.
        let bare = browser.get(&search_url(&app, "22")).await;
        assert!(
            bare.body.contains("asn:22") && bare.body.contains("port:22"),
            "{}",
            bare.body
        );
        let broad = browser.get(&search_url(&app, "10.0.0.0/8")).await;
        assert_eq!(broad.status, 422, "{}", broad.body);
        assert!(broad.body.contains("CIDR too broad"), "{}", broad.body);

        // The allowance (20 a day, shared with the API) runs out in the spec's words.
        let mut last = None;
        for _ in 0..20 {
            let page = browser.get(&search_url(&app, "port:80")).await;
            if page.status == 429 {
                last = Some(page);
                break;
            }
        }
        let limited = last.expect("the allowance runs out");
        assert!(
            limited.body.contains("Search limit reached"),
            "{}",
            limited.body
        );
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Host views, the Selected host panel, pages already shown, Add filter, Suggested Filters, the
// total, the inactive account and session expiry mid-search.

use periscope_model::record::{Evidence, Host, Location};
use periscope_service::Caller;
use periscope_state::{Access, Channel};

/// The index's own host for `ip` (all services, as the host detail has them).
fn index_host(ip: std::net::IpAddr) -> Host {
    let now = Timestamp::from_unix(real_now()).unwrap();
    data()
        .engine
        .host_detail(ip, None, 20, now)
        .unwrap()
        .expect("a stored host")
        .host
}

/// The place as the spec reads it: coarsest to finest, gaps left out, neighbours once.
fn expected_place(l: &Location) -> String {
    let country = l
        .country_name
        .clone()
        .or(l.country_code.map(|c| c.to_string()));
    let mut out: Vec<String> = Vec::new();
    for level in [
        l.continent.clone(),
        country,
        l.subdivision_1.clone(),
        l.subdivision_2.clone(),
        l.city.clone(),
    ]
    .into_iter()
    .flatten()
    {
        if out.last().is_none_or(|p| !p.eq_ignore_ascii_case(&level)) {
            out.push(level);
        }
    }
    out.join(" › ")
}

/// `text` escaped as the templates escape it (`&`, `<`, `>`, `"`; attributes are always
/// double-quoted, so `'` stays as it is).
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Checks a host view (page or fragment) against the index's host.
fn check_host_view(body: &str, host: &Host) {
    let ip = host.ip.to_string();
    assert!(
        body.contains(&format!("aria-label=\"Host {ip}\"")),
        "{body}"
    );
    if let Some(l) = &host.location {
        let place = expected_place(l);
        if !place.is_empty() {
            assert!(
                body.contains(&format!("<dd class=\"place\">{}</dd>", html(&place))),
                "place {place}: {body}"
            );
        }
        if let Some(p) = l.position {
            let text = format!("{:.4}, {:.4}", p.latitude, p.longitude);
            assert!(body.contains(&text), "coordinates {text}: {body}");
            if let Some(r) = p.accuracy_radius_km {
                assert!(body.contains(&format!("accuracy radius {r} km")), "{body}");
            }
        }
        assert!(
            body.contains("GeoIP is evidence of an address's location, not a person's")
                && body.contains("Anything finer than country is unreliable"),
            "the caution: {body}"
        );
    }
    assert!(
        !body.contains("<iframe") && !body.contains("tile"),
        "no map"
    );
    if let Some(w) = &host.whois {
        for v in [&w.organization, &w.netname, &w.registry]
            .into_iter()
            .flatten()
        {
            assert!(body.contains(&html(v)), "WHOIS {v}: {body}");
        }
        if let Some(c) = w.cidr {
            assert!(body.contains(&c.to_string()), "WHOIS cidr: {body}");
        }
    }
    if let Some(r) = &host.reverse_dns {
        assert!(body.contains(&format!("<dd class=\"reverse-dns\">{}</dd>", r.as_ref())));
    }
    for d in &host.domains {
        let label = match d.source.as_str() {
            "reverse_dns" => "Reverse DNS",
            "dns_name" => "DNS name",
            "domain" => "Domain",
            "certificate_subject" => "Certificate subject",
            _ => "Domain scan",
        };
        assert!(
            body.contains(&format!(
                "<span class=\"name\">{}</span> <span class=\"source\">{label}</span>",
                html(&d.name)
            )),
            "domain {} ({label}): {body}",
            d.name
        );
    }
    assert_eq!(body.contains("More names exist"), host.domains_has_more);
    // Services by port then protocol, with their typed evidence.
    let mut last = 0usize;
    for s in &host.services {
        let row = format!(
            "<tr class=\"service\"><td>{}</td><td>{}</td>",
            s.port, s.protocol
        );
        let at = body[last..]
            .find(&row)
            .unwrap_or_else(|| panic!("{row} after the previous service: {body}"));
        last += at + row.len();
        for e in &s.evidence {
            match e {
                Evidence::Http { tls: Some(t), .. } => {
                    for v in [
                        &t.version,
                        &t.cipher_suite,
                        &t.issuer_common_name,
                        &t.fingerprint_sha256,
                    ]
                    .into_iter()
                    .flatten()
                    {
                        assert!(body.contains(&html(v)), "TLS {v}");
                    }
                }
                Evidence::Http { title: Some(t), .. } => {
                    assert!(body.contains(&html(t)), "title {t}")
                }
                Evidence::Ssh(ssh) => {
                    for v in [
                        &ssh.software_version,
                        &ssh.host_key_algorithm,
                        &ssh.host_key_fingerprint,
                    ]
                    .into_iter()
                    .flatten()
                    {
                        assert!(body.contains(&html(v)), "SSH {v}");
                    }
                }
                _ => {}
            }
        }
        if let Some(c) = s.vulnerabilities.and_then(|v| v.max_cvss) {
            assert!(body.contains(&format!("<td>{c}</td>")), "max CVSS {c}");
        }
    }
}

/// A host with a located position, WHOIS, domains and HTTPS or SSH evidence.
fn rich_host() -> Host {
    data()
        .reference
        .records()
        .filter(|r| r.ip.is_ipv4())
        .map(|r| index_host(r.ip))
        .find(|h| {
            h.location.as_ref().is_some_and(|l| l.position.is_some())
                && h.whois.is_some()
                && !h.domains.is_empty()
                && h.services.iter().any(|s| {
                    s.evidence
                        .iter()
                        .any(|e| matches!(e, Evidence::Http { tls: Some(_), .. }))
                })
        })
        .expect("a host with location, WHOIS, domains and TLS evidence")
}

pub(crate) async fn signed_in(app: &App, email: &str) -> (Browser, String) {
    let browser = Browser::new();
    let password = "a long enough password 3";
    register_via_outbox(app, &browser, email, "Example Ltd", password).await;
    let (_, session, _, _) =
        sign_in_via_web(app, &browser, "/signin?return_to=%2F", email, password).await;
    (browser, session)
}

/// The searches `email`'s account has been charged today.
pub(crate) async fn used(
    service: &SearchService,
    state: &periscope_state::State,
    email: &str,
) -> u32 {
    let account = account_of(state, email).await;
    let caller = Caller {
        account,
        key: None,
        channel: Channel::Web,
        client: None,
    };
    service
        .allowance(&caller)
        .await
        .unwrap()
        .map_or(0, |u| u.used)
}

pub(crate) fn href(page: &Page, rel: &str) -> Option<String> {
    let marker = format!("rel=\"{rel}\" href=\"");
    let at = page.body.find(&marker)? + marker.len();
    let end = page.body[at..].find('"')?;
    Some(page.body[at..at + end].replace("&amp;", "&"))
}

pub(crate) fn first_row_ip(page: &Page) -> String {
    let at = page
        .body
        .find("class=\"host-row\" data-ip=\"")
        .expect("a row")
        + 26;
    let end = page.body[at..].find('"').unwrap();
    page.body[at..at + end].to_owned()
}

fn filter_url(app: &App, fields: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in fields {
        s.append_pair(k, v);
    }
    app.url(&format!("/filter?{}", s.finish()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_views_show_the_index_record_in_the_spec_words() {
    on_each_backend("web_host_views", |fixture| async move {
        let app = App::embedded_searching(&fixture, service(&fixture)).await;
        let (browser, _) = signed_in(&app, "hana@example.com").await;
        let host = rich_host();
        let ip = host.ip.to_string();

        // The exact-IP view.
        let view = browser.get(&search_url(&app, &ip)).await;
        assert_eq!(view.status, 200, "{}", view.body);
        check_host_view(&view.body, &host);

        // The Selected host panel's fragment: the same host, free, without the page around it.
        let panel = browser
            .get_foreign(&app.url(&format!("/app/host?ip={ip}")))
            .await;
        assert_eq!(panel.status, 200, "{}", panel.body);
        assert!(!panel.body.contains("<html"), "a fragment");
        check_host_view(&panel.body, &host);
        // And the host page (where "More services" leads without script).
        let page = browser.get(&app.url(&format!("/host?ip={ip}"))).await;
        assert_eq!(page.status, 200, "{}", page.body);
        check_host_view(&page.body, &host);

        // "More services" follows the host-detail continuation (synthetic hosts have at most
        // 12 services, fewer than a detail page of 20, so the continuation is taken after 5).
        let now = Timestamp::from_unix(real_now()).unwrap();
        let big = data()
            .reference
            .records()
            .find(|r| r.services.len() > 6)
            .map(|r| r.ip)
            .expect("a host with more than 6 services");
        let first = data()
            .engine
            .host_detail(big, None, 5, now)
            .unwrap()
            .unwrap();
        let cursor = first.next.expect("a continuation");
        let more = browser
            .get_foreign(&app.url(&format!(
                "/app/host?ip={big}&cursor={}",
                url::form_urlencoded::byte_serialize(cursor.as_bytes()).collect::<String>()
            )))
            .await;
        assert_eq!(more.status, 200, "{}", more.body);
        assert!(!more.body.contains("<section class=\"host\""), "rows only");
        let rest = data()
            .engine
            .host_detail(big, Some(&cursor), 20, now)
            .unwrap()
            .unwrap();
        assert!(!rest.host.services.is_empty());
        assert_eq!(
            more.body.matches("<tr class=\"service\">").count(),
            rest.host.services.len()
        );
        for s in &rest.host.services {
            assert!(
                more.body
                    .contains(&format!("<td>{}</td><td>{}</td>", s.port, s.protocol)),
                "{}",
                more.body
            );
        }
        for s in &first.host.services {
            assert!(
                !more
                    .body
                    .contains(&format!("<td>{}</td><td>{}</td>", s.port, s.protocol)),
                "the first page's {}/{} is not repeated",
                s.port,
                s.protocol
            );
        }
        // Matched evidence in result rows, with the spec's labels.
        let asn = host.network.as_ref().expect("a network").asn;
        let rows = browser.get(&search_url(&app, &format!("asn:{asn}"))).await;
        assert_eq!(rows.status, 200, "{}", rows.body);
        assert!(
            [
                "Research-dataset best ASN",
                "BGP best ASN",
                "Network/location ASN"
            ]
            .iter()
            .any(|l| rows.body.contains(&format!("<li>{l}: AS{asn}</li>"))),
            "{}",
            rows.body
        );
        let org = host
            .whois
            .as_ref()
            .and_then(|w| w.organization.clone())
            .expect("a WHOIS organisation");
        let rows = browser
            .get(&search_url(
                &app,
                &format!("organization:\"{org}\" port:443"),
            ))
            .await;
        assert_eq!(rows.status, 200, "{}", rows.body);
        assert!(
            rows.body.contains(&format!(": {}</li>", html(&org)))
                && ["AS organization", "WHOIS description", "Network provider"]
                    .iter()
                    .any(|l| rows.body.contains(&format!("<li>{l}: "))),
            "{}",
            rows.body
        );
        if let Some(d) = host.domains.iter().find(|d| d.source.as_str() == "domain") {
            let rows = browser
                .get(&search_url(&app, &format!("domain:{}", d.name)))
                .await;
            assert_eq!(rows.status, 200, "{}", rows.body);
            assert!(
                rows.body
                    .contains(&format!("<li>Stored domain: {}</li>", d.name)),
                "{}",
                rows.body
            );
            // The test's resolver knows no name: DNS said "not found", and the page says so
            // beside the stored domain scans' hosts.
            assert!(
                rows.body.contains(
                    "<p class=\"note domain-resolution\" data-status=\"not_found\">DNS \
                     resolution: the name was not found"
                ),
                "{}",
                rows.body
            );
        }
        // The panel for an address without a host, in the spec's words.
        let none = browser
            .get_foreign(&app.url("/app/host?ip=192.0.2.1"))
            .await;
        assert!(none.body.contains("No stored hosts"), "{}", none.body);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_already_shown_come_back_free_and_new_pages_are_charged() {
    on_each_backend("web_pages", |fixture| async move {
        let search = service(&fixture);
        let app = App::embedded_searching(&fixture, search.clone()).await;
        let email = "pia@example.com";
        let (browser, _) = signed_in(&app, email).await;
        let state = &fixture.state;

        let before = used(&search, state, email).await;
        let first = browser.get(&search_url(&app, "port:443")).await;
        assert_eq!(first.status, 200, "{}", first.body);
        assert_eq!(
            used(&search, state, email).await,
            before + 1,
            "page 1: one charge"
        );
        // Its audit record holds the browser's address (the test browser is on loopback).
        let account = account_of(state, email).await;
        let records = state.audit_records(Some(account.id), 10).await.unwrap();
        let record = records
            .iter()
            .find(|r| r.entry.operation == periscope_state::Operation::Search)
            .unwrap_or_else(|| panic!("no search audit record: {records:?}"));
        assert_eq!(record.entry.channel, periscope_state::Channel::Web);
        assert_eq!(record.entry.client, Some("127.0.0.1".parse().unwrap()));
        // The list rows: preview services with the matched ones marked.
        assert!(
            first
                .body
                .contains("<li class=\"matched\"><span class=\"badge\">Matched</span> 443/")
        );
        assert!(first.body.contains("(port:443)"), "the match reason");
        assert!(
            first
                .body
                .contains("data-fragment=\"/app/count?q=port%3A443\"")
        );
        assert!(
            first
                .body
                .contains("data-fragment=\"/app/facets?q=port%3A443\"")
        );
        assert!(first.body.contains("aria-label=\"Selected host\""));

        let next = href(&first, "next").expect("a next page");
        let second = browser.get(&app.url(&next)).await;
        assert_eq!(second.status, 200, "{}", second.body);
        assert_eq!(
            used(&search, state, email).await,
            before + 2,
            "page 2: one charge"
        );
        let prev = href(&second, "prev").expect("a previous page");
        assert_eq!(prev, "/?q=port%3A443&page=1");

        // Previous page, Back (the same URL again) and Next from page 1: no charge.
        let again = browser.get(&app.url(&prev)).await;
        assert_eq!(again.status, 200, "{}", again.body);
        assert_eq!(first_row_ip(&again), first_row_ip(&first));
        let back = browser.get(&app.url(&next)).await;
        assert_eq!(back.status, 200, "{}", back.body);
        assert_eq!(first_row_ip(&back), first_row_ip(&second));
        assert_eq!(
            used(&search, state, email).await,
            before + 2,
            "nothing charged"
        );

        // Page 3 is new: one charge.
        let third = browser.get(&app.url(&href(&second, "next").unwrap())).await;
        assert_eq!(third.status, 200, "{}", third.body);
        assert_eq!(used(&search, state, email).await, before + 3);

        // Another session has no such pages: page 2 without its cursor has expired.
        let (other, _) = signed_in(&app, "quinn@example.com").await;
        let gone = other.get(&app.url("/?q=port%3A443&page=2")).await;
        assert_eq!(gone.status, 410, "{}", gone.body);
        assert!(gone.body.contains("This result page has expired"));
        assert!(
            gone.body
                .contains("href=\"/?q=port%3A443\">Run the search again")
        );

        // The total: free, "N hosts" (exact here).
        let count = browser
            .get_foreign(&app.url("/app/count?q=port%3A443"))
            .await;
        assert_eq!(count.status, 200);
        let now = Timestamp::from_unix(real_now()).unwrap();
        let q = periscope_query::parse("port:443").unwrap();
        let n = data().engine.count(&q, now).unwrap().value;
        // Grouped by thousands, as everywhere in the application ("19,349 hosts").
        let digits = n.to_string();
        let grouped: Vec<&str> = digits
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let noun = if n == 1 { "host" } else { "hosts" };
        assert!(
            count
                .body
                .contains(&format!(">{} {noun}</span>", grouped.join(","))),
            "{}",
            count.body
        );
        assert!(
            count.body.contains(&format!("data-value=\"{n}\"")),
            "{}",
            count.body
        );
        let bad = browser.get_foreign(&app.url("/app/count?q=1.2.3.4")).await;
        assert!(bad.body.contains("Total unavailable"), "{}", bad.body);
        assert_eq!(
            used(&search, state, email).await,
            before + 3,
            "the total is free"
        );

        // The panel fragment without a session: 401 ended.
        let anonymous = Browser::new();
        let ended = anonymous
            .get_foreign(&app.url("/app/host?ip=1.2.3.4"))
            .await;
        assert_eq!(ended.status, 401);
        assert_eq!(ended.headers["x-periscope-session"], "ended");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_filter_checks_each_field_and_suggested_filters_rerun() {
    on_each_backend("web_filters", |fixture| async move {
        let search = service(&fixture);
        let app = App::embedded_searching(&fixture, search.clone()).await;
        let email = "ravi@example.com";
        let (browser, _) = signed_in(&app, email).await;
        let before = used(&search, &fixture.state, email).await;

        // Refusals: the spec's message, the input kept, nothing charged.
        for (field, value, title) in [
            ("port", "70000", "Invalid port"),
            ("port", "", "Invalid port"),
            ("protocol", "gopher", "Unsupported protocol"),
            ("product", "ng\"inx", "Invalid product"),
            (
                "certificate.name",
                "*.example.com",
                "Invalid certificate name",
            ),
            ("organization", "Ex*", "Invalid organization"),
            ("country", "Germany", "Invalid country"),
            ("cpe", "nginx", "Invalid CPE"),
            ("cve", "CVE-21-1", "Invalid CVE"),
            ("cvss", "", "Invalid CVSS"),
            ("port", "22", "Field already used"),
        ] {
            let fields = [
                ("base", "port:22"),
                ("field", field),
                ("value", value),
                ("protocol", value),
                ("cvss_min", "9.5"),
                ("cvss_max", "2"),
            ];
            let page = browser.get(&filter_url(&app, &fields)).await;
            assert_eq!(page.status, 422, "{field}: {}", page.body);
            assert!(
                page.body.contains(&format!(
                    "<p class=\"filter-error\" role=\"alert\" id=\"filter-error\">{title}:"
                )),
                "{field}={value}: {}",
                page.body
            );
            assert!(
                page.body.contains(&format!("value=\"{}\"", html(value))),
                "{field}: the input is kept"
            );
            assert!(
                page.body
                    .contains(&format!("<option value=\"{field}\" selected>"))
            );
        }
        // Three filters: the form asks to remove one.
        let full = browser
            .get(&filter_url(
                &app,
                &[
                    ("base", "port:22 protocol:ssh country:DE"),
                    ("field", "cve"),
                    ("value", "CVE-2021-44228"),
                ],
            ))
            .await;
        assert_eq!(full.status, 422);
        assert!(
            full.body.contains("Remove a filter before adding another"),
            "{}",
            full.body
        );
        assert_eq!(
            used(&search, &fixture.state, email).await,
            before,
            "refusals are free"
        );

        // Accepted: a redirect to the combined search; after an ASN search, a new filter search.
        let ok = browser
            .get(&filter_url(
                &app,
                &[
                    ("base", "port:22"),
                    ("field", "protocol"),
                    ("protocol", "ssh"),
                ],
            ))
            .await;
        assert_eq!(ok.status, 303, "{}", ok.body);
        assert_eq!(ok.location(), "/?q=port%3A22+protocol%3Assh");
        let new = browser
            .get(&filter_url(
                &app,
                &[("base", "asn:64894"), ("field", "country"), ("value", "DE")],
            ))
            .await;
        assert_eq!(new.location(), "/?q=country%3ADE");

        // A filter page shows chips that remove their clause; three filters ask to remove one.
        let three = browser
            .get(&search_url(&app, "port:22 protocol:ssh exploit:no"))
            .await;
        assert_eq!(three.status, 200, "{}", three.body);
        assert!(
            three.body.contains("aria-label=\"Remove port:22\""),
            "{}",
            three.body
        );
        assert!(
            three
                .body
                .contains("href=\"/?q=protocol%3Assh+exploit%3Ano\"")
        );
        assert!(three.body.contains("Remove a filter before adding another"));
        // An ASN page has no chips, no Suggested Filters, but a total and Add filter.
        let asn = browser.get(&search_url(&app, "asn:64894")).await;
        assert!(!asn.body.contains("class=\"chips\"") && !asn.body.contains("/app/facets"));
        assert!(asn.body.contains("/app/count?q=asn%3A64894"));
        assert!(asn.body.contains("action=\"/filter\""));

        // Suggested Filters: the six groups with counts; a value adds its clause; Applied removes.
        let facets = browser
            .get_foreign(&app.url("/app/facets?q=port%3A443"))
            .await;
        assert_eq!(facets.status, 200, "{}", facets.body);
        for field in ["port", "protocol", "product", "country", "cvss", "exploit"] {
            assert!(
                facets.body.contains(&format!("data-field=\"{field}\"")),
                "{field}"
            );
        }
        assert!(
            facets.body.contains("<span class=\"badge\">Applied</span>"),
            "{}",
            facets.body
        );
        assert!(
            facets.body.contains("class=\"facet applied\" href=\"/\""),
            "removing the only clause"
        );
        assert!(
            facets.body.contains("href=\"/?q=port%3A443+protocol%3A"),
            "{}",
            facets.body
        );
        let now = Timestamp::from_unix(real_now()).unwrap();
        let fq = periscope_query::parse("port:443").unwrap();
        let expected = data().engine.facets(fq.as_filter().unwrap(), now).unwrap();
        for g in &expected.groups {
            for item in &g.items {
                assert!(
                    facets.body.contains(&format!(
                        "<span class=\"value\">{}</span>",
                        html(&item.value)
                    )),
                    "{}",
                    item.value
                );
            }
        }
        let full = browser
            .get_foreign(&app.url("/app/facets?q=port%3A443+protocol%3Ahttps+exploit%3Ano"))
            .await;
        assert!(
            full.body.contains("Remove a filter before adding another"),
            "{}",
            full.body
        );
        assert!(
            !full.body.contains("class=\"facet\" href"),
            "nothing to add: {}",
            full.body
        );
        assert_eq!(
            used(&search, &fixture.state, email).await,
            before + 2,
            "two searches ran (three filters, the ASN); the facets are free"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inactive_account_and_an_expired_session_mid_search() {
    on_each_backend("web_search_conditions", |fixture| async move {
        let app = App::embedded_searching(&fixture, service(&fixture)).await;
        let email = "sol@example.com";
        let password = "a long enough password 3";
        let (browser, _) = signed_in(&app, email).await;

        // Page 1, then the session idles out before page 2.
        let first = browser.get(&search_url(&app, "port:443")).await;
        assert_eq!(first.status, 200);
        let next = href(&first, "next").unwrap();
        app.clock.advance(periscope_web::DEFAULT_IDLE_SECS + 1);
        let panel = browser
            .get_foreign(&app.url(&format!("/app/host?ip={}", first_row_ip(&first))))
            .await;
        assert_eq!(panel.status, 401, "{}", panel.body);
        assert_eq!(panel.headers["x-periscope-session"], "ended");
        let expired = browser.get(&app.url(&next)).await;
        assert!(
            expired.body.contains("Your session expired"),
            "{}",
            expired.body
        );
        // Signing in again returns to page 2 of the search.
        let start = {
            let at = expired.body.find("href=\"/signin?").unwrap() + 6;
            let end = expired.body[at..].find('"').unwrap();
            expired.body[at..at + end].replace("&amp;", "&")
        };
        let (back_to, _, _, _) = sign_in_via_web(&app, &browser, &start, email, password).await;
        assert_eq!(back_to, next);
        let second = browser.get(&app.url(&back_to)).await;
        assert_eq!(second.status, 200, "{}", second.body);
        assert!(second.body.contains("Hosts 26–50"), "{}", second.body);

        // An inactive account: the spec's message, on the page and in the panel.
        let account = account_of(&fixture.state, email).await;
        fixture
            .state
            .set_access(account.id, Access::Inactive)
            .await
            .unwrap();
        let refused = browser.get(&search_url(&app, "port:22")).await;
        assert_eq!(refused.status, 403, "{}", refused.body);
        assert!(
            refused
                .body
                .contains("Your account cannot search right now")
        );
        let panel = browser.get_foreign(&app.url("/app/host?ip=1.2.3.4")).await;
        assert!(
            panel.body.contains("Your account cannot search right now"),
            "{}",
            panel.body
        );
    })
    .await;
}
