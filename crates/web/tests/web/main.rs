//! The browser application end to end, over real HTTP on 127.0.0.1 with a cookie-keeping
//! client, on both databases (each body runs on a fresh SQLite file and a fresh PostgreSQL
//! database; the sign-in tables share it with the state tables): `journey` walks registration
//! (e-mail captured by a real SMTP server, aiosmtpd), sign-in through the web application,
//! idle expiry, signing in again and sign-out, and every refusal; `interop` signs in through
//! npm's `oidc-provider`, an independent certified provider; `search` runs the search bar over
//! a synthetic index; `browser` runs it in Chromium (playwright-core); `journey_browser` has
//! Chromium itself register, confirm, sign in, search and sign out, with no session handed in;
//! `globe` checks the Globe's exposure JSON and runs the Globe in Chromium; `account` checks the
//! account menu, the public pages, problem reports and API keys (reqwest and Chromium);
//! `instances` runs two instances of the application over one state database, as two servers
//! behind a load balancer (pages already shown, create-key forms); `views` snapshots every page
//! and fragment as served (`docs/testing.md` says how to review a change); `escaping` checks
//! that stored values holding markup come back escaped on every page that shows them. Every test also
//! checks that the secrets it saw never reached the log.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)] // Test code: a panic is the report.

mod account;
mod browser;
mod escaping;
mod globe;
mod instances;
mod interop;
mod journey;
mod journey_browser;
mod search;
/// The layout and redaction of snapshots, shared with the sign-in suite.
#[path = "../../../signin/tests/signin/snapshot.rs"]
mod snapshot;
mod support;
mod views;
