//! Sign-in attempt limits: per client address, every attempt counts; per e-mail address, every
//! failure counts. Over either limit an attempt is refused with the same generic message as a
//! wrong password, so the limit tells an attacker nothing. Counts live in this process (each
//! instance behind a load balancer counts its own).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;

/// Entries kept before a sweep of stale ones.
const SWEEP_AT: usize = 50_000;

/// Sliding-window counters of sign-in attempts.
#[derive(Debug)]
pub(crate) struct Limiter {
    window: i64,
    per_address: usize,
    per_client: usize,
    inner: Mutex<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    clients: HashMap<IpAddr, VecDeque<i64>>,
    addresses: HashMap<String, VecDeque<i64>>,
}

fn recent(times: &mut VecDeque<i64>, since: i64) -> usize {
    while times.front().is_some_and(|&t| t <= since) {
        times.pop_front();
    }
    times.len()
}

impl Limiter {
    pub(crate) fn new(window: i64, per_address: u32, per_client: u32) -> Self {
        Self {
            window,
            per_address: per_address as usize,
            per_client: per_client as usize,
            inner: Mutex::new(Counters::default()),
        }
    }

    /// Records an attempt from `client` for `address_key` at `now`; `false` when either limit
    /// is reached (the attempt must then be refused without checking the password).
    pub(crate) fn admit(&self, client: IpAddr, address_key: &str, now: i64) -> bool {
        let since = now - self.window;
        let mut c = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if c.clients.len() + c.addresses.len() > SWEEP_AT {
            c.clients.retain(|_, t| recent(t, since) > 0);
            c.addresses.retain(|_, t| recent(t, since) > 0);
        }
        let client_times = c.clients.entry(client).or_default();
        let client_over = recent(client_times, since) >= self.per_client;
        client_times.push_back(now);
        let address_over = c
            .addresses
            .get_mut(address_key)
            .is_some_and(|t| recent(t, since) >= self.per_address);
        !(client_over || address_over)
    }

    /// Records a failed attempt for `address_key` at `now`.
    pub(crate) fn failed(&self, address_key: &str, now: i64) {
        let mut c = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        c.addresses
            .entry(address_key.to_owned())
            .or_default()
            .push_back(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));

    #[test]
    fn failures_per_address_then_the_window_moves() {
        let l = Limiter::new(900, 3, 100);
        for t in 0..3 {
            assert!(l.admit(A, "x@example.com", t));
            l.failed("x@example.com", t);
        }
        assert!(
            !l.admit(B, "x@example.com", 10),
            "another client, same address"
        );
        assert!(l.admit(A, "y@example.com", 10), "another address");
        assert!(
            l.admit(A, "x@example.com", 903),
            "the first failures left the window"
        );
    }

    #[test]
    fn attempts_per_client() {
        let l = Limiter::new(900, 100, 2);
        assert!(l.admit(A, "a@example.com", 0));
        assert!(l.admit(A, "b@example.com", 0));
        assert!(!l.admit(A, "c@example.com", 0));
        assert!(l.admit(B, "c@example.com", 0));
    }
}
