//! A resolver that answers from a fixed table: for tests and demos, never for production.
//!
//! Each name of the table has an answer: addresses, or a DNS failure to simulate. Addresses
//! go through [`DomainResolution::from_answers`], the same filtering as DNS answers, so an
//! entry with only private addresses yields [`DomainResolution::NoPublicAddress`]. Names
//! missing from the table are [`DomainResolution::NotFound`]. Lookups are exact: a table entry
//! for `example.com` does not answer `www.example.com`.
//!
//! The synthetic demo data (240.0.0.0/4, 3fff::/20) is not public, so a table that points demo
//! names at demo hosts resolves them to [`DomainResolution::NoPublicAddress`]; that is the
//! honest answer for addresses no real host holds.

use std::collections::HashMap;
use std::future::{Future, ready};
use std::net::IpAddr;
use std::pin::Pin;

use periscope_model::DomainName;

use crate::{DomainResolution, Resolver};

/// What a [`FixedResolver`] answers for one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixedAnswer {
    /// The A and AAAA answers, before filtering. An empty list is
    /// [`DomainResolution::NotFound`], as a name without A or AAAA records is.
    Addresses(Vec<IpAddr>),
    /// NXDOMAIN.
    NotFound,
    /// A lookup that did not answer in time.
    TimedOut,
    /// A failed lookup (SERVFAIL, unreachable servers, …).
    Failed,
}

/// Answers from a table of names, through the same public-address filtering as DNS.
#[derive(Debug, Clone, Default)]
pub struct FixedResolver {
    table: HashMap<DomainName, FixedAnswer>,
}

impl FixedResolver {
    /// An empty table: every name is [`DomainResolution::NotFound`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) `name` with these A/AAAA answers.
    pub fn with_addresses(
        mut self,
        name: DomainName,
        addresses: impl IntoIterator<Item = IpAddr>,
    ) -> Self {
        self.insert(
            name,
            FixedAnswer::Addresses(addresses.into_iter().collect()),
        );
        self
    }

    /// Adds (or replaces) `name` with `answer`.
    pub fn with_answer(mut self, name: DomainName, answer: FixedAnswer) -> Self {
        self.insert(name, answer);
        self
    }

    /// Adds (or replaces) `name` with `answer`, returning the answer it replaced.
    pub fn insert(&mut self, name: DomainName, answer: FixedAnswer) -> Option<FixedAnswer> {
        self.table.insert(name, answer)
    }

    /// The outcome for `name`, at once.
    pub fn answer(&self, name: &DomainName) -> DomainResolution {
        match self.table.get(name) {
            None | Some(FixedAnswer::NotFound) => DomainResolution::NotFound,
            Some(FixedAnswer::TimedOut) => DomainResolution::TimedOut,
            Some(FixedAnswer::Failed) => DomainResolution::Failed,
            Some(FixedAnswer::Addresses(addresses)) => {
                DomainResolution::from_answers(addresses.iter().copied())
            }
        }
    }
}

impl Resolver for FixedResolver {
    fn resolve<'a>(
        &'a self,
        name: &'a DomainName,
    ) -> Pin<Box<dyn Future<Output = DomainResolution> + Send + 'a>> {
        Box::pin(ready(self.answer(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> DomainName {
        DomainName::parse(s).unwrap()
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn table() -> FixedResolver {
        FixedResolver::new()
            .with_addresses(
                name("both.example"),
                ips(&["2a00::1", "1.1.1.1", "10.0.0.1"]),
            )
            .with_addresses(
                name("private.example"),
                ips(&["10.0.0.1", "100.64.0.1", "fe80::1"]),
            )
            .with_addresses(name("demo.example"), ips(&["240.0.0.7", "3fff::7"]))
            .with_addresses(name("empty.example"), [])
            .with_answer(name("gone.example"), FixedAnswer::NotFound)
            .with_answer(name("slow.example"), FixedAnswer::TimedOut)
            .with_answer(name("broken.example"), FixedAnswer::Failed)
    }

    #[test]
    fn answers_through_the_public_filter() {
        let resolver = table();
        for (n, expect) in [
            (
                "both.example",
                DomainResolution::Resolved(ips(&["1.1.1.1", "2a00::1"])),
            ),
            ("private.example", DomainResolution::NoPublicAddress),
            ("demo.example", DomainResolution::NoPublicAddress),
            ("empty.example", DomainResolution::NotFound),
            ("gone.example", DomainResolution::NotFound),
            ("slow.example", DomainResolution::TimedOut),
            ("broken.example", DomainResolution::Failed),
            ("missing.example", DomainResolution::NotFound),
            ("www.both.example", DomainResolution::NotFound),
        ] {
            assert_eq!(resolver.answer(&name(n)), expect, "{n}");
        }
    }

    #[test]
    fn names_are_matched_in_their_normal_form() {
        let resolver = table();
        assert_eq!(resolver.answer(&name("BOTH.Example.")).status(), "resolved");
    }

    #[test]
    fn the_trait_gives_the_same_answer() {
        let resolver = table();
        let n = name("both.example");
        // A future that is ready at once: poll it once, without a runtime.
        let mut future = resolver.resolve(&n);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let std::task::Poll::Ready(through_trait) = future.as_mut().poll(&mut cx) else {
            panic!("a fixed answer is ready at once");
        };
        assert_eq!(through_trait, resolver.answer(&n));
    }

    #[test]
    fn insert_replaces() {
        let mut resolver = table();
        let old = resolver.insert(name("slow.example"), FixedAnswer::Failed);
        assert_eq!(old, Some(FixedAnswer::TimedOut));
        assert_eq!(
            resolver.answer(&name("slow.example")),
            DomainResolution::Failed
        );
    }
}
