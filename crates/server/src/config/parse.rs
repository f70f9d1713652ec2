//! How a value becomes a setting. Each key's field in [`Config`](super::Config) names one of
//! the functions below in `#[serde(deserialize_with = …)]` (and a flag's in `value_parser`):
//! it reads the value as a [`Given`] — a TOML value of the file, or the text of a variable or
//! flag — parses it with one of the small parsers (`text`, `string`, `whole`, `millis`…) and,
//! when that fails, refuses it with what the key expects, which the caller reports with the
//! key and where the value came from.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Unexpected, Visitor};

use periscope_state::DailyLimit;

use super::LogFormat;

/// A value as given: the text of a variable or flag, or a TOML value of the file.
#[derive(Debug)]
pub(super) enum Given {
    /// The text of an environment variable or a flag (its numbers and lists are written out).
    Text(String),
    /// A TOML string.
    Str(String),
    /// A TOML integer.
    Int(i128),
    /// A TOML array.
    List(Vec<Given>),
    /// Any other TOML value (a float, boolean, date or table), which no key takes.
    Other,
}

impl<'de> Deserialize<'de> for Given {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(GivenVisitor)
    }
}

/// Reads a [`Given`] from the configuration's deserializer (`layers::Leaf`), which hands the
/// text of a variable or flag over as bytes and a TOML string as a string.
struct GivenVisitor;

