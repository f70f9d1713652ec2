//! `GET /signin` (the redirect to the provider with state, nonce and PKCE) and
//! `GET /oidc/callback` (checking them, preparing the account at first sign-in, the session).

use axum::extract::State as AxumState;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use periscope_model::Timestamp;
use periscope_state::{Account, Email, NewAccount, PendingSignIn, StateError, TermsAcceptance};

use crate::extract::Params;
use crate::oidc::{Identity, OidcError};
use crate::session::*;
use crate::{CALLBACK_PATH, LOGIN_COOKIE, SESSION_COOKIE, SIGN_IN_LIFETIME_SECS, Web};

/// The query of `GET /signin`: where to come back after signing in.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct SignInParams {
    return_to: Option<String>,
}

/// The query of the callback, as the provider sent it (RFC 6749 §4.1.2).
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct CallbackParams {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

pub(crate) async fn sign_in(
    AxumState(web): AxumState<Web>,
    Params(query): Params<SignInParams>,
) -> Response {
    let inner = &web.inner;
    let return_to = safe_return_to(query.return_to.as_deref());
    let provider = match inner.rp.discover().await {
        Ok(p) => p,
        Err(e) => return unavailable(&e.to_string()),
    };
    let started = provider.start();
    let now = inner.now();
    let pending = PendingSignIn {
        nonce: started.nonce,
        pkce_verifier: started.pkce_verifier,
        return_to,
    };
    let expires = Timestamp::from_unix(now.unix() + SIGN_IN_LIFETIME_SECS).unwrap_or(now);
    if let Err(e) = inner
        .state
        .begin_web_sign_in(&started.state, &pending, now, expires)
        .await
    {
        return internal("cannot record the sign-in in flight", &e);
    }
    let mut response = redirect(&started.url);
    response.headers_mut().append(
        header::SET_COOKIE,
        inner.cookie(
            LOGIN_COOKIE,
            &started.state,
            CALLBACK_PATH,
            Some(SIGN_IN_LIFETIME_SECS),
        ),
    );
    response
}

pub(crate) async fn callback(
    AxumState(web): AxumState<Web>,
    headers: HeaderMap,
    Params(query): Params<CallbackParams>,
) -> Response {
    let inner = &web.inner;
    let mut response = finish_sign_in(&web, &headers, &query).await;
    // The binding cookie is spent either way.
    response.headers_mut().append(
        header::SET_COOKIE,
        inner.cookie(LOGIN_COOKIE, "", CALLBACK_PATH, Some(0)),
    );
    response
}

pub(crate) async fn finish_sign_in(
    web: &Web,
    headers: &HeaderMap,
    query: &CallbackParams,
) -> Response {
    let inner = &web.inner;
    let Some(state) = &query.state else {
        return sign_in_failed("The answer from the sign-in service carries no state.");
    };
    let bound = cookie_value(headers, LOGIN_COOKIE);
    if bound.as_deref() != Some(state.as_str()) {
        return sign_in_failed(
            "The answer from the sign-in service does not belong to a sign-in started in this browser (the state does not match).",
        );
    }
    let now = inner.now();
    let pending = match inner.state.take_web_sign_in(state, now).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return sign_in_failed(
                "This sign-in has expired or was completed already (the state is unknown).",
            );
        }
        Err(e) => return internal("cannot read the sign-in in flight", &e),
    };
    if let Some(error) = &query.error {
        return sign_in_failed(&format!(
            "The sign-in service answered with the error “{error}”."
        ));
    }
    let Some(code) = &query.code else {
        return sign_in_failed("The answer from the sign-in service carries no code.");
    };
    let provider = match inner.rp.discover().await {
        Ok(p) => p,
        Err(e) => return unavailable(&e.to_string()),
    };
    let identity = match provider
        .finish(&inner.rp, code, &pending.pkce_verifier, &pending.nonce)
        .await
    {
        Ok(identity) => identity,
        Err(OidcError::Unavailable(why)) => return unavailable(&why),
        Err(OidcError::Refused(why)) => return sign_in_failed(&why),
    };
    let account = match prepare_account(web, &identity, now).await {
        Ok(account) => account,
        Err(Prepare::Refused(why)) => return sign_in_failed(&why),
        Err(Prepare::State(e)) => return internal("cannot prepare the account", &e),
    };
    // A new session id at every sign-in; the one this browser had ends.
    if let Some(old) = cookie_value(headers, SESSION_COOKIE)
        && let Err(e) = inner.state.end_web_session(&old).await
    {
        return internal("cannot end the previous session", &e);
    }
    let (session_id, csrf) = match (random_token(), random_token()) {
        (Ok(s), Ok(c)) => (s, c),
        (Err(e), _) | (_, Err(e)) => return internal("no randomness for the session", &e),
    };
    if let Err(e) = inner
        .state
        .create_web_session(&session_id, account.id, &csrf, &identity.id_token, now)
        .await
    {
        return internal("cannot store the session", &e);
    }
    tracing::info!(account.id = %account.id, "signed in to the web application");
    let mut response = redirect(&pending.return_to);
    response.headers_mut().append(
        header::SET_COOKIE,
        inner.cookie(SESSION_COOKIE, &session_id, "/", None),
    );
    response
}

