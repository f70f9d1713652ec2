//! The search bar of the signed-in home page (`GET /?q=…`): entry recognition (spec §10), one
//! charged search per results page through the API's [`SearchService`], and the results —
//! the host view for an exact IP, a host list of [`PAGE_HOSTS`] otherwise — or the condition
//! in the wording of the spec's web application messages.

use axum::http::StatusCode;
use periscope_index::HostResult;
use periscope_model::record::{Host, Service};
use periscope_query::{Entry, QueryKind, ViolationCode, recognize};
use periscope_service::{
    Caller, DetailRequest, FieldViolation, SearchRequest, SearchService, ServiceError,
};
use periscope_state::Channel;

use crate::html::escape;
use crate::session::{Signed, random_token};

/// Hosts per results page in the browser (spec "Limits").
pub(crate) const PAGE_HOSTS: u32 = 25;
/// Services shown in the host view.
const DETAIL_SERVICES: u32 = 20;

/// The search parameters of `GET /`.
#[derive(Debug, Default)]
pub(crate) struct Params {
    /// The entry as typed (or the prefixed form, from a link).
    pub(crate) q: Option<String>,
    /// The next page's cursor.
    pub(crate) cursor: Option<String>,
    /// The page number shown (1 for the first).
    pub(crate) page: u32,
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

impl Params {
    /// Reads `q`, `cursor` and `page` from a query string; anything else is ignored.
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let mut out = Self {
            page: 1,
            ..Self::default()
        };
        for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match &*k {
                "q" => out.q = Some(v.into_owned()),
                "cursor" if !v.is_empty() => out.cursor = Some(v.into_owned()),
                "page" => out.page = v.parse().ok().filter(|p| *p >= 1).unwrap_or(1),
                "view" if v == "globe" => out.view = View::Globe,
                _ => {}
            }
        }
        out
    }
}

fn search_href(q: &str, cursor: Option<&str>, page: u32) -> String {
    view_href(q, cursor, page, View::Results)
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

fn form(shown: &str) -> String {
    form_in(shown, View::Results)
}

/// The search bar; in the Globe view it carries `view=globe`, so that another search submitted
/// there stays in the Globe (a domain search still returns to Results).
fn form_in(shown: &str, view: View) -> String {
    let globe = if view == View::Globe {
        "<input type=\"hidden\" name=\"view\" value=\"globe\">"
    } else {
        ""
    };
    format!(
        "<form class=\"bar\" method=\"get\" action=\"/\" role=\"search\">\
         <label for=\"q\" class=\"visually-hidden\">Search</label>\
         <input id=\"q\" name=\"q\" type=\"search\" value=\"{}\" autocomplete=\"off\" \
         placeholder=\"IP, CIDR, domain, AS number or filters (port:443 country:DE)\">{globe}\
         <button class=\"button\" type=\"submit\">Search</button></form>",
        escape(shown)
    )
}

/// The Results / Globe switch of a search that has both (every kind but a domain search).
fn views(text: &str, view: View) -> String {
    let tab = |v: View, label: &str| {
        if v == view {
            format!(
                "<a class=\"tab\" aria-current=\"page\" href=\"{}\">{label}</a>",
                escape(&view_href(text, None, 1, v))
            )
        } else {
            format!(
                "<a class=\"tab\" href=\"{}\">{label}</a>",
                escape(&view_href(text, None, 1, v))
            )
        }
    };
    format!(
        "<nav class=\"views\" aria-label=\"Views\">{}{}</nav>",
        tab(View::Results, "Results"),
        tab(View::Globe, "Globe")
    )
}

/// A condition: a title and sentences, with `role="alert"`.
fn condition(title: &str, lines: &[String]) -> String {
    let mut out = format!(
        "<section class=\"condition\" role=\"alert\"><h2>{}</h2>",
        escape(title)
    );
    for l in lines {
        out.push_str(&format!("<p>{}</p>", escape(l)));
    }
    out.push_str("</section>");
    out
}

fn violation_title(v: &FieldViolation) -> &'static str {
    ViolationCode::ALL
        .iter()
        .find(|c| c.as_str() == v.code && c.field() == v.field)
        .map_or("Invalid search", |c| c.title())
}

