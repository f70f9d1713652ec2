//! API keys: creating one (shown once, stored only as a SHA-256 digest), listing, revoking,
//! and resolving a presented key to its account.
//!
//! A key is `psk_`, 32 random base62 characters and a 6-character base62 CRC-32 of the first
//! 36 characters: 42 characters that secret scanners can recognise and that can be checked for
//! typos without a database read. Revocation is effective at the next lookup: nothing is
//! cached. An unknown, revoked or malformed key all resolve to `None`.

use std::fmt;

use periscope_model::Timestamp;

use crate::accounts::{
    Account, AccountId, account_columns, account_from_row, timestamp, unknown_account_on_fk,
};
use crate::db::on_db;
use crate::error::{Result, StateError};
use periscope_model::random::{self, digest};

use crate::State;

const PREFIX: &str = "psk_";
const SECRET_LEN: usize = 32;
const CHECK_LEN: usize = 6;
/// The length of a key: `psk_` + 32 + 6.
pub const API_KEY_LEN: usize = PREFIX.len() + SECRET_LEN + CHECK_LEN;

/// `last_used_at` is rewritten at most this often (seconds), so a busy key costs one read per
/// request and one write per minute.
const LAST_USED_GRANULARITY: i64 = 60;

/// The characters of a key kept visible for its owner: `psk_` and 8 of the random ones.
pub const KEY_PREFIX_LEN: usize = PREFIX.len() + 8;

/// Key names are optional, trimmed, and at most this many characters.
pub const KEY_NAME_MAX_CHARS: usize = 100;

/// Identifies an API key (not secret).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId(i64);

impl KeyId {
    /// The id as stored.
    pub fn as_i64(self) -> i64 {
        self.0
    }

