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
pub(super) fn service(line: &str) -> Option<RawService<'_>> {
    whole(line, service_object)
}

/// A domain line, or `None` when serde must decide.
pub(super) fn domain(line: &str) -> Option<RawDomain<'_>> {
    whole(line, domain_object)
}

/// `read` over the whole line: one object, then only whitespace.
fn whole<'a, T>(line: &'a str, read: fn(&mut Cursor<'a>) -> Option<T>) -> Option<T> {
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

fn service_object<'a>(c: &mut Cursor<'a>) -> Option<RawService<'a>> {
    let mut kind = Slot::new();
    let mut ip = Slot::new();
    let mut port = Slot::new();
    let mut transport = Slot::new();
    let mut protocol = Slot::new();
    let mut observed_at = Slot::new();
    let mut status = Slot::new();
    let mut error = Slot::new();
    let mut product = Slot::new();
    let mut vulnerabilities = Slot::new();
    let mut tls = Slot::new();
    let mut http = Slot::new();
    let mut ssh = Slot::new();
    let mut summary = Slot::new();
    let mut host = Slot::new();
    c.object(|c, key| match key {
        b"kind" => kind.fill(c.or_null(Cursor::kind)?),
        b"ip" => ip.fill(c.or_null(Cursor::text)?),
        b"port" => port.fill(c.or_null(Cursor::number)?),
        b"transport" => transport.fill(c.or_null(Cursor::text)?),
        b"protocol" => protocol.fill(c.or_null(Cursor::text)?),
        b"observed_at" => observed_at.fill(c.or_null(Cursor::text)?),
        b"status" => status.fill(c.or_null(Cursor::text)?),
        b"error" => error.fill(c.or_null(Cursor::text)?),
        b"product" => product.fill(c.or_null(product_object)?),
        b"vulnerabilities" => vulnerabilities.fill(c.or_null(vulnerabilities_object)?),
        b"tls" => tls.fill(c.or_null(|c| tls_object(c).map(Box::new))?),
        b"http" => http.fill(c.or_null(http_object)?),
        b"ssh" => ssh.fill(c.or_null(ssh_object)?),
        b"summary" => summary.fill(c.or_null(Cursor::text_map)?),
        b"host" => host.fill(c.or_null(|c| host_object(c).map(Box::new))?),
        _ => None,
    })?;
    Some(RawService {
        _kind: kind.get(),
        ip: ip.get(),
        port: port.get(),
        transport: transport.get(),
        protocol: protocol.get(),
        observed_at: observed_at.get(),
        status: status.get(),
        error: error.get(),
        product: product.get(),
        vulnerabilities: vulnerabilities.get(),
        tls: tls.get(),
        http: http.get(),
        ssh: ssh.get(),
        summary: summary.get(),
        host: host.get(),
    })
}

fn product_object<'a>(c: &mut Cursor<'a>) -> Option<RawProduct<'a>> {
    let mut title = Slot::new();
    let mut version = Slot::new();
    let mut cpe = Slot::new();
    c.object(|c, key| match key {
        b"title" => title.fill(c.or_null(Cursor::text)?),
        b"version" => version.fill(c.or_null(Cursor::text)?),
        b"cpe" => cpe.fill(c.or_null(Cursor::text)?),
        _ => None,
    })?;
    Some(RawProduct {
        title: title.get(),
        version: version.get(),
        cpe: cpe.get(),
    })
}

fn vulnerabilities_object<'a>(c: &mut Cursor<'a>) -> Option<RawVulnerabilities<'a>> {
    let mut cves = Slot::new();
    let mut max_cvss = Slot::new();
    let mut has_exploits = Slot::new();
    c.object(|c, key| match key {
        b"cves" => cves.fill(c.or_null(Cursor::texts)?),
        b"max_cvss" => max_cvss.fill(c.or_null(Cursor::float)?),
        b"has_exploits" => has_exploits.fill(c.or_null(Cursor::boolean)?),
        _ => None,
    })?;
    Some(RawVulnerabilities {
        cves: cves.get(),
        max_cvss: max_cvss.get(),
        has_exploits: has_exploits.get(),
    })
}