/// The spec's wording of a refused or failed search, and the page's status.
pub(crate) fn error_html(e: &ServiceError) -> (StatusCode, String) {
    let (status, conditions) = error_wording(e);
    let html = conditions.iter().map(|(t, l)| condition(t, l)).collect();
    (status, html)
}

/// The status and the spec's wording of a refused or failed search or exposure: one title
/// with its sentences per condition (one per violation of an invalid query). Shared by the
/// pages ([`error_html`]) and the Globe's JSON (`routes::globe`).
pub(crate) fn error_wording(e: &ServiceError) -> (StatusCode, Vec<(&'static str, Vec<String>)>) {
    use ServiceError as E;
    let (status, title, lines): (StatusCode, &str, Vec<String>) = match e {
        E::Invalid(violations) => {
            let conditions = violations
                .iter()
                .map(|v| (violation_title(v), vec![v.detail.clone()]))
                .collect();
            return (StatusCode::UNPROCESSABLE_ENTITY, conditions);
        }
        E::LimitReached(usage) => (
            StatusCode::TOO_MANY_REQUESTS,
            "Search limit reached",
            vec![format!(
                "You have used {} of your {} searches today. Searching resumes at midnight UTC.",
                usage.used, usage.limit
            )],
        ),
        E::UserConcurrency => (
            StatusCode::TOO_MANY_REQUESTS,
            "Too many searches at once",
            vec!["Wait for your other searches to finish, then try again.".into()],
        ),
        E::Capacity => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Search capacity is full",
            vec!["Periscope is running as many searches as it can. Try again shortly.".into()],
        ),
        E::Timeout => (
            StatusCode::GATEWAY_TIMEOUT,
            "Search timed out",
            vec!["Narrow the search (add a filter or a smaller range) and try again.".into()],
        ),
        E::SourceBusy => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Search could not be run just now",
            vec!["The scan data is busy. Try again in a moment; nothing was charged.".into()],
        ),
        E::CursorGone => (
            StatusCode::GONE,
            "This result page has expired",
            vec!["Run the search again to start from the first page.".into()],
        ),
        E::HostNotFound => (
            StatusCode::OK,
            "No stored hosts",
            vec!["Periscope has no current host at this address.".into()],
        ),
        E::PlanExpired => (
            StatusCode::PAYMENT_REQUIRED,
            "Plan expired",
            vec!["Your plan does not currently include search access.".into()],
        ),
        E::PlanUnavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Entitlements temporarily unreadable",
            vec!["Your plan could not be confirmed just now. Try again shortly.".into()],
        ),
        E::AccountInactive => (
            StatusCode::FORBIDDEN,
            "Account inactive",
            vec!["Your account cannot search right now.".into()],
        ),
        E::OrganizationRequired => (
            StatusCode::BAD_REQUEST,
            "Organization required",
            vec!["Your account does not belong to exactly one organization.".into()],
        ),
        E::Unauthorized | E::AuditUnavailable | E::FacetTimeout | E::Unavailable(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Search is temporarily unavailable",
            vec!["Try again shortly; nothing was charged.".into()],
        ),
    };
    (status, vec![(title, lines)])
}

fn network(host: &Host) -> String {
    match &host.network {
        Some(n) => match &n.organization {
            Some(org) => format!("AS{} {}", n.asn, escape(org)),
            None => format!("AS{}", n.asn),
        },
        None => String::new(),
    }
}

