//! The public pages of spec §6, shown with or without a session (the top bar then shows the
//! account menu, or a "Sign in" link): `GET /terms` (the sign-in service's terms),
//! `GET /quickstart` (getting a key and a working `curl` command for every API route, on this
//! instance's public URL) and `GET /release-notes` (`docs/release-notes.md`, compiled in).

use axum::extract::State as AxumState;
use axum::http::StatusCode;
use axum::response::Response;

use maud::{Markup, html};

use crate::Web;
use crate::extract::MaybeSigned;
use crate::html::page;
use crate::session::redirect;

/// The release notes, compiled into the binary.
const RELEASE_NOTES: &str = include_str!("../../../../docs/release-notes.md");

/// `GET /terms`: the terms are the sign-in service's (the version accepted at registration is
/// its version), so the page is its page: a redirect to `{issuer}/terms`, the same origin's
/// `/auth/terms` for the embedded sign-in service. An external provider serves its terms there
/// too (docs/web.md).
pub(crate) async fn terms(AxumState(web): AxumState<Web>) -> Response {
    let issuer = &web.inner.issuer;
    let local = issuer
        .strip_prefix(web.inner.public_url.as_str())
        .filter(|path| path.starts_with('/'));
    match local {
        Some(path) => redirect(&format!("{path}/terms")),
        None => redirect(&format!("{issuer}/terms")),
    }
}

/// One example of the quickstart: what it shows, the route it calls, the shell commands.
struct Example {
    route: &'static str,
    title: &'static str,
    text: &'static str,
    commands: String,
}

fn json_post(base: &str, path: &str, body: &str) -> String {
    format!(
        "curl --fail-with-body -sS -H \"Authorization: Bearer $KEY\" \\\n  \
         -H 'Content-Type: application/json' \\\n  -d '{body}' \\\n  {base}{path}"
    )
}

