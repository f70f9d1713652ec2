//! The captured-data blocks of a service line: `product`, `vulnerabilities`, `tls`, `http`,
//! `ssh` and `summary`, each checked on its own. Which protocol may carry which block is a
//! rule of the whole line and lives in the service module. Each block's view borrows from
//! its raw struct.

use std::borrow::Cow;

use super::check::{
    At, Invalid, at_most, hex, integer, opt_text, parsed, quoted, required, text, timestamp, unique,
};
use super::raw::{
    RawCertificate, RawHttp, RawProduct, RawSsh, RawTls, RawVulnerabilities, Text, TextMap,
};
use super::view::{
    CertificateView, HttpView, ProductView, SshView, SummaryView, TlsView, VulnerabilitiesView,
};
use crate::domain::certificate_name;
use crate::record::Summary;
use crate::{Cpe23, CveId, Cvss};

/// At most this many CVE ids per service.
const MAX_CVES: usize = 1000;
/// At most this many subject alternative names per certificate.
const MAX_SANS: usize = 100;

pub(super) fn product<'r>(raw: &'r RawProduct<'_>) -> Result<ProductView<'r>, Invalid> {
    Ok(ProductView {
        title: required(raw.title.as_ref())
            .and_then(|t| text(t, 256))
            .and_then(|t| {
                if t.trim().is_empty() {
                    Err(Invalid::here("the product title is empty"))
                } else {
                    Ok(t)
                }
            })
            .at("title")?,
        version: opt_text(&raw.version, 128).at("version")?,
        cpe: raw
            .cpe
            .as_ref()
            .map(|c| parsed(c, Cpe23::parse).map(Cow::Owned))
            .transpose()
            .at("cpe")?,
    })
}

pub(super) fn vulnerabilities<'r>(
    raw: &'r RawVulnerabilities<'_>,
) -> Result<VulnerabilitiesView<'r>, Invalid> {
    Ok(VulnerabilitiesView {
        cves: required(raw.cves.as_ref())
            .and_then(|c| cves(c))
            .map(Cow::Owned)
            .at("cves")?,
        max_cvss: raw
            .max_cvss
            .map(Cvss::from_f64)
            .transpose()
            .at("max_cvss")?,
        has_exploits: required(raw.has_exploits).at("has_exploits")?,
    })
}

