//! The provider as a relying party sees it, through the `openidconnect` crate: discovery, the
//! code flow with PKCE, ID token verification (signature, nonce, e-mail and organisation),
//! userinfo, RP-initiated logout, and every refusal.

use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreGenderClaim, CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
};
use openidconnect::{
    AccessToken, AdditionalClaims, AuthType, AuthorizationCode, ClientId, ClientSecret, CsrfToken,
    EndSessionUrl, IdToken, IssuerUrl, LogoutRequest, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, PostLogoutRedirectUrl, ProviderMetadataWithLogout,
    RedirectUrl, RequestTokenError, Scope, TokenResponse, UserInfoClaims,
};
use periscope_state::testing::on_each_backend;
use serde::{Deserialize, Serialize};

use crate::support::*;

/// The organisation claim Periscope adds.
#[derive(Clone, Debug, Deserialize, Serialize)]
struct OrgClaims {
    org_name: String,
    terms_version: String,
    marketing_consent: bool,
}
impl AdditionalClaims for OrgClaims {}

type OrgIdToken =
    IdToken<OrgClaims, CoreGenderClaim, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm>;

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn discover(provider: &Provider) -> ProviderMetadataWithLogout {
    ProviderMetadataWithLogout::discover_async(
        IssuerUrl::new(provider.issuer.clone()).unwrap(),
        &http(),
    )
    .await
    .unwrap()
}

/// What the relying party keeps between the redirect and the callback.
struct Started {
    url: String,
    state: CsrfToken,
    nonce: Nonce,
    verifier: PkceCodeVerifier,
}

type Rp = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// A fresh authorization request of `client`, with PKCE S256, a nonce and a state holding
/// characters that need encoding (it must come back exactly).
fn start_flow(client: &Rp) -> Started {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            || CsrfToken::new(format!("s &=+/ü {}", CsrfToken::new_random().secret())),
            Nonce::new_random,
        )
        .add_scope(Scope::new("email".into()))
        .set_pkce_challenge(challenge)
        .url();
    Started {
        url: url.to_string(),
        state,
        nonce,
        verifier,
    }
}

fn rp(metadata: ProviderMetadataWithLogout, id: &str, secret: &str, redirect: &str) -> Rp {
    CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(id.into()),
        Some(ClientSecret::new(secret.into())),
    )
    .set_redirect_uri(RedirectUrl::new(redirect.into()).unwrap())
}

