//! The Add filter dialog (spec §11) and the active filters: the form (a plain form on the page
//! without script, a `<dialog>` behind an "Add filter" button with `search.js`, which also
//! validates before anything is sent), its server side (`GET /filter?base=…&field=…&value=…`:
//! the clause is checked again, then added to a filter search or started alone after an
//! exact-IP, CIDR, domain or ASN search), and one chip with a remove button per active filter.

use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use periscope_model::ProtocolToken;
use periscope_query::{Field, MAX_CLAUSES, Query, parse};

use super::{form, search_href};
use crate::extract::{Params, SignedPage};
use crate::html::page_with;
use crate::session::redirect;

/// The fields the dialog offers, with their labels.
pub(crate) const FIELDS: [(Field, &str); 10] = [
    (Field::Port, "Port"),
    (Field::Protocol, "Protocol"),
    (Field::Product, "Product"),
    (Field::CertificateName, "Certificate name"),
    (Field::Organization, "Organization"),
    (Field::Country, "Country"),
    (Field::Cpe, "CPE"),
    (Field::Cve, "CVE"),
    (Field::Cvss, "CVSS"),
    (Field::Exploit, "Exploit"),
];

/// The message shown when three filters are active (spec §11).
pub(crate) const REMOVE_ONE: &str = "Remove a filter before adding another";

/// What the form sent (and shows again when it is refused); a field not sent is empty.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(default)]
pub(crate) struct FilterInput {
    pub(crate) base: String,
    pub(crate) field: String,
    pub(crate) value: String,
    pub(crate) protocol: String,
    pub(crate) exploit: String,
    pub(crate) cvss_min: String,
    pub(crate) cvss_max: String,
}

/// A refusal: the spec's title and what to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) title: String,
    pub(crate) detail: String,
}

fn refusal(title: impl Into<String>, detail: impl Into<String>) -> Refusal {
    Refusal {
        title: title.into(),
        detail: detail.into(),
    }
}

fn unquoted(v: &str) -> &str {
    let v = v.trim();
    v.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(v)
}

/// The clause text for the form's inputs, checked by the query language alone.
fn clause(input: &FilterInput) -> Result<(Field, String), Refusal> {
    let Some(field) = FIELDS
        .iter()
        .map(|(f, _)| *f)
        .find(|f| f.name() == input.field)
    else {
        return Err(refusal("Choose a field", "Pick what to filter on."));
    };
    let title = field.value_code().title();
    let value = match field {
        Field::Protocol => input.protocol.trim().to_owned(),
        Field::Exploit => input.exploit.trim().to_owned(),
        Field::Cvss => {
            let (min, max) = (input.cvss_min.trim(), input.cvss_max.trim());
            if min.is_empty() || max.is_empty() {
                return Err(refusal(
                    title,
                    "Enter a minimum and a maximum score from 0.0 to 10.0.",
                ));
            }
            format!("{min}-{max}")
        }
        Field::Organization | Field::Product | Field::Cpe => {
            let v = unquoted(&input.value);
            if v.is_empty() {
                return Err(refusal(title, "Enter a value."));
            }
            format!("\"{v}\"")
        }
        _ => input.value.trim().to_owned(),
    };
    if value.is_empty() || value == "\"\"" {
        return Err(refusal(title, "Enter a value."));
    }
    let text = format!("{}:{value}", field.name());
    match parse(&text) {
        Ok(Query::Filter(q)) if q.clauses().len() == 1 && q.get(field).is_some() => {
            Ok((field, q.to_string()))
        }
        Ok(_) => Err(refusal(title, "Enter one value, without other filters.")),
        Err(e) => Err(refusal(
            title,
            e.violations.first().map_or_else(
                || "The value is not accepted.".to_owned(),
                |v| v.detail.clone(),
            ),
        )),
    }
}

