//! When each host of an index first loses a service to the retention window: per hour, the
//! hosts whose oldest current service (at build time) was observed in that hour. A service
//! observed at `t` leaves the window at `t + retention`, so at `now` the hosts of every hour
//! from the cutoff at build time up to `now - retention` may have lost one ([`Expiry::due`],
//! a superset by at most an hour's hosts). A delta over the index re-reads those hosts, so the window moves without
//! rebuilding the index (see `layers`).

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use super::persist::{LoadError, Reader, Writer};

const HOUR: i64 = 3_600;

/// Per hour (unix seconds / 3600) of a host's oldest current service: the hosts.
#[derive(Debug, Default)]
pub(super) struct Expiry {
    by_hour: BTreeMap<i64, RoaringBitmap>,
}

impl Expiry {
    /// Records host `h`, whose oldest current service was observed at `oldest` (unix
    /// seconds).
    pub fn add(&mut self, h: u32, oldest: i64) {
        self.by_hour
            .entry(oldest.div_euclid(HOUR))
            .or_default()
            .insert(h);
    }

    /// The hosts that may hold a service observed before `cutoff` (unix seconds), given that
    /// none held one observed before `built` (the cutoff when the index was built): every
    /// host of an hour that meets `built..cutoff`.
    pub fn due(&self, built: i64, cutoff: i64) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        if cutoff <= built {
            return out;
        }
        let (first, last) = (built.div_euclid(HOUR), cutoff.div_euclid(HOUR));
        for hosts in self.by_hour.range(first..=last).map(|(_, h)| h) {
            out |= hosts;
        }
        out
    }

    /// Approximate bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.by_hour.values().map(|b| 8 + b.serialized_size()).sum()
    }

    /// Writes the buckets (the index file; see `persist`).
    pub fn write<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        w.len(self.by_hour.len())?;
        for (hour, hosts) in &self.by_hour {
            w.i64(*hour)?;
            w.bitmap(hosts)?;
        }
        Ok(())
    }

    /// Reads what [`Self::write`] wrote: every one of `hosts` hosts in exactly one hour.
    pub fn read<R: std::io::Read>(r: &mut Reader<R>, hosts: usize) -> Result<Self, LoadError> {
        let n = r.len("expiry hours")?;
        let mut by_hour = BTreeMap::new();
        let mut seen = RoaringBitmap::new();
        let mut total = 0u64;
        for _ in 0..n {
            let hour = r.i64()?;
            let bitmap = r.bitmap("expiry hosts")?;
            total += bitmap.len();
            seen |= &bitmap;
            if by_hour.insert(hour, bitmap).is_some() {
                return Err(LoadError::Corrupt("an expiry hour appears twice".into()));
            }
        }
        let all = u64::try_from(hosts).unwrap_or(u64::MAX);
        let in_range = seen.max().is_none_or(|m| u64::from(m) < all);
        if total != all || seen.len() != all || !in_range {
            return Err(LoadError::Corrupt(
                "expiry hours do not hold every host once".into(),
            ));
        }
        Ok(Self { by_hour })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_hosts_are_those_of_the_hours_the_cutoff_passed() {
        let mut e = Expiry::default();
        // Host 0 at 10:00, 1 at 10:59, 2 at 11:30, 3 at 13:00 (hours since the epoch: 10…).
        for (h, t) in [
            (0, 10 * HOUR),
            (1, 11 * HOUR - 1),
            (2, 11 * HOUR + 1_800),
            (3, 13 * HOUR),
        ] {
            e.add(h, t);
        }
        let due = |built: i64, cutoff: i64| e.due(built, cutoff).iter().collect::<Vec<_>>();
        assert_eq!(
            due(10 * HOUR, 10 * HOUR),
            Vec::<u32>::new(),
            "nothing passed"
        );
        assert_eq!(
            due(10 * HOUR, 10 * HOUR + 1),
            vec![0, 1],
            "the hour it is in"
        );
        assert_eq!(due(10 * HOUR, 11 * HOUR + 1), vec![0, 1, 2]);
        assert_eq!(
            due(11 * HOUR, 12 * HOUR),
            vec![2],
            "hours before the build's cutoff are gone"
        );
        assert_eq!(due(10 * HOUR, 20 * HOUR), vec![0, 1, 2, 3]);
    }
}
