//! The search bar of the signed-in home page (`GET /?q=…`): entry recognition (spec §10), one
//! charged search per new results page through the API's [`SearchService`], and the results —
//! the host view for an exact IP, a host list of [`PAGE_HOSTS`] otherwise, with the active
//! filters, Add filter, the total and Suggested Filters — or the condition in the wording of
//! the spec's web application messages, which the error table holds
//! ([`WebWording`], see [`error_wording`]). Pages already shown come back from [`cache`] free.
//!
//! Submodules: [`host`] (host views, the Selected host panel), [`filters`] (Add filter and the
//! chips), [`facets`] (Suggested Filters and the total), [`cache`] (pages already shown).

pub(crate) mod cache;
pub(crate) mod facets;
pub(crate) mod filters;
pub(crate) mod host;

use axum::http::StatusCode;
use periscope_api_types::WebWording;
use periscope_index::HostResult;
use periscope_query::{Entry, Query, QueryKind, ViolationCode, recognize};
use periscope_service::{
    DetailRequest, DomainResolution, FieldViolation, SearchRequest, ServiceError,
};

use crate::Web;
use crate::extract::Search;
use crate::html::column_heads;
use crate::session::Signed;
use crate::words::{count, grouped};
use cache::CachedPage;
use filters::{FilterInput, add_filter, chips};
use host::{
    DETAIL_SERVICES, Heading, host_view, matched_evidence, network, row_place, service_label,
};
use maud::{Markup, PreEscaped, html};

/// Hosts per results page in the browser (spec "Limits").
pub(crate) const PAGE_HOSTS: u32 = 25;

/// The search parameters of `GET /` (`?q=…&cursor=…&page=…&view=globe`), read leniently:
/// anything else is ignored, an empty cursor is none, a page that is not a number from 1 is 1.
#[derive(Debug, serde::Deserialize)]
#[serde(from = "RawParams")]
pub(crate) struct Params {
    /// The entry as typed (or the prefixed form, from a link).
    pub(crate) q: Option<String>,
    /// The next page's cursor.
    pub(crate) cursor: Option<String>,
    /// The page number shown (1 for the first).
    pub(crate) page: u32,
    /// Whether `page` was in the URL: a link between pages (shown again from the cache when
    /// it can be), not a new search from the bar.
    pub(crate) page_given: bool,
    /// Results or Globe (`view=globe`).
    pub(crate) view: View,
}

/// The two views of a search (spec §11): the host list (or host view), and the Globe.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    /// The results: host view for an exact IP, host list otherwise. A charged search.
    #[default]
    Results,
    /// The Globe (exposure only, free); for every supported search but a domain search.
    Globe,
}

/// The query string of `GET /` as sent.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct RawParams {
    q: Option<String>,
    cursor: Option<String>,
    page: Option<String>,
    view: Option<String>,
}

impl From<RawParams> for Params {
    fn from(raw: RawParams) -> Self {
        Self {
            q: raw.q,
            cursor: raw.cursor.filter(|c| !c.is_empty()),
            page: raw
                .page
                .as_deref()
                .and_then(|p| p.parse().ok())
                .filter(|p| *p >= 1)
                .unwrap_or(1),
            page_given: raw.page.is_some(),
            view: match raw.view.as_deref() {
                Some("globe") => View::Globe,
                _ => View::Results,
            },
        }
    }
}

impl Default for Params {
    fn default() -> Self {
        RawParams::default().into()
    }
}

pub(crate) fn search_href(q: &str, cursor: Option<&str>, page: u32) -> String {
    view_href(q, cursor, page, View::Results)
}

/// A link to page `page` of a search: with the cursor that fetches it when it is new, and
/// always with its number, so that a page already shown comes from the cache.
fn page_href(q: &str, cursor: Option<&str>, page: u32) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    s.append_pair("q", q);
    if let Some(c) = cursor {
        s.append_pair("cursor", c);
    }
    s.append_pair("page", &page.to_string());
    format!("/?{}", s.finish())
}

fn view_href(q: &str, cursor: Option<&str>, page: u32, view: View) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    s.append_pair("q", q);
    if view == View::Globe {
        s.append_pair("view", "globe");
    }
    if let Some(c) = cursor {
        s.append_pair("cursor", c);
        s.append_pair("page", &page.to_string());
    }
    format!("/?{}", s.finish())
}

