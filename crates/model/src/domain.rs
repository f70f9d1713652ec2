//! DNS names in canonical form: IDNA ASCII, lowercase, no trailing dot.
//!
//! [`DomainName`] is syntactic: it says a string is one DNS name. Whether a name is registrable
//! (not a public suffix alone) is a question for the query language, which owns the public
//! suffix list. [`certificate_name`] is the one rule for a name a certificate gives a host,
//! which may be a wildcard: the observation format's, the importers' and the results'.

use std::borrow::Cow;
use std::fmt;

use crate::error::InvalidValue;

/// A DNS name: labels of letters, digits, hyphens and underscores (1–63 bytes each, no hyphen
/// at either end), at most 253 bytes in all, a top-level label that is not all digits.
/// Unicode input is converted to IDNA ASCII (`bücher.example` → `xn--bcher-kva.example`);
/// case is folded; one trailing dot is dropped.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DomainName(Box<str>);

impl DomainName {
    /// Parses and normalises a name. Wildcards, URL syntax, spaces and empty labels are errors.
    pub fn parse(input: &str) -> Result<Self, InvalidValue> {
        let without_dot = input.strip_suffix('.').unwrap_or(input);
        if without_dot.is_empty() {
            return Err(InvalidValue::new("domain name", "the name is empty"));
        }
        if without_dot.contains('*') {
            return Err(InvalidValue::new(
                "domain name",
                "wildcards are not allowed",
            ));
        }
        let ascii = if without_dot.is_ascii() {
            without_dot.to_ascii_lowercase()
        } else {
            idna::domain_to_ascii(without_dot).map_err(|_| {
                InvalidValue::new(
                    "domain name",
                    format!("{input:?} is not a valid internationalised name"),
                )
            })?
        };
        validate_ascii(&ascii)?;
        Ok(Self(ascii.into_boxed_str()))
    }

    /// Whether `s` is a name in its canonical form already: exactly the strings that
    /// [`Self::parse`] accepts and gives back unchanged, found without allocating (a reader
    /// borrows such a name from its line rather than copying it).
    pub fn is_canonical(s: &str) -> bool {
        // The rules refuse an empty name, a trailing dot, `*` and anything not ASCII; of
        // what they accept, `parse` changes only uppercase letters.
        !s.bytes().any(|b| b.is_ascii_uppercase()) && validate_ascii(s).is_ok()
    }

    /// The canonical ASCII text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The labels from left to right.
    pub fn labels(&self) -> impl DoubleEndedIterator<Item = &str> {
        self.0.split('.')
    }

    /// True when `self` equals `parent` or is a subdomain of it.
    pub fn is_within(&self, parent: &DomainName) -> bool {
        let (me, p) = (self.as_str(), parent.as_str());
        me == p
            || (me.len() > p.len()
                && me.ends_with(p)
                && me.as_bytes()[me.len() - p.len() - 1] == b'.')
    }
}

/// The longest name a certificate may give a host, its `*.` included: a DNS name's bound.
pub const MAX_CERTIFICATE_NAME_LEN: usize = 253;

/// A name as a certificate gives it for a host — a subject alternative name, or a common name
/// that is a DNS name — in canonical form: a name as [`DomainName::parse`] gives it, or `*.`
/// followed by one, at most [`MAX_CERTIFICATE_NAME_LEN`] characters in all. Borrowed when
/// `text` is in that form already (as nearly every name a scanner wrote is), which is found
/// without allocating.
pub fn certificate_name(text: &str) -> Result<Cow<'_, str>, InvalidValue> {
    let (wildcard, rest) = match text.strip_prefix("*.") {
        Some(rest) => ("*.", rest),
        None => ("", text),
    };
    let name = if DomainName::is_canonical(rest) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("{wildcard}{}", DomainName::parse(rest)?))
    };
    if name.len() > MAX_CERTIFICATE_NAME_LEN {
        return Err(InvalidValue::new(
            "certificate name",
            format!(
                "{} characters long; a name is at most {MAX_CERTIFICATE_NAME_LEN}",
                name.len()
            ),
        ));
    }
    Ok(name)
}

