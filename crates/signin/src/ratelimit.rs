//! Sign-in failure limits: failed sign-ins are counted per client address and per account
//! (e-mail address); successful ones are never counted, so many people signing in from one
//! address — an office, or every user behind a reverse proxy without
//! `signin.client_ip_header` — are not locked out by their own successes. Over either limit an
//! attempt is refused, without checking the password, with the same generic message as a wrong
//! password, so the limit tells an attacker nothing. Counts live in this process (each instance
//! behind a load balancer counts its own).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;

/// Entries kept before a sweep of stale ones.
const SWEEP_AT: usize = 50_000;

/// Sliding-window counters of failed sign-ins.
#[derive(Debug)]
pub(crate) struct Limiter {
    window: i64,
    per_account: usize,
    per_client: usize,
    inner: Mutex<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    clients: HashMap<IpAddr, VecDeque<i64>>,
    accounts: HashMap<String, VecDeque<i64>>,
}

fn recent(times: &mut VecDeque<i64>, since: i64) -> usize {
    while times.front().is_some_and(|&t| t <= since) {
        times.pop_front();
    }
    times.len()
}

impl Limiter {
    /// `per_account` failures per account and `per_client` failures per client address within
    /// `window` seconds.
    pub(crate) fn new(window: i64, per_account: u32, per_client: u32) -> Self {
        Self {
            window,
            per_account: per_account as usize,
            per_client: per_client as usize,
            inner: Mutex::new(Counters::default()),
        }
    }

    /// Whether an attempt from `client` for `account_key` may go ahead at `now`: `false` when
    /// either has reached its failure limit (the attempt must then be refused without checking
    /// the password). Nothing is recorded: only [`Limiter::failed`] counts.
    pub(crate) fn admit(&self, client: IpAddr, account_key: &str, now: i64) -> bool {
        let since = now - self.window;
        let mut c = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let client_over = c
            .clients
            .get_mut(&client)
            .is_some_and(|t| recent(t, since) >= self.per_client);
        let account_over = c
            .accounts
            .get_mut(account_key)
            .is_some_and(|t| recent(t, since) >= self.per_account);
        !(client_over || account_over)
    }

    /// Records a failed sign-in from `client` for `account_key` at `now`.
    pub(crate) fn failed(&self, client: IpAddr, account_key: &str, now: i64) {
        let since = now - self.window;
        let mut c = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if c.clients.len() + c.accounts.len() > SWEEP_AT {
            c.clients.retain(|_, t| recent(t, since) > 0);
            c.accounts.retain(|_, t| recent(t, since) > 0);
        }
        c.clients.entry(client).or_default().push_back(now);
        c.accounts
            .entry(account_key.to_owned())
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
    fn failures_per_account_then_the_window_moves() {
        let l = Limiter::new(900, 3, 100);
        for t in 0..3 {
            assert!(l.admit(A, "x@example.com", t));
            l.failed(A, "x@example.com", t);
        }
        assert!(
            !l.admit(B, "x@example.com", 10),
            "another client, same account"
        );
        assert!(l.admit(A, "y@example.com", 10), "another account");
        assert!(
            l.admit(A, "x@example.com", 903),
            "the first failures left the window"
        );
    }

    #[test]
    fn failures_per_client() {
        let l = Limiter::new(900, 100, 2);
        l.failed(A, "a@example.com", 0);
        assert!(l.admit(A, "c@example.com", 0));
        l.failed(A, "b@example.com", 0);
        assert!(!l.admit(A, "c@example.com", 0));
        assert!(l.admit(B, "c@example.com", 0), "another client");
        assert!(l.admit(A, "c@example.com", 900), "the window moved");
    }

    #[test]
    fn admitted_attempts_are_not_counted() {
        let l = Limiter::new(900, 2, 2);
        for t in 0..1_000 {
            assert!(l.admit(A, "busy@example.com", t), "attempt {t}");
        }
    }
}