pub(crate) fn form(shown: &str) -> Markup {
    form_in(shown, View::Results)
}

/// The search bar; in the Globe view it carries `view=globe`, so that another search submitted
/// there stays in the Globe (a domain search still returns to Results).
fn form_in(shown: &str, view: View) -> Markup {
    html! {
        form.bar method="get" action="/" role="search" {
            label for="q" class="visually-hidden" { "Search" }
            input id="q" name="q" type="search" value=(shown) autocomplete="off"
                placeholder="IP, CIDR, domain, AS number or filters (port:443 country:DE)";
            @if view == View::Globe {
                input type="hidden" name="view" value="globe";
            }
            button.button type="submit" { "Search" }
        }
    }
}

/// The Results / Globe switch of a search that has both (every kind but a domain search).
fn views(text: &str, view: View) -> Markup {
    html! {
        nav.views aria-label="Views" {
            @for (v, label) in [(View::Results, "Results"), (View::Globe, "Globe")] {
                @if v == view {
                    a.tab aria-current="page" href=(view_href(text, None, 1, v)) { (label) }
                } @else {
                    a.tab href=(view_href(text, None, 1, v)) { (label) }
                }
            }
        }
    }
}

/// A condition: a title and sentences, with `role="alert"`.
fn condition(title: &str, lines: &[String]) -> Markup {
    html! {
        section.condition role="alert" {
            h2 { (title) }
            @for l in lines { p { (l) } }
        }
    }
}

fn violation_title(v: &FieldViolation) -> &'static str {
    ViolationCode::ALL
        .iter()
        .find(|c| c.as_str() == v.code && c.field() == v.field)
        .map_or("Invalid search", |c| c.title())
}

/// The spec's wording of a refused or failed search, and the page's status.
pub(crate) fn error_html(e: &ServiceError) -> (StatusCode, Markup) {
    let (status, conditions) = error_wording(e);
    let html = html! { @for (t, l) in &conditions { (condition(t, l)) } };
    (status, html)
}

