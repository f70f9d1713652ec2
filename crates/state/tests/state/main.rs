//! The state crate's behaviour on both databases: every test body runs on a fresh SQLite file
//! and on a fresh PostgreSQL database (see `harness`).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod accounts;
mod allowance;
mod audit_reports;
mod cursors;
mod harness;
mod keys;
mod open;
mod shared_web;
mod tls;
mod web;