    /// An id as stored (for example one printed by `periscope admin`).
    pub fn from_i64(id: i64) -> Self {
        Self(id)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A full API key, as shown to its owner once. Its `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    fn generate() -> Result<Self> {
        let mut key = String::with_capacity(API_KEY_LEN);
        key.push_str(PREFIX);
        key.push_str(&random::base62(SECRET_LEN)?);
        let check = random::base62_fixed(u64::from(crc32(key.as_bytes())), CHECK_LEN);
        key.push_str(&check);
        Ok(Self(key))
    }

    /// The key, to show once; never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(psk_…)")
    }
}

/// Whether `presented` has the shape of a key, checksum included.
pub fn is_well_formed_key(presented: &str) -> bool {
    let b = presented.as_bytes();
    if b.len() != API_KEY_LEN
        || !presented.starts_with(PREFIX)
        || !b[PREFIX.len()..].iter().all(|&c| random::is_base62(c))
    {
        return false;
    }
    let (body, check) = presented.split_at(PREFIX.len() + SECRET_LEN);
    random::base62_fixed(u64::from(crc32(body.as_bytes())), CHECK_LEN) == check
}

/// What is known about a key, without the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// Its id.
    pub id: KeyId,
    /// The account it acts for.
    pub account: AccountId,
    /// Its name, if one was given.
    pub name: Option<String>,
    /// Its first [`KEY_PREFIX_LEN`] characters, to tell keys apart (`None` for keys created
    /// before schema version 3).
    pub prefix: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was last used (to the minute).
    pub last_used_at: Option<Timestamp>,
    /// When it was revoked.
    pub revoked_at: Option<Timestamp>,
}

/// The account a presented key acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyOwner {
    /// The key that was presented.
    pub key: KeyId,
    /// Its account, read in the same statement.
    pub account: Account,
}

fn key_name(name: Option<&str>) -> Result<Option<String>> {
    let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    if name.chars().count() > KEY_NAME_MAX_CHARS {
        return Err(StateError::invalid(
            "key name",
            format!("longer than {KEY_NAME_MAX_CHARS} characters"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(StateError::invalid(
            "key name",
            "contains control characters",
        ));
    }
    Ok(Some(name.to_owned()))
}

type KeyRow = (
    i64,
    i64,
    Option<String>,
    Option<String>,
    i64,
    Option<i64>,
    Option<i64>,
);

fn key_from_row(row: KeyRow) -> Result<KeyInfo> {
    let (id, account, name, prefix, created, last_used, revoked) = row;
    Ok(KeyInfo {
        id: KeyId(id),
        account: AccountId::from_i64(account),
        name,
        prefix,
        created_at: timestamp(created, "api_keys.created_at")?,
        last_used_at: last_used
            .map(|t| timestamp(t, "api_keys.last_used_at"))
            .transpose()?,
        revoked_at: revoked
            .map(|t| timestamp(t, "api_keys.revoked_at"))
            .transpose()?,
    })
}

impl State {
    /// Creates a key for the account. The returned [`ApiKey`] is the only copy of the key.
    pub async fn create_key(
        &self,
        account: AccountId,
        name: Option<&str>,
        now: Timestamp,
    ) -> Result<(ApiKey, KeyInfo)> {
        let name = key_name(name)?;
        let key = ApiKey::generate()?;
        let id = random::id()?;
        let prefix = key.expose()[..KEY_PREFIX_LEN].to_owned();
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO api_keys (id, account_id, digest, name, prefix, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(id)
            .bind(account.as_i64())
            .bind(digest(key.expose()))
            .bind(&name)
            .bind(&prefix)
            .bind(now.unix())
            .execute(pool)
            .await
            .map_err(unknown_account_on_fk)?;
        });
        let info = KeyInfo {
            id: KeyId(id),
            account,
            name,
            prefix: Some(prefix),
            created_at: now,
            last_used_at: None,
            revoked_at: None,
        };
        Ok((key, info))
    }

    /// The account's keys, revoked ones included, oldest first.
    pub async fn keys_of(&self, account: AccountId) -> Result<Vec<KeyInfo>> {
        let rows: Vec<KeyRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT id, account_id, name, prefix, created_at, last_used_at, revoked_at \
                 FROM api_keys WHERE account_id = $1 ORDER BY created_at, id",
            )
            .bind(account.as_i64())
            .fetch_all(pool)
            .await?
        });
        rows.into_iter().map(key_from_row).collect()
    }

    /// Revokes one of the account's keys. `false` when the account has no such key or it was
    /// revoked already (its first revocation time is kept).
    pub async fn revoke_key(&self, account: AccountId, key: KeyId, now: Timestamp) -> Result<bool> {
        let rows = on_db!(&self.db, |pool| {
            sqlx::query(
                "UPDATE api_keys SET revoked_at = $1 \
                 WHERE id = $2 AND account_id = $3 AND revoked_at IS NULL",
            )
            .bind(now.unix())
            .bind(key.0)
            .bind(account.as_i64())
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(rows > 0)
    }

    /// The account a presented key acts for; `None` for a malformed, unknown or revoked key
    /// alike. Records the use (to the minute).
    pub async fn authenticate(&self, presented: &str, now: Timestamp) -> Result<Option<KeyOwner>> {
        if !is_well_formed_key(presented) {
            return Ok(None);
        }
        let digest = digest(presented);
        /// The key's id and last use, then the account.
        type Row = (
            i64,
            Option<i64>,
            i64,
            String,
            String,
            Option<i64>,
            Option<i64>,
            i64,
            Option<String>,
            Option<i64>,
            bool,
        );
        let row: Option<Row> = on_db!(&self.db, |pool| {
            sqlx::query_as(concat!(
                "SELECT k.id, k.last_used_at, ",
                account_columns!(),
                " FROM api_keys k JOIN accounts a ON a.id = k.account_id \
                 WHERE k.digest = $1 AND k.revoked_at IS NULL"
            ))
            .bind(&digest)
            .fetch_optional(pool)
            .await?
        });
        let Some((key_id, last_used, a0, a1, a2, a3, a4, a5, a6, a7, a8)) = row else {
            return Ok(None);
        };
        let account = account_from_row((a0, a1, a2, a3, a4, a5, a6, a7, a8))?;
        if last_used.is_none_or(|t| t <= now.unix() - LAST_USED_GRANULARITY) {
            on_db!(&self.db, |pool| {
                sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2")
                    .bind(now.unix())
                    .bind(key_id)
                    .execute(pool)
                    .await?;
            });
        }
        Ok(Some(KeyOwner {
            key: KeyId(key_id),
            account,
        }))
    }
}

/// CRC-32 (IEEE 802.3, the zlib one) of `data`; bitwise, since it only checks short keys.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn generated_keys_are_well_formed_and_distinct() {
        let a = ApiKey::generate().unwrap();
        let b = ApiKey::generate().unwrap();
        assert_ne!(a, b);
        for k in [&a, &b] {
            assert_eq!(k.expose().len(), API_KEY_LEN);
            assert!(k.expose().starts_with("psk_"));
            assert!(is_well_formed_key(k.expose()), "{}", k.expose());
        }
        assert_eq!(format!("{a:?}"), "ApiKey(psk_…)");
    }

    #[test]
    fn typos_fail_the_checksum() {
        let key = ApiKey::generate().unwrap();
        let s = key.expose();
        let mut changed = s.as_bytes().to_vec();
        changed[10] = if changed[10] == b'a' { b'b' } else { b'a' };
        assert!(!is_well_formed_key(std::str::from_utf8(&changed).unwrap()));
        assert!(!is_well_formed_key(&s[1..]));
        assert!(!is_well_formed_key(&format!("pk_{}", &s[3..])));
        assert!(!is_well_formed_key(""));
    }

    #[test]
    fn names() {
        assert_eq!(key_name(None).unwrap(), None);
        assert_eq!(key_name(Some("  ")).unwrap(), None);
        assert_eq!(key_name(Some(" ci ")).unwrap().as_deref(), Some("ci"));
        assert!(key_name(Some(&"x".repeat(101))).is_err());
    }
}
