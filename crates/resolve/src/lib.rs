//! Domain resolution for domain searches: which public addresses does a name point to now?
//!
//! A domain search (`domain:example.com`) reads the scan index for the hosts a name resolves
//! to, besides the names stored by the scan. This crate owns that lookup:
//! - [`DomainResolution`], the outcome of resolving one name, with the wire strings of
//!   `domain_resolution.status` ([`DomainResolution::status`]) and the `address_count`;
//! - [`Resolver`], the seam the search service calls, with two implementations:
//!   [`DnsResolver`] (A and AAAA over DNS through `hickory-resolver`, with one total time
//!   budget) and [`FixedResolver`] (a fixed table, for tests and demos);
//! - [`is_public`] and the table of special-purpose ranges behind it ([`SPECIAL_PURPOSE`]):
//!   only public routable addresses are ever handed to the index.
//!
//! **Invariant:** a [`DomainResolution::Resolved`] that a resolver of this crate returns holds
//! at least one address, every address is public ([`is_public`]), and they are unique and in
//! host order (IPv4 first, then IPv6, each ascending). Both resolvers build it with
//! [`DomainResolution::from_answers`], so a table entry of [`FixedResolver`] is filtered
//! exactly as a DNS answer is.
//!
//! **Boundary:** resolving never fails with an error: every problem is an outcome
//! ([`DomainResolution::Failed`], [`DomainResolution::TimedOut`], …), because DNS is best
//! effort and a domain search answers from stored domain scans whatever the DNS status. Only
//! constructing a [`DnsResolver`] can fail ([`SetupError`]). Nothing here reads the clock
//! except the time budget of a lookup, and nothing logs: the caller reports the outcome.
//!
//! The synthetic demo data lives in 240.0.0.0/4 and 3fff::/20, which [`is_public`] excludes,
//! so a real DNS answer can never point into demo data; a demo that wants domain results from
//! resolution uses a [`FixedResolver`]. User documentation: `docs/domain-resolution.md`.

mod dns;
mod fixed;
mod outcome;
mod public;

use std::future::Future;
use std::pin::Pin;

use periscope_model::DomainName;

pub use dns::{
    CACHE_ENTRIES, CACHE_MAX_TTL, DEFAULT_TIMEOUT, DnsResolver, NEGATIVE_CACHE_MAX_TTL,
    RESOLV_CONF, Result, SetupError,
};
pub use fixed::{FixedAnswer, FixedResolver};
pub use outcome::DomainResolution;
pub use public::{SPECIAL_PURPOSE, SpecialRange, is_public, special_purpose};

/// Resolves a domain name to the public addresses it points to.
///
/// The search service holds one as `Arc<dyn Resolver>` and calls it from a tokio multi-thread
/// runtime; implementations are shared between concurrent searches. The future never fails:
/// every problem is a [`DomainResolution`] outcome, and a resolver bounds its own time.
pub trait Resolver: Send + Sync {
    /// Resolves `name` (its A and AAAA records, for [`DnsResolver`]).
    fn resolve<'a>(
        &'a self,
        name: &'a DomainName,
    ) -> Pin<Box<dyn Future<Output = DomainResolution> + Send + 'a>>;
}
