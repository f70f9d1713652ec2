//! The per-key request rate of the free routes (everything but `POST /v1/search`, which the
//! daily allowance bounds): a token bucket per API key, refilled at `per_sec` up to `burst`
//! (DECISIONS.md: 10/s, burst 20). An empty bucket answers 429 `rate_limited` with
//! `Retry-After` in whole seconds.
//!
//! Buckets live in memory, one per key seen; a full bucket carries no information, so buckets
//! that have refilled are dropped when the map grows.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use periscope_state::KeyId;

/// Keys remembered before full buckets are swept.
const SWEEP_AT: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by key.
#[derive(Debug)]
pub struct RateLimit {
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<KeyId, Bucket>>,
}

impl RateLimit {
    /// `per_sec` requests per second on average, `burst` at once. Zero `per_sec` disables the
    /// limit.
    pub fn new(per_sec: u32, burst: u32) -> Self {
        Self {
            per_sec: f64::from(per_sec),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::default(),
        }
    }

    /// Takes one request of `key` at `now`; `Err(secs)` says how long to wait.
    pub fn take(&self, key: KeyId, now: Instant) -> Result<(), u64> {
        if self.per_sec <= 0.0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= SWEEP_AT {
            let (per_sec, burst) = (self.per_sec, self.burst);
            buckets.retain(|_, b| {
                b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * per_sec < burst
            });
        }
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let refill = now.saturating_duration_since(bucket.at).as_secs_f64() * self.per_sec;
        bucket.tokens = (bucket.tokens + refill).min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.tokens) / self.per_sec;
            // Whole seconds, rounded up, at least one.
            Err((wait.ceil() as u64).max(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn burst_then_refill() {
        let limit = RateLimit::new(10, 20);
        let key = KeyId::from_i64(1);
        let other = KeyId::from_i64(2);
        let t0 = Instant::now();
        for _ in 0..20 {
            limit.take(key, t0).unwrap();
        }
        assert_eq!(limit.take(key, t0), Err(1));
        limit.take(other, t0).unwrap();
        // 100 ms later one token is back.
        let t1 = t0 + Duration::from_millis(100);
        limit.take(key, t1).unwrap();
        assert!(limit.take(key, t1).is_err());
        // After two seconds the bucket is full again, and no fuller.
        let t2 = t1 + Duration::from_secs(5);
        for _ in 0..20 {
            limit.take(key, t2).unwrap();
        }
        assert!(limit.take(key, t2).is_err());
    }

    #[test]
    fn slow_rates_ask_for_longer_waits() {
        let limit = RateLimit::new(1, 1);
        let key = KeyId::from_i64(7);
        let t0 = Instant::now();
        limit.take(key, t0).unwrap();
        assert_eq!(limit.take(key, t0), Err(1));
        let limit = RateLimit::new(0, 0);
        for _ in 0..100 {
            limit.take(key, t0).unwrap();
        }
    }
}