fn tls_object<'a>(c: &mut Cursor<'a>) -> Option<RawTls<'a>> {
    let mut version = Slot::new();
    let mut cipher_suite = Slot::new();
    let mut browser_trusted = Slot::new();
    let mut certificate = Slot::new();
    c.object(|c, key| match key {
        b"version" => version.fill(c.or_null(Cursor::text)?),
        b"cipher_suite" => cipher_suite.fill(c.or_null(Cursor::text)?),
        b"browser_trusted" => browser_trusted.fill(c.or_null(Cursor::boolean)?),
        b"certificate" => certificate.fill(c.or_null(certificate_object)?),
        _ => None,
    })?;
    Some(RawTls {
        version: version.get(),
        cipher_suite: cipher_suite.get(),
        browser_trusted: browser_trusted.get(),
        certificate: certificate.get(),
    })
}

fn certificate_object<'a>(c: &mut Cursor<'a>) -> Option<RawCertificate<'a>> {
    let mut subject_alt_names = Slot::new();
    let mut common_name = Slot::new();
    let mut subject_organization = Slot::new();
    let mut issuer_common_name = Slot::new();
    let mut issuer_organization = Slot::new();
    let mut valid_from = Slot::new();
    let mut valid_until = Slot::new();
    let mut fingerprint_sha256 = Slot::new();
    c.object(|c, key| match key {
        b"subject_alt_names" => subject_alt_names.fill(c.or_null(Cursor::texts)?),
        b"common_name" => common_name.fill(c.or_null(Cursor::text)?),
        b"subject_organization" => subject_organization.fill(c.or_null(Cursor::text)?),
        b"issuer_common_name" => issuer_common_name.fill(c.or_null(Cursor::text)?),
        b"issuer_organization" => issuer_organization.fill(c.or_null(Cursor::text)?),
        b"valid_from" => valid_from.fill(c.or_null(Cursor::text)?),
        b"valid_until" => valid_until.fill(c.or_null(Cursor::text)?),
        b"fingerprint_sha256" => fingerprint_sha256.fill(c.or_null(Cursor::text)?),
        _ => None,
    })?;
    Some(RawCertificate {
        subject_alt_names: subject_alt_names.get(),
        common_name: common_name.get(),
        subject_organization: subject_organization.get(),
        issuer_common_name: issuer_common_name.get(),
        issuer_organization: issuer_organization.get(),
        valid_from: valid_from.get(),
        valid_until: valid_until.get(),
        fingerprint_sha256: fingerprint_sha256.get(),
    })
}

fn http_object<'a>(c: &mut Cursor<'a>) -> Option<RawHttp<'a>> {
    let mut status_code = Slot::new();
    let mut title = Slot::new();
    let mut server = Slot::new();
    let mut complete = Slot::new();
    c.object(|c, key| match key {
        b"status_code" => status_code.fill(c.or_null(Cursor::number)?),
        b"title" => title.fill(c.or_null(Cursor::text)?),
        b"server" => server.fill(c.or_null(Cursor::text)?),
        b"complete" => complete.fill(c.or_null(Cursor::boolean)?),
        _ => None,
    })?;
    Some(RawHttp {
        status_code: status_code.get(),
        title: title.get(),
        server: server.get(),
        complete: complete.get(),
    })
}

