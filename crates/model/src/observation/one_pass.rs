//! The raw structs of a line read in one pass over its bytes, for the lines serde_json reads.
//!
//! serde_json builds [`raw`](super::raw) structs through serde's visitors: generic, and the
//! larger part of ingest's CPU (about 24,000 instructions for a 1.25 kB line). This reader
//! knows the two line shapes and walks the line once, filling the same structs. It is partial
//! by design: wherever it cannot be sure of giving exactly what serde_json gives — a member
//! serde would refuse (unknown, duplicate, of the wrong type), a key with an escape, a lone
//! surrogate, a control character in a string (U+007F too, which JSON allows), a number whose
//! value serde would compute with more than one rounding, anything after the object — it gives
//! up with `None`, and the line takes the serde path, which accepts it or says precisely what
//! is wrong with it. So this reader never rejects a line and never words an error; a property
//! test holds it to serde's answer over random lines. What it learns on the way is kept: a
//! string without escapes that it read holds no control character ([`Checked::NoControl`]),
//! so the rules need not look again.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde_json::Number;

use super::raw::{
    Checked, RawAsn, RawAsns, RawCertificate, RawDomain, RawHost, RawHttp, RawLocation, RawProduct,
    RawProvider, RawService, RawSsh, RawTls, RawVulnerabilities, RawWhois, Text, TextMap,
};

/// A service line, or `None` when serde must decide.
#[cfg(test)]
pub(super) fn service(line: &str) -> Option<RawService<'_>> {
    service_after(line, None).map(|(raw, _)| raw)
}

/// A service line read after one whose `host` value was `previous` (its bytes): where this
/// line's `host` value holds exactly those bytes, it is not read again ([`HostBlock::Repeated`],
/// and the raw struct's `host` is `None`). A JSON value ends where its own bytes say, so a
/// value that starts with the previous one's bytes is that value, read to the same end.
/// `None` when serde must decide.
pub(super) fn service_after<'a>(
    line: &'a str,
    previous: Option<&[u8]>,
) -> Option<(RawService<'a>, HostBlock)> {
    let mut block = HostBlock::Absent;
    let mut raw = whole(line, |c| service_object(c, previous, &mut block))?;
    if block == HostBlock::Repeated {
        raw.host = None;
    }
    Some((raw, block))
}

/// What [`service_after`] found of a line's `host` member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HostBlock {
    /// No `host` member, or `null`.
    Absent,
    /// The previous block, byte for byte: not read again.
    Repeated,
    /// Read: the value is `line[range]`.
    Read(std::ops::Range<usize>),
}

/// A domain line, or `None` when serde must decide.
pub(super) fn domain(line: &str) -> Option<RawDomain<'_>> {
    whole(line, domain_object)
}

/// `read` over the whole line: one object, then only whitespace.
fn whole<'a, T>(line: &'a str, read: impl FnOnce(&mut Cursor<'a>) -> Option<T>) -> Option<T> {
    let mut c = Cursor { line, at: 0 };
    let t = read(&mut c)?;
    c.skip_whitespace();
    (c.at == line.len()).then_some(t)
}

/// A member of a struct being read: empty, or read once (perhaps as `null`). serde's derived
/// structs refuse a member given twice, `null` or not; so does [`Slot::fill`].
struct Slot<T>(Option<Option<T>>);

impl<T> Slot<T> {
    fn new() -> Self {
        Self(None)
    }

    fn fill(&mut self, value: Option<T>) -> Option<()> {
        match self.0 {
            Some(_) => None,
            None => {
                self.0 = Some(value);
                Some(())
            }
        }
    }

    fn get(self) -> Option<T> {
        self.0.flatten()
    }
}

/// Reads an object into the raw struct `$raw`: the member named `$name` into `$field` through
/// `$read` (or `null`, which leaves it `None`), each at most once, and no other member — what
/// serde's derived `Deserialize` with `deny_unknown_fields` accepts.
macro_rules! read_object {
    ($c:expr, $raw:ident { $($field:ident: $name:literal => $read:expr),* $(,)? }) => {{
        $(let mut $field = Slot::new();)*
        $c.object(|c, key| match key {
            $($name => $field.fill(c.or_null($read)?),)*
            _ => None,
        })?;
        Some($raw { $($field: $field.get()),* })
    }};
}

