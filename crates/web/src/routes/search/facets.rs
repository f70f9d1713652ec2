//! What a results page loads independently, free of charge (spec §11, "Limits"): Suggested
//! Filters (`GET /app/facets?q=…`, the six facet groups of a filter search, each value a link
//! that reruns with its clause added, or without it when Applied) and the total
//! (`GET /app/count?q=…`, "About N hosts" / "N hosts", or "Total unavailable").

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use periscope_index::{FacetField, FacetStatus, Relation};
use periscope_service::ServiceError;

use super::filters::REMOVE_ONE;
use super::search_href;
use crate::extract::{Params, Search, SignedFragment};
use crate::words::{self, country_name};

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

/// The `?q=…` of the routes that complete a results page: the prefixed query (empty if none).
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct QueryText {
    #[serde(default)]
    q: String,
}

impl QueryText {
    fn text(&self) -> &str {
        self.q.trim()
    }
}

fn label(f: FacetField) -> &'static str {
    match f {
        FacetField::Port => "Port",
        FacetField::Protocol => "Protocol",
        FacetField::Product => "Product",
        FacetField::Country => "Country",
        FacetField::Cvss => "CVSS",
        FacetField::Exploit => "Exploit",
    }
}

/// "1 host", "19,349 hosts", or "About 19,349 hosts" for an estimate.
fn hosts(n: u64, relation: Relation) -> String {
    let hosts = words::count(n, "host", "hosts");
    match relation {
        Relation::Exact => hosts,
        Relation::Approximate => format!("About {hosts}"),
    }
}

/// `GET /app/count?q=…` — the total of an ASN or filter search.
pub(crate) async fn count(
    SignedFragment(signed): SignedFragment,
    search: Search,
    Params(q): Params<QueryText>,
) -> Response {
    let answer = match search.service() {
        Ok(service) => {
            service
                .count(&search.caller(&signed), &search.request_id, q.text())
                .await
        }
        Err(e) => Err(e),
    };
    match answer {
        // The value and its relation as data too: the script words the page's range with
        // them ("26–50 of about 19,349").
        Ok(c) => fragment(
            StatusCode::OK,
            html! {
                span.total-value data-value=(c.value) data-relation=(match c.relation {
                    Relation::Exact => "exact",
                    Relation::Approximate => "approximate",
                }) { (hosts(c.value, c.relation)) }
            },
        ),
        Err(e) => {
            tracing::warn!(error = %e, "the total of a search failed");
            fragment(
                StatusCode::OK,
                html! { span.total-unavailable { "Total unavailable" } },
            )
        }
    }
}

/// `GET /app/facets?q=…` — the Suggested Filters panel of a filter search.
pub(crate) async fn facets(
    SignedFragment(signed): SignedFragment,
    search: Search,
    Params(q): Params<QueryText>,
) -> Response {
    let answer = match search.service() {
        Ok(service) => {
            service
                .facets(&search.caller(&signed), &search.request_id, q.text())
                .await
        }
        Err(e) => Err(e),
    };
    let answer = match answer {
        Ok(a) => a,
        Err(e @ ServiceError::FacetTimeout) => {
            let title = e.error_code().web().map_or("", |w| w.title);
            return fragment(
                StatusCode::OK,
                html! { p.facets-status role="status" { (title) } },
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "suggested filters failed");
            return fragment(
                StatusCode::OK,
                html! { p.facets-status role="status" { "Suggested Filters unavailable" } },
            );
        }
    };
    fragment(StatusCode::OK, render(&answer))
}

/// The Suggested Filters panel of a facets answer.
fn render(answer: &periscope_service::FacetsAnswer) -> Markup {
    let full = answer.query.is_full();
    let groups = &answer.facets.groups;
    let unavailable = groups.iter().any(|g| g.status == FacetStatus::Unavailable);
    let timed_out = groups.iter().any(|g| g.status == FacetStatus::TimedOut);
    html! {
        @if unavailable {
            p.facets-status role="status" { "Suggested Filters partially unavailable" }
        } @else if timed_out {
            p.facets-status role="status" { "Suggested Filters partially timed out" }
        }
        @if full {
            p.facets-full role="status" { (REMOVE_ONE) "." }
        }
        div.facet-groups {
            @for g in groups {
                section.facet-group data-field=(g.field.as_str()) {
                    h3 { (label(g.field)) }
                    @match g.status {
                        FacetStatus::Unavailable => p.note { "Unavailable" },
                        FacetStatus::TimedOut => p.note { "Timed out" },
                        FacetStatus::Available => {
                            @if g.items.is_empty() {
                                p.note { "No values" }
                            } @else {
                                ul {
                                    @for item in &g.items {
                                        (facet_item(answer, g.field, item, full))
                                    }
                                }
                            }
                        },
                    }
                }
            }
        }
    }
}

