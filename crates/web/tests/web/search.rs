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
    SearchService::builder(
        Arc::clone(&data().engine) as Arc<dyn ScanIndex>,
        fixture.state.clone(),
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

fn rows(page: &Page) -> usize {
    page.body.matches("class=\"host-row\"").count()
}

fn next_href(page: &Page) -> Option<String> {
    let at = page.body.find("rel=\"next\" href=\"")? + 17;
    let end = page.body[at..].find('"')?;
    Some(page.body[at..at + end].replace("&amp;", "&"))
}

fn search_url(app: &App, q: &str) -> String {
    let q: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
    app.url(&format!("/?q={q}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_bar_recognises_runs_pages_and_words_conditions() {
    on_each_backend("web_search", |fixture| async move {
        let app = App::embedded(&fixture, None).await;
        assert!(app.web.set_search(service(&fixture)));
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
        // A cursor is used once: the same next page again has expired.
        let again = browser.get(&app.url(&next)).await;
        assert_eq!(again.status, 410, "{}", again.body);
        assert!(again.body.contains("This result page has expired"));

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