/// Sends the browser to `url` (signing in with the form if asked) and returns where the
/// provider sent it back to the client: the callback URL.
async fn authorize(
    provider: &Provider,
    browser: &Browser,
    url: &str,
    email: &str,
    password: &str,
) -> String {
    let origin = origin(&provider.issuer);
    let first = browser.get(url).await;
    assert_eq!(first.status, 303, "{}", first.body);
    let mut next = first.location();
    if next.starts_with("/auth/signin") {
        let done = sign_in(browser, &format!("{origin}{next}"), email, password).await;
        assert_eq!(done.status, 303, "{}", done.body);
        let back = done.location();
        assert!(back.starts_with("/auth/authorize?"), "{back}");
        let again = browser.get(&format!("{origin}{back}")).await;
        assert_eq!(again.status, 303, "{}", again.body);
        next = again.location();
    }
    next
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_flow_with_pkce_id_token_userinfo_and_logout() {
    on_each_backend("code_flow", |fixture| async move {
        let provider = Provider::start(&database(&fixture), Options::default()).await;
        let email = "Alice@Example.com";
        let password = "blue kettle orbit 42";
        let link = provider
            .register_via_outbox(email, "Example Corp (Ops) — ünïcode", password)
            .await;

        // Discovery, with the logout metadata.
        let metadata = discover(&provider).await;
        assert_eq!(metadata.issuer().as_str(), provider.issuer);
        assert_eq!(
            metadata
                .additional_metadata()
                .end_session_endpoint
                .as_ref()
                .unwrap()
                .as_str(),
            provider.url("/logout")
        );
        let client = rp(metadata.clone(), WEB_ID, WEB_SECRET, WEB_CALLBACK);

        // The browser goes to the authorization endpoint, signs in, comes back with a code.
        let browser = Browser::new();
        let flow = start_flow(&client);
        let callback = authorize(
            &provider,
            &browser,
            &flow.url,
            "alice@example.com",
            password,
        )
        .await;
        assert!(callback.starts_with(WEB_CALLBACK), "{callback}");
        assert_eq!(
            query_param(&callback, "state").as_deref(),
            Some(flow.state.secret().as_str())
        );
        let code = query_param(&callback, "code").unwrap();

        // The session cookie: HttpOnly, SameSite=Lax, scoped to /auth, not Secure over http.
        let signin_page = sign_in_cookie_attributes(&provider).await;
        assert!(signin_page.contains("HttpOnly") && signin_page.contains("SameSite=Lax"));
        assert!(signin_page.contains("Path=/auth") && !signin_page.contains("Secure"));

        // The code for tokens (client_secret_basic), the ID token verified by the RP library.
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.clone()))
            .unwrap()
            .set_pkce_verifier(PkceCodeVerifier::new(flow.verifier.secret().clone()))
            .request_async(&http())
            .await
            .unwrap();
        let raw_id_token = tokens.id_token().unwrap().to_string();
        let id_token: OrgIdToken = raw_id_token.parse().unwrap();
        let claims = id_token
            .claims(&client.id_token_verifier(), &flow.nonce)
            .unwrap();
        assert_eq!(claims.email().unwrap().as_str(), "Alice@example.com");
        assert_eq!(claims.email_verified(), Some(true));
        assert_eq!(
            claims.additional_claims().org_name,
            "Example Corp (Ops) — ünïcode"
        );
        assert_eq!(claims.additional_claims().terms_version, "2026-11-01");
        assert!(claims.additional_claims().marketing_consent);
        assert_eq!(claims.nonce().unwrap().secret(), flow.nonce.secret());
        // The access token hash matches (the library checks it when asked).
        let at_hash = claims.access_token_hash().unwrap();
        let expected = openidconnect::AccessTokenHash::from_token(
            tokens.access_token(),
            id_token.signing_alg().unwrap(),
            id_token.signing_key(&client.id_token_verifier()).unwrap(),
        )
        .unwrap();
        assert_eq!(at_hash, &expected);
        // A wrong nonce is refused by the library.
        assert!(
            id_token
                .claims(&client.id_token_verifier(), &Nonce::new("another".into()))
                .is_err()
        );

        // Userinfo.
        let info: UserInfoClaims<OrgClaims, CoreGenderClaim> = client
            .user_info(
                tokens.access_token().clone(),
                Some(claims.subject().clone()),
            )
            .unwrap()
            .request_async(&http())
            .await
            .unwrap();
        assert_eq!(info.email().unwrap().as_str(), "Alice@example.com");
        assert_eq!(
            info.additional_claims().org_name,
            "Example Corp (Ops) — ünïcode"
        );

        // The account record behind it.
        let record = provider
            .signin
            .account("alice@EXAMPLE.com")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.subject, claims.subject().as_str());

        // RP-initiated logout with the ID token as hint, a registered return address and state.
        let end_session = metadata
            .additional_metadata()
            .end_session_endpoint
            .clone()
            .unwrap();
        let logout_state = CsrfToken::new("after logout &=?".into());
        let logout = LogoutRequest::from(EndSessionUrl::new(end_session.to_string()).unwrap())
            .set_id_token_hint(&id_token)
            .set_post_logout_redirect_uri(
                PostLogoutRedirectUrl::new(WEB_SIGNED_OUT.into()).unwrap(),
            )
            .set_state(logout_state.clone())
            .http_get_url();
        let out = browser.get(logout.as_str()).await;
        assert_eq!(out.status, 303, "{}", out.body);
        assert!(out.location().starts_with(WEB_SIGNED_OUT));
        assert_eq!(
            query_param(&out.location(), "state").as_deref(),
            Some("after logout &=?")
        );
        assert!(
            out.set_cookie("periscope_signin")
                .unwrap()
                .contains("Max-Age=0")
        );

        // A later sign-in asks for the password again.
        let again = start_flow(&client);
        let first = browser.get(&again.url).await;
        assert_eq!(first.status, 303);
        assert!(
            first.location().starts_with("/auth/signin?return_to="),
            "{}",
            first.location()
        );

        // The second client authenticates with client_secret_post; its registered redirect URI
        // keeps its own query.
        let post_client =
            rp(metadata, POST_ID, POST_SECRET, POST_CALLBACK).set_auth_type(AuthType::RequestBody);
        let flow = start_flow(&post_client);
        let callback = authorize(&provider, &browser, &flow.url, email, password).await;
        assert!(
            callback.starts_with("http://127.0.0.1:9/post/callback?kept=1&code="),
            "{callback}"
        );
        let tokens = post_client
            .exchange_code(AuthorizationCode::new(
                query_param(&callback, "code").unwrap(),
            ))
            .unwrap()
            .set_pkce_verifier(flow.verifier)
            .request_async(&http())
            .await
            .unwrap();
        let id_token: OrgIdToken = tokens.id_token().unwrap().to_string().parse().unwrap();
        id_token
            .claims(&post_client.id_token_verifier(), &flow.nonce)
            .unwrap();

        // (The registration link went through the outbox, which logs it by design.)
        assert!(logs().contains(&link));
        assert_not_logged(
            "code flow",
            &[
                &code,
                tokens.access_token().secret(),
                &raw_id_token,
                password,
            ],
        );
        provider.signin.close().await;
    })
    .await;
}