fn location(host: &Host) -> String {
    let Some(l) = &host.location else {
        return String::new();
    };
    let parts: Vec<&str> = [l.city.as_deref(), l.country_name.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    escape(&parts.join(", "))
}

fn service_label(s: &Service) -> String {
    let mut out = format!("{}/{}", s.port, s.protocol);
    if let Some(p) = &s.product {
        out.push(' ');
        out.push_str(p);
        if let Some(v) = &s.version {
            out.push(' ');
            out.push_str(v);
        }
    }
    escape(&out)
}

/// The host list: one row per host, the address linking to its host view.
fn host_list(text: &str, hosts: &[HostResult], next: Option<&str>, page: u32) -> String {
    if hosts.is_empty() {
        return condition(
            "No stored hosts",
            &["Nothing current matches this search.".into()],
        );
    }
    let mut out = format!(
        "<section class=\"results\" aria-label=\"Hosts\"><p class=\"note\">Page {page}: {} \
         hosts</p><table><thead><tr><th scope=\"col\">Host</th><th scope=\"col\">Network</th>\
         <th scope=\"col\">Location</th><th scope=\"col\">Services</th></tr></thead><tbody>",
        hosts.len()
    );
    for r in hosts {
        let h = &r.host;
        let ip = h.ip.to_string();
        let services: Vec<String> = h.services.iter().map(service_label).collect();
        out.push_str(&format!(
            "<tr class=\"host-row\"><td><a href=\"{href}\">{ip}</a></td><td>{net}</td>\
             <td>{loc}</td><td>{svc}{more}</td></tr>",
            href = escape(&search_href(&ip, None, 1)),
            ip = escape(&ip),
            net = network(h),
            loc = location(h),
            svc = services.join("<br>"),
            more = if h.services_has_more { " …" } else { "" },
        ));
    }
    out.push_str("</tbody></table><nav class=\"pages\" aria-label=\"Result pages\">");
    if page > 1 {
        out.push_str(&format!(
            "<a rel=\"prev\" href=\"{}\">First page</a> ",
            escape(&search_href(text, None, 1))
        ));
    }
    if let Some(cursor) = next {
        out.push_str(&format!(
            "<a rel=\"next\" href=\"{}\">Next page</a>",
            escape(&search_href(text, Some(cursor), page + 1))
        ));
    }
    out.push_str("</nav></section>");
    out
}

/// The host investigation view of one address.
fn host_view(host: &Host) -> String {
    let ip = escape(&host.ip.to_string());
    let mut out = format!(
        "<section class=\"host\" aria-label=\"Host {ip}\"><h2>{ip}</h2><dl>\
         <dt>Network</dt><dd>{}</dd><dt>Location</dt><dd>{}</dd>",
        network(host),
        location(host)
    );
    if let Some(r) = &host.reverse_dns {
        out.push_str(&format!(
            "<dt>Reverse DNS</dt><dd>{}</dd>",
            escape(r.as_ref())
        ));
    }
    if !host.domains.is_empty() {
        let names: Vec<String> = host.domains.iter().map(|d| escape(&d.name)).collect();
        out.push_str(&format!("<dt>Domains</dt><dd>{}</dd>", names.join(", ")));
    }
    out.push_str(
        "</dl><table><thead><tr><th scope=\"col\">Port</th><th scope=\"col\">Protocol</th>\
         <th scope=\"col\">Product</th><th scope=\"col\">Certificate names</th>\
         <th scope=\"col\">Vulnerabilities</th><th scope=\"col\">Observed</th></tr></thead><tbody>",
    );
    for s in &host.services {
        let product = match (&s.product, &s.version) {
            (Some(p), Some(v)) => format!("{p} {v}"),
            (Some(p), None) => p.clone(),
            _ => String::new(),
        };
        let vulns = match &s.vulnerabilities {
            Some(v) => {
                let mut t = format!("{} CVEs", v.cve_count);
                if let Some(c) = &v.max_cvss {
                    t.push_str(&format!(", max CVSS {c}"));
                }
                if v.has_exploits {
                    t.push_str(", exploits known");
                }
                t
            }
            None => String::new(),
        };
        out.push_str(&format!(
            "<tr class=\"service\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            s.port,
            escape(&s.protocol.to_string()),
            escape(&product),
            escape(&s.certificate_names.join(", ")),
            escape(&vulns),
            escape(&s.observed_at.to_string()),
        ));
    }
    out.push_str("</tbody></table>");
    if host.services_has_more {
        out.push_str("<p class=\"note\">More services exist than this page shows.</p>");
    }
    out.push_str("</section>");
    out
}

/// The search section of the home page for `params`: the bar (showing the prefixed form
/// that ran) and what the search answered.
pub(crate) async fn search_section(
    service: Option<&SearchService>,
    signed: &Signed,
    params: &Params,
) -> (StatusCode, String) {
    let entry = params.q.as_deref().map(str::trim).unwrap_or("");
    if entry.is_empty() {
        return (StatusCode::OK, form(""));
    }
    let (text, kind) = match recognize(entry) {
        Entry::Search { query, text } => (text, query.kind()),
        Entry::NotGuessed(ng) => {
            let mut out = form(entry);
            out.push_str(&format!(
                "<section class=\"condition\" role=\"status\"><p>{}</p>",
                escape(&ng.hint())
            ));
            for s in &ng.suggestions {
                out.push_str(&format!(
                    "<a class=\"suggestion\" href=\"{}\">{}</a> ",
                    escape(&search_href(s, None, 1)),
                    escape(s)
                ));
            }
            out.push_str("</section>");
            return (StatusCode::OK, out);
        }
        Entry::Invalid(e) => {
            let (status, html) = error_html(&ServiceError::from(e));
            return (status, form(entry) + &html);
        }
    };
    let view = if kind == QueryKind::Domain {
        View::Results
    } else {
        params.view
    };
    let mut out = form_in(&text, view);
    if kind != QueryKind::Domain {
        out.push_str(&views(&text, view));
    }
    if view == View::Globe {
        out.push_str(&crate::routes::globe::section(&text));
        return (StatusCode::OK, out);
    }
    let Some(service) = service else {
        let (status, html) = error_html(&ServiceError::Unavailable("no search service".into()));
        return (status, out + &html);
    };
    let caller = Caller {
        account: signed.account.clone(),
        key: None,
        channel: Channel::Web,
    };
    let request_id = random_token().unwrap_or_else(|_| "web".into());
    let answer = service
        .search(
            &caller,
            &request_id,
            SearchRequest {
                query: &text,
                limit: PAGE_HOSTS,
                cursor: params.cursor.as_deref(),
            },
        )
        .await;
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            let (status, html) = error_html(&e);
            return (status, out + &html);
        }
    };
    if kind == QueryKind::Ip {
        if answer.hosts.is_empty() {
            let (status, html) = error_html(&ServiceError::HostNotFound);
            return (status, out + &html);
        }
        let detail = service
            .host_detail(
                &caller,
                &request_id,
                DetailRequest {
                    ip: &text,
                    limit: DETAIL_SERVICES,
                    cursor: None,
                },
            )
            .await;
        return match detail {
            Ok(d) => {
                out.push_str(&host_view(&d.host));
                (StatusCode::OK, out)
            }
            Err(e) => {
                let (status, html) = error_html(&e);
                (status, out + &html)
            }
        };
    }
    let next = answer.next_cursor.as_ref().map(|c| c.to_string());
    out.push_str(&host_list(
        &text,
        &answer.hosts,
        next.as_deref(),
        params.page,
    ));
    (StatusCode::OK, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_read_q_cursor_and_page() {
        let p = Params::parse(Some("q=port%3A443+country%3ADE&cursor=sc1_x&page=3&x=1"));
        assert_eq!(p.q.as_deref(), Some("port:443 country:DE"));
        assert_eq!(p.cursor.as_deref(), Some("sc1_x"));
        assert_eq!(p.page, 3);
        let p = Params::parse(Some("page=0&cursor="));
        assert_eq!((p.q, p.cursor, p.page), (None, None, 1));
    }

    #[test]
    fn violations_take_the_spec_titles() {
        let (status, html) = error_html(&ServiceError::Invalid(vec![FieldViolation {
            field: "query",
            code: "cidr_too_broad",
            detail: "a /8".into(),
        }]));
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(html.contains("CIDR too broad"), "{html}");
        let (_, html) = error_html(&ServiceError::CursorGone);
        assert!(html.contains("This result page has expired"));
    }

    #[test]
    fn next_links_carry_the_prefixed_query() {
        assert_eq!(
            search_href("asn:64894", Some("sc1_abc"), 2),
            "/?q=asn%3A64894&cursor=sc1_abc&page=2"
        );
    }
}