fn service_object<'a>(
    c: &mut Cursor<'a>,
    previous: Option<&[u8]>,
    block: &mut HostBlock,
) -> Option<RawService<'a>> {
    read_object!(c, RawService {
        _kind: b"kind" => Cursor::kind,
        ip: b"ip" => Cursor::text,
        port: b"port" => Cursor::number,
        transport: b"transport" => Cursor::text,
        protocol: b"protocol" => Cursor::text,
        observed_at: b"observed_at" => Cursor::text,
        status: b"status" => Cursor::text,
        error: b"error" => Cursor::text,
        product: b"product" => product_object,
        vulnerabilities: b"vulnerabilities" => vulnerabilities_object,
        tls: b"tls" => |c| tls_object(c).map(Box::new),
        http: b"http" => http_object,
        ssh: b"ssh" => ssh_object,
        summary: b"summary" => Cursor::text_map,
        host: b"host" => |c| host_member(c, previous, block),
    })
}

/// The `host` member's value: skipped when it repeats `previous` (an empty block stands in
/// for it, dropped by [`service_after`]), else read and its place noted in `block`.
fn host_member<'a>(
    c: &mut Cursor<'a>,
    previous: Option<&[u8]>,
    block: &mut HostBlock,
) -> Option<Box<RawHost<'a>>> {
    let start = c.at;
    if let Some(previous) = previous.filter(|p| c.bytes()[start..].starts_with(p)) {
        c.at += previous.len();
        *block = HostBlock::Repeated;
        return Some(Box::default());
    }
    let host = host_object(c)?;
    *block = HostBlock::Read(start..c.at);
    Some(Box::new(host))
}

fn product_object<'a>(c: &mut Cursor<'a>) -> Option<RawProduct<'a>> {
    read_object!(c, RawProduct {
        title: b"title" => Cursor::text,
        version: b"version" => Cursor::text,
        cpe: b"cpe" => Cursor::text,
    })
}

fn vulnerabilities_object<'a>(c: &mut Cursor<'a>) -> Option<RawVulnerabilities<'a>> {
    read_object!(c, RawVulnerabilities {
        cves: b"cves" => Cursor::texts,
        max_cvss: b"max_cvss" => Cursor::float,
        has_exploits: b"has_exploits" => Cursor::boolean,
    })
}

fn tls_object<'a>(c: &mut Cursor<'a>) -> Option<RawTls<'a>> {
    read_object!(c, RawTls {
        version: b"version" => Cursor::text,
        cipher_suite: b"cipher_suite" => Cursor::text,
        browser_trusted: b"browser_trusted" => Cursor::boolean,
        certificate: b"certificate" => certificate_object,
    })
}

fn certificate_object<'a>(c: &mut Cursor<'a>) -> Option<RawCertificate<'a>> {
    read_object!(c, RawCertificate {
        subject_alt_names: b"subject_alt_names" => Cursor::texts,
        common_name: b"common_name" => Cursor::text,
        subject_organization: b"subject_organization" => Cursor::text,
        issuer_common_name: b"issuer_common_name" => Cursor::text,
        issuer_organization: b"issuer_organization" => Cursor::text,
        valid_from: b"valid_from" => Cursor::text,
        valid_until: b"valid_until" => Cursor::text,
        fingerprint_sha256: b"fingerprint_sha256" => Cursor::text,
    })
}

fn http_object<'a>(c: &mut Cursor<'a>) -> Option<RawHttp<'a>> {
    read_object!(c, RawHttp {
        status_code: b"status_code" => Cursor::number,
        title: b"title" => Cursor::text,
        server: b"server" => Cursor::text,
        complete: b"complete" => Cursor::boolean,
    })
}

fn ssh_object<'a>(c: &mut Cursor<'a>) -> Option<RawSsh<'a>> {
    read_object!(c, RawSsh {
        protocol_version: b"protocol_version" => Cursor::text,
        software_version: b"software_version" => Cursor::text,
        host_key_algorithm: b"host_key_algorithm" => Cursor::text,
        host_key_fingerprint: b"host_key_fingerprint" => Cursor::text,
        comments: b"comments" => Cursor::text,
        hassh: b"hassh" => Cursor::text,
    })
}

fn host_object<'a>(c: &mut Cursor<'a>) -> Option<RawHost<'a>> {
    read_object!(c, RawHost {
        location: b"location" => location_object,
        asn: b"asn" => asns_object,
        provider: b"provider" => provider_object,
        whois: b"whois" => whois_object,
        reverse_dns: b"reverse_dns" => Cursor::texts,
        dns_name: b"dns_name" => Cursor::text,
        domain: b"domain" => Cursor::text,
    })
}

