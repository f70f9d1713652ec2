//! API access (spec Authentication 2–3, 7; signed in only): `GET /api-access` lists the
//! account's keys (name, prefix, created, last used, revoked) with the form to create one;
//! `POST /api-access/keys` creates a key with an optional name and answers with the page that
//! shows the full key once (`Cache-Control: no-store`; the key is never in a URL and cannot be
//! shown again); `GET /api-access/keys/{id}/revoke` asks to confirm and
//! `POST /api-access/keys/{id}/revoke` revokes, effective at the key's next request.

use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use periscope_model::Timestamp;
use periscope_state::{ApiKey, KEY_NAME_MAX_CHARS, KeyId, KeyInfo, StateError};

use maud::{Markup, html};

use crate::Web;
use crate::extract::{CsrfField, SignedForm, SignedPage};
use crate::html::{column_heads, message, page_with};
use crate::routes::report::thousands;
use crate::session::*;

#[derive(serde::Deserialize)]
pub(crate) struct CreateForm {
    #[serde(default)]
    csrf: String,
    /// The form's own one-time token: a form sent twice (a reload of the page that showed the
    /// key resends it) creates one key, not two.
    #[serde(default)]
    form: String,
    #[serde(default)]
    name: String,
}

impl CsrfField for CreateForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// Why a key name is refused, in words for the user (the state's rules: optional, trimmed, at
/// most [`KEY_NAME_MAX_CHARS`] characters, no control characters — nor, here, a bidirectional
/// override: [`periscope_model::text::hidden_control`]).
fn name_refusal(name: &str) -> Option<String> {
    let name = name.trim();
    let count = name.chars().count();
    if count > KEY_NAME_MAX_CHARS {
        Some(format!(
            "The name is {} characters long; a key name takes at most {}. Shorten it and create \
             the key again.",
            thousands(count),
            KEY_NAME_MAX_CHARS
        ))
    } else if periscope_model::text::hidden_control(name, false).is_some() {
        Some(
            "The name contains a control character (a tab, a line break or an invisible \
             formatting character, for example). Use letters, digits, spaces and punctuation."
                .into(),
        )
    } else {
        None
    }
}

/// A time as `2026-11-22 14:05 UTC`.
fn when(t: Timestamp) -> String {
    let s = t.to_string();
    match (s.get(..10), s.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time} UTC"),
        _ => s,
    }
}

