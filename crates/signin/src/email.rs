//! E-mail addresses at registration and sign-in: parsing, normalisation (IDNA for the domain,
//! lower case for the key that makes addresses unique), and the compiled list of disposable
//! and temporary domains (`data/disposable-domains.txt`).

use std::collections::HashSet;
use std::sync::LazyLock;

/// The list of disposable domains, compiled in.
const DISPOSABLE_LIST: &str = include_str!("../data/disposable-domains.txt");

static DISPOSABLE: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    DISPOSABLE_LIST
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
});

/// A syntactically valid address: the local part as typed, the domain in its ASCII (IDNA)
/// lower-case form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmailAddress {
    address: String,
    key: String,
    domain_start: usize,
}

/// Why an address is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmailProblem {
    /// Nothing was typed.
    Missing,
    /// Not an address (`local@domain.tld`, at most 254 characters, ASCII local part).
    Invalid,
    /// The domain (or a parent of it) is a disposable or temporary e-mail service.
    Disposable,
}

impl EmailProblem {
    /// The message shown beside the field.
    pub fn message(self) -> &'static str {
        match self {
            EmailProblem::Missing => "Enter your business e-mail address.",
            EmailProblem::Invalid => {
                "Enter a valid e-mail address, like name@company.com (the part before @ in plain letters, digits and punctuation)."
            }
            EmailProblem::Disposable => {
                "Disposable and temporary e-mail addresses cannot be used. Enter your business e-mail address."
            }
        }
    }
}

impl EmailAddress {
    /// Parses and normalises `input` (surrounding spaces ignored). Does not consult the
    /// disposable list: see [`EmailAddress::parse_for_registration`].
    pub fn parse(input: &str) -> Result<Self, EmailProblem> {
        let input = input.trim();
        if input.is_empty() {
            return Err(EmailProblem::Missing);
        }
        let (local, domain) = input.rsplit_once('@').ok_or(EmailProblem::Invalid)?;
        if !valid_local(local) {
            return Err(EmailProblem::Invalid);
        }
        let domain = domain.strip_suffix('.').unwrap_or(domain);
        let ascii = idna::domain_to_ascii(domain).map_err(|_| EmailProblem::Invalid)?;
        if !valid_domain(&ascii) {
            return Err(EmailProblem::Invalid);
        }
        let address = format!("{local}@{ascii}");
        if address.len() > 254 {
            return Err(EmailProblem::Invalid);
        }
        Ok(Self {
            key: address.to_ascii_lowercase(),
            domain_start: local.len() + 1,
            address,
        })
    }

    /// [`EmailAddress::parse`], then refuses disposable and temporary domains.
    pub fn parse_for_registration(input: &str) -> Result<Self, EmailProblem> {
        let address = Self::parse(input)?;
        if is_disposable(address.domain()) {
            return Err(EmailProblem::Disposable);
        }
        Ok(address)
    }

    /// The address to store and write to: local part as typed, ASCII lower-case domain.
    pub fn as_str(&self) -> &str {
        &self.address
    }

    /// The lower-case form that makes addresses unique (case-insensitively).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The ASCII lower-case domain.
    pub fn domain(&self) -> &str {
        &self.address[self.domain_start..]
    }

    /// The local part, as typed.
    pub fn local(&self) -> &str {
        &self.address[..self.domain_start - 1]
    }
}

/// Whether `domain` (ASCII, lower case) or one of its parent domains is on the list.
pub fn is_disposable(domain: &str) -> bool {
    let mut rest = domain;
    loop {
        if DISPOSABLE.contains(rest) {
            return true;
        }
        match rest.split_once('.') {
            Some((_, parent)) if parent.contains('.') => rest = parent,
            _ => return false,
        }
    }
}

/// A dot-atom local part of 1–64 ASCII characters (RFC 5322 `atext` and dots, no leading,
/// trailing or doubled dot). Quoted local parts and non-ASCII (SMTPUTF8) ones are refused.
fn valid_local(local: &str) -> bool {
    const SPECIALS: &[u8] = b"!#$%&'*+/=?^_`{|}~-";
    (1..=64).contains(&local.len())
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || SPECIALS.contains(&b))
}

/// At least two labels of 1–63 letters, digits and inner hyphens; a TLD that is not all digits.
fn valid_domain(domain: &str) -> bool {
    let labels: Vec<&str> = domain.split('.').collect();
    labels.len() >= 2
        && domain.len() <= 253
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len())
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && labels
            .last()
            .is_some_and(|tld| !tld.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn check(input: &str, expect: Result<(&str, &str), EmailProblem>) {
        let got = EmailAddress::parse_for_registration(input);
        match expect {
            Ok((address, key)) => {
                let got = got.unwrap_or_else(|e| panic!("{input:?}: {e:?}"));
                assert_eq!(got.as_str(), address, "{input:?}");
                assert_eq!(got.key(), key, "{input:?}");
            }
            Err(problem) => assert_eq!(got, Err(problem), "{input:?}"),
        }
    }

    #[test]
    fn addresses() {
        use EmailProblem::*;
        check(
            "alice@example.com",
            Ok(("alice@example.com", "alice@example.com")),
        );
        check(
            "  Alice@Example.COM ",
            Ok(("Alice@example.com", "alice@example.com")),
        );
        check(
            "a.b+tag@sub.example.co.uk.",
            Ok(("a.b+tag@sub.example.co.uk", "a.b+tag@sub.example.co.uk")),
        );
        check(
            "bob@BÜCHER.example",
            Ok(("bob@xn--bcher-kva.example", "bob@xn--bcher-kva.example")),
        );
        check("", Err(Missing));
        check("   ", Err(Missing));
        check("alice", Err(Invalid));
        check("alice@localhost", Err(Invalid));
        check("@example.com", Err(Invalid));
        check("al ice@example.com", Err(Invalid));
        check(".alice@example.com", Err(Invalid));
        check("al..ice@example.com", Err(Invalid));
        check("jürgen@example.com", Err(Invalid));
        check("alice@-example.com", Err(Invalid));
        check("alice@example.123", Err(Invalid));
        check("alice@exa_mple.com", Err(Invalid));
        check(&format!("{}@example.com", "a".repeat(65)), Err(Invalid));
    }

    #[test]
    fn disposable_domains_after_normalisation() {
        use EmailProblem::Disposable;
        check("x@mailinator.com", Err(Disposable));
        check("x@MAILINATOR.COM", Err(Disposable));
        check("x@mailinator.com.", Err(Disposable));
        check("x@inbox.mailinator.com", Err(Disposable));
        check("x@yopmail.com", Err(Disposable));
        check("x@guerrillamail.com", Err(Disposable));
        check("x@10minutemail.com", Err(Disposable));
        // Full-width letters fold to ASCII under IDNA (UTS 46) mapping.
        check("x@ｍａｉｌｉｎａｔｏｒ.com", Err(Disposable));
        // A domain that merely ends like a listed one is not listed.
        check(
            "x@xmailinator.com",
            Ok(("x@xmailinator.com", "x@xmailinator.com")),
        );
        check(
            "x@mailinator.com.example",
            Ok(("x@mailinator.com.example", "x@mailinator.com.example")),
        );
    }

    #[test]
    fn the_list_is_large_lower_case_and_without_blanks() {
        assert!(DISPOSABLE.len() > 1000, "{}", DISPOSABLE.len());
        for d in DISPOSABLE.iter() {
            assert_eq!(*d, d.to_ascii_lowercase());
            assert!(d.contains('.') && !d.contains(' '), "{d:?}");
        }
    }
}