/// The status and the spec's wording of a refused or failed search or exposure: one title
/// with its sentences per condition (one per violation of an invalid query). Shared by the
/// pages ([`error_html`]) and the Globe's JSON (`routes::globe`).
///
/// The words and the status are the error table's ([`ServiceError::error_code`],
/// [`ErrorCode::web`](periscope_api_types::ErrorCode::web)), but for what only the page has: each violation's own title, the
/// day's count before a reached limit's sentence, an exact IP without a current host (an
/// empty result, 200), and a code without words of its own ([`WebWording::UNAVAILABLE`],
/// 503: a signed-in person holds no key, so `unauthorized` is a fault on the service's side).
pub(crate) fn error_wording(e: &ServiceError) -> (StatusCode, Vec<(&'static str, Vec<String>)>) {
    if let ServiceError::Invalid(violations) = e {
        let conditions = violations
            .iter()
            .map(|v| (violation_title(v), vec![v.detail.clone()]))
            .collect();
        return (StatusCode::UNPROCESSABLE_ENTITY, conditions);
    }
    let code = e.error_code();
    let Some(WebWording { title, sentence }) = code.web() else {
        let WebWording { title, sentence } = WebWording::UNAVAILABLE;
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            vec![(title, vec![sentence.into()])],
        );
    };
    let status = match e {
        ServiceError::HostNotFound => StatusCode::OK,
        _ => StatusCode::from_u16(code.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
    };
    let line = match e {
        ServiceError::LimitReached(usage) => format!(
            "You have used {} of your {} today. {sentence}",
            grouped(u64::from(usage.used)),
            count(u64::from(usage.limit), "search", "searches")
        ),
        _ => sentence.into(),
    };
    (status, vec![(title, vec![line])])
}

/// The host list: one row per host (address, network, place, up to five services with the
/// matched ones marked, matched evidence), the address linking to its exact-IP view (the
/// script opens the Selected host panel instead), and the page links.
fn host_list(text: &str, hosts: &[HostResult], next: Option<&str>, page: u32) -> Markup {
    if hosts.is_empty() {
        return condition(
            "No stored hosts",
            &["Nothing current matches this search.".into()],
        );
    }
    let range = page_range(page, hosts.len(), next.is_none());
    html! {
        section.results aria-label="Hosts" data-page-url=(page_href(text, None, page)) {
            p.note { (range) ". Select a host to see all its services." }
            table.hosts {
                (column_heads(&["Host", "Network", "Location", "Services", "Matched evidence"]))
                tbody {
                    @for r in hosts { (host_row(r)) }
                }
            }
            nav.pages aria-label="Result pages" {
                (range) " "
                @if page > 1 {
                    a.button.secondary rel="prev" href=(page_href(text, None, page - 1)) {
                        "Previous page"
                    }
                    " "
                }
                @if let Some(cursor) = next {
                    a.button.secondary rel="next" href=(page_href(text, Some(cursor), page + 1)) {
                        "Next page"
                    }
                }
            }
        }
    }
}

/// One row of the host list.
fn host_row(r: &HostResult) -> Markup {
    let h = &r.host;
    let ip = h.ip.to_string();
    html! {
        tr.host-row data-ip=(ip) {
            td { a.host-link href=(search_href(&ip, None, 1)) data-ip=(ip) { (ip) } }
            td { (network(h)) }
            td { (row_place(h)) }
            td {
                ul.services-preview {
                    @for s in h.services.iter().take(5) {
                        @if s.match_reasons.is_empty() {
                            li { (service_label(s)) }
                        } @else {
                            li.matched {
                                span.badge { "Matched" } " " (service_label(s)) " "
                                span.reasons { "(" (s.match_reasons.join(", ")) ")" }
                            }
                        }
                    }
                    @if h.services_has_more {
                        li.note { "More services…" }
                    }
                }
            }
            td {
                ul.evidence-list {
                    @for e in matched_evidence(r) { li { (e) } }
                }
            }
        }
    }
}

/// Where the page is among the hosts: "Hosts 26–50" ("Host 51" alone), with the total when it is known — "of
/// 37" on the last page (the pages before it held [`PAGE_HOSTS`] each). Otherwise the total
/// comes from the count, which the script adds ("of 19,349", or "of about 19,349" for an
/// estimate) from the data attributes when `/app/count` answers.
fn page_range(page: u32, shown: usize, last_page: bool) -> Markup {
    let first = u64::from(page.saturating_sub(1)) * u64::from(PAGE_HOSTS) + 1;
    let last = first + (shown as u64).saturating_sub(1);
    let hosts = if first == last {
        format!("Host {}", grouped(first))
    } else {
        format!("Hosts {}–{}", grouped(first), grouped(last))
    };
    html! {
        span.page-range data-first=(first) data-last=(last)
            data-total=[last_page.then_some(last)] {
            (hosts)
            @if last_page { " of " (grouped(last)) }
        }
    }
}

/// "This result page has expired", with a link that runs the search again.
fn expired(text: &str) -> (StatusCode, Markup) {
    let (status, html) = error_html(&ServiceError::CursorGone);
    (
        status,
        html! {
            (html)
            p { a.button href=(search_href(text, None, 1)) { "Run the search again" } }
        },
    )
}

/// The search section of the home page for `params`: the bar (showing the prefixed form
/// that ran) and what the search answered.
pub(crate) async fn search_section(
    web: &Web,
    signed: &Signed,
    search: &Search,
    params: &Params,
) -> (StatusCode, Markup) {
    let entry = params.q.as_deref().map(str::trim).unwrap_or("");
    if entry.is_empty() {
        return (
            StatusCode::OK,
            html! { (form("")) (add_filter(&FilterInput::default(), false, None)) },
        );
    }
    let (text, query) = match recognize(entry) {
        Entry::Search { query, text } => (text, query),
        Entry::NotGuessed(ng) => {
            let html = html! {
                (form(entry))
                section.condition role="status" {
                    p { (ng.hint()) }
                    @for s in &ng.suggestions {
                        a.suggestion href=(search_href(s, None, 1)) { (s) } " "
                    }
                }
            };
            return (StatusCode::OK, html);
        }
        Entry::Invalid(e) => {
            let (status, html) = error_html(&ServiceError::from(e));
            return (status, html! { (form(entry)) (html) });
        }
    };
    let kind = query.kind();
    let view = if kind == QueryKind::Domain {
        View::Results
    } else {
        params.view
    };
    let bar = html! {
        (form_in(&text, view))
        @if kind != QueryKind::Domain { (views(&text, view)) }
    };
    if view == View::Globe {
        let globe = crate::routes::globe::section(&text, &query);
        return (StatusCode::OK, html! { (bar) (globe) });
    }
    // The active filters, Add filter and the total.
    let full = matches!(&query, Query::Filter(f) if f.is_full());
    let input = FilterInput {
        base: text.clone(),
        ..FilterInput::default()
    };
    let head = html! {
        (bar)
        div.toolbar {
            (chips(&query))
            (add_filter(&input, full, None))
            @if matches!(kind, QueryKind::Asn | QueryKind::Filter) {
                p.total aria-live="polite"
                    data-fragment={ "/app/count?" (query_string(&text)) } {}
            }
        }
    };
    let (status, rest) = answer_section(web, signed, search, params, &text, &query).await;
    (status, html! { (head) (rest) })
}

/// What the search of `text` answered, under the bar and the toolbar: the page shown before
/// (free), the host view of an exact IP, the results, or the condition.
async fn answer_section(
    web: &Web,
    signed: &Signed,
    search: &Search,
    params: &Params,
    text: &str,
    query: &Query,
) -> (StatusCode, Markup) {
    let kind = query.kind();
    let service = match search.service() {
        Ok(service) => service,
        Err(e) => return error_html(&e),
    };
    let caller = search.caller(signed);
    let request_id = &search.request_id;
    if kind != QueryKind::Ip && params.page_given {
        match cache::shown(web, signed, text, params.page).await {
            // Markup this module rendered before, kept in the state database.
            Ok(Some(shown)) => return (StatusCode::OK, PreEscaped(shown)),
            Ok(None) => {}
            Err(e) => {
                tracing::error!(error = %e, "cannot read the result pages shown");
                return error_html(&ServiceError::Unavailable("state database".into()));
            }
        }
        if params.page > 1 && params.cursor.is_none() {
            return expired(text);
        }
    }
    let answer = service
        .search(
            &caller,
            request_id,
            SearchRequest {
                query: text,
                limit: PAGE_HOSTS,
                cursor: params.cursor.as_deref(),
            },
        )
        .await;
    let answer = match answer {
        Ok(a) => a,
        Err(ServiceError::CursorGone) => return expired(text),
        Err(e) => return error_html(&e),
    };
    if kind == QueryKind::Ip {
        if answer.hosts.is_empty() {
            return error_html(&ServiceError::HostNotFound);
        }
        let detail = service
            .host_detail(
                &caller,
                request_id,
                DetailRequest {
                    ip: text,
                    limit: DETAIL_SERVICES,
                    cursor: None,
                },
            )
            .await;
        return match detail {
            Ok(d) => (
                StatusCode::OK,
                host_view(&d.host, d.next.as_deref(), Heading::H2),
            ),
            Err(e) => error_html(&e),
        };
    }
    let shown = CachedPage {
        hosts: answer.hosts,
        next: answer.next_cursor.as_ref().map(|c| c.to_string()),
        resolution: answer.domain_resolution,
    };
    let rendered = results(text, query, &shown, params.page);
    cache::remember(web, signed, text, params.page, &rendered.0).await;
    (StatusCode::OK, rendered)
}

fn query_string(text: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("q", text)
        .finish()
}

/// What the DNS lookup of a domain search found, in words (spec "Domain resolution"): the
/// results also come from stored domain scans, whatever DNS said.
fn resolution_note(resolution: &DomainResolution) -> Markup {
    let said = match resolution {
        DomainResolution::Resolved(addresses) => match addresses.len() {
            1 => "DNS resolution: the name resolved to 1 public address just now.".to_owned(),
            n => format!("DNS resolution: the name resolved to {n} public addresses just now."),
        },
        DomainResolution::NotFound => {
            "DNS resolution: the name was not found (no such name, or no A or AAAA record).".into()
        }
        DomainResolution::TimedOut => "DNS resolution: DNS did not answer in time.".into(),
        DomainResolution::Failed => "DNS resolution: the lookup failed.".into(),
        DomainResolution::NoPublicAddress => {
            "DNS resolution: the name resolved only to private or reserved addresses, which are \
             never searched."
                .into()
        }
    };
    html! {
        p.note.domain-resolution data-status=(resolution.status()) {
            (said) " Stored domain scans are searched whatever DNS said."
        }
    }
}

/// The host list beside the Selected host panel, and Suggested Filters after a filter search.
fn results(text: &str, query: &Query, shown: &CachedPage, page: u32) -> Markup {
    html! {
        @if let Some(resolution) = &shown.resolution { (resolution_note(resolution)) }
        @if matches!(query, Query::Filter(_)) && !shown.hosts.is_empty() {
            section.facets aria-labelledby="facets-title"
                data-fragment={ "/app/facets?" (query_string(text)) } {
                h2 id="facets-title" { "Suggested Filters" }
                div.facets-body {}
            }
        }
        div.results-layout {
            (host_list(text, &shown.hosts, shown.next.as_deref(), page))
            aside.host-panel aria-label="Selected host" hidden {
                div.panel-head {
                    h2.panel-title { "Selected host" }
                    button type="button" class="button secondary close-panel"
                        aria-label="Close the Selected host panel" { "Close" }
                }
                div.panel-body aria-live="polite" {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_read_q_cursor_and_page() {
        let parse = crate::extract::parse_query::<Params>;
        let p = parse(Some("q=port%3A443+country%3ADE&cursor=sc1_x&page=3&x=1"));
        assert_eq!(p.q.as_deref(), Some("port:443 country:DE"));
        assert_eq!(p.cursor.as_deref(), Some("sc1_x"));
        assert_eq!((p.page, p.page_given, p.view), (3, true, View::Results));
        let p = parse(Some("page=0&cursor=&view=globe"));
        assert_eq!((p.q, p.cursor, p.page), (None, None, 1));
        assert_eq!((p.page_given, p.view), (true, View::Globe));
        let p = parse(Some("page=x&view=list"));
        assert_eq!((p.page, p.page_given, p.view), (1, true, View::Results));
        let p = parse(None);
        assert_eq!((p.page, p.page_given), (1, false));
    }

    #[test]
    fn violations_take_the_spec_titles() {
        let (status, html) = error_html(&ServiceError::Invalid(vec![FieldViolation {
            field: "query",
            code: "cidr_too_broad",
            detail: "a /8".into(),
        }]));
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        let html = html.into_string();
        assert!(html.contains("CIDR too broad"), "{html}");
        let (_, html) = error_html(&ServiceError::CursorGone);
        assert!(html.into_string().contains("This result page has expired"));
    }

    #[test]
    fn domain_resolution_is_worded_for_each_status() {
        let ip = "240.0.0.1".parse().unwrap();
        let notes: Vec<String> = [
            DomainResolution::Resolved(vec![ip]),
            DomainResolution::Resolved(vec![ip, "240.0.0.2".parse().unwrap()]),
            DomainResolution::NotFound,
            DomainResolution::TimedOut,
            DomainResolution::Failed,
            DomainResolution::NoPublicAddress,
        ]
        .iter()
        .map(|r| resolution_note(r).into_string())
        .collect();
        assert!(
            notes[0].contains("to 1 public address just now"),
            "{}",
            notes[0]
        );
        assert!(notes[1].contains("to 2 public addresses"), "{}", notes[1]);
        assert!(notes[2].contains("not found"), "{}", notes[2]);
        assert!(notes[3].contains("did not answer in time"), "{}", notes[3]);
        assert!(notes[4].contains("failed"), "{}", notes[4]);
        assert!(notes[5].contains("private or reserved"), "{}", notes[5]);
        for (note, status) in notes[1..].iter().zip(DomainResolution::STATUSES) {
            assert!(
                note.contains(&format!("data-status=\"{status}\"")),
                "{note}"
            );
            assert!(note.contains("Stored domain scans are searched"), "{note}");
        }
    }

    #[test]
    fn pages_say_where_they_are() {
        let range = |page, shown, last| page_range(page, shown, last).into_string();
        assert!(range(1, 25, false).contains(">Hosts 1–25</span>"));
        assert!(range(2, 25, false).contains("data-first=\"26\" data-last=\"50\">"));
        let last = range(3, 12, true);
        assert!(last.contains("data-total=\"62\""), "{last}");
        assert!(last.contains(">Hosts 51–62 of 62</span>"), "{last}");
        assert!(range(1, 1, true).contains(">Host 1 of 1</span>"));
        let far = range(41, 25, false);
        assert!(far.contains(">Hosts 1,001–1,025</span>"), "{far}");
    }

    #[test]
    fn next_links_carry_the_prefixed_query() {
        assert_eq!(
            search_href("asn:64894", Some("sc1_abc"), 2),
            "/?q=asn%3A64894&cursor=sc1_abc&page=2"
        );
        assert_eq!(page_href("port:22", None, 3), "/?q=port%3A22&page=3");
    }
}