/// The search the form asks for: the clause added to a filter search, or alone after any
/// other search (which cannot be combined with filters).
pub(crate) fn combined(input: &FilterInput) -> Result<String, Refusal> {
    let (field, clause_text) = clause(input)?;
    let base = parse(input.base.trim()).ok();
    let Some(Query::Filter(base)) = base else {
        return Ok(clause_text);
    };
    if base.get(field).is_some() {
        return Err(refusal(
            "Field already used",
            format!(
                "This search already filters on {}. Remove that filter first to use another value.",
                field.name()
            ),
        ));
    }
    if base.clauses().len() >= MAX_CLAUSES {
        return Err(refusal(
            REMOVE_ONE,
            format!("A search combines at most {MAX_CLAUSES} filters."),
        ));
    }
    match parse(&format!("{base} {clause_text}")) {
        Ok(q) => Ok(q.to_string()),
        Err(e) => Err(refusal(
            "Invalid search",
            e.violations
                .first()
                .map_or_else(String::new, |v| v.detail.clone()),
        )),
    }
}

/// One option of a select, selected when it is the value sent.
fn option(value: &str, label: &str, selected: &str) -> Markup {
    html! { option value=(value) selected[value == selected] { (label) } }
}

/// The Add filter form for a search whose prefixed form is `base` (empty: none). `full`: three
/// filters are active, so the form asks to remove one instead. `refused`: the message of a
/// refused attempt, shown with the inputs kept.
pub(crate) fn add_filter(input: &FilterInput, full: bool, refused: Option<&Refusal>) -> Markup {
    html! {
        div.add-filter {
            button type="button" class="button secondary open-filter" hidden
                aria-haspopup="dialog" { "Add filter" }
            dialog.filter-dialog open aria-labelledby="filter-title" {
                div.filter-body {
                    h2 id="filter-title" { "Add filter" }
                    @if full {
                        p.filter-full role="status" {
                            (REMOVE_ONE) ": a search combines at most " (MAX_CLAUSES) " filters."
                        }
                        form method="dialog" {
                            button class="button secondary close-filter" type="submit" { "Close" }
                        }
                    } @else {
                        (filter_form(input, refused))
                    }
                }
            }
        }
    }
}

/// The form of the Add filter dialog, with the inputs sent and the refusal.
fn filter_form(input: &FilterInput, refused: Option<&Refusal>) -> Markup {
    let used: Vec<&str> = match parse(input.base.trim()) {
        Ok(Query::Filter(f)) => f.clauses().iter().map(|c| c.field().name()).collect(),
        _ => Vec::new(),
    };
    html! {
        form.filter-form method="get" action="/filter" novalidate data-used=(used.join(" ")) {
            input type="hidden" name="base" value=(input.base);
            p.filter-error role="alert" id="filter-error" {
                @if let Some(r) = refused { (r.title) ": " (r.detail) }
            }
            div.filter-input {
                label for="filter-field" { "Field" }
                select id="filter-field" name="field" aria-describedby="filter-error" {
                    @for (f, label) in FIELDS { (option(f.name(), label, &input.field)) }
                }
            }
            div.filter-input data-fields="port product certificate.name organization country cpe cve" {
                label for="filter-value" {
                    "Value " span.hint {
                        "(port, product, certificate name, organization, country, CPE, CVE)"
                    }
                }
                input id="filter-value" name="value" type="text" autocomplete="off"
                    value=(input.value) aria-describedby="filter-error";
            }
            div.filter-input data-fields="protocol" {
                label for="filter-protocol" { "Protocol" }
                select id="filter-protocol" name="protocol" {
                    @for p in ProtocolToken::all() { (option(p.as_str(), p.as_str(), &input.protocol)) }
                }
            }
            div.filter-input data-fields="exploit" {
                label for="filter-exploit" { "Exploit known" }
                select id="filter-exploit" name="exploit" {
                    (option("yes", "yes", &input.exploit))
                    (option("no", "no", &input.exploit))
                }
            }
            fieldset.filter-input data-fields="cvss" {
                legend { "Maximum CVSS" }
                label for="filter-cvss-min" { "Minimum" }
                input id="filter-cvss-min" name="cvss_min" type="text" inputmode="decimal"
                    size="4" value=(input.cvss_min) placeholder="7.0";
                label for="filter-cvss-max" { "Maximum" }
                input id="filter-cvss-max" name="cvss_max" type="text" inputmode="decimal"
                    size="4" value=(input.cvss_max) placeholder="10.0";
            }
            p.filter-actions {
                button.button type="submit" { "Apply filter" }
                " "
                button class="button secondary close-filter" type="button" hidden { "Cancel" }
            }
        }
    }
}