fn validate_ascii(name: &str) -> Result<(), InvalidValue> {
    if name.len() > 253 {
        return Err(InvalidValue::new(
            "domain name",
            "longer than 253 characters",
        ));
    }
    let mut last = "";
    for label in name.split('.') {
        if label.is_empty() {
            return Err(InvalidValue::new(
                "domain name",
                "empty label (two dots in a row)",
            ));
        }
        if label.len() > 63 {
            return Err(InvalidValue::new(
                "domain name",
                format!("label {label:?} is longer than 63"),
            ));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(InvalidValue::new(
                "domain name",
                format!("character {c:?} is not allowed"),
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(InvalidValue::new(
                "domain name",
                format!("label {label:?} starts or ends with '-'"),
            ));
        }
        last = label;
    }
    if last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(InvalidValue::new(
            "domain name",
            "the top-level label is all digits",
        ));
    }
    Ok(())
}

impl fmt::Display for DomainName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for DomainName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises() {
        for (input, want) in [
            ("Example.COM", "example.com"),
            ("example.com.", "example.com"),
            ("Bücher.example", "xn--bcher-kva.example"),
            ("_dmarc.acme.example", "_dmarc.acme.example"),
            ("localhost", "localhost"),
        ] {
            assert_eq!(DomainName::parse(input).unwrap().as_str(), want, "{input}");
        }
    }

    #[test]
    fn rejects() {
        let long_label = format!("{}.example", "a".repeat(64));
        let long_name = format!("{}example", "abcdefghi.".repeat(25));
        for bad in [
            "",
            ".",
            "example.com..",
            "*.example.com",
            "a..b",
            "-a.example",
            "a-.example",
            "http://example.com",
            "example.com/x",
            "exa mple.com",
            "1.2.3.4",
            "a.123",
            long_label.as_str(),
            long_name.as_str(),
            "user@example.com",
            "example.com:80",
        ] {
            assert!(DomainName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn subdomains() {
        let p = DomainName::parse("acme.example").unwrap();
        assert!(DomainName::parse("www.acme.example").unwrap().is_within(&p));
        assert!(DomainName::parse("acme.example").unwrap().is_within(&p));
        assert!(!DomainName::parse("notacme.example").unwrap().is_within(&p));
    }

    /// A name is canonical exactly when parsing accepts it and gives it back unchanged.
    fn canonical_by_parsing(s: &str) -> bool {
        DomainName::parse(s).is_ok_and(|d| d.as_str() == s)
    }

    #[test]
    fn canonical_names_are_told_apart() {
        for s in [
            "example.com",
            "_dmarc.acme.example",
            "localhost",
            "xn--bcher-kva.example",
        ] {
            assert!(DomainName::is_canonical(s), "{s}");
        }
        for s in [
            "",
            "Example.com",
            "example.com.",
            "bücher.example",
            "*.example",
            "a..b",
        ] {
            assert!(!DomainName::is_canonical(s), "{s}");
        }
    }

    #[test]
    fn certificate_names_are_names_or_wildcards_of_them() {
        for (input, want) in [
            ("www.example.com", "www.example.com"),
            ("*.example.com", "*.example.com"),
            ("*.Example.COM.", "*.example.com"),
            ("Bücher.example", "xn--bcher-kva.example"),
            ("*.bücher.example", "*.xn--bcher-kva.example"),
        ] {
            assert_eq!(certificate_name(input).unwrap(), want, "{input}");
        }
        assert!(matches!(
            certificate_name("*.example.com").unwrap(),
            Cow::Borrowed(_)
        ));
        for bad in [
            "",
            "*",
            "*.",
            "a.*.example",
            "**.example",
            "*.*.example",
            "a..b",
            "1.2.3.4",
        ] {
            assert!(certificate_name(bad).is_err(), "{bad:?}");
        }
        // The bound counts the `*.`: a name of 252 characters is one, its wildcard is not.
        let name = format!("{}{}", "abcdefghi.".repeat(24), "abcdefghijkl");
        assert_eq!(name.len(), 252);
        assert!(certificate_name(&name).is_ok());
        let e = certificate_name(&format!("*.{name}")).unwrap_err();
        assert_eq!(e.reason, "254 characters long; a name is at most 253");
    }

    proptest::proptest! {
        #[test]
        fn a_certificate_name_is_its_name_parsed(
            wildcard in "(\\*\\.)?",
            pad in proptest::option::of(236usize..254),
            rest in "([a-zA-Z0-9_*ü-]{0,6}\\.?){0,4}",
        ) {
            // Now and then a name near its bound, either side.
            let pad = &"abcdefghi.".repeat(26)[..pad.unwrap_or(0)];
            let s = format!("{wildcard}{pad}{rest}");
            // The definition: `*.` and a name as parsing gives it, or a name so, within the
            // bound; and borrowed exactly when that is `s` itself.
            let (star, name) = s.strip_prefix("*.").map_or(("", s.as_str()), |n| ("*.", n));
            let want = DomainName::parse(name)
                .ok()
                .map(|d| format!("{star}{d}"))
                .filter(|n| n.len() <= MAX_CERTIFICATE_NAME_LEN);
            let got = certificate_name(&s);
            proptest::prop_assert_eq!(got.as_deref().ok(), want.as_deref(), "{:?}", s);
            let borrowed = matches!(got, Ok(Cow::Borrowed(_)));
            proptest::prop_assert_eq!(borrowed, want.as_deref() == Some(s.as_str()));
        }

        #[test]
        fn canonical_is_what_parsing_leaves_unchanged(
            s in "([a-zA-Z0-9_*ü-]{0,6}\\.?){0,4}",
            long in 0usize..3,
        ) {
            // Now and then a label or a name past its bound.
            let s = match long {
                1 => format!("{}.{s}", "a".repeat(63 + s.len() % 2)),
                2 => format!("{}{s}", "abcdefghi.".repeat(25)),
                _ => s,
            };
            let canonical = DomainName::is_canonical(&s);
            proptest::prop_assert_eq!(canonical, canonical_by_parsing(&s), "{:?}", s);
        }
    }
}
