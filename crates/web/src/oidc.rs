//! The relying party, through the `openidconnect` crate: discovery of the provider (with its
//! `end_session_endpoint`), the authorization URL with state, nonce and PKCE S256, the code
//! exchange, and verification of the ID token (signature, issuer, audience, expiry, nonce)
//! with Periscope's optional claims (`org_name`, `terms_version`, `terms_accepted_at`,
//! `marketing_consent`).
//!
//! Discovery runs at every sign-in, callback and sign-out (a few requests per sign-in, and the
//! provider's current keys every time): when it fails the user sees "Session service
//! unavailable".

use std::future::Future;
use std::pin::Pin;

use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreGenderClaim, CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
};
use openidconnect::{
    AdditionalClaims, AsyncHttpClient, AuthorizationCode, ClientId, ClientSecret, CsrfToken,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, HttpClientError, HttpRequest, HttpResponse,
    IdToken, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, ProviderMetadataWithLogout,
    RedirectUrl, RequestTokenError, Scope, TokenResponse,
};
use serde::{Deserialize, Serialize};

/// Periscope's claims, all optional: another provider may send none of them.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub(crate) struct PeriscopeClaims {
    /// The organisation as typed at registration.
    #[serde(default)]
    pub(crate) org_name: Option<String>,
    /// The accepted terms version.
    #[serde(default)]
    pub(crate) terms_version: Option<String>,
    /// When the terms were accepted (Unix seconds).
    #[serde(default)]
    pub(crate) terms_accepted_at: Option<i64>,
    /// Consent to marketing e-mail given with the terms.
    #[serde(default)]
    pub(crate) marketing_consent: Option<bool>,
    /// Every other claim, for `web.organization_claim`.
    #[serde(flatten)]
    pub(crate) other: serde_json::Map<String, serde_json::Value>,
}
impl AdditionalClaims for PeriscopeClaims {}

type PeriscopeIdToken = IdToken<
    PeriscopeClaims,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;

type Rp = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Why talking to the provider failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OidcError {
    /// The provider could not be reached or answered something unusable: "Session service
    /// unavailable".
    #[error("the sign-in service cannot be reached: {0}")]
    Unavailable(String),
    /// The provider answered, and refused or sent something that does not verify.
    #[error("{0}")]
    Refused(String),
}

/// The relying party's settings.
pub(crate) struct RelyingParty {
    pub(crate) issuer: IssuerUrl,
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
    pub(crate) redirect_uri: RedirectUrl,
    pub(crate) http: reqwest::Client,
    /// (the issuer's origin, the origin to send its requests to instead): the embedded
    /// provider is reached on the listening address even when the issuer is the public
    /// (proxied, perhaps https) URL.
    pub(crate) rewrite: Option<(String, String)>,
}

type HttpError = HttpClientError<reqwest::Error>;

/// The HTTP client `openidconnect` calls: [`RelyingParty::send`], boxed (a closure returning
/// its future would not be `Send` for every lifetime, as axum handlers must be).
struct ProviderHttp<'a>(&'a RelyingParty);

impl<'c> AsyncHttpClient<'c> for ProviderHttp<'_> {
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(self.0.send(request))
    }
}

/// A discovered provider.
pub(crate) struct Provider {
    client: Rp,
    end_session: Option<url::Url>,
}

/// What the redirect to the provider needs remembered.
pub(crate) struct Started {
    pub(crate) url: String,
    pub(crate) state: String,
    pub(crate) nonce: String,
    pub(crate) pkce_verifier: String,
}

/// What a verified ID token says.
pub(crate) struct Identity {
    pub(crate) subject: String,
    pub(crate) email: Option<String>,
    pub(crate) email_verified: Option<bool>,
    pub(crate) claims: PeriscopeClaims,
    /// The ID token as received (the logout hint).
    pub(crate) id_token: String,
}