fn location_object<'a>(c: &mut Cursor<'a>) -> Option<RawLocation<'a>> {
    read_object!(c, RawLocation {
        continent: b"continent" => Cursor::text,
        country_code: b"country_code" => Cursor::text,
        country_name: b"country_name" => Cursor::text,
        subdivision_1: b"subdivision_1" => Cursor::text,
        subdivision_2: b"subdivision_2" => Cursor::text,
        city: b"city" => Cursor::text,
        latitude: b"latitude" => Cursor::float,
        longitude: b"longitude" => Cursor::float,
        accuracy_radius_km: b"accuracy_radius_km" => Cursor::number,
    })
}

fn asns_object<'a>(c: &mut Cursor<'a>) -> Option<RawAsns<'a>> {
    read_object!(c, RawAsns {
        research: b"research" => asn_object,
        bgp: b"bgp" => asn_object,
        network: b"network" => asn_object,
    })
}

fn asn_object<'a>(c: &mut Cursor<'a>) -> Option<RawAsn<'a>> {
    read_object!(c, RawAsn {
        asn: b"asn" => Cursor::number,
        organization: b"organization" => Cursor::text,
    })
}

fn provider_object<'a>(c: &mut Cursor<'a>) -> Option<RawProvider<'a>> {
    read_object!(c, RawProvider {
        organization: b"organization" => Cursor::text,
        as_organization: b"as_organization" => Cursor::text,
        isp: b"isp" => Cursor::text,
    })
}

fn whois_object<'a>(c: &mut Cursor<'a>) -> Option<RawWhois<'a>> {
    read_object!(c, RawWhois {
        description: b"description" => Cursor::text,
        netname: b"netname" => Cursor::text,
        organization: b"organization" => Cursor::text,
        cidr: b"cidr" => Cursor::text,
        registry: b"registry" => Cursor::text,
        country_code: b"country_code" => Cursor::text,
    })
}

fn domain_object<'a>(c: &mut Cursor<'a>) -> Option<RawDomain<'a>> {
    read_object!(c, RawDomain {
        _kind: b"kind" => Cursor::kind,
        name: b"name" => Cursor::text,
        addresses: b"addresses" => Cursor::texts,
        observed_at: b"observed_at" => Cursor::text,
    })
}

/// Powers of ten that an `f64` holds exactly.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The largest integer up to which every integer is an `f64` exactly.
const EXACT_INTEGERS: u64 = 1 << 53;

/// A number's token: its digits as an integer, the power of ten they are scaled by, its sign.
struct Decimal {
    negative: bool,
    digits: u64,
    exponent: i32,
    /// Written with a fraction or an exponent (serde_json then reads it as a float).
    float: bool,
}