/// One value of a facet group: a link adding its clause, a link removing it when Applied, or
/// the value alone when the query takes no further clause.
fn facet_item(
    answer: &periscope_service::FacetsAnswer,
    field: FacetField,
    item: &periscope_index::FacetValue,
    full: bool,
) -> Markup {
    let count = hosts(item.unique_hosts.value, item.unique_hosts.relation);
    let clause = item.clause.to_string();
    // A country's code, and its English name beside it.
    let name = country_name(&item.value).filter(|_| field == FacetField::Country);
    let value = html! {
        span.value { (item.value) }
        @if let Some(name) = name {
            " " span.country-name { (name) }
        }
    };
    if item.selected {
        let href = match answer.query.without(item.clause.field()) {
            Some(rest) => search_href(&rest.to_string(), None, 1),
            None => "/".to_owned(),
        };
        html! {
            li {
                a.facet.applied href=(href) aria-label={ "Remove " (clause) " (Applied)" } {
                    (value) " " span.badge { "Applied" } " " span.count { (count) }
                }
            }
        }
    } else if full {
        html! {
            li { span.facet.disabled { (value) " " span.count { (count) } } }
        }
    } else {
        match answer.query.with_clause(item.clause.clone()) {
            Ok(q) => html! {
                li {
                    a.facet href=(search_href(&q.to_string(), None, 1))
                        aria-label={ "Add " (clause) " (" (count) ")" } {
                        (value) " " span.count { (count) }
                    }
                }
            },
            Err(_) => html! {},
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use periscope_index::{FacetGroup, Facets};
    use periscope_service::FacetsAnswer;

    fn answer(statuses: [FacetStatus; 6]) -> String {
        let query = periscope_query::parse("port:443")
            .ok()
            .and_then(|q| q.as_filter().cloned())
            .expect("a filter query");
        let groups = FacetField::ALL
            .into_iter()
            .zip(statuses)
            .map(|(field, status)| FacetGroup {
                field,
                status,
                items: Vec::new(),
            })
            .collect();
        render(&FacetsAnswer {
            query,
            facets: Facets { groups },
        })
        .into_string()
    }

    #[test]
    fn country_values_are_named_and_counts_agree_in_number() {
        let query = periscope_query::parse("port:443")
            .ok()
            .and_then(|q| q.as_filter().cloned())
            .expect("a filter query");
        let clause = |text: &str| {
            periscope_query::parse(text)
                .ok()
                .and_then(|q| q.as_filter().map(|f| f.clauses()[0].clone()))
                .expect("a clause")
        };
        let item = |value: &str, field: &str, n: u64| periscope_index::FacetValue {
            value: value.into(),
            clause: clause(&format!("{field}:{value}")),
            selected: false,
            unique_hosts: periscope_index::Count {
                value: n,
                relation: Relation::Exact,
            },
        };
        let groups = FacetField::ALL
            .into_iter()
            .map(|field| FacetGroup {
                field,
                status: FacetStatus::Available,
                items: match field {
                    FacetField::Country => {
                        vec![item("DE", "country", 19_349), item("AU", "country", 1)]
                    }
                    FacetField::Port => vec![item("22", "port", 2)],
                    _ => Vec::new(),
                },
            })
            .collect();
        let html = render(&FacetsAnswer {
            query,
            facets: Facets { groups },
        })
        .into_string();
        assert!(
            html.contains(
                "<span class=\"value\">DE</span> <span class=\"country-name\">Germany</span> \
                 <span class=\"count\">19,349 hosts</span>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"country-name\">Australia</span>"),
            "{html}"
        );
        assert!(html.contains(">1 host</span>"), "{html}");
        // Only countries are named: port 22 is no country code, nor is a value elsewhere.
        assert_eq!(html.matches("country-name").count(), 2, "{html}");
        assert!(html.contains(">2 hosts</span>"), "{html}");
    }

    #[test]
    fn groups_that_did_not_come_back_are_named() {
        use FacetStatus::{Available as A, TimedOut as T, Unavailable as U};
        let html = answer([A, U, A, A, A, A]);
        assert!(
            html.contains("Suggested Filters partially unavailable"),
            "{html}"
        );
        assert!(
            html.contains("data-field=\"protocol\"><h3>Protocol</h3><p class=\"note\">Unavailable")
        );
        let html = answer([A, A, A, T, A, A]);
        assert!(
            html.contains("Suggested Filters partially timed out"),
            "{html}"
        );
        let html = answer([A; 6]);
        assert!(!html.contains("partially"), "{html}");
        assert_eq!(html.matches("No values").count(), 6);
    }
}