/// Signs a throwaway user in and returns the Set-Cookie of the session.
async fn sign_in_cookie_attributes(provider: &Provider) -> String {
    let browser = Browser::new();
    provider
        .register_via_outbox("cookie@example.com", "Cookie Ltd", "cookie jar rattles")
        .await;
    let done = sign_in(
        &browser,
        &provider.url("/signin"),
        "cookie@example.com",
        "cookie jar rattles",
    )
    .await;
    assert_eq!(done.status, 303, "{}", done.body);
    done.set_cookie("periscope_signin").unwrap()
}

/// Builds an authorization URL by hand (for what the library will not send).
fn manual_authorize(provider: &Provider, pairs: &[(&str, &str)]) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    format!("{}?{query}", provider.url("/authorize"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals() {
    on_each_backend("oidc_refusals", |fixture| async move {
        let provider = Provider::start(&database(&fixture), Options::default()).await;
        let password = "sturdy lantern meadow";
        provider
            .register_via_outbox("bob@example.org", "Bob GmbH", password)
            .await;
        let metadata = discover(&provider).await;
        let client = rp(metadata.clone(), WEB_ID, WEB_SECRET, WEB_CALLBACK);
        let browser = Browser::new();
        // Sign in once so authorization requests answer at once.
        let done = sign_in(
            &browser,
            &provider.url("/signin"),
            "bob@example.org",
            password,
        )
        .await;
        assert_eq!(done.status, 303);

        // A redirect URI that is not registered (even a near miss): a page, never a redirect.
        for wrong in [
            "http://127.0.0.1:9/callback/",
            "http://127.0.0.1:9/CALLBACK",
            "http://evil.example/callback",
        ] {
            let bad = rp(metadata.clone(), WEB_ID, WEB_SECRET, wrong);
            let page = browser.get(&start_flow(&bad).url).await;
            assert_eq!(page.status, 400, "{wrong}");
            assert!(page.headers.get("location").is_none());
            assert!(page.body.contains("not registered"), "{}", page.body);
        }
        // An unknown client.
        let stranger = rp(
            metadata.clone(),
            "stranger",
            "stranger-secret-0123",
            WEB_CALLBACK,
        );
        let page = browser.get(&start_flow(&stranger).url).await;
        assert_eq!(page.status, 400);
        assert!(page.headers.get("location").is_none());

        // PKCE missing, plain, or a malformed challenge: an error back at the client, no code.
        let challenge = PkceCodeChallenge::new_random_sha256().0;
        let base = [
            ("client_id", WEB_ID),
            ("redirect_uri", WEB_CALLBACK),
            ("response_type", "code"),
            ("scope", "openid email"),
            ("state", "st-1"),
            ("nonce", "n-1"),
        ];
        let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
            (vec![], "invalid_request"),
            (
                vec![("code_challenge", challenge.as_str())],
                "invalid_request",
            ),
            (
                vec![
                    ("code_challenge", challenge.as_str()),
                    ("code_challenge_method", "plain"),
                ],
                "invalid_request",
            ),
            (
                vec![
                    ("code_challenge", "short"),
                    ("code_challenge_method", "S256"),
                ],
                "invalid_request",
            ),
            (
                vec![
                    ("code_challenge", challenge.as_str()),
                    ("code_challenge_method", "S256"),
                    ("state", "again"),
                ],
                "invalid_request",
            ),
        ];
        for (extra, error) in cases {
            let mut pairs = base.to_vec();
            pairs.extend(extra.iter().copied());
            let page = browser.get(&manual_authorize(&provider, &pairs)).await;
            assert_eq!(page.status, 303, "{extra:?}");
            let location = page.location();
            assert!(location.starts_with(WEB_CALLBACK), "{location}");
            assert_eq!(
                query_param(&location, "error").as_deref(),
                Some(error),
                "{extra:?}: {location}"
            );
            assert!(query_param(&location, "code").is_none());
        }
        // A nonce holding a control character (it would be stored with the code and echoed in
        // the ID token).
        let mut pairs = base.to_vec();
        pairs[5] = ("nonce", "n-\u{1b}[2J");
        pairs.extend([
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ]);
        let location = browser
            .get(&manual_authorize(&provider, &pairs))
            .await
            .location();
        assert_eq!(
            query_param(&location, "error").as_deref(),
            Some("invalid_request"),
            "{location}"
        );
        assert!(
            query_param(&location, "error_description")
                .unwrap()
                .contains("control characters"),
            "{location}"
        );
        // Without the openid scope; another response type.
        let mut pairs = base.to_vec();
        pairs[3] = ("scope", "email");
        pairs.extend([
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
        ]);
        let location = browser
            .get(&manual_authorize(&provider, &pairs))
            .await
            .location();
        assert_eq!(
            query_param(&location, "error").as_deref(),
            Some("invalid_scope")
        );
        assert_eq!(query_param(&location, "state").as_deref(), Some("st-1"));
        pairs[3] = ("scope", "openid");
        pairs[2] = ("response_type", "token");
        let location = browser
            .get(&manual_authorize(&provider, &pairs))
            .await
            .location();
        assert_eq!(
            query_param(&location, "error").as_deref(),
            Some("unsupported_response_type")
        );

        // prompt=none without a session.
        let mut none = base.to_vec();
        none.extend([
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("prompt", "none"),
        ]);
        let location = Browser::new()
            .get(&manual_authorize(&provider, &none))
            .await
            .location();
        assert_eq!(
            query_param(&location, "error").as_deref(),
            Some("login_required")
        );

        // prompt=login: even with a session the password is asked, and the request comes back
        // without it (so it does not ask forever).
        let mut login = base.to_vec();
        login.extend([
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("prompt", "login"),
        ]);
        let page = browser.get(&manual_authorize(&provider, &login)).await;
        assert_eq!(page.status, 303);
        let to_signin = page.location();
        assert!(
            to_signin.starts_with("/auth/signin?return_to="),
            "{to_signin}"
        );
        let return_to = query_param(&format!("http://x{to_signin}"), "return_to").unwrap();
        assert!(
            return_to.starts_with("/auth/authorize?") && !return_to.contains("prompt"),
            "{return_to}"
        );

        // A wrong verifier: invalid_grant, and the code is spent.
        let flow = start_flow(&client);
        let callback = authorize(&provider, &browser, &flow.url, "bob@example.org", password).await;
        let code = query_param(&callback, "code").unwrap();
        let wrong = client
            .exchange_code(AuthorizationCode::new(code.clone()))
            .unwrap()
            .set_pkce_verifier(PkceCodeVerifier::new("x".repeat(43)))
            .request_async(&http())
            .await;
        assert_oauth_error(wrong, "invalid_grant");
        let after = client
            .exchange_code(AuthorizationCode::new(code))
            .unwrap()
            .set_pkce_verifier(flow.verifier)
            .request_async(&http())
            .await;
        assert_oauth_error(after, "invalid_grant");

        // A reused code: refused, and the access token of its first use is revoked.
        let flow = start_flow(&client);
        let callback = authorize(&provider, &browser, &flow.url, "bob@example.org", password).await;
        let code = query_param(&callback, "code").unwrap();
        let verifier = flow.verifier.secret().clone();
        let first = client
            .exchange_code(AuthorizationCode::new(code.clone()))
            .unwrap()
            .set_pkce_verifier(PkceCodeVerifier::new(verifier.clone()))
            .request_async(&http())
            .await
            .unwrap();
        let access = first.access_token().clone();
        userinfo_status(&client, &access, 200).await;
        let second = client
            .exchange_code(AuthorizationCode::new(code))
            .unwrap()
            .set_pkce_verifier(PkceCodeVerifier::new(verifier))
            .request_async(&http())
            .await;
        assert_oauth_error(second, "invalid_grant");
        userinfo_status(&client, &access, 401).await;

        // The wrong client secret; a code redeemed by another client; an expired code.
        let flow = start_flow(&client);
        let callback = authorize(&provider, &browser, &flow.url, "bob@example.org", password).await;
        let code = query_param(&callback, "code").unwrap();
        let impostor = rp(
            metadata.clone(),
            WEB_ID,
            "wrong-secret-0123456789",
            WEB_CALLBACK,
        );
        let refused = impostor
            .exchange_code(AuthorizationCode::new(code.clone()))
            .unwrap()
            .set_pkce_verifier(PkceCodeVerifier::new(flow.verifier.secret().clone()))
            .request_async(&http())
            .await;
        assert_oauth_error(refused, "invalid_client");
        let other = rp(metadata.clone(), POST_ID, POST_SECRET, WEB_CALLBACK)
            .set_auth_type(AuthType::RequestBody);
        let refused = other
            .exchange_code(AuthorizationCode::new(code))
            .unwrap()
            .set_pkce_verifier(flow.verifier)
            .request_async(&http())
            .await;
        assert_oauth_error(refused, "invalid_grant");
        let flow = start_flow(&client);
        let callback = authorize(&provider, &browser, &flow.url, "bob@example.org", password).await;
        provider.clock.advance(61);
        let late = client
            .exchange_code(AuthorizationCode::new(
                query_param(&callback, "code").unwrap(),
            ))
            .unwrap()
            .set_pkce_verifier(flow.verifier)
            .request_async(&http())
            .await;
        assert_oauth_error(late, "invalid_grant");

        // Tampered state: the provider hands back exactly what it was given, so the relying
        // party's comparison catches any change made on the way.
        let flow = start_flow(&client);
        let callback = authorize(&provider, &browser, &flow.url, "bob@example.org", password).await;
        let returned = query_param(&callback, "state").unwrap();
        assert_eq!(&returned, flow.state.secret());
        let tampered = callback.replace("state=", "state=x");
        let seen = query_param(&tampered, "state").unwrap();
        assert_ne!(
            &seen,
            flow.state.secret(),
            "the RP would refuse this callback"
        );

        // Logout refusals: an unregistered return address; a hint signed by someone else.
        let page = browser
            .get(&format!(
                "{}?client_id={WEB_ID}&post_logout_redirect_uri=http%3A%2F%2Fevil.example%2F",
                provider.url("/logout")
            ))
            .await;
        assert_eq!(page.status, 400);
        assert!(page.headers.get("location").is_none());
        let forged = "eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJzdWIiOiJ4In0.c2ln";
        let page = browser
            .get(&format!(
                "{}?id_token_hint={forged}",
                provider.url("/logout")
            ))
            .await;
        assert_eq!(page.status, 400);
        // Without a hint the user is asked first, and the session survives the question.
        let page = browser.get(&provider.url("/logout")).await;
        assert_eq!(page.status, 200);
        assert!(page.body.contains("Sign out?"));
        let still = browser.get(&provider.url("/account")).await;
        assert_eq!(still.status, 200, "still signed in");
        // Confirming without the CSRF token is refused; with it, the session ends.
        let refused = browser
            .post(&provider.url("/logout"), &[("csrf", "nope")])
            .await;
        assert_eq!(refused.status, 403);
        let out = browser
            .post(&provider.url("/logout"), &[("csrf", &page.csrf())])
            .await;
        assert_eq!(out.status, 200);
        assert!(out.body.contains("You are signed out"));
        let gone = browser.get(&provider.url("/account")).await;
        assert_eq!(gone.status, 303);
        provider.signin.close().await;
    })
    .await;
}

async fn userinfo_status(client: &Rp, access: &AccessToken, status: u16) {
    let response = http()
        .get(client.user_info_url().unwrap().as_str())
        .bearer_auth(access.secret())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), status);
}