impl RelyingParty {
    /// Sends one request to the provider, to the internal origin when one is configured.
    pub(crate) async fn send(&self, mut request: HttpRequest) -> Result<HttpResponse, HttpError> {
        if let Some((public, internal)) = &self.rewrite {
            let uri = request.uri().to_string();
            if let Some(rest) = uri.strip_prefix(public.as_str())
                && (rest.is_empty() || rest.starts_with('/'))
            {
                *request.uri_mut() = format!("{internal}{rest}")
                    .parse()
                    .map_err(|e| HttpClientError::Other(format!("cannot rewrite {uri}: {e}")))?;
            }
        }
        self.http.call(request).await
    }

    /// `why` a request to the provider failed, naming the issuer, and for a certificate that
    /// does not verify, where trust comes from.
    fn explain(&self, why: &str) -> String {
        let issuer = self.issuer.as_str();
        if why.contains("certificate") || why.contains("Certificate") {
            format!(
                "the TLS certificate of the provider {issuer} is not trusted ({why}); trust comes from the platform's CA certificates and web.ca_file"
            )
        } else {
            format!("provider {issuer}: {why}")
        }
    }

    /// Fetches the provider's discovery document and keys.
    pub(crate) async fn discover(&self) -> Result<Provider, OidcError> {
        let metadata =
            ProviderMetadataWithLogout::discover_async(self.issuer.clone(), &ProviderHttp(self))
                .await
                .map_err(|e| {
                    OidcError::Unavailable(self.explain(&periscope_service::error_chain(&e)))
                })?;
        let end_session = metadata
            .additional_metadata()
            .end_session_endpoint
            .as_ref()
            .map(|u| u.url().clone());
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.client_id.clone()),
            Some(ClientSecret::new(self.client_secret.clone())),
        )
        .set_redirect_uri(self.redirect_uri.clone());
        Ok(Provider {
            client,
            end_session,
        })
    }
}

impl Provider {
    /// The authorization URL, with a fresh state, nonce and PKCE S256 challenge.
    pub(crate) fn start(&self) -> Started {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = self
            .client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()))
            .add_scope(Scope::new("profile".into()))
            .set_pkce_challenge(challenge)
            .url();
        Started {
            url: url.to_string(),
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
        }
    }

    /// Redeems `code` with the PKCE verifier and verifies the ID token against `nonce`.
    pub(crate) async fn finish(
        &self,
        rp: &RelyingParty,
        code: &str,
        pkce_verifier: &str,
        nonce: &str,
    ) -> Result<Identity, OidcError> {
        let request = self
            .client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| OidcError::Unavailable(format!("no token endpoint: {e}")))?;
        let tokens = request
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&ProviderHttp(rp))
            .await
            .map_err(|e| match e {
                RequestTokenError::Request(e) => {
                    OidcError::Unavailable(rp.explain(&periscope_service::error_chain(&e)))
                }
                RequestTokenError::ServerResponse(e) => OidcError::Refused(format!(
                    "the sign-in service refused the code: {}",
                    e.error()
                )),
                other => OidcError::Refused(format!(
                    "the sign-in service's token answer is not usable: {}",
                    periscope_service::error_chain(&other)
                )),
            })?;
        let raw = tokens
            .id_token()
            .ok_or_else(|| OidcError::Refused("the token answer has no ID token".into()))?
            .to_string();
        let id_token: PeriscopeIdToken = raw
            .parse()
            .map_err(|e| OidcError::Refused(format!("the ID token cannot be read: {e}")))?;
        let claims = id_token
            .claims(
                &self.client.id_token_verifier(),
                &Nonce::new(nonce.to_owned()),
            )
            .map_err(|e| OidcError::Refused(format!("the ID token does not verify: {e}")))?;
        Ok(Identity {
            subject: claims.subject().as_str().to_owned(),
            email: claims.email().map(|e| e.as_str().to_owned()),
            email_verified: claims.email_verified(),
            claims: claims.additional_claims().clone(),
            id_token: raw,
        })
    }

    /// The provider's logout endpoint, if it offers RP-initiated logout.
    pub(crate) fn end_session(&self) -> Option<&url::Url> {
        self.end_session.as_ref()
    }
}