/// The examples for every API route, on the instance at `base`.
fn examples(base: &str) -> Vec<Example> {
    let bearer = |path: &str| {
        format!("curl --fail-with-body -sS -H \"Authorization: Bearer $KEY\" \\\n  {base}{path}")
    };
    vec![
        Example {
            route: "GET /v1/search/capabilities",
            title: "What can be searched",
            text: "The query registry version, the catalog version and the supported protocols. Free.",
            commands: bearer("/v1/search/capabilities"),
        },
        Example {
            route: "GET /v1/allowance",
            title: "Searches left today",
            text: "Your daily limit, what is used and when it resets (midnight UTC). Free; without \
                   an allowance member no daily limit applies.",
            commands: bearer("/v1/allowance"),
        },
        Example {
            route: "POST /v1/search",
            title: "Search, and the next page by cursor",
            text: "Each answered page is one search of your allowance (the first and the next \
                   here: two). The first answer's next_cursor, sent back with the same query \
                   and limit, asks for the next page.",
            commands: format!(
                "CURSOR=$({first} | grep -o '\"next_cursor\":\"[^\"]*\"' | cut -d '\"' -f 4)\n{next}",
                first = json_post(base, "/v1/search", r#"{"query":"port:443","limit":10}"#),
                next = json_post(
                    base,
                    "/v1/search",
                    r#"{"query":"port:443","limit":10,"cursor":"'"$CURSOR"'"}"#
                ),
            ),
        },
        Example {
            route: "POST /v1/search/count",
            title: "Count the matching hosts",
            text: "An estimate of unique hosts for an ASN or filter query. Free.",
            commands: json_post(base, "/v1/search/count", r#"{"query":"port:443"}"#),
        },
        Example {
            route: "POST /v1/search/facets",
            title: "Suggested filters (facets)",
            text: "The top values per port, protocol, product, country, CVSS and exploit for a \
                   filter query. Free.",
            commands: json_post(base, "/v1/search/facets", r#"{"query":"port:443"}"#),
        },
        Example {
            route: "POST /v1/search/exposure",
            title: "Exposure by location (the Globe)",
            text: "Hosts and services per map cell at global, regional or local detail. Free.",
            commands: json_post(
                base,
                "/v1/search/exposure",
                r#"{"query":"port:443","resolution":"global"}"#,
            ),
        },
        Example {
            route: "POST /v1/hosts/detail",
            title: "Every service of one host",
            text: "All current services of an address, 1 to 20 per page. Free; the first line \
                   takes an address from a one-host search, which is charged.",
            commands: format!(
                "IP=$({first} | grep -o '\"ip\":\"[^\"]*\"' | head -n 1 | cut -d '\"' -f 4)\n{detail}",
                first = json_post(base, "/v1/search", r#"{"query":"port:443","limit":1}"#),
                detail = json_post(base, "/v1/hosts/detail", r#"{"ip":"'"$IP"'","limit":20}"#),
            ),
        },
        Example {
            route: "GET /v1/openapi.json",
            title: "The OpenAPI document",
            text: "The API described in OpenAPI 3.1. Needs no key.",
            commands: format!("curl --fail-with-body -sS {base}/v1/openapi.json"),
        },
    ]
}

/// `GET /quickstart`.
pub(crate) async fn quickstart(
    AxumState(web): AxumState<Web>,
    MaybeSigned(signed): MaybeSigned,
) -> Response {
    let base = &web.inner.public_url;
    let body = quickstart_view(base, &examples(base));
    page(
        StatusCode::OK,
        "Quickstart",
        signed.as_ref().map(|s| s.top()).as_ref(),
        body,
    )
}

/// The quickstart for the instance at `base`: getting a key, then `examples`.
fn quickstart_view(base: &str, examples: &[Example]) -> Markup {
    html! {
        main.wide {
            h1 { "Quickstart" }
            p {
                "The API answers JSON under " code { (base) "/v1" } ". Every request but the \
                 OpenAPI document carries a personal API key as a bearer credential."
            }
            h2 { "1. Get a key" }
            ol {
                li {
                    "Sign in, open the account menu (your e-mail address, top right) and choose "
                    a href="/api-access" { "API access" } "."
                }
                li {
                    "Select " strong { "Create key" } ", optionally with a name to tell your keys \
                     apart. The full key is shown once: copy it then."
                }
                li {
                    "Keep it out of source control; revoke it on the same page if you suspect it \
                     was exposed, and create another."
                }
            }
            p { "The examples read the key from the shell variable " code { "KEY" } ":" }
            pre { code { "export KEY=psk_…" } }
            p {
                "The browser and your keys share one allowance of searches a day. Only an \
                 answered search is charged; everything else here is free."
            }
            h2 { "2. Every route" }
            @for example in examples {
                section.example aria-label=(example.route) {
                    h3 { (example.title) " " code { (example.route) } }
                    p { (example.text) }
                    pre { code.curl data-route=(example.route) { (example.commands) } }
                }
            }
            p.note {
                "A refused request answers with a JSON error body (" code { "code" } ", "
                code { "message" } "); " code { "--fail-with-body" } " prints it and makes curl \
                 exit non-zero."
            }
        }
    }
}

/// One block of the release notes.
enum Block {
    Heading(usize, String),
    Paragraph(String),
    List(Vec<String>),
}

/// A line's text with its `code` spans.
fn inline(line: &str) -> Markup {
    html! {
        @for (i, part) in line.split('`').enumerate() {
            @if i % 2 == 1 { code { (part) } } @else { (part) }
        }
    }
}

/// The release notes' Markdown as HTML: `#` headings, `-` lists, paragraphs and `code` spans,
/// which is all the file uses. Everything is escaped.
fn markdown(text: &str) -> Markup {
    let mut blocks: Vec<Block> = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut item: Vec<&str> = Vec::new();
    let mut list: Option<Vec<String>> = None;
    let flush = |blocks: &mut Vec<Block>,
                 list: &mut Option<Vec<String>>,
                 paragraph: &mut Vec<&str>,
                 item: &mut Vec<&str>| {
        if !item.is_empty() {
            if let Some(list) = list.as_mut() {
                list.push(item.join(" "));
            }
            item.clear();
        }
        if !paragraph.is_empty() {
            blocks.push(Block::Paragraph(paragraph.join(" ")));
            paragraph.clear();
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("- ") {
            flush(&mut blocks, &mut list, &mut paragraph, &mut item);
            if list.is_none() {
                list = Some(Vec::new());
            }
            item.push(rest);
        } else if list.is_some() && !trimmed.is_empty() && line.starts_with(' ') {
            item.push(trimmed);
        } else {
            if list.is_some() {
                flush(&mut blocks, &mut list, &mut paragraph, &mut item);
                blocks.extend(list.take().map(Block::List));
            }
            let level = trimmed.chars().take_while(|c| *c == '#').count();
            if trimmed.is_empty() {
                flush(&mut blocks, &mut list, &mut paragraph, &mut item);
            } else if level > 0 && trimmed[level..].starts_with(' ') {
                flush(&mut blocks, &mut list, &mut paragraph, &mut item);
                blocks.push(Block::Heading(
                    level.min(6),
                    trimmed[level..].trim().to_owned(),
                ));
            } else {
                paragraph.push(trimmed);
            }
        }
    }
    flush(&mut blocks, &mut list, &mut paragraph, &mut item);
    blocks.extend(list.take().map(Block::List));
    html! {
        @for block in &blocks {
            @match block {
                Block::Heading(1, t) => h1 { (inline(t)) },
                Block::Heading(2, t) => h2 { (inline(t)) },
                Block::Heading(3, t) => h3 { (inline(t)) },
                Block::Heading(4, t) => h4 { (inline(t)) },
                Block::Heading(5, t) => h5 { (inline(t)) },
                Block::Heading(_, t) => h6 { (inline(t)) },
                Block::Paragraph(t) => p { (inline(t)) },
                Block::List(items) => ul { @for i in items { li { (inline(i)) } } },
            }
        }
    }
}

/// `GET /release-notes`.
pub(crate) async fn release_notes(MaybeSigned(signed): MaybeSigned) -> Response {
    page(
        StatusCode::OK,
        "Release notes",
        signed.as_ref().map(|s| s.top()).as_ref(),
        html! { main.wide { (markdown(RELEASE_NOTES)) } },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_headings_lists_paragraphs_and_code() {
        let html =
            markdown("# A <b>\n\nSome `x<y>` text\nwrapped.\n\n- one\n  more\n- two\n\n## B\n")
                .into_string();
        assert_eq!(
            html,
            "<h1>A &lt;b&gt;</h1><p>Some <code>x&lt;y&gt;</code> text wrapped.</p>\
             <ul><li>one more</li><li>two</li></ul><h2>B</h2>"
        );
    }

    #[test]
    fn every_api_route_has_an_example() {
        let routes: Vec<&str> = examples("http://x").iter().map(|e| e.route).collect();
        for route in [
            "GET /v1/search/capabilities",
            "GET /v1/allowance",
            "POST /v1/search",
            "POST /v1/search/count",
            "POST /v1/search/facets",
            "POST /v1/search/exposure",
            "POST /v1/hosts/detail",
            "GET /v1/openapi.json",
        ] {
            assert!(routes.contains(&route), "{route}");
        }
    }
}