impl<'de> Visitor<'de> for GivenVisitor {
    type Value = Given;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a configuration value")
    }

    fn visit_bytes<E: de::Error>(self, text: &[u8]) -> Result<Given, E> {
        Ok(Given::Text(String::from_utf8_lossy(text).into_owned()))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Given, E> {
        Ok(Given::Str(s.to_owned()))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Given, E> {
        Ok(Given::Int(n.into()))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Given, E> {
        Ok(Given::Int(n.into()))
    }

    fn visit_i128<E: de::Error>(self, n: i128) -> Result<Given, E> {
        Ok(Given::Int(n))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Given, E> {
        Ok(Given::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Given, A::Error> {
        let mut list = Vec::new();
        while let Some(item) = items.next_element()? {
            list.push(item);
        }
        Ok(Given::List(list))
    }
}

impl Given {
    /// A string: a TOML string, or any text.
    fn string(&self) -> Option<&str> {
        match self {
            Given::Text(s) | Given::Str(s) => Some(s),
            _ => None,
        }
    }

    /// An integer: a TOML integer, or text of decimal digits (`_` allowed between them).
    fn integer(&self) -> Option<i128> {
        match self {
            Given::Text(s) => {
                let s = s.trim();
                if s.starts_with('_') || s.ends_with('_') || s.contains("__") {
                    return None;
                }
                s.replace('_', "").parse().ok()
            }
            Given::Int(n) => Some(*n),
            _ => None,
        }
    }

    /// A list of strings: a TOML array of strings, or comma-separated text.
    fn strings(&self) -> Option<Vec<&str>> {
        match self {
            Given::Text(s) => Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect(),
            ),
            Given::List(items) => items
                .iter()
                .map(|item| match item {
                    Given::Str(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }
}

/// Reads a value and parses it with `parse`, or refuses it with what the key `expected`.
fn read<'de, D: Deserializer<'de>, T>(
    deserializer: D,
    expected: &'static str,
    parse: impl FnOnce(&Given) -> Option<T>,
) -> Result<T, D::Error> {
    let given = Given::deserialize(deserializer)?;
    parse(&given).ok_or_else(|| de::Error::invalid_value(Unexpected::Other("it"), &expected))
}

/// A flag's value parser: the text of `--flag VALUE` parsed as the key's variable would be,
/// refused with what the key expects (clap names the flag and the value).
pub(super) fn flag<T: 'static>(
    key: &'static str,
    expected: &'static str,
    parse: fn(&Given) -> Option<T>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |text| {
        parse(&Given::Text(text.to_owned())).ok_or_else(|| format!("`{key}` expects {expected}"))
    }
}

/// Text parsed as `T`, trimmed.
pub(super) fn text<T: FromStr>(given: &Given) -> Option<T> {
    given.string()?.trim().parse().ok()
}

/// Text, trimmed, not empty.
pub(super) fn string(given: &Given) -> Option<String> {
    non_empty(given.string()?).map(str::to_owned)
}

/// A path, not empty.
pub(super) fn path(given: &Given) -> Option<PathBuf> {
    non_empty(given.string()?).map(PathBuf::from)
}

/// A whole number of type `T` no smaller than `min`.
fn whole<T: TryFrom<i128>>(given: &Given, min: i128) -> Option<T> {
    let n = given.integer().filter(|n| *n >= min)?;
    T::try_from(n).ok()
}

/// A list whose every item `item` accepts.
fn list<T>(given: &Given, item: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    given.strings()?.into_iter().map(item).collect()
}

/// `s` trimmed, unless that leaves nothing.
fn non_empty(s: &str) -> Option<&str> {
    Some(s.trim()).filter(|s| !s.is_empty())
}

/// `ip:port`, `[ipv6]:port`, or an address alone (port 53).
fn dns_server(s: &str) -> Option<SocketAddr> {
    let s = s.trim();
    s.parse::<SocketAddr>().ok().or_else(|| {
        let bare = s.strip_prefix('[').and_then(|s| s.strip_suffix(']'));
        bare.unwrap_or(s)
            .parse::<IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, super::DNS_PORT))
    })
}

/// What `listen` expects.
pub(super) const LISTEN: &str = "an IP address and port such as 127.0.0.1:8080 or [::1]:8080";
/// What `data` expects.
pub(super) const DATA: &str = "a directory path (not empty)";
/// What `database_url` expects.
pub(super) const DATABASE_URL: &str =
    "a PostgreSQL URL such as postgres://periscope@db.internal/periscope";
/// What `index.url` expects.
pub(super) const INDEX_URL: &str =
    "clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME] or clickhouse+https://…";
/// What `enrich.geoip_city` expects.
pub(super) const GEOIP_CITY: &str =
    "the path of a MaxMind DB file with locations (GeoLite2 City or Country…)";
/// What `enrich.geoip_asn` expects.
pub(super) const GEOIP_ASN: &str =
    "the path of a MaxMind DB file with autonomous systems (GeoLite2 ASN…)";
/// What `enrich.asn_table` expects.
pub(super) const ASN_TABLE: &str = "the path of an iptoasn TSV table, plain or gzip";
/// What a whole number of milliseconds expects.
const MILLIS: &str = "a whole number of milliseconds from 1 to 4294967295";
/// What a whole number of seconds expects.
const SECS: &str = "a whole number of seconds from 1 to 4294967295";
/// What a positive 32-bit count expects.
const COUNT: &str = "a whole number from 1 to 4294967295";
/// What a CA file key expects.
const CA_FILE: &str = "the path of a PEM file of CA certificates";

/// The result of a key's `deserialize_with` function.
type Read<'de, D, T> = Result<T, <D as Deserializer<'de>>::Error>;

/// `listen`.
pub(super) fn listen<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, SocketAddr> {
    read(d, LISTEN, text)
}

/// `data`.
pub(super) fn data<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, PathBuf> {
    read(d, DATA, path)
}

/// `database_url`.
pub(super) fn database_url<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    read(d, DATABASE_URL, |g| string(g).map(Some))
}

/// A positive number of milliseconds that fits 32 bits.
pub(super) fn millis<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Duration> {
    read(d, MILLIS, |g| {
        whole::<u32>(g, 1).map(|ms| Duration::from_millis(ms.into()))
    })
}

/// A positive number of seconds that fits 32 bits.
pub(super) fn secs<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Duration> {
    read(d, SECS, |g| {
        whole::<u32>(g, 1).map(|s| Duration::from_secs(s.into()))
    })
}

/// A positive 32-bit count.
pub(super) fn count<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, u32> {
    read(d, COUNT, |g| whole(g, 1))
}

/// A PEM file of CA certificates, unset by default.
pub(super) fn ca_file<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<PathBuf>> {
    read(d, CA_FILE, |g| path(g).map(Some))
}

/// `log_format`.
pub(super) fn log_format<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, LogFormat> {
    read(d, "\"text\" or \"json\"", |g| match g.string()?.trim() {
        "text" => Some(LogFormat::Text),
        "json" => Some(LogFormat::Json),
        _ => None,
    })
}

/// `public_url`.
pub(super) fn public_url<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    let expected = "an http(s) URL without path or trailing slash, such as \
                    https://periscope.example.com";
    read(d, expected, |g| {
        let url = string(g)?;
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))?;
        let bad = rest.is_empty() || rest.contains(['/', '?', '#', ' ']);
        (!bad).then_some(Some(url))
    })
}

/// `limits.daily_searches`.
pub(super) fn daily_searches<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, DailyLimit> {
    let expected = "a whole number from 0 to 4294967295, or \"unlimited\"";
    read(d, expected, |g| match g.string().map(str::trim) {
        Some("unlimited") => Some(DailyLimit::Unlimited),
        _ => whole(g, 0).map(DailyLimit::Limited),
    })
}

/// `limits.max_search_hosts`.
pub(super) fn max_search_hosts<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, u64> {
    read(d, "a whole number from 1 to 18446744073709551615", |g| {
        whole(g, 1)
    })
}

/// `limits.retention_days`.
pub(super) fn retention_days<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, u32> {
    read(d, "a whole number of days from 1 to 36500", |g| {
        whole::<u32>(g, 1).filter(|days| *days <= 36_500)
    })
}

/// `dns.servers`.
pub(super) fn dns_servers<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Vec<SocketAddr>> {
    let expected = "a list of IP addresses with optional ports, such as [\"192.0.2.53\", \
                    \"[2001:db8::53]:5353\"] (comma-separated in a variable or flag)";
    read(d, expected, |g| list(g, dns_server))
}

/// `http.trusted_proxies`.
pub(super) fn trusted_proxies<'de, D: Deserializer<'de>>(
    d: D,
) -> Read<'de, D, Vec<periscope_api::forwarded::Cidr>> {
    let expected = "a list of address blocks of reverse proxies, such as [\"127.0.0.1/32\", \
                    \"10.0.0.0/8\"] (comma-separated in a variable or flag)";
    read(d, expected, |g| list(g, |s| s.parse().ok()))
}