/// One chip per clause of a filter search, each with a button that reruns without it.
pub(crate) fn chips(query: &Query) -> Markup {
    let Query::Filter(f) = query else {
        return html! {};
    };
    html! {
        ul.chips aria-label="Active filters" {
            @for c in f.clauses() {
                @let text = c.to_string();
                li.chip {
                    span { (text) }
                    a.remove href=(match f.without(c.field()) {
                        Some(rest) => search_href(&rest.to_string(), None, 1),
                        None => "/".to_owned(),
                    }) aria-label={ "Remove " (text) } title={ "Remove " (text) } { "×" }
                }
            }
        }
    }
}

/// `GET /filter` — the Add filter form's server side: a redirect to the combined search, or
/// the form again with the spec's message and the inputs kept (422).
pub(crate) async fn apply(
    SignedPage(signed): SignedPage,
    Params(input): Params<FilterInput>,
) -> Response {
    let refused = match combined(&input) {
        Ok(q) => return redirect(&search_href(&q, None, 1)),
        Err(r) => r,
    };
    let base = input.base.trim();
    let base_query = parse(base).ok();
    let full = matches!(&base_query, Some(Query::Filter(f)) if f.is_full());
    let body = html! {
        main.search aria-label="Search" {
            (form(base))
            @if let Some(q) = &base_query { (chips(q)) }
            section.filter-page { (add_filter(&input, full, Some(&refused))) }
            @if !base.is_empty() {
                p {
                    a href=(search_href(base, None, 1)) { "Back to the results of " (base) }
                }
            }
        }
    };
    page_with(
        StatusCode::UNPROCESSABLE_ENTITY,
        &refused.title,
        Some(&signed.top()),
        body,
        &["search.css", "search.js"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(base: &str, field: &str, value: &str) -> FilterInput {
        FilterInput {
            base: base.into(),
            field: field.into(),
            value: value.into(),
            protocol: value.into(),
            exploit: value.into(),
            ..FilterInput::default()
        }
    }

    #[test]
    fn clauses_are_checked_then_combined() {
        let ok = |base, field, value, expect: &str| {
            assert_eq!(combined(&input(base, field, value)).as_deref(), Ok(expect));
        };
        ok("port:443", "country", "DE", "port:443 country:DE");
        ok("asn:64500", "port", "22", "port:22");
        ok(
            "",
            "organization",
            "Example Corp",
            "organization:\"Example Corp\"",
        );
        ok("port:22", "protocol", "SSH", "port:22 protocol:ssh");
        ok("", "exploit", "yes", "exploit:yes");
        let cvss = FilterInput {
            field: "cvss".into(),
            cvss_min: "7".into(),
            cvss_max: "10.0".into(),
            ..FilterInput::default()
        };
        assert_eq!(combined(&cvss).as_deref(), Ok("cvss:7.0-10.0"));

        let refused = |base, field, value, title: &str| {
            let r = combined(&input(base, field, value)).unwrap_err();
            assert_eq!(r.title, title, "{field}:{value} → {r:?}");
        };
        refused("", "port", "70000", "Invalid port");
        refused("", "port", "", "Invalid port");
        refused("", "port", "22 country:DE", "Invalid port");
        refused("", "protocol", "gopher", "Unsupported protocol");
        refused("", "country", "de", "Invalid country");
        refused("", "cve", "cve-2021-1", "Invalid CVE");
        refused("", "cpe", "nginx", "Invalid CPE");
        refused(
            "",
            "certificate.name",
            "*.example.com",
            "Invalid certificate name",
        );
        refused("", "organization", "Ex\"ample", "Invalid organization");
        refused("", "product", "", "Invalid product");
        refused("port:22", "port", "23", "Field already used");
        refused(
            "port:22 protocol:ssh country:DE",
            "cve",
            "CVE-2021-44228",
            REMOVE_ONE,
        );
        refused("", "bogus", "x", "Choose a field");
    }
}
