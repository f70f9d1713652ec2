//! DNS names in canonical form: IDNA ASCII, lowercase, no trailing dot.
//!
//! [`DomainName`] is syntactic: it says a string is one DNS name. Whether a name is registrable
//! (not a public suffix alone) is a question for the query language, which owns the public
//! suffix list.

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

    proptest::proptest! {
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