/// A position in the line.
struct Cursor<'a> {
    line: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.line.as_bytes()
    }

    fn skip_whitespace(&mut self) {
        let bytes = self.bytes();
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not taken.
    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.bytes().get(self.at).copied()
    }

    /// The next byte after whitespace, taken.
    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    /// `literal` (`null`, `true`, `false`) here, taken if so.
    fn literal(&mut self, literal: &[u8]) -> bool {
        let found = self.bytes()[self.at..].starts_with(literal);
        if found {
            self.at += literal.len();
        }
        found
    }

    /// `null` (as `None`), or what `read` reads.
    fn or_null<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.peek()? == b'n' {
            return self.literal(b"null").then_some(None);
        }
        read(self).map(Some)
    }

    /// An object: `member` reads the value of each key (and refuses the keys it does not know).
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.separated(b'{', b'}', |c| {
            let key = c.key()?;
            c.expect(b':')?;
            member(c, key)
        })
    }

    /// `open`, then what `item` reads any number of times with commas between, then `close`
    /// (no comma before it: serde_json refuses a trailing one).
    fn separated(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.expect(open)?;
        if self.peek()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.next()? {
                b',' => {}
                b if b == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// A member name without escapes (serde would match an escaped one after unescaping it;
    /// such a line takes the serde path).
    fn key(&mut self) -> Option<&'a [u8]> {
        self.expect(b'"')?;
        let start = self.at;
        let end = plain_run(self.bytes(), start);
        if self.bytes().get(end) != Some(&b'"') {
            return None;
        }
        self.at = end + 1;
        Some(&self.bytes()[start..end])
    }

    /// The `kind` member's value, which the dispatch has read already (`IgnoredAny`).
    fn kind(&mut self) -> Option<IgnoredAny> {
        self.text().map(|_| IgnoredAny)
    }

    /// A string: borrowed from the line when it has no escape (and then known to hold no
    /// control character: [`plain_run`] stops at one).
    fn text(&mut self) -> Option<Text<'a>> {
        self.expect(b'"')?;
        let bytes = self.bytes();
        let start = self.at;
        let mut end = plain_run(bytes, start);
        if bytes.get(end) == Some(&b'"') {
            self.at = end + 1;
            return Some(Text(
                Cow::Borrowed(self.line.get(start..end)?),
                Checked::NoControl,
            ));
        }
        let mut owned = String::with_capacity(end - start + 16);
        owned.push_str(self.line.get(start..end)?);
        loop {
            match *bytes.get(end)? {
                b'"' => {
                    self.at = end + 1;
                    // An escape may have written a control character.
                    return Some(Text(Cow::Owned(owned), Checked::Unknown));
                }
                b'\\' => {
                    end = self.unescape(end + 1, &mut owned)?;
                }
                // A control character: serde_json refuses it, with its own words (or accepts
                // U+007F, which the rules then judge).
                _ => return None,
            }
            let run = plain_run(bytes, end);
            owned.push_str(self.line.get(end..run)?);
            end = run;
        }
    }

    /// The escape after the backslash at `at - 1`, pushed onto `out`; where the text resumes.
    fn unescape(&self, at: usize, out: &mut String) -> Option<usize> {
        let bytes = self.bytes();
        let c = match *bytes.get(at)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = hex4(bytes.get(at + 1..at + 5)?)?;
                if !(0xD800..0xE000).contains(&unit) {
                    out.push(char::from_u32(unit)?);
                    return Some(at + 5);
                }
                // A surrogate pair, high then low; anything else is serde's to judge.
                if unit >= 0xDC00 || bytes.get(at + 5..at + 7)? != b"\\u" {
                    return None;
                }
                let low = hex4(bytes.get(at + 7..at + 11)?)?;
                if !(0xDC00..0xE000).contains(&low) {
                    return None;
                }
                out.push(char::from_u32(
                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00),
                )?);
                return Some(at + 11);
            }
            _ => return None,
        };
        out.push(c);
        Some(at + 1)
    }

    /// An array of strings.
    fn texts(&mut self) -> Option<Vec<Text<'a>>> {
        let mut texts = Vec::new();
        self.separated(b'[', b']', |c| {
            texts.push(c.text()?);
            Some(())
        })?;
        Some(texts)
    }

    /// An object of string values, duplicates kept in order (as [`TextMap`] reads it).
    fn text_map(&mut self) -> Option<TextMap<'a>> {
        let mut pairs = Vec::new();
        self.separated(b'{', b'}', |c| {
            let key = c.text()?;
            c.expect(b':')?;
            pairs.push((key, c.text()?));
            Some(())
        })?;
        Some(TextMap(pairs))
    }

    fn boolean(&mut self) -> Option<bool> {
        self.skip_whitespace();
        if self.literal(b"true") {
            Some(true)
        } else if self.literal(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// A [`Number`] member: only a plain non-negative integer, which serde_json reads as a
    /// `u64` (a sign, a fraction or an exponent is left to serde).
    fn number(&mut self) -> Option<Number> {
        let d = self.decimal()?;
        (!d.negative && !d.float).then(|| Number::from(d.digits))
    }

    /// An `f64` member, where serde_json's value is the decimal correctly rounded: its digits
    /// are an `f64` exactly and the power of ten is one too, so its one multiplication or
    /// division rounds once (serde_json without `float_roundtrip` computes exactly this).
    /// Longer numbers, or larger powers, are left to serde.
    fn float(&mut self) -> Option<f64> {
        let d = self.decimal()?;
        if d.digits > EXACT_INTEGERS {
            return None;
        }
        let power = *EXACT_POWERS_OF_TEN.get(usize::try_from(d.exponent.unsigned_abs()).ok()?)?;
        #[expect(
            clippy::cast_precision_loss,
            reason = "digits ≤ 2^53: the conversion is exact"
        )]
        let digits = d.digits as f64;
        let value = if d.exponent >= 0 {
            digits * power
        } else {
            digits / power
        };
        Some(if d.negative { -value } else { value })
    }

    /// A number token as JSON writes it (no leading zero, digits after a point and in an
    /// exponent); `None` when its digits pass `u64` or its exponent four digits.
    fn decimal(&mut self) -> Option<Decimal> {
        self.skip_whitespace();
        let bytes = self.bytes();
        let negative = bytes.get(self.at) == Some(&b'-');
        if negative {
            self.at += 1;
        }
        let mut digits = 0u64;
        let first = *bytes.get(self.at)?;
        if !first.is_ascii_digit()
            || (first == b'0' && bytes.get(self.at + 1).is_some_and(u8::is_ascii_digit))
        {
            return None;
        }
        self.digits(&mut digits)?;
        let mut exponent = 0i32;
        let mut float = false;
        if bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            float = true;
            let fraction = self.digits(&mut digits)?;
            if fraction == 0 {
                return None;
            }
            exponent = -i32::try_from(fraction).ok()?;
        }
        if let Some(b'e' | b'E') = bytes.get(self.at) {
            self.at += 1;
            float = true;
            let negative_power = match bytes.get(self.at) {
                Some(b'-') => {
                    self.at += 1;
                    true
                }
                Some(b'+') => {
                    self.at += 1;
                    false
                }
                _ => false,
            };
            let mut power = 0u64;
            let written = self.digits(&mut power)?;
            if written == 0 || written > 4 {
                return None;
            }
            let power = i32::try_from(power).ok()?;
            exponent += if negative_power { -power } else { power };
        }
        Some(Decimal {
            negative,
            digits,
            exponent,
            float,
        })
    }

    /// The ASCII digits here appended to `value`; how many there were. `None` past `u64`.
    fn digits(&mut self, value: &mut u64) -> Option<usize> {
        let bytes = self.bytes();
        let start = self.at;
        while let Some(&b) = bytes.get(self.at).filter(|b| b.is_ascii_digit()) {
            *value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            self.at += 1;
        }
        Some(self.at - start)
    }
}

