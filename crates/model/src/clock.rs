//! The time seam of the whole workspace: the search service (allowance days, cursor expiry),
//! the sign-in service (links, sessions, codes, tokens, rate windows) and the browser
//! application (sessions, sign-ins in flight) read the time only through a [`Clock`], so tests
//! move time instead of waiting.
//!
//! It lives here, beside [`Timestamp`], because every crate that needs the time already speaks
//! the model; it is not an I/O seam in the sense of the crate's invariant — [`SystemClock`]
//! reads the system's time and nothing else.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::Timestamp;

/// A source of the current time, to the second (UTC).
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The system's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        at(secs)
    }
}

/// A clock that stands still until moved: for tests and demonstrations.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock showing `now` (seconds since the Unix epoch).
    pub fn new(now: i64) -> Self {
        Self(AtomicI64::new(now))
    }

    /// Sets the time (seconds since the Unix epoch).
    pub fn set(&self, now: i64) {
        self.0.store(now, Ordering::SeqCst);
    }

    /// Moves the time forward by `secs` seconds.
    pub fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    /// The time set; panics when it was set outside the years 1970 to 9999 (a test's mistake).
    fn now(&self) -> Timestamp {
        let secs = self.0.load(Ordering::SeqCst);
        Timestamp::from_unix(secs)
            .unwrap_or_else(|| panic!("the manual clock was set to {secs}, outside 1970..=9999"))
    }
}

/// `secs` as a timestamp: the system clock before 1970 reads as the epoch, after 9999 as the
/// end of 9999 (neither happens on a working machine).
fn at(secs: i64) -> Timestamp {
    let clamped = secs.clamp(0, 253_402_300_799);
    Timestamp::from_unix(clamped).unwrap_or_else(|| unreachable!("clamped into range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        assert_eq!(clock.now().unix(), 1_000);
        clock.advance(60);
        assert_eq!(clock.now().unix(), 1_060);
        clock.set(5);
        assert_eq!(clock.now().unix(), 5);
    }

    #[test]
    fn the_system_clock_is_after_2025() {
        assert!(SystemClock.now().unix() > 1_735_689_600);
    }
}
