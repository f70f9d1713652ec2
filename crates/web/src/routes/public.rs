//! The public pages of spec §6, shown with or without a session (the top bar then shows the
//! account menu, or a "Sign in" link): `GET /terms` (the sign-in service's terms),
//! `GET /quickstart` (getting a key and a working `curl` command for every API route, on this
//! instance's public URL) and `GET /release-notes` (`docs/release-notes.md`, compiled in).

use axum::extract::State as AxumState;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::Web;
use crate::html::{escape, page};
use crate::session::{optional_session, redirect};

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
pub(crate) async fn quickstart(AxumState(web): AxumState<Web>, headers: HeaderMap) -> Response {
    let signed = optional_session(&web, &headers).await;
    let base = &web.inner.public_url;
    let mut body = format!(
        "<main class=\"wide\"><h1>Quickstart</h1>\
         <p>The API answers JSON under <code>{base}/v1</code>. Every request but the OpenAPI \
         document carries a personal API key as a bearer credential.</p>\
         <h2>1. Get a key</h2><ol>\
         <li>Sign in, open the account menu (your e-mail address, top right) and choose \
         <a href=\"/api-access\">API access</a>.</li>\
         <li>Select <strong>Create key</strong>, optionally with a name to tell your keys apart. \
         The full key is shown once: copy it then.</li>\
         <li>Keep it out of source control; revoke it on the same page if you suspect it was \
         exposed, and create another.</li></ol>\
         <p>The examples read the key from the shell variable <code>KEY</code>:</p>\
         <pre><code>export KEY=psk_…</code></pre>\
         <p>The browser and your keys share one allowance of searches a day. Only an answered \
         search is charged; everything else here is free.</p><h2>2. Every route</h2>",
        base = escape(base),
    );
    for example in examples(base) {
        body.push_str(&format!(
            "<section class=\"example\" aria-label=\"{route}\"><h3>{title} \
             <code>{route}</code></h3><p>{text}</p>\
             <pre><code class=\"curl\" data-route=\"{route}\">{commands}</code></pre></section>",
            route = escape(example.route),
            title = escape(example.title),
            text = escape(example.text),
            commands = escape(&example.commands),
        ));
    }
    body.push_str(
        "<p class=\"note\">A refused request answers with a JSON error body (<code>code</code>, \
         <code>message</code>); <code>--fail-with-body</code> prints it and makes curl exit \
         non-zero.</p></main>",
    );
    page(
        StatusCode::OK,
        "Quickstart",
        signed.as_ref().map(|s| s.top()).as_ref(),
        &body,
    )
}

/// The release notes' Markdown as HTML: `#` headings, `-` lists, paragraphs and `code` spans,
/// which is all the file uses. Everything is escaped.
fn markdown(text: &str) -> String {
    fn inline(line: &str) -> String {
        escape(line)
            .split('`')
            .enumerate()
            .map(|(i, part)| {
                if i % 2 == 1 {
                    format!("<code>{part}</code>")
                } else {
                    part.to_owned()
                }
            })
            .collect()
    }
    let mut out = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut item: Vec<&str> = Vec::new();
    let mut in_list = false;
    let flush = |out: &mut String, paragraph: &mut Vec<&str>, item: &mut Vec<&str>| {
        if !item.is_empty() {
            out.push_str(&format!("<li>{}</li>", inline(&item.join(" "))));
            item.clear();
        }
        if !paragraph.is_empty() {
            out.push_str(&format!("<p>{}</p>", inline(&paragraph.join(" "))));
            paragraph.clear();
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("- ") {
            flush(&mut out, &mut paragraph, &mut item);
            if !in_list {
                out.push_str("<ul>");
                in_list = true;
            }
            item.push(rest);
        } else if in_list && !trimmed.is_empty() && line.starts_with(' ') {
            item.push(trimmed);
        } else {
            if in_list {
                flush(&mut out, &mut paragraph, &mut item);
                out.push_str("</ul>");
                in_list = false;
            }
            let level = trimmed.chars().take_while(|c| *c == '#').count();
            if trimmed.is_empty() {
                flush(&mut out, &mut paragraph, &mut item);
            } else if level > 0 && trimmed[level..].starts_with(' ') {
                flush(&mut out, &mut paragraph, &mut item);
                let level = level.min(6);
                out.push_str(&format!(
                    "<h{level}>{}</h{level}>",
                    inline(trimmed[level..].trim())
                ));
            } else {
                paragraph.push(trimmed);
            }
        }
    }
    flush(&mut out, &mut paragraph, &mut item);
    if in_list {
        out.push_str("</ul>");
    }
    out
}

/// `GET /release-notes`.
pub(crate) async fn release_notes(AxumState(web): AxumState<Web>, headers: HeaderMap) -> Response {
    let signed = optional_session(&web, &headers).await;
    page(
        StatusCode::OK,
        "Release notes",
        signed.as_ref().map(|s| s.top()).as_ref(),
        &format!("<main class=\"wide\">{}</main>", markdown(RELEASE_NOTES)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_headings_lists_paragraphs_and_code() {
        let html =
            markdown("# A <b>\n\nSome `x<y>` text\nwrapped.\n\n- one\n  more\n- two\n\n## B\n");
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
