//! The outcome of resolving one name, its wire strings, and the one place answers are filtered.
//!
//! [`DomainResolution::from_answers`] turns the addresses a resolver received into an outcome:
//! mapped IPv6 answers become the IPv4 address they map, non-public addresses are dropped, the
//! rest is deduplicated and put in host order. Every resolver of this crate goes through it.

use std::net::IpAddr;

use crate::public::is_public;

/// Outcome of resolving one name (`domain_resolution` in a domain search response).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DomainResolution {
    /// The public routable addresses the name resolves to: non-empty, unique, in host order
    /// (IPv4 first, then IPv6, each ascending). Wire string `resolved`.
    Resolved(Vec<IpAddr>),
    /// The name does not exist (NXDOMAIN), or it has no A and no AAAA record. Wire string
    /// `not_found`.
    NotFound,
    /// No answer came within the time budget. Wire string `timed_out`.
    TimedOut,
    /// The DNS servers answered with an error (SERVFAIL, REFUSED, …) or could not be reached.
    /// Wire string `failed`.
    Failed,
    /// Addresses came back, but none of them is public routable (private, loopback,
    /// link-local, carrier-grade NAT, benchmarking, documentation, …). Wire string
    /// `no_public_address`.
    NoPublicAddress,
}

impl DomainResolution {
    /// Every wire string of [`DomainResolution::status`], in declaration order.
    pub const STATUSES: [&'static str; 5] = [
        "resolved",
        "not_found",
        "timed_out",
        "failed",
        "no_public_address",
    ];

    /// The outcome for the addresses a name resolved to. No address at all is
    /// [`NotFound`](Self::NotFound) (the name has no A or AAAA record); addresses of which none
    /// is public are [`NoPublicAddress`](Self::NoPublicAddress). An IPv4-mapped IPv6 address
    /// (`::ffff:a.b.c.d`) counts as the IPv4 address it maps.
    pub fn from_answers(answers: impl IntoIterator<Item = IpAddr>) -> Self {
        let mut any = false;
        let mut public: Vec<IpAddr> = answers
            .into_iter()
            .inspect(|_| any = true)
            .map(|ip| ip.to_canonical())
            .filter(|ip| is_public(*ip))
            .collect();
        if !any {
            return Self::NotFound;
        }
        if public.is_empty() {
            return Self::NoPublicAddress;
        }
        // `IpAddr` orders every IPv4 address before every IPv6 address, each numerically:
        // the host order of the index (`periscope_model::ip_order_key`).
        public.sort_unstable();
        public.dedup();
        Self::Resolved(public)
    }

    /// The `domain_resolution.status` wire string: `resolved`, `not_found`, `timed_out`,
    /// `failed` or `no_public_address`.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Resolved(_) => "resolved",
            Self::NotFound => "not_found",
            Self::TimedOut => "timed_out",
            Self::Failed => "failed",
            Self::NoPublicAddress => "no_public_address",
        }
    }

    /// The `domain_resolution.address_count`: how many addresses the search used, that is the
    /// public addresses of a [`Resolved`](Self::Resolved) outcome. Every other outcome uses
    /// none and counts 0, including [`NoPublicAddress`](Self::NoPublicAddress), whose
    /// excluded addresses are not counted.
    pub fn address_count(&self) -> usize {
        self.addresses().len()
    }

    /// The public addresses to search, in host order; empty unless
    /// [`Resolved`](Self::Resolved).
    pub fn addresses(&self) -> &[IpAddr] {
        match self {
            Self::Resolved(addresses) => addresses,
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn check(answers: &[&str], expect: DomainResolution) {
        assert_eq!(
            DomainResolution::from_answers(ips(answers)),
            expect,
            "{answers:?}"
        );
    }

    #[test]
    fn answers_are_filtered_deduplicated_and_ordered() {
        check(&[], DomainResolution::NotFound);
        check(
            &["10.0.0.1", "fd00::1", "127.0.0.1"],
            DomainResolution::NoPublicAddress,
        );
        check(
            &[
                "2001:4860::8888",
                "8.8.8.8",
                "10.1.2.3",
                "1.1.1.1",
                "8.8.8.8",
                "2001:4860::8888",
            ],
            DomainResolution::Resolved(ips(&["1.1.1.1", "8.8.8.8", "2001:4860::8888"])),
        );
        check(
            &["2a00::2", "2a00::1", "9.9.9.9"],
            DomainResolution::Resolved(ips(&["9.9.9.9", "2a00::1", "2a00::2"])),
        );
    }

    #[test]
    fn mapped_answers_count_as_the_ipv4_address() {
        check(
            &["::ffff:8.8.8.8", "8.8.8.8"],
            DomainResolution::Resolved(ips(&["8.8.8.8"])),
        );
        check(&["::ffff:192.168.1.1"], DomainResolution::NoPublicAddress);
    }

    #[test]
    fn wire_strings_and_counts() {
        let resolved = DomainResolution::Resolved(ips(&["1.1.1.1", "2a00::1"]));
        let cases = [
            (resolved, "resolved", 2),
            (DomainResolution::NotFound, "not_found", 0),
            (DomainResolution::TimedOut, "timed_out", 0),
            (DomainResolution::Failed, "failed", 0),
            (DomainResolution::NoPublicAddress, "no_public_address", 0),
        ];
        for (i, (outcome, status, count)) in cases.iter().enumerate() {
            assert_eq!(outcome.status(), *status);
            assert_eq!(DomainResolution::STATUSES[i], *status);
            assert_eq!(outcome.address_count(), *count, "{status}");
            assert_eq!(outcome.addresses().len(), *count, "{status}");
        }
    }
}
