//! Passwords: the policy a chosen password must meet (at least 8 characters, long passphrases
//! welcome, common passwords refused from the compiled `data/common-passwords.txt`) and
//! Argon2id hashing and verification.

use std::collections::HashSet;
use std::sync::LazyLock;

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::email::EmailAddress;

/// Fewest characters a password may have.
pub const MIN_CHARS: usize = 8;
/// Most characters a password may have (a long passphrase fits; the limit bounds hashing work).
pub const MAX_CHARS: usize = 1000;

const COMMON_LIST: &str = include_str!("../data/common-passwords.txt");

static COMMON: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    COMMON_LIST
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("# ") && *l != "#")
        .collect()
});

/// Why a chosen password is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasswordProblem {
    /// Fewer than [`MIN_CHARS`] characters.
    TooShort,
    /// More than [`MAX_CHARS`] characters.
    TooLong,
    /// On the list of common passwords, or the e-mail address itself.
    TooCommon,
    /// The two fields differ.
    Mismatch,
}

impl PasswordProblem {
    /// The message shown beside the field.
    pub fn message(self) -> &'static str {
        match self {
            PasswordProblem::TooShort => "Choose a password of at least 8 characters.",
            PasswordProblem::TooLong => "Choose a password of at most 1,000 characters.",
            PasswordProblem::TooCommon => {
                "This password is too common and easy to guess. Choose another; a few unrelated words make a strong passphrase."
            }
            PasswordProblem::Mismatch => "The two passwords differ. Type the same password twice.",
        }
    }
}

/// Checks a password chosen for `email`, typed twice.
pub fn check(password: &str, repeated: &str, email: &EmailAddress) -> Result<(), PasswordProblem> {
    let chars = password.chars().count();
    if chars < MIN_CHARS {
        return Err(PasswordProblem::TooShort);
    }
    if chars > MAX_CHARS {
        return Err(PasswordProblem::TooLong);
    }
    let lower = password.to_lowercase();
    if COMMON.contains(lower.as_str())
        || COMMON.contains(lower.trim())
        || lower == email.key()
        || lower == email.local().to_lowercase()
    {
        return Err(PasswordProblem::TooCommon);
    }
    if password != repeated {
        return Err(PasswordProblem::Mismatch);
    }
    Ok(())
}

/// The hasher: Argon2id, version 0x13, with the crate's default parameters (19 MiB, 2 passes,
/// 1 lane: the OWASP recommendation).
fn argon2() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::default())
}

/// The PHC string of `password` with a fresh salt. CPU-heavy: call it off the async threads.
pub fn hash(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| format!("cannot hash a password: {e}"))
}

/// Whether `password` matches the PHC string `stored`. CPU-heavy: call it off the async
/// threads. An unparsable stored string never matches.
pub fn verify(password: &str, stored: &str) -> bool {
    match PasswordHash::new(stored) {
        Ok(parsed) => argon2()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn check_row(password: &str, expect: Result<(), PasswordProblem>) {
        let email = EmailAddress::parse("Alice.Smith@example.com").unwrap();
        assert_eq!(check(password, password, &email), expect, "{password:?}");
    }

    #[test]
    fn policy() {
        use PasswordProblem::*;
        check_row("", Err(TooShort));
        check_row("1234567", Err(TooShort));
        check_row("ünïcødé", Err(TooShort));
        check_row("password", Err(TooCommon));
        check_row("PassWord", Err(TooCommon));
        check_row("12345678", Err(TooCommon));
        check_row("iloveyou", Err(TooCommon));
        check_row("qwertyuiop", Err(TooCommon));
        check_row("alice.smith@example.com", Err(TooCommon));
        check_row("Alice.Smith", Err(TooCommon));
        check_row("blue-kettle-orbit", Ok(()));
        check_row("ünïcødé!", Ok(()));
        check_row(&"correct horse battery staple ".repeat(30), Ok(()));
        check_row(&"x".repeat(1001), Err(TooLong));
        let email = EmailAddress::parse("a@example.com").unwrap();
        assert_eq!(
            check("blue-kettle-orbit", "blue-kettle-orbiT", &email),
            Err(Mismatch)
        );
    }

    #[test]
    fn the_list_loads_including_entries_that_start_with_a_hash() {
        assert!(COMMON.len() > 8000, "{}", COMMON.len());
        assert!(COMMON.contains("#1stunna"));
        assert!(COMMON.iter().all(|p| p.chars().count() >= MIN_CHARS));
    }

    #[test]
    fn hash_and_verify() {
        let stored = hash("blue-kettle-orbit").unwrap();
        assert!(
            stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{stored}"
        );
        assert!(verify("blue-kettle-orbit", &stored));
        assert!(!verify("blue-kettle-orbiT", &stored));
        assert!(!verify("blue-kettle-orbit", "not a phc string"));
        assert_ne!(stored, hash("blue-kettle-orbit").unwrap());
    }
}