fn assert_oauth_error<T: std::fmt::Debug, RE: std::error::Error + 'static>(
    outcome: Result<
        T,
        RequestTokenError<
            RE,
            openidconnect::StandardErrorResponse<openidconnect::core::CoreErrorResponseType>,
        >,
    >,
    expected: &str,
) {
    match outcome {
        Err(RequestTokenError::ServerResponse(e)) => {
            assert_eq!(e.error().as_ref(), expected, "{e:?}")
        }
        other => panic!("expected {expected}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signing_key_is_made_once_kept_and_shares_the_state_database() {
    on_each_backend("signing_key", |fixture| async move {
        let options = || Options {
            signing_key: false,
            ..Options::default()
        };
        let first = Provider::start(&database(&fixture), options()).await;
        let jwks = |p: &Provider| {
            let url = p.url("/jwks");
            async move { http().get(url).send().await.unwrap().text().await.unwrap() }
        };
        let a = jwks(&first).await;
        let second = Provider::start(&database(&fixture), options()).await;
        let b = jwks(&second).await;
        assert_eq!(
            a, b,
            "a second instance on the same database publishes the same key"
        );
        assert!(a.contains("\"alg\":\"RS256\""));
        // The sign-in tables share the state database without disturbing its migrations.
        fixture.reopen().await.unwrap().close().await;
        first.signin.close().await;
        second.signin.close().await;
    })
    .await;
}
