//! The serde shape of one line, before any rule is checked.
//!
//! Every struct denies unknown members, so a typo is an error at its exact path, and every
//! member is an `Option`, so that "required" is a rule of the validation pass (with the
//! member's path) and `null` means the same as absent. Strings borrow from the line when it
//! holds them unescaped ([`Text`]); nested objects go through [`object`], which accepts only a
//! JSON object (serde would otherwise also accept an array for a struct, positionally).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Number;

/// A JSON string, borrowed from the line when it has no escapes, and whether it is known to
/// hold no control character ([`Checked`]: the one-pass reader knows it of the plain strings
/// it read; serde's strings are checked by the rules that need it).
pub(super) struct Text<'a>(pub Cow<'a, str>, pub Checked);

/// Whether a [`Text`] is known to hold no control character (U+0000–U+001F, U+007F).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checked {
    /// Known to hold none.
    NoControl,
    /// Not looked at.
    Unknown,
}

/// The string alone: where it came from and what is known of it are not its value.
impl fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Text").field(&self.0).finish()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Borrowed(v), Checked::Unknown))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v.to_owned()), Checked::Unknown))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v), Checked::Unknown))
    }
}

/// The members of a JSON object in the order given, values strings (the `summary` block).
/// Duplicate keys are kept, so the validation pass can name them.
#[derive(Debug, Default)]
pub(super) struct TextMap<'a>(pub Vec<(Text<'a>, Text<'a>)>);

impl<'de: 'a, 'a> Deserialize<'de> for TextMap<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TextMapVisitor)
    }
}

struct TextMapVisitor;

impl<'de> Visitor<'de> for TextMapVisitor {
    type Value = TextMap<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0).min(16));
        while let Some(key) = map.next_key::<Text<'de>>()? {
            pairs.push((key, map.next_value()?));
        }
        Ok(TextMap(pairs))
    }
}

/// Deserializes an optional member that must be a JSON object (or `null`).
pub(super) fn object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<Object<T>>::deserialize(d).map(|o| o.map(|Object(t)| t))
}

/// [`object`], boxed: the largest blocks of a line are boxed so that the line's struct, which
/// serde moves several times while building it, stays small.
pub(super) fn boxed_object<'de, D, T>(d: D) -> Result<Option<Box<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    object(d).map(|o| o.map(Box::new))
}

struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ObjectVisitor(PhantomData))
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Object<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Object)
    }
}

/// A whole line, read only as far as its `kind` (other members are skipped, not checked).
#[derive(Debug, Deserialize)]
pub(super) struct KindProbe<'a> {
    #[serde(borrow)]
    pub kind: Option<Text<'a>>,
}

/// A whole line of either kind: the top level must be an object too.
#[derive(Debug)]
pub(super) struct Line<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Line<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Object(t) = Object::deserialize(d)?;
        Ok(Line(t))
    }
}

/// `kind: "service"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawService<'a> {
    /// Already read by the kind dispatch; declared so that it is not an unknown member.
    #[serde(rename = "kind")]
    pub _kind: Option<IgnoredAny>,
    #[serde(borrow)]
    pub ip: Option<Text<'a>>,
    pub port: Option<Number>,
    #[serde(borrow)]
    pub transport: Option<Text<'a>>,
    #[serde(borrow)]
    pub protocol: Option<Text<'a>>,
    #[serde(borrow)]
    pub observed_at: Option<Text<'a>>,
    #[serde(borrow)]
    pub status: Option<Text<'a>>,
    #[serde(borrow)]
    pub error: Option<Text<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub product: Option<RawProduct<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub vulnerabilities: Option<RawVulnerabilities<'a>>,
    #[serde(borrow, default, deserialize_with = "boxed_object")]
    pub tls: Option<Box<RawTls<'a>>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub http: Option<RawHttp<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub ssh: Option<RawSsh<'a>>,
    #[serde(borrow)]
    pub summary: Option<TextMap<'a>>,
    #[serde(borrow, default, deserialize_with = "boxed_object")]
    pub host: Option<Box<RawHost<'a>>>,
}

/// `product`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProduct<'a> {
    #[serde(borrow)]
    pub title: Option<Text<'a>>,
    #[serde(borrow)]
    pub version: Option<Text<'a>>,
    #[serde(borrow)]
    pub cpe: Option<Text<'a>>,
}

/// `vulnerabilities`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVulnerabilities<'a> {
    #[serde(borrow)]
    pub cves: Option<Vec<Text<'a>>>,
    pub max_cvss: Option<f64>,
    pub has_exploits: Option<bool>,
}