fn ssh_object<'a>(c: &mut Cursor<'a>) -> Option<RawSsh<'a>> {
    let mut protocol_version = Slot::new();
    let mut software_version = Slot::new();
    let mut host_key_algorithm = Slot::new();
    let mut host_key_fingerprint = Slot::new();
    let mut comments = Slot::new();
    let mut hassh = Slot::new();
    c.object(|c, key| match key {
        b"protocol_version" => protocol_version.fill(c.or_null(Cursor::text)?),
        b"software_version" => software_version.fill(c.or_null(Cursor::text)?),
        b"host_key_algorithm" => host_key_algorithm.fill(c.or_null(Cursor::text)?),
        b"host_key_fingerprint" => host_key_fingerprint.fill(c.or_null(Cursor::text)?),
        b"comments" => comments.fill(c.or_null(Cursor::text)?),
        b"hassh" => hassh.fill(c.or_null(Cursor::text)?),
        _ => None,
    })?;
    Some(RawSsh {
        protocol_version: protocol_version.get(),
        software_version: software_version.get(),
        host_key_algorithm: host_key_algorithm.get(),
        host_key_fingerprint: host_key_fingerprint.get(),
        comments: comments.get(),
        hassh: hassh.get(),
    })
}

fn host_object<'a>(c: &mut Cursor<'a>) -> Option<RawHost<'a>> {
    let mut location = Slot::new();
    let mut asn = Slot::new();
    let mut provider = Slot::new();
    let mut whois = Slot::new();
    let mut reverse_dns = Slot::new();
    let mut dns_name = Slot::new();
    let mut domain = Slot::new();
    c.object(|c, key| match key {
        b"location" => location.fill(c.or_null(location_object)?),
        b"asn" => asn.fill(c.or_null(asns_object)?),
        b"provider" => provider.fill(c.or_null(provider_object)?),
        b"whois" => whois.fill(c.or_null(whois_object)?),
        b"reverse_dns" => reverse_dns.fill(c.or_null(Cursor::texts)?),
        b"dns_name" => dns_name.fill(c.or_null(Cursor::text)?),
        b"domain" => domain.fill(c.or_null(Cursor::text)?),
        _ => None,
    })?;
    Some(RawHost {
        location: location.get(),
        asn: asn.get(),
        provider: provider.get(),
        whois: whois.get(),
        reverse_dns: reverse_dns.get(),
        dns_name: dns_name.get(),
        domain: domain.get(),
    })
}

fn location_object<'a>(c: &mut Cursor<'a>) -> Option<RawLocation<'a>> {
    let mut continent = Slot::new();
    let mut country_code = Slot::new();
    let mut country_name = Slot::new();
    let mut subdivision_1 = Slot::new();
    let mut subdivision_2 = Slot::new();
    let mut city = Slot::new();
    let mut latitude = Slot::new();
    let mut longitude = Slot::new();
    let mut accuracy_radius_km = Slot::new();
    c.object(|c, key| match key {
        b"continent" => continent.fill(c.or_null(Cursor::text)?),
        b"country_code" => country_code.fill(c.or_null(Cursor::text)?),
        b"country_name" => country_name.fill(c.or_null(Cursor::text)?),
        b"subdivision_1" => subdivision_1.fill(c.or_null(Cursor::text)?),
        b"subdivision_2" => subdivision_2.fill(c.or_null(Cursor::text)?),
        b"city" => city.fill(c.or_null(Cursor::text)?),
        b"latitude" => latitude.fill(c.or_null(Cursor::float)?),
        b"longitude" => longitude.fill(c.or_null(Cursor::float)?),
        b"accuracy_radius_km" => accuracy_radius_km.fill(c.or_null(Cursor::number)?),
        _ => None,
    })?;
    Some(RawLocation {
        continent: continent.get(),
        country_code: country_code.get(),
        country_name: country_name.get(),
        subdivision_1: subdivision_1.get(),
        subdivision_2: subdivision_2.get(),
        city: city.get(),
        latitude: latitude.get(),
        longitude: longitude.get(),
        accuracy_radius_km: accuracy_radius_km.get(),
    })
}

fn asns_object<'a>(c: &mut Cursor<'a>) -> Option<RawAsns<'a>> {
    let mut research = Slot::new();
    let mut bgp = Slot::new();
    let mut network = Slot::new();
    c.object(|c, key| match key {
        b"research" => research.fill(c.or_null(asn_object)?),
        b"bgp" => bgp.fill(c.or_null(asn_object)?),
        b"network" => network.fill(c.or_null(asn_object)?),
        _ => None,
    })?;
    Some(RawAsns {
        research: research.get(),
        bgp: bgp.get(),
        network: network.get(),
    })
}