/// The four hex digits of a `\u` escape.
fn hex4(hex: &[u8]) -> Option<u32> {
    hex.iter().try_fold(0u32, |value, &b| {
        Some(value << 4 | char::from(b).to_digit(16)?)
    })
}

/// The index of the first byte from `at` that ends a plain run of string text: a quote, a
/// backslash or a control character, U+0000–U+001F or U+007F (or the end). Eight bytes at a
/// time.
fn plain_run(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let delete = word ^ (ONES * 0x7f);
        // A byte's high bit is set where it is zero (or below 0x20): exact for the lowest such
        // byte, which is the one wanted (borrows only run upward).
        let hits = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (delete.wrapping_sub(ONES) & !delete)
            | (word.wrapping_sub(ONES * 0x20) & !word);
        let hits = hits & HIGHS;
        if hits != 0 {
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&b) = bytes.get(at) {
        if matches!(b, b'"' | b'\\' | 0..=0x1f | 0x7f) {
            break;
        }
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    //! The one-pass reader against serde_json over random lines of both kinds: whatever it
    //! reads, serde reads too and to the same structs; and the lines a scanner writes (clean
    //! ones) it reads without giving up.

    use proptest::prelude::*;

    use super::{domain, service};
    use crate::observation::raw::{self, Checked, Line, RawDomain, RawService};

    /// What a member holds.
    #[derive(Clone, Copy)]
    enum Shape {
        Kind,
        Text,
        Number,
        Float,
        Bool,
        Texts,
        TextMap,
        Object(&'static [(&'static str, Shape)]),
    }

    use Shape::{Bool, Float, Kind, Number, Object, Text, TextMap, Texts};

    const SERVICE: &[(&str, Shape)] = &[
        ("kind", Kind),
        ("ip", Text),
        ("port", Number),
        ("transport", Text),
        ("protocol", Text),
        ("observed_at", Text),
        ("status", Text),
        ("error", Text),
        (
            "product",
            Object(&[("title", Text), ("version", Text), ("cpe", Text)]),
        ),
        (
            "vulnerabilities",
            Object(&[("cves", Texts), ("max_cvss", Float), ("has_exploits", Bool)]),
        ),
        (
            "tls",
            Object(&[
                ("version", Text),
                ("cipher_suite", Text),
                ("browser_trusted", Bool),
                (
                    "certificate",
                    Object(&[
                        ("subject_alt_names", Texts),
                        ("common_name", Text),
                        ("subject_organization", Text),
                        ("issuer_common_name", Text),
                        ("issuer_organization", Text),
                        ("valid_from", Text),
                        ("valid_until", Text),
                        ("fingerprint_sha256", Text),
                    ]),
                ),
            ]),
        ),
        (
            "http",
            Object(&[
                ("status_code", Number),
                ("title", Text),
                ("server", Text),
                ("complete", Bool),
            ]),
        ),
        (
            "ssh",
            Object(&[
                ("protocol_version", Text),
                ("software_version", Text),
                ("host_key_algorithm", Text),
                ("host_key_fingerprint", Text),
                ("comments", Text),
                ("hassh", Text),
            ]),
        ),
        ("summary", TextMap),
        (
            "host",
            Object(&[
                (
                    "location",
                    Object(&[
                        ("continent", Text),
                        ("country_code", Text),
                        ("country_name", Text),
                        ("subdivision_1", Text),
                        ("subdivision_2", Text),
                        ("city", Text),
                        ("latitude", Float),
                        ("longitude", Float),
                        ("accuracy_radius_km", Number),
                    ]),
                ),
                (
                    "asn",
                    Object(&[("research", ASN), ("bgp", ASN), ("network", ASN)]),
                ),
                (
                    "provider",
                    Object(&[
                        ("organization", Text),
                        ("as_organization", Text),
                        ("isp", Text),
                    ]),
                ),
                (
                    "whois",
                    Object(&[
                        ("description", Text),
                        ("netname", Text),
                        ("organization", Text),
                        ("cidr", Text),
                        ("registry", Text),
                        ("country_code", Text),
                    ]),
                ),
                ("reverse_dns", Texts),
                ("dns_name", Text),
                ("domain", Text),
            ]),
        ),
    ];

    const ASN: Shape = Object(&[("asn", Number), ("organization", Text)]);

    const DOMAIN: &[(&str, Shape)] = &[
        ("kind", Kind),
        ("name", Text),
        ("addresses", Texts),
        ("observed_at", Text),
    ];

    /// Writes random lines: `clean` ones only as scanners write them; otherwise with every
    /// kind of surprise a hand-edited or hostile line holds, one choice in `noise`.
    struct Writer {
        state: u64,
        clean: bool,
        noise: u64,
        out: String,
    }

    impl Writer {
        fn next(&mut self) -> u64 {
            // splitmix64
            self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// A surprise here?
        fn odd(&mut self) -> bool {
            !self.clean && self.below(self.noise) == 0
        }

        fn pick<'s>(&mut self, choices: &[&'s str]) -> &'s str {
            choices[usize::try_from(self.below(choices.len() as u64)).unwrap_or(0)]
        }

        fn space(&mut self) {
            if self.below(4) == 0 {
                let s = self.pick(&[" ", "\t", "\n", "\r", "  "]);
                self.out.push_str(s);
            }
        }

        fn line(mut self, members: &[(&'static str, Shape)]) -> String {
            self.space();
            self.object(members, true);
            self.space();
            if self.odd() {
                let s = self.pick(&["x", "}", ",", "{}", "null"]);
                self.out.push_str(s);
            }
            self.out
        }

        fn object(&mut self, members: &[(&'static str, Shape)], top: bool) {
            let mut order: Vec<usize> = (0..members.len()).collect();
            for i in (1..order.len()).rev() {
                let j = usize::try_from(self.below(i as u64 + 1)).unwrap_or(0);
                order.swap(i, j);
            }
            if top {
                // The kind leads, as the dispatch reads it first.
                order.retain(|&i| i != 0);
                order.insert(0, 0);
            }
            let mut chosen: Vec<usize> = order
                .into_iter()
                .enumerate()
                .filter(|&(at, _)| (top && at == 0) || self.below(3) != 0)
                .map(|(_, i)| i)
                .collect();
            if self.odd() && !chosen.is_empty() {
                let again = chosen[usize::try_from(self.below(chosen.len() as u64)).unwrap_or(0)];
                chosen.push(again);
            }
            self.out.push('{');
            for (n, &i) in chosen.iter().enumerate() {
                if n > 0 {
                    self.space();
                    self.out.push(',');
                }
                self.space();
                let (name, shape) = members[i];
                if self.odd() {
                    let s = self.pick(&["\"unknown\"", "\"k\\u0069nd\"", "\"IP\"", "name"]);
                    self.out.push_str(s);
                } else {
                    self.out.push('"');
                    self.out.push_str(name);
                    self.out.push('"');
                }
                self.space();
                self.out.push(':');
                self.space();
                self.value(shape);
                self.space();
            }
            if self.odd() {
                self.out.push(',');
            }
            self.out.push('}');
        }

        fn value(&mut self, shape: Shape) {
            if self.odd() {
                let s = self.pick(&[
                    "null",
                    "1",
                    "-1",
                    "\"7\"",
                    "[]",
                    "{}",
                    "true",
                    "[1]",
                    "{\"a\":1}",
                    "nul",
                ]);
                self.out.push_str(s);
                return;
            }
            if !self.clean && self.below(8) == 0 {
                self.out.push_str("null");
                return;
            }
            match shape {
                Kind => self.out.push_str("\"service\""),
                Text => self.text(),
                Number => self.number(),
                Float => self.float(),
                Bool => {
                    let s = self.pick(&["true", "false"]);
                    self.out.push_str(s);
                }
                Texts => {
                    self.out.push('[');
                    for n in 0..self.below(4) {
                        if n > 0 {
                            self.out.push(',');
                        }
                        self.space();
                        self.text();
                    }
                    if self.odd() {
                        self.out.push(',');
                    }
                    self.out.push(']');
                }
                TextMap => {
                    self.out.push('{');
                    for n in 0..self.below(4) {
                        if n > 0 {
                            self.out.push(',');
                        }
                        self.text();
                        self.out.push(':');
                        self.space();
                        self.text();
                    }
                    self.out.push('}');
                }
                Object(members) => self.object(members, false),
            }
        }

        fn text(&mut self) {
            self.out.push('"');
            for _ in 0..self.below(24) {
                let clean = [
                    "a",
                    "Z",
                    "7",
                    " ",
                    ".",
                    "-",
                    "é",
                    "😀",
                    "\\\"",
                    "\\\\",
                    "\\n",
                    "\\/",
                    "\\u00e9",
                    "\\ud83d\\ude00",
                    "\\t",
                    "\\u0000",
                    "\\u007f",
                    "ä",
                ];
                let odd = [
                    "\\ud800",
                    "\\udc00",
                    "\\ud83da",
                    "\\x",
                    "\\u12",
                    "\u{1}",
                    "\n",
                    "\\uD83D\\uDE00",
                    "\\u00E9",
                    "\\b\\f\\r",
                    "\u{7f}",
                ];
                let piece = if self.odd() {
                    self.pick(&odd)
                } else {
                    self.pick(&clean)
                };
                self.out.push_str(piece);
            }
            self.out.push('"');
        }

        fn number(&mut self) {
            let clean = ["0", "22", "443", "65535", "8080", "4294967295", "13335"];
            let odd = [
                "-0",
                "-22",
                "1.0",
                "1e3",
                "01",
                "18446744073709551615",
                "18446744073709551616",
                "443.5",
                "-",
                "1e",
                "1.",
                "+1",
                "99999999999999999999999",
            ];
            let s = if self.odd() {
                self.pick(&odd)
            } else {
                self.pick(&clean)
            };
            self.out.push_str(s);
        }

        fn float(&mut self) {
            if self.odd() {
                let s = self.pick(&[
                    "-0",
                    "1e400",
                    "1e-400",
                    "123456789012345678901",
                    "9007199254740993",
                    "0.1e23",
                    "1.5E+2",
                    "1e0005",
                    ".5",
                    "1.e3",
                    "-.5",
                    "00.5",
                    "2.",
                    "1e+",
                    "4.9e-324",
                    "1.7976931348623157e308",
                ]);
                self.out.push_str(s);
                return;
            }
            if self.below(2) == 0 {
                self.out.push('-');
            }
            let whole = self.below(200);
            self.out.push_str(&whole.to_string());
            if self.below(4) != 0 {
                self.out.push('.');
                let places = 1 + self.below(9);
                for _ in 0..places {
                    let d = self.below(10);
                    self.out.push_str(&d.to_string());
                }
            }
            if self.below(8) == 0 {
                let e = self.pick(&["e2", "E-3", "e+1", "e-12", "e12", "e0"]);
                self.out.push_str(e);
            }
        }
    }

    fn lines(seed: u64, clean: bool, noise: u64) -> (String, String) {
        let writer = |state| Writer {
            state,
            clean,
            noise,
            out: String::new(),
        };
        let service_line = writer(seed).line(SERVICE);
        let domain_line = writer(seed ^ 0x5555)
            .line(DOMAIN)
            .replacen("service", "domain", 1);
        (service_line, domain_line)
    }

    /// The one-pass reading of `line`, if any, as serde's: `None` when it gave up.
    fn agree<T: std::fmt::Debug>(
        line: &str,
        one_pass: Option<T>,
        serde: Result<T, serde_json::Error>,
    ) -> Option<()> {
        let read = one_pass?;
        let serde = serde.unwrap_or_else(|e| {
            panic!("the one-pass reader read a line serde refuses ({e}): {line}")
        });
        assert_eq!(format!("{read:?}"), format!("{serde:?}"), "line: {line}");
        Some(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn what_it_reads_serde_reads_alike(seed in any::<u64>(), noise in 2u64..12) {
            let (service_line, domain_line) = lines(seed, false, noise);
            let serde = serde_json::from_str::<Line<RawService<'_>>>(&service_line);
            agree(&service_line, service(&service_line), serde.map(|Line(s)| s));
            let serde = serde_json::from_str::<Line<RawDomain<'_>>>(&domain_line);
            agree(&domain_line, domain(&domain_line), serde.map(|Line(d)| d));
        }

        #[test]
        fn it_reads_clean_lines_whole(seed in any::<u64>()) {
            let (service_line, domain_line) = lines(seed, true, 1);
            let serde = serde_json::from_str::<Line<RawService<'_>>>(&service_line);
            prop_assert!(
                agree(&service_line, service(&service_line), serde.map(|Line(s)| s)).is_some(),
                "gave up on {}", service_line
            );
            let serde = serde_json::from_str::<Line<RawDomain<'_>>>(&domain_line);
            prop_assert!(
                agree(&domain_line, domain(&domain_line), serde.map(|Line(d)| d)).is_some(),
                "gave up on {}", domain_line
            );
        }
    }

    #[test]
    fn it_gives_up_where_serde_must_decide() {
        let lines = [
            // Refused by serde, each for its own reason.
            r#"{"kind":"service","ip":"1.2.3.4","ip":null}"#,
            r#"{"kind":"service","ipp":"1.2.3.4"}"#,
            r#"{"kind":"service","port":01}"#,
            r#"{"kind":"service","ip":"a\ud800"}"#,
            "{\"kind\":\"service\",\"ip\":\"a\u{1}\"}",
            r#"{"kind":"service","product":[]}"#,
            r#"{"kind":"service"} x"#,
            r#"{"kind":"service",}"#,
            r#"{"kind":"service","host":{"location":{"latitude":1e400}}}"#,
            // Accepted by serde, left to it: an escaped name, a value serde rounds itself.
            r#"{"kind":"service","\u0069p":"1.2.3.4"}"#,
            r#"{"kind":"service","port":-1}"#,
            r#"{"kind":"service","port":443.0}"#,
            r#"{"kind":"service","host":{"location":{"latitude":0.1000000000000000055511151231257827}}}"#,
            r#"{"kind":"service","host":{"location":{"latitude":1e23}}}"#,
        ];
        for line in lines {
            assert!(service(line).is_none(), "read {line}");
        }
    }

    #[test]
    fn only_plain_strings_are_known_to_hold_no_control() {
        let line = r#"{"kind":"service","ip":"192.0.2.1","error":"a\tb","status":"c\u00e9"}"#;
        let read = service(line).expect("read");
        let checked = |t: Option<raw::Text<'_>>| t.map(|t| t.1);
        assert_eq!(checked(read.ip), Some(Checked::NoControl));
        assert_eq!(checked(read.error), Some(Checked::Unknown));
        assert_eq!(checked(read.status), Some(Checked::Unknown));
        // U+007F is allowed by JSON and refused by the rules: serde's path reads it.
        assert!(service("{\"kind\":\"service\",\"ip\":\"a\u{7f}\"}").is_none());
    }

    #[test]
    fn it_reads_what_serde_reads_alike_in_every_form() {
        let line = concat!(
            r#" { "kind" : "service" , "ip":"192.0.2.1","port":443,"#,
            r#""summary":{"a":"1","a":"2"},"product":{"title":"caf\u00e9 \"x\" \ud83d\ude00"},"#,
            r#""vulnerabilities":{"cves":[],"max_cvss":9.8,"has_exploits":false},"#,
            r#""host":{"location":{"latitude":-33.8688,"longitude":151,"accuracy_radius_km":5},"#,
            r#""reverse_dns":["a.example", "b.example"],"asn":{"bgp":null}},"tls":null} "#,
        );
        let read = service(line).expect("a line in every form, read");
        let Line(serde) = serde_json::from_str::<Line<RawService<'_>>>(line).expect("serde");
        assert_eq!(format!("{read:?}"), format!("{serde:?}"));
        assert!(
            format!("{read:?}").contains("café \\\"x\\\" 😀"),
            "{read:?}"
        );
    }
}
