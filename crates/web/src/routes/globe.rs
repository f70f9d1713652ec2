//! The Globe view of a search (spec §11–§12): exposure only, free of charge. [`section`] renders
//! the Globe's markup inside the search page (a canvas with an accessible name, zoom buttons,
//! the Global / Regional / Local indicator, the totals, a loading indicator, an error notice
//! and the list of the clusters shown); `assets/globe.js` draws it and asks
//! `GET /app/exposure` ([`exposure`]) for each level of detail as the user zooms in. The JSON
//! is the API's exposure answer ([`ExposureResponse`]) run through the same
//! [`SearchService::exposure`](periscope_service::SearchService::exposure) with the signed-in
//! account as caller; a refusal is `{title, message}` in the spec's web wording with the API's
//! status.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use periscope_api_types::{ExposureResponse, WebWording};
use periscope_query::{Field, Query};
use periscope_service::{ExposureRequest, ServiceError};

use crate::assets::href;
use crate::extract::{Params, Search, SignedFragment};
use crate::html::{column_heads, secure_headers};
use crate::routes::search::{error_wording, search_href};

/// The assets a page with the Globe loads after `app.js`, in order.
pub(crate) const ASSETS: &[&str] = &[
    "globe.css",
    "d3-array.min.js",
    "d3-geo.min.js",
    "topojson-client.min.js",
    "globe.js",
];

/// How long the script waits for a level of detail before it says the search timed out.
pub(crate) const TIMEOUT_MS: u32 = 10_000;

/// Whether a cluster's hosts are the search narrowed by `country:XX`: only a filter query takes
/// another clause (exact-IP, CIDR, domain and ASN searches are standalone, spec "Query
/// language"), and only while it has no country clause and fewer than three clauses.
fn takes_country(query: &Query) -> bool {
    query
        .as_filter()
        .is_some_and(|f| !f.is_full() && f.get(Field::Country).is_none())
}

/// The Globe section for the prefixed query `text` (`query` parsed). `data-results` is the
/// search's Results view; with `data-add-country` the script links a cluster to the Results
/// of the search with its country's clause added, otherwise to `data-results`.
pub(crate) fn section(text: &str, query: &Query) -> Markup {
    html! {
        section.globe aria-label="Globe" data-query=(text) data-endpoint="/app/exposure"
            data-timeout-ms=(TIMEOUT_MS) data-land=(href("land-110m.json"))
            data-land-fine=(href("land-50m.json")) data-results=(search_href(text, None, 1))
            data-add-country[takes_country(query)] {
            div.globe-bar {
                p.globe-totals aria-live="polite" { "Loading the Globe…" }
                ol.globe-levels aria-label="Detail" {
                    li data-level="global" aria-current="true" { "Global" }
                    li data-level="regional" { "Regional" }
                    li data-level="local" { "Local" }
                }
                div.globe-zoom role="group" aria-label="Zoom" {
                    button type="button" class="button" data-zoom="in" aria-label="Zoom in" disabled { "+" }
                    button type="button" class="button" data-zoom="out" aria-label="Zoom out" disabled { "−" }
                }
            }
            div.globe-stage {
                canvas tabindex="0" role="img" width="640" height="640"
                    aria-label="Globe of where the matching hosts are. Drag or use the arrow keys \
                    to turn it; the + and − keys or the wheel zoom in and out. The clusters are \
                    listed below; each leads to its hosts." {}
                p.globe-loading role="status" {
                    span.spinner aria-hidden="true" {}
                    span.globe-loading-text { "Loading Global detail…" }
                }
                div.globe-error role="alert" {}
                div.globe-tip aria-hidden="true" hidden {}
            }
            p.note.globe-bounded hidden {
                "More than 500 clusters match at this detail: only the 500 largest are drawn. \
                 The totals count every matching host."
            }
            noscript {
                p.note {
                    "The Globe needs JavaScript. The Results view lists the matching hosts \
                     without it."
                }
            }
            table.globe-clusters {
                caption { "Clusters in view, most hosts first" }
                (column_heads(&["Cluster (its hosts)", "Hosts", "Services"]))
                tbody {}
            }
        }
    }
}

/// The parameters of `GET /app/exposure`: `q`, and `resolution` (default `global`, as in the
/// API); anything else is ignored.
#[derive(Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub(crate) struct ExposureParams {
    q: String,
    resolution: String,
}