pub(crate) enum Prepare {
    Refused(String),
    State(StateError),
}

impl From<StateError> for Prepare {
    fn from(e: StateError) -> Self {
        Prepare::State(e)
    }
}

/// The account this identity signs in as; prepared at the first sign-in: created with the
/// organisation as typed (or an existing account with the verified address is linked), the
/// terms and marketing consent from the ID token recorded.
pub(crate) async fn prepare_account(
    web: &Web,
    identity: &Identity,
    now: Timestamp,
) -> Result<Account, Prepare> {
    let inner = &web.inner;
    let state = &inner.state;
    // At every sign-in, not only the first: a provider that now says the address is not
    // verified, or an address outside the allowed domains, signs nobody in.
    if identity.email_verified == Some(false) {
        return Err(Prepare::Refused(
            "The sign-in service says the e-mail address is not verified.".into(),
        ));
    }
    if !inner.allowed_email_domains.is_empty() {
        let domain = identity
            .email
            .as_deref()
            .and_then(|e| e.rsplit_once('@'))
            .map(|(_, d)| d.to_ascii_lowercase());
        match domain {
            Some(d) if inner.allowed_email_domains.contains(&d) => {}
            Some(d) => {
                tracing::info!(email.domain = %d, "sign-in refused: e-mail domain not allowed");
                return Err(Prepare::Refused(format!(
                    "Addresses at {d} may not sign in to this Periscope (web.allowed_email_domains)."
                )));
            }
            None => {
                return Err(Prepare::Refused(
                    "The sign-in service sent no e-mail address (claim email), and only some domains may sign in.".into(),
                ));
            }
        }
    }
    if let Some(id) = state
        .identity_account(&inner.issuer, &identity.subject)
        .await?
    {
        return state
            .account(id)
            .await?
            .ok_or_else(|| Prepare::Refused("The account of this identity was deleted.".into()));
    }
    let email = identity.email.as_deref().ok_or_else(|| {
        Prepare::Refused("The sign-in service sent no e-mail address (claim email).".into())
    })?;
    let email = Email::parse(email)
        .map_err(|e| Prepare::Refused(format!("The e-mail address is not usable: {e}")))?;
    let claims = &identity.claims;
    let account = match state.account_by_email(&email).await? {
        Some(account) => account,
        None => {
            let wanted = inner.organization_claim.as_str();
            let from_claim = if wanted == "org_name" {
                claims.org_name.clone()
            } else {
                match claims.other.get(wanted) {
                    None | Some(serde_json::Value::Null) => None,
                    Some(serde_json::Value::String(s)) => Some(s.clone()),
                    Some(serde_json::Value::Array(items)) => items
                        .iter()
                        .find_map(|v| v.as_str().map(str::to_owned)),
                    Some(_) => {
                        return Err(Prepare::Refused(format!(
                            "The {wanted} claim from the sign-in service is neither text nor a list of text."
                        )));
                    }
                }
            }
            .filter(|o| !o.trim().is_empty());
            let org = from_claim
                .or_else(|| inner.default_organization.clone())
                .ok_or_else(|| {
                    Prepare::Refused(format!(
                        "The sign-in service sent no organisation name (claim {wanted}); Periscope needs it to prepare the account."
                    ))
                })?;
            let org = org.as_str();
            // Claims are text another service stored: held to the rules of text typed here.
            for (claim, value) in [
                (wanted, Some(org)),
                ("terms_version", claims.terms_version.as_deref()),
            ] {
                if let Some((_, c)) =
                    value.and_then(|v| periscope_model::text::hidden_control(v, false))
                {
                    return Err(Prepare::Refused(format!(
                        "The {claim} claim from the sign-in service holds the control character U+{:04X}; Periscope stores no such text.",
                        u32::from(c)
                    )));
                }
            }
            let created = match state
                .create_account(&NewAccount::new(email.clone(), org), now)
                .await
            {
                Ok(account) => account,
                // Two first sign-ins at once: the other one created it.
                Err(StateError::EmailTaken(_)) => {
                    state.account_by_email(&email).await?.ok_or_else(|| {
                        Prepare::Refused("The account vanished while being prepared.".into())
                    })?
                }
                Err(e) => return Err(Prepare::State(e)),
            };
            if let (Some(version), Some(at)) = (&claims.terms_version, claims.terms_accepted_at) {
                let accepted_at = Timestamp::from_unix(at).ok_or_else(|| {
                    Prepare::Refused("The terms_accepted_at claim is not a valid time.".into())
                })?;
                let terms = TermsAcceptance {
                    version: version.clone(),
                    accepted_at,
                };
                state
                    .record_terms(
                        created.id,
                        &terms,
                        claims.marketing_consent.unwrap_or(false),
                    )
                    .await?;
            }
            tracing::info!(account.id = %created.id, "account prepared at first sign-in");
            state.account(created.id).await?.unwrap_or(created)
        }
    };
    state
        .link_identity(&inner.issuer, &identity.subject, account.id, now)
        .await?;
    Ok(account)
}