/// `signin.smtp_host`.
pub(super) fn smtp_host<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    read(d, "a host name or IP address of an SMTP relay", |g| {
        string(g).map(Some)
    })
}

/// `signin.smtp_port`.
pub(super) fn smtp_port<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<u16>> {
    read(d, "a port number from 1 to 65535", |g| {
        whole(g, 1).map(Some)
    })
}

/// `signin.smtp_tls`.
pub(super) fn smtp_tls<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, periscope_signin::SmtpTls> {
    read(d, "one of none, opportunistic, starttls, tls", text)
}

/// `signin.smtp_username`.
pub(super) fn smtp_username<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    let expected = "the relay's user name (the password comes from \
                    PERISCOPE_SIGNIN_SMTP_PASSWORD or smtp_password_file)";
    read(d, expected, |g| string(g).map(Some))
}

/// `signin.smtp_password_file`.
pub(super) fn smtp_password_file<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<PathBuf>> {
    read(d, "the path of a file holding the relay's password", |g| {
        path(g).map(Some)
    })
}

/// `signin.mail_from`.
pub(super) fn mail_from<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    read(
        d,
        "a sender such as Periscope <no-reply@example.com>",
        |g| string(g).map(Some),
    )
}

/// `signin.terms_version`.
pub(super) fn terms_version<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    read(d, "a dated version such as 2026-11-01", |g| {
        string(g).map(Some)
    })
}