fn asn_object<'a>(c: &mut Cursor<'a>) -> Option<RawAsn<'a>> {
    let mut asn = Slot::new();
    let mut organization = Slot::new();
    c.object(|c, key| match key {
        b"asn" => asn.fill(c.or_null(Cursor::number)?),
        b"organization" => organization.fill(c.or_null(Cursor::text)?),
        _ => None,
    })?;
    Some(RawAsn {
        asn: asn.get(),
        organization: organization.get(),
    })
}

fn provider_object<'a>(c: &mut Cursor<'a>) -> Option<RawProvider<'a>> {
    let mut organization = Slot::new();
    let mut as_organization = Slot::new();
    let mut isp = Slot::new();
    c.object(|c, key| match key {
        b"organization" => organization.fill(c.or_null(Cursor::text)?),
        b"as_organization" => as_organization.fill(c.or_null(Cursor::text)?),
        b"isp" => isp.fill(c.or_null(Cursor::text)?),
        _ => None,
    })?;
    Some(RawProvider {
        organization: organization.get(),
        as_organization: as_organization.get(),
        isp: isp.get(),
    })
}

fn whois_object<'a>(c: &mut Cursor<'a>) -> Option<RawWhois<'a>> {
    let mut description = Slot::new();
    let mut netname = Slot::new();
    let mut organization = Slot::new();
    let mut cidr = Slot::new();
    let mut registry = Slot::new();
    let mut country_code = Slot::new();
    c.object(|c, key| match key {
        b"description" => description.fill(c.or_null(Cursor::text)?),
        b"netname" => netname.fill(c.or_null(Cursor::text)?),
        b"organization" => organization.fill(c.or_null(Cursor::text)?),
        b"cidr" => cidr.fill(c.or_null(Cursor::text)?),
        b"registry" => registry.fill(c.or_null(Cursor::text)?),
        b"country_code" => country_code.fill(c.or_null(Cursor::text)?),
        _ => None,
    })?;
    Some(RawWhois {
        description: description.get(),
        netname: netname.get(),
        organization: organization.get(),
        cidr: cidr.get(),
        registry: registry.get(),
        country_code: country_code.get(),
    })
}

fn domain_object<'a>(c: &mut Cursor<'a>) -> Option<RawDomain<'a>> {
    let mut kind = Slot::new();
    let mut name = Slot::new();
    let mut addresses = Slot::new();
    let mut observed_at = Slot::new();
    c.object(|c, key| match key {
        b"kind" => kind.fill(c.or_null(Cursor::kind)?),
        b"name" => name.fill(c.or_null(Cursor::text)?),
        b"addresses" => addresses.fill(c.or_null(Cursor::texts)?),
        b"observed_at" => observed_at.fill(c.or_null(Cursor::text)?),
        _ => None,
    })?;
    Some(RawDomain {
        _kind: kind.get(),
        name: name.get(),
        addresses: addresses.get(),
        observed_at: observed_at.get(),
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
        self.expect(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.expect(b':')?;
            member(self, key)?;
            match self.next()? {
                b',' => {}
                b'}' => return Some(()),
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
        self.expect(b'[')?;
        let mut texts = Vec::new();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(texts);
        }
        loop {
            texts.push(self.text()?);
            match self.next()? {
                b',' => {}
                b']' => return Some(texts),
                _ => return None,
            }
        }
    }

    /// An object of string values, duplicates kept in order (as [`TextMap`] reads it).
    fn text_map(&mut self) -> Option<TextMap<'a>> {
        self.expect(b'{')?;
        let mut pairs = Vec::new();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(TextMap(pairs));
        }
        loop {
            let key = self.text()?;
            self.expect(b':')?;
            pairs.push((key, self.text()?));
            match self.next()? {
                b',' => {}
                b'}' => return Some(TextMap(pairs)),
                _ => return None,
            }
        }
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