/// The account's keys: a table, or a note when there are none.
fn key_list(keys: &[KeyInfo]) -> Markup {
    if keys.is_empty() {
        return html! { p.note id="no-keys" { "You have no API keys yet." } };
    }
    html! {
        div.table-scroll {
            table.keys {
                caption.visually-hidden { "Your API keys" }
                (column_heads(&["Name", "Prefix", "Created", "Last used", "Status"]))
                tbody {
                    @for k in keys {
                        tr.key data-key-id=(k.id) {
                            td {
                                @match &k.name {
                                    Some(name) => (name),
                                    None => span.note { "(no name)" },
                                }
                            }
                            td {
                                @match &k.prefix {
                                    Some(p) => code { (p) "…" },
                                    None => span.note { "(not recorded)" },
                                }
                            }
                            td { (when(k.created_at)) }
                            td {
                                @match k.last_used_at {
                                    Some(t) => (when(t)),
                                    None => "Never",
                                }
                            }
                            @match k.revoked_at {
                                Some(t) => td.revoked { "Revoked " (when(t)) },
                                None => td {
                                    "Active "
                                    a.revoke href={ "/api-access/keys/" (k.id) "/revoke" }
                                        aria-label={ "Revoke " (k.name.as_deref().or(k.prefix.as_deref()).unwrap_or("key")) } {
                                        "Revoke"
                                    }
                                },
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The API access page: a notice or error, the new key once, the create form, the list.
struct View<'a> {
    status: StatusCode,
    notice: Option<&'a str>,
    error: Option<&'a str>,
    /// The name as typed (kept when refused).
    name: &'a str,
    created: Option<(&'a ApiKey, &'a KeyInfo)>,
}

async fn api_access_page(web: &Web, signed: &Signed, view: View<'_>) -> Response {
    let keys = match web.inner.state.keys_of(signed.account.id).await {
        Ok(keys) => keys,
        Err(e) => return internal("cannot read the API keys", &e),
    };
    let form_token = match random_token() {
        Ok(token) => token,
        Err(e) => return internal("cannot make the create-key form's token", &e),
    };
    let body = view_page(&view, &signed.session.csrf, &form_token, &keys);
    let mut response = page_with(view.status, "API access", Some(&signed.top()), body, &[]);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The API access page's content.
fn view_page(view: &View<'_>, csrf: &str, form_token: &str, keys: &[KeyInfo]) -> Markup {
    html! {
        main.wide {
            h1 { "API access" }
            p {
                "A personal API key lets scripts use the " a href="/quickstart" { "API" }
                " as you, on the same daily allowance as your searches here. Send it on every \
                 request as " code { "Authorization: Bearer <key>" } "."
            }
            @if let Some(notice) = view.notice {
                div.notice role="status" { p { (notice) } }
            }
            @if let Some((key, info)) = view.created {
                section.newkey aria-labelledby="newkey-title" {
                    h2 id="newkey-title" {
                        "Your new key"
                        @if let Some(name) = &info.name { " “" (name) "”" }
                    }
                    p {
                        strong { "This is the only time the full key is shown." }
                        " Copy it now: Periscope keeps only a hash of it and cannot show it again."
                    }
                    code id="new-key" { (key.expose()) }
                    p.actions {
                        button type="button" class="button" data-copy="new-key"
                            data-status="copy-status" hidden { "Copy key" }
                        span.copied id="copy-status" role="status" aria-live="polite" {}
                    }
                    p {
                        "Keep the key out of source control (use an environment variable or a \
                         secret store). If you suspect it was exposed, revoke it below and create \
                         another."
                    }
                }
            }
            h2 { "Create key" }
            @if let Some(e) = view.error {
                div.error role="alert" id="name-error" { p { (e) } }
            }
            form method="post" action="/api-access/keys" class="create-key" data-busy="Creating…" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="form" value=(form_token);
                label.field for="key-name" { "Name (optional, to tell keys apart)" }
                @if view.error.is_some() {
                    input.text id="key-name" name="name" type="text" maxlength=(KEY_NAME_MAX_CHARS)
                        autocomplete="off" value=(view.name) aria-invalid="true"
                        aria-describedby="name-error";
                } @else {
                    input.text id="key-name" name="name" type="text" maxlength=(KEY_NAME_MAX_CHARS)
                        autocomplete="off" value=(view.name);
                }
                p.actions { button.button type="submit" { "Create key" } }
            }
            h2 { "Your keys" }
            (key_list(keys))
        }
    }
}

/// `GET /api-access`.
pub(crate) async fn page(
    AxumState(web): AxumState<Web>,
    SignedPage(signed): SignedPage,
) -> Response {
    let view = View {
        status: StatusCode::OK,
        notice: None,
        error: None,
        name: "",
        created: None,
    };
    api_access_page(&web, &signed, view).await
}

/// `POST /api-access/keys`: the answer is the page with the key, rendered once; the same form
/// sent again (a reload) creates nothing and says so.
pub(crate) async fn create(
    AxumState(web): AxumState<Web>,
    SignedForm { signed, form }: SignedForm<CreateForm>,
) -> Response {
    fn refused<'a>(why: &'a str, name: &'a str) -> View<'a> {
        View {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            notice: None,
            error: Some(why),
            name,
            created: None,
        }
    }
    if let Some(why) = name_refusal(&form.name) {
        return api_access_page(&web, &signed, refused(&why, &form.name)).await;
    }
    // The form's token is used once, whichever instance it reaches (the state database
    // records it; of concurrent sendings exactly one goes through).
    let first = if form.form.is_empty() {
        false
    } else {
        match web
            .inner
            .state
            .first_key_form_use(signed.account.id, &form.form, web.inner.now())
            .await
        {
            Ok(first) => first,
            Err(e) => return internal("cannot record the create-key form", &e),
        }
    };
    if !first {
        let view = View {
            status: StatusCode::CONFLICT,
            notice: Some(
                "This form was already sent: the key it created was shown once, on the page \
                 that answered it. No other key was created. Create another key below if you \
                 need one.",
            ),
            error: None,
            name: "",
            created: None,
        };
        return api_access_page(&web, &signed, view).await;
    }
    let name = Some(form.name.trim()).filter(|n| !n.is_empty());
    match web
        .inner
        .state
        .create_key(signed.account.id, name, web.inner.now())
        .await
    {
        Ok((key, info)) => {
            tracing::info!(account.id = %signed.account.id, key.id = %info.id, "API key created");
            let view = View {
                status: StatusCode::OK,
                notice: None,
                error: None,
                name: "",
                created: Some((&key, &info)),
            };
            api_access_page(&web, &signed, view).await
        }
        Err(StateError::Invalid { why, .. }) => {
            let why = format!("The name was refused: {why}.");
            api_access_page(&web, &signed, refused(&why, &form.name)).await
        }
        Err(e) => internal("cannot create an API key", &e),
    }
}

/// The account's key `id`, if it has one.
async fn own_key(web: &Web, signed: &Signed, id: &str) -> Result<Option<KeyInfo>, Response> {
    let Ok(id) = id.parse::<i64>() else {
        return Ok(None);
    };
    let keys = web
        .inner
        .state
        .keys_of(signed.account.id)
        .await
        .map_err(|e| internal("cannot read the API keys", &e))?;
    Ok(keys.into_iter().find(|k| k.id == KeyId::from_i64(id)))
}

fn no_such_key(signed: &Signed) -> Response {
    message(
        StatusCode::NOT_FOUND,
        "No such key",
        &[
            "You have no API key with this number. It may belong to another account, or the link is wrong.",
        ],
        Some(("/api-access", "Back to API access")),
        Some(&signed.top()),
    )
}

fn label(k: &KeyInfo) -> String {
    match (&k.name, &k.prefix) {
        (Some(n), Some(p)) => format!("“{n}” ({p}…)"),
        (Some(n), None) => format!("“{n}”"),
        (None, Some(p)) => format!("{p}…"),
        (None, None) => format!("number {}", k.id),
    }
}

/// `GET /api-access/keys/{id}/revoke`: the confirmation step.
pub(crate) async fn confirm(
    AxumState(web): AxumState<Web>,
    Path(id): Path<String>,
    SignedPage(signed): SignedPage,
) -> Response {
    let key = match own_key(&web, &signed, &id).await {
        Ok(Some(key)) => key,
        Ok(None) => return no_such_key(&signed),
        Err(page) => return page,
    };
    if key.revoked_at.is_some() {
        return message(
            StatusCode::OK,
            "Key already revoked",
            &[&format!("The key {} is revoked already.", label(&key))],
            Some(("/api-access", "Back to API access")),
            Some(&signed.top()),
        );
    }
    let body = html! {
        main {
            h1 { "Revoke this key?" }
            p {
                "Revoke the key " (label(&key)) "? It stops working at once: a script using it \
                 fails on its next request. This cannot be undone."
            }
            form method="post" action={ "/api-access/keys/" (key.id) "/revoke" } class="actions"
                data-busy="Revoking…" {
                input type="hidden" name="csrf" value=(signed.session.csrf);
                button.button.danger type="submit" { "Revoke key" }
                a.button.secondary href="/api-access" { "Keep the key" }
            }
        }
    };
    page_with(
        StatusCode::OK,
        "Revoke this key?",
        Some(&signed.top()),
        body,
        &[],
    )
}

/// `POST /api-access/keys/{id}/revoke`.
pub(crate) async fn revoke(
    AxumState(web): AxumState<Web>,
    Path(id): Path<String>,
    SignedForm { signed, .. }: SignedForm<CsrfForm>,
) -> Response {
    let key = match own_key(&web, &signed, &id).await {
        Ok(Some(key)) => key,
        Ok(None) => return no_such_key(&signed),
        Err(page) => return page,
    };
    let notice = match web
        .inner
        .state
        .revoke_key(signed.account.id, key.id, web.inner.now())
        .await
    {
        Ok(true) => {
            tracing::info!(account.id = %signed.account.id, key.id = %key.id, "API key revoked");
            format!(
                "The key {} is revoked. A script using it fails on its next request.",
                label(&key)
            )
        }
        Ok(false) => format!("The key {} was revoked already.", label(&key)),
        Err(e) => return internal("cannot revoke an API key", &e),
    };
    let view = View {
        status: StatusCode::OK,
        notice: Some(&notice),
        error: None,
        name: "",
        created: None,
    };
    api_access_page(&web, &signed, view).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_like_the_state_checks_them() {
        assert_eq!(name_refusal(""), None);
        assert_eq!(name_refusal(&"é".repeat(100)), None);
        assert!(
            name_refusal(&"é".repeat(101))
                .unwrap()
                .contains("101 characters")
        );
        assert!(name_refusal("a\tb").unwrap().contains("control character"));
    }

    #[test]
    fn times_read_as_utc() {
        let t = Timestamp::parse("2026-11-22T14:05:09Z").unwrap();
        assert_eq!(when(t), "2026-11-22 14:05 UTC");
    }
}