/// `tls`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTls<'a> {
    #[serde(borrow)]
    pub version: Option<Text<'a>>,
    #[serde(borrow)]
    pub cipher_suite: Option<Text<'a>>,
    pub browser_trusted: Option<bool>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub certificate: Option<RawCertificate<'a>>,
}

/// `tls.certificate`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCertificate<'a> {
    #[serde(borrow)]
    pub subject_alt_names: Option<Vec<Text<'a>>>,
    #[serde(borrow)]
    pub common_name: Option<Text<'a>>,
    #[serde(borrow)]
    pub subject_organization: Option<Text<'a>>,
    #[serde(borrow)]
    pub issuer_common_name: Option<Text<'a>>,
    #[serde(borrow)]
    pub issuer_organization: Option<Text<'a>>,
    #[serde(borrow)]
    pub valid_from: Option<Text<'a>>,
    #[serde(borrow)]
    pub valid_until: Option<Text<'a>>,
    #[serde(borrow)]
    pub fingerprint_sha256: Option<Text<'a>>,
}

/// `http`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttp<'a> {
    pub status_code: Option<Number>,
    #[serde(borrow)]
    pub title: Option<Text<'a>>,
    #[serde(borrow)]
    pub server: Option<Text<'a>>,
    pub complete: Option<bool>,
}

/// `ssh`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSsh<'a> {
    #[serde(borrow)]
    pub protocol_version: Option<Text<'a>>,
    #[serde(borrow)]
    pub software_version: Option<Text<'a>>,
    #[serde(borrow)]
    pub host_key_algorithm: Option<Text<'a>>,
    #[serde(borrow)]
    pub host_key_fingerprint: Option<Text<'a>>,
    #[serde(borrow)]
    pub comments: Option<Text<'a>>,
    #[serde(borrow)]
    pub hassh: Option<Text<'a>>,
}

/// `host`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHost<'a> {
    #[serde(borrow, default, deserialize_with = "object")]
    pub location: Option<RawLocation<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub asn: Option<RawAsns<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub provider: Option<RawProvider<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub whois: Option<RawWhois<'a>>,
    #[serde(borrow)]
    pub reverse_dns: Option<Vec<Text<'a>>>,
    #[serde(borrow)]
    pub dns_name: Option<Text<'a>>,
    #[serde(borrow)]
    pub domain: Option<Text<'a>>,
}

/// `host.location`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLocation<'a> {
    #[serde(borrow)]
    pub continent: Option<Text<'a>>,
    #[serde(borrow)]
    pub country_code: Option<Text<'a>>,
    #[serde(borrow)]
    pub country_name: Option<Text<'a>>,
    #[serde(borrow)]
    pub subdivision_1: Option<Text<'a>>,
    #[serde(borrow)]
    pub subdivision_2: Option<Text<'a>>,
    #[serde(borrow)]
    pub city: Option<Text<'a>>,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub accuracy_radius_km: Option<Number>,
}

/// `host.asn`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAsns<'a> {
    #[serde(borrow, default, deserialize_with = "object")]
    pub research: Option<RawAsn<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub bgp: Option<RawAsn<'a>>,
    #[serde(borrow, default, deserialize_with = "object")]
    pub network: Option<RawAsn<'a>>,
}

/// One of `host.asn.research`, `.bgp`, `.network`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAsn<'a> {
    pub asn: Option<Number>,
    #[serde(borrow)]
    pub organization: Option<Text<'a>>,
}

/// `host.provider`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProvider<'a> {
    #[serde(borrow)]
    pub organization: Option<Text<'a>>,
    #[serde(borrow)]
    pub as_organization: Option<Text<'a>>,
    #[serde(borrow)]
    pub isp: Option<Text<'a>>,
}

/// `host.whois`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWhois<'a> {
    #[serde(borrow)]
    pub description: Option<Text<'a>>,
    #[serde(borrow)]
    pub netname: Option<Text<'a>>,
    #[serde(borrow)]
    pub organization: Option<Text<'a>>,
    #[serde(borrow)]
    pub cidr: Option<Text<'a>>,
    #[serde(borrow)]
    pub registry: Option<Text<'a>>,
    #[serde(borrow)]
    pub country_code: Option<Text<'a>>,
}

/// `kind: "domain"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDomain<'a> {
    /// Already read by the kind dispatch.
    #[serde(rename = "kind")]
    pub _kind: Option<IgnoredAny>,
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    #[serde(borrow)]
    pub addresses: Option<Vec<Text<'a>>>,
    #[serde(borrow)]
    pub observed_at: Option<Text<'a>>,
}