impl Default for ExposureParams {
    fn default() -> Self {
        Self {
            q: String::new(),
            resolution: "global".into(),
        }
    }
}

fn json(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    secure_headers(headers);
    response
}

/// The `{title, message}` body of a refusal: the first condition's title, and every sentence.
fn error_body(e: &ServiceError) -> (StatusCode, String) {
    let (status, conditions) = error_wording(e);
    let title = conditions
        .first()
        .map_or(WebWording::UNAVAILABLE.title, |(t, _)| *t);
    let message = conditions
        .iter()
        .flat_map(|(_, lines)| lines.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let body = serde_json::json!({ "title": title, "message": message });
    (status, body.to_string())
}

/// `GET /app/exposure?q=<prefixed query>&resolution=global|regional|local`: the exposure of
/// the query at that level, free of charge.
pub(crate) async fn exposure(
    SignedFragment(signed): SignedFragment,
    search: Search,
    Params(params): Params<ExposureParams>,
) -> Response {
    let service = match search.service() {
        Ok(service) => service,
        Err(e) => {
            let (status, body) = error_body(&e);
            return json(status, body);
        }
    };
    let request_id = &search.request_id;
    let answer = service
        .exposure(
            &search.caller(&signed),
            request_id,
            ExposureRequest {
                query: &params.q,
                resolution: &params.resolution,
            },
        )
        .await;
    match answer {
        Ok(exposure) => {
            let response = ExposureResponse::new(request_id, &exposure);
            match serde_json::to_string(&response) {
                Ok(body) => json(StatusCode::OK, body),
                Err(e) => {
                    tracing::error!(error = %e, "cannot encode an exposure");
                    let (status, body) = error_body(&ServiceError::Unavailable("encoding".into()));
                    json(status, body)
                }
            }
        }
        Err(e) => {
            let (status, body) = error_body(&e);
            json(status, body)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use periscope_service::FieldViolation;

    #[test]
    fn params_default_to_global() {
        let parse = crate::extract::parse_query::<ExposureParams>;
        let p = parse(Some("q=port%3A443&x=1"));
        assert_eq!(
            (p.q.as_str(), p.resolution.as_str()),
            ("port:443", "global")
        );
        let p = parse(Some("resolution=local&q=asn%3A1"));
        assert_eq!((p.q.as_str(), p.resolution.as_str()), ("asn:1", "local"));
    }

    #[test]
    fn refusals_carry_the_spec_wording() {
        let (status, body) = error_body(&ServiceError::Timeout);
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(v["title"], "Search timed out", "{body}");
        assert!(
            v["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        let (status, body) = error_body(&ServiceError::Invalid(vec![FieldViolation {
            field: "query",
            code: "exposure_not_supported",
            detail: "domain searches have no Globe view".into(),
        }]));
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(v["title"], "Globe view not available", "{body}");
        assert_eq!(v["message"], "domain searches have no Globe view");
    }

    fn parsed(text: &str) -> Query {
        periscope_query::parse(text).expect("a query")
    }

    #[test]
    fn clusters_lead_to_the_search_narrowed_by_country_where_it_takes_a_clause() {
        for (text, adds) in [
            ("port:443", true),
            ("port:443 protocol:https", true),
            ("organization:\"Example\"", true),
            ("port:443 country:DE", false),
            ("port:443 protocol:https exploit:no", false),
            ("asn:64894", false),
            ("192.0.2.0/24", false),
            ("192.0.2.1", false),
        ] {
            let html = section(text, &parsed(text)).into_string();
            assert_eq!(html.contains(" data-add-country"), adds, "{text}: {html}");
            let results = html! { (search_href(text, None, 1)) }.into_string();
            assert!(
                html.contains(&format!("data-results=\"{results}\"")),
                "{text}: {html}"
            );
        }
    }

    #[test]
    fn the_section_escapes_the_query_and_names_its_parts() {
        let text = "product:\"a<b\"";
        let html = section(text, &parsed(text)).into_string();
        assert!(
            html.contains("data-query=\"product:&quot;a&lt;b&quot;\""),
            "{html}"
        );
        for part in [
            "<canvas",
            "aria-label=\"Zoom in\"",
            "aria-label=\"Zoom out\"",
            "role=\"alert\"",
            "class=\"globe-tip\"",
            "<noscript>",
            "class=\"globe-clusters\"",
            "data-timeout-ms=\"10000\"",
        ] {
            assert!(html.contains(part), "{part} in {html}");
        }
    }
}