/// `signin.client_ip_header`.
pub(super) fn client_ip_header<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    let expected = "the name of the header a trusted reverse proxy sets, such as \
                    x-forwarded-for";
    read(d, expected, |g| {
        let name = string(g)?;
        axum::http::HeaderName::from_bytes(name.as_bytes()).ok()?;
        Some(Some(name))
    })
}

/// `signin.database_acquire_timeout_ms`.
pub(super) fn signin_acquire_timeout<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<u64>> {
    read(d, "a whole number of milliseconds from 1 to 60000", |g| {
        whole::<u64>(g, 1).filter(|ms| *ms <= 60_000).map(Some)
    })
}

/// `web.issuer`.
pub(super) fn issuer<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    read(d, "an external OpenID Connect provider's issuer URL", |g| {
        string(g).map(Some)
    })
}

/// `web.client_id`.
pub(super) fn client_id<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    read(d, "the application's client id at that provider", |g| {
        string(g).map(Some)
    })
}

/// `web.client_secret`.
pub(super) fn client_secret<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    read(d, "the application's client secret at that provider", |g| {
        string(g).map(Some)
    })
}

/// `web.organization_claim`.
pub(super) fn organization_claim<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<String>> {
    let expected = "the name of an ID token claim, such as org_name or organization";
    read(d, expected, |g| string(g).map(Some))
}

/// `web.default_organization`.
pub(super) fn default_organization<'de, D: Deserializer<'de>>(
    d: D,
) -> Read<'de, D, Option<String>> {
    read(d, "an organisation name", |g| string(g).map(Some))
}

/// `web.allowed_email_domains`.
pub(super) fn allowed_email_domains<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Vec<String>> {
    let expected = "a list of e-mail domains such as [\"example.com\"] (comma-separated in the \
                    environment)";
    read(d, expected, |g| list(g, |s| Some(s.to_owned())))
}

/// `enrich.geoip_city`.
pub(super) fn geoip_city<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<PathBuf>> {
    read(d, GEOIP_CITY, |g| path(g).map(Some))
}

/// `enrich.geoip_asn`.
pub(super) fn geoip_asn<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<PathBuf>> {
    read(d, GEOIP_ASN, |g| path(g).map(Some))
}

/// `enrich.asn_table`.
pub(super) fn asn_table<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<PathBuf>> {
    read(d, ASN_TABLE, |g| path(g).map(Some))
}

/// `index.url`'s location.
pub(super) fn location(given: &Given) -> Option<periscope_clickhouse::Location> {
    given.string()?.parse().ok()
}

/// `index.url`.
pub(super) fn index_url<'de, D: Deserializer<'de>>(
    d: D,
) -> Read<'de, D, Option<periscope_clickhouse::Location>> {
    read(d, INDEX_URL, |g| location(g).map(Some))
}

/// `index.ca_file`.
pub(super) fn index_ca_file<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<PathBuf>> {
    let expected = "the path of a PEM file of certificates trusted for the ClickHouse server";
    read(d, expected, |g| path(g).map(Some))
}

/// `index.password_file`.
pub(super) fn index_password_file<'de, D: Deserializer<'de>>(
    d: D,
) -> Read<'de, D, Option<PathBuf>> {
    read(
        d,
        "the path of a file holding the ClickHouse user's password",
        |g| path(g).map(Some),
    )
}

/// `index.memory_limit_mb`, in bytes; `0` is `None` (the server's profile decides).
pub(super) fn memory_limit<'de, D: Deserializer<'de>>(d: D) -> Read<'de, D, Option<u64>> {
    let expected = "a whole number of MiB from 0 (the server's profile decides) to 1048576";
    read(d, expected, |g| {
        let mb = whole::<u64>(g, 0).filter(|mb| *mb <= 1 << 20)?;
        Some((mb > 0).then_some(mb << 20))
    })
}
