//! The TLS client settings for talking to the OpenID Connect provider: rustls on AWS-LC, the
//! platform's roots (`/etc/ssl/certs`, through `rustls-native-certs`) plus the certificates of
//! an optional CA file (`web.ca_file`, for a private CA). Certificates and host names are
//! always verified; there is no switch to turn that off.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use crate::WebError;

/// The client configuration trusting the platform's roots and `ca_file`'s certificates.
pub(crate) fn client_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, WebError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    let (added, _ignored) = roots.add_parsable_certificates(native.certs);
    for error in &native.errors {
        tracing::warn!(error = %error, "a platform CA certificate could not be loaded");
    }
    if let Some(path) = ca_file {
        let bad = |why: String| crate::config_error("web.ca_file", why);
        let pem = std::fs::read(path)
            .map_err(|e| bad(format!("cannot be read ({}): {e}", path.display())))?;
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("is not PEM ({}): {e}", path.display())))?;
        if certs.is_empty() {
            return Err(bad(format!(
                "holds no certificate (-----BEGIN CERTIFICATE-----): {}",
                path.display()
            )));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| {
                bad(format!(
                    "holds an unusable certificate ({}): {e}",
                    path.display()
                ))
            })?;
        }
    }
    if roots.is_empty() {
        tracing::warn!(
            "no CA certificates: the platform has none (install ca-certificates) and web.ca_file is unset, so no https provider can be verified"
        );
    }
    tracing::debug!(
        platform_roots = added,
        "TLS roots for the sign-in provider loaded"
    );
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| crate::config_error("web.ca_file", format!("TLS setup failed: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}
