//! The Periscope query language.
//!
//! [`parse`] turns query text into a typed [`Query`] — exact IP, IPv4 CIDR, domain, ASN, or a
//! [`FilterQuery`] of one to three [`Clause`]s — or a [`QueryError`] listing every
//! [`Violation`] with the specification's codes. A query's `Display` is its canonical text,
//! which parses back to the same value; equal searches are equal values.
//! [`recognize`] reads a search-bar entry (a bare address, `AS15169`, a pasted URL, a bare
//! domain) as the search it means, and declines to guess bare numbers and two-letter words.
//! The endpoint checks ([`check_count`], [`check_facets`], [`check_exposure`], [`check_breadth`],
//! [`parse_resolution`], [`parse_detail_ip`], the cursor checks) decide the remaining
//! violation codes that depend only on values.
//!
//! The user-facing reference is `docs/query-language.md`.
//!
//! **Invariant:** pure. Nothing here does I/O, reads a clock or keeps state; every function
//! takes values and returns values, and never panics on any input.
//! **Boundary:** `query_too_broad` needs a count, so the index decides it; this crate only
//! says which queries are candidates ([`Query::may_be_too_broad`]).

mod clause;
mod endpoint;
mod lexer;
mod parser;
mod query;
mod recognize;
mod syntax;
mod value;
mod violation;

pub use clause::{Clause, Field, Phrase};
pub use endpoint::{
    Resolution, SEARCH_CURSOR_LEN, SEARCH_CURSOR_PREFIX, check_breadth, check_count,
    check_cursor_binding, check_cursor_format, check_exposure, check_facets, parse_detail_ip,
    parse_resolution,
};
pub use parser::{MAX_QUERY_CHARS, parse};
pub use query::{FilterQuery, MAX_CLAUSES, Query, QueryKind};
pub use recognize::{Ambiguity, Entry, NotGuessed, recognize};
pub use value::MIN_CIDR_PREFIX;
pub use violation::{QueryError, Violation, ViolationCode};
