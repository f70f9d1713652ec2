//! `signin_keys`: key material every instance shares (the ID token signing key, the CSRF key),
//! created once by whichever instance starts first.

use sqlx::Row;

use super::{Store, on_db};
use crate::error::StoreError;

impl Store {
    /// The material stored under `name`; when there is none, `make()` is stored and returned.
    /// Two instances starting together agree on one value (the first insert wins).
    pub(crate) async fn key_material(
        &self,
        name: &str,
        now: i64,
        make: impl FnOnce() -> Result<String, String>,
    ) -> Result<Result<String, String>, StoreError> {
        if let Some(found) = self.read_key(name).await? {
            return Ok(Ok(found));
        }
        let fresh = match make() {
            Ok(fresh) => fresh,
            Err(e) => return Ok(Err(e)),
        };
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO signin_keys (name, material, created_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO NOTHING",
            )
            .bind(name)
            .bind(&fresh)
            .bind(now)
            .execute(pool)
            .await?;
        });
        match self.read_key(name).await? {
            Some(stored) => Ok(Ok(stored)),
            None => Ok(Err(format!(
                "key `{name}` vanished right after it was stored"
            ))),
        }
    }

    /// The material stored under `name`, if any.
    pub(crate) async fn read_key(&self, name: &str) -> Result<Option<String>, StoreError> {
        Ok(on_db!(&self.db, |pool| {
            sqlx::query("SELECT material FROM signin_keys WHERE name = $1")
                .bind(name)
                .fetch_optional(pool)
                .await?
                .map(|row| row.get::<String, _>(0))
        }))
    }
}
