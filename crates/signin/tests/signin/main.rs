//! The sign-in service end to end, over real HTTP on 127.0.0.1 and on both databases (each body
//! runs on a fresh SQLite file and a fresh PostgreSQL database, shared with the state tables):
//! `oidc` drives the provider with the `openidconnect` relying-party crate; `registration`
//! walks the registration journey with a cookie-keeping client and a real SMTP server
//! (aiosmtpd); `pages` checks the forms, cookies and limits; `outage` cuts the PostgreSQL
//! connection and times the 503; `escaping` checks that typed values come back escaped; `views` snapshots every page and JSON answer as served
//! (`snapshot` lays out and redacts them; `docs/testing.md` says how to review a change); every
//! test also checks that the secrets it saw never reached the log (`support::assert_not_logged`).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)] // Test code: a panic is the report.

mod escaping;
mod oidc;
mod outage;
mod pages;
mod registration;
mod relay;
mod snapshot;
mod support;
mod views;