fn cves(raw: &[Text<'_>]) -> Result<Vec<CveId>, Invalid> {
    at_most(raw, MAX_CVES)?;
    let ids = raw
        .iter()
        .enumerate()
        .map(|(i, c)| parsed(c, CveId::parse).at_index(i))
        .collect::<Result<Vec<_>, _>>()?;
    unique(&ids)?;
    Ok(ids)
}

pub(super) fn tls<'r>(raw: &'r RawTls<'_>) -> Result<TlsView<'r>, Invalid> {
    Ok(TlsView {
        version: opt_text(&raw.version, 128).at("version")?,
        cipher_suite: opt_text(&raw.cipher_suite, 128).at("cipher_suite")?,
        browser_trusted: raw.browser_trusted,
        certificate: raw
            .certificate
            .as_ref()
            .map(certificate)
            .transpose()
            .at("certificate")?,
    })
}

fn certificate<'r>(raw: &'r RawCertificate<'_>) -> Result<CertificateView<'r>, Invalid> {
    let valid_from = raw
        .valid_from
        .as_ref()
        .map(timestamp)
        .transpose()
        .at("valid_from")?;
    let valid_until = raw
        .valid_until
        .as_ref()
        .map(timestamp)
        .transpose()
        .at("valid_until")?;
    if let (Some(from), Some(until)) = (valid_from, valid_until)
        && from > until
    {
        return Err(Invalid::member(
            "valid_until",
            format!("{until} is before valid_from ({from})"),
        ));
    }
    Ok(CertificateView {
        subject_alt_names: raw
            .subject_alt_names
            .as_ref()
            .map(|n| subject_alt_names(n))
            .transpose()
            .at("subject_alt_names")?
            .unwrap_or_default(),
        common_name: opt_text(&raw.common_name, 256).at("common_name")?,
        subject_organization: opt_text(&raw.subject_organization, 256)
            .at("subject_organization")?,
        issuer_common_name: opt_text(&raw.issuer_common_name, 256).at("issuer_common_name")?,
        issuer_organization: opt_text(&raw.issuer_organization, 256).at("issuer_organization")?,
        valid_from,
        valid_until,
        fingerprint_sha256: raw
            .fingerprint_sha256
            .as_ref()
            .map(|f| hex(f, 64))
            .transpose()
            .at("fingerprint_sha256")?,
    })
}

fn subject_alt_names<'r>(raw: &'r [Text<'_>]) -> Result<Vec<Cow<'r, str>>, Invalid> {
    at_most(raw, MAX_SANS)?;
    raw.iter()
        .enumerate()
        .map(|(i, name)| subject_alt_name(name).at_index(i))
        .collect()
}

/// A name a certificate gives: [`certificate_name`], borrowed when the line held it in its
/// canonical form.
fn subject_alt_name<'r>(raw: &'r Text<'_>) -> Result<Cow<'r, str>, Invalid> {
    Ok(certificate_name(&raw.0)?)
}

pub(super) fn http<'r>(raw: &'r RawHttp<'_>) -> Result<HttpView<'r>, Invalid> {
    Ok(HttpView {
        status_code: raw
            .status_code
            .as_ref()
            .map(|n| integer(n, 100, 599).map(|c| c as u16))
            .transpose()
            .at("status_code")?,
        title: opt_text(&raw.title, 512).at("title")?,
        server: opt_text(&raw.server, 256).at("server")?,
        complete: required(raw.complete).at("complete")?,
    })
}

pub(super) fn ssh<'r>(raw: &'r RawSsh<'_>) -> Result<SshView<'r>, Invalid> {
    Ok(SshView {
        protocol_version: opt_text(&raw.protocol_version, 256).at("protocol_version")?,
        software_version: opt_text(&raw.software_version, 256).at("software_version")?,
        host_key_algorithm: opt_text(&raw.host_key_algorithm, 256).at("host_key_algorithm")?,
        host_key_fingerprint: opt_text(&raw.host_key_fingerprint, 256)
            .at("host_key_fingerprint")?,
        comments: opt_text(&raw.comments, 256).at("comments")?,
        hassh: raw
            .hassh
            .as_ref()
            .map(|h| hex(h, 32))
            .transpose()
            .at("hassh")?,
    })
}

pub(super) fn summary<'r>(raw: &'r TextMap<'_>) -> Result<SummaryView<'r>, Invalid> {
    let pairs = &raw.0;
    if pairs.len() > Summary::MAX_FIELDS {
        return Err(Invalid::here(format!(
            "{} members; at most {} are allowed",
            pairs.len(),
            Summary::MAX_FIELDS
        )));
    }
    let mut fields: Vec<(&'r str, &'r str)> = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        let key = summary_key(key)?;
        if fields.iter().any(|(k, _)| *k == key) {
            return Err(Invalid::here("duplicate member").within(key));
        }
        let value = text(value, Summary::MAX_VALUE).at(key)?;
        fields.push((key, value));
    }
    Ok(SummaryView { fields })
}

fn summary_key<'r>(key: &'r Text<'_>) -> Result<&'r str, Invalid> {
    let k: &'r str = &key.0;
    let ok = (1..=Summary::MAX_KEY).contains(&k.len())
        && k.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !ok {
        return Err(Invalid::here(format!(
            "key {} is not 1 to {} characters of a-z, 0-9 and _",
            quoted(k),
            Summary::MAX_KEY
        )));
    }
    Ok(k)
}
