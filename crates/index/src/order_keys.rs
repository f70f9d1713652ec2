//! Sorted host order keys ([`ip_order_key`]) held compact, as the store's run indexes and the
//! engine's host ordinals keep them: an IPv4 address's key (below every IPv6 one, so the IPv4
//! keys of a sorted list come first) as 4 bytes, an IPv6 address's as 16.
//!
//! [`ip_order_key`]: periscope_model::ip_order_key

/// Strictly ascending host order keys, read by position: positions `0..v4.len()` are the
/// IPv4 keys, the rest the IPv6 ones. At 10M IPv4 hosts, 40 MB where a `Vec<u128>` holds 160.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OrderKeys {
    v4: Vec<u32>,
    v6: Vec<u128>,
}

/// A key that does not follow the last one of an [`OrderKeys`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutOfOrder;

impl OrderKeys {
    /// An empty list with room for `v4` IPv4 keys and `v6` IPv6 ones.
    pub(crate) fn with_capacity(v4: usize, v6: usize) -> Self {
        Self {
            v4: Vec::with_capacity(v4),
            v6: Vec::with_capacity(v6),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// The key at position `at`.
    pub(crate) fn get(&self, at: usize) -> Option<u128> {
        match self.v4.get(at) {
            Some(v4) => Some(u128::from(*v4)),
            None => self.v6.get(at - self.v4.len()).copied(),
        }
    }

    /// The last key.
    pub(crate) fn last(&self) -> Option<u128> {
        match self.v6.last() {
            Some(v6) => Some(*v6),
            None => self.v4.last().map(|v4| u128::from(*v4)),
        }
    }

    /// Appends `key`, which must be above every key already held.
    pub(crate) fn push(&mut self, key: u128) -> Result<(), OutOfOrder> {
        if self.last().is_some_and(|last| last >= key) {
            return Err(OutOfOrder);
        }
        match u32::try_from(key) {
            // Above the last key, so no IPv6 key is held yet.
            Ok(v4) => self.v4.push(v4),
            Err(_) => self.v6.push(key),
        }
        Ok(())
    }

    /// Releases the room that pushing left over.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.v4.shrink_to_fit();
        self.v6.shrink_to_fit();
    }

    /// The bytes the keys take.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.v4.len() * 4 + self.v6.len() * 16
    }

    /// The position of `key`, or where it would go ([`slice::binary_search`]).
    pub(crate) fn binary_search(&self, key: u128) -> Result<usize, usize> {
        match u32::try_from(key) {
            Ok(v4) => self.v4.binary_search(&v4),
            Err(_) => self
                .v6
                .binary_search(&key)
                .map(|at| at + self.v4.len())
                .map_err(|at| at + self.v4.len()),
        }
    }

    /// The number of keys below `key`.
    pub(crate) fn below(&self, key: u128) -> usize {
        self.binary_search(key).unwrap_or_else(|at| at)
    }

    /// The first position at or after `from` whose key is not below `key` (the length when
    /// there is none), galloping from `from` ([`gallop`]).
    pub(crate) fn gallop(&self, from: usize, key: u128) -> usize {
        let base = self.v4.len();
        match u32::try_from(key) {
            Ok(v4) if from < base => gallop(&self.v4, from, &v4),
            // Every position from `base` on holds an IPv6 key, above any IPv4 one.
            Ok(_) => from,
            Err(_) => base + gallop(&self.v6, from.saturating_sub(base), &key),
        }
    }

    /// The keys in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u128> + '_ {
        let v4 = self.v4.iter().map(|k| u128::from(*k));
        v4.chain(self.v6.iter().copied())
    }
}

/// The first position at or after `from` whose key is not below `key`, in sorted `keys`
/// (`keys.len()` when there is none): steps of 1, 2, 4, … from `from`, then a binary search
/// in the last step. A run of ascending lookups pays a few steps in memory near the last one
/// instead of a binary search of the whole list.
pub(crate) fn gallop<K: Ord>(keys: &[K], from: usize, key: &K) -> usize {
    let rest = keys.get(from..).unwrap_or_default();
    let (mut low, mut step) = (0, 1);
    while step <= rest.len() && rest[step - 1] < *key {
        low = step;
        step *= 2;
    }
    let high = step.min(rest.len());
    from + low + rest[low..high].partition_point(|k| k < key)
}

/// Sets of host order keys for property tests: around the IPv4/IPv6 boundary and far from it.
#[cfg(test)]
pub(crate) fn key_sets()
-> impl proptest::strategy::Strategy<Value = std::collections::BTreeSet<u128>> {
    use proptest::prelude::*;
    let key = prop_oneof![
        0u128..=u128::from(u32::MAX),
        u128::from(u32::MAX) - 3..=(1 << 32) + 300,
        any::<u128>(),
        0u128..300,
    ];
    prop::collection::btree_set(key, 0..200)
}

#[cfg(test)]
mod tests {
    use super::{OrderKeys, OutOfOrder, gallop, key_sets};
    use proptest::prelude::*;

    proptest! {
        /// The compact list answers as the plain sorted list it was built from: every key by
        /// position, every search, every count below, every gallop from every start.
        #[test]
        fn order_keys_answer_as_their_plain_list(
            keys in key_sets(),
            probes in prop::collection::vec(any::<u128>(), 0..30),
        ) {
            let plain: Vec<u128> = keys.into_iter().collect();
            let mut compact = OrderKeys::with_capacity(4, 0);
            for key in &plain {
                prop_assert_eq!(compact.push(*key), Ok(()));
            }
            prop_assert_eq!(compact.len(), plain.len());
            prop_assert_eq!(compact.last(), plain.last().copied());
            prop_assert_eq!(compact.iter().collect::<Vec<_>>(), plain.clone());
            prop_assert_eq!(compact.get(plain.len()), None);
            prop_assert_eq!(
                compact.heap_bytes(),
                plain.iter().map(|k| if *k >> 32 == 0 { 4 } else { 16 }).sum::<usize>()
            );
            let edges = [0, 1, u128::from(u32::MAX), 1 << 32, u128::MAX];
            let probes = probes.into_iter().chain(edges).chain(plain.iter().copied());
            for probe in probes {
                prop_assert_eq!(compact.binary_search(probe), plain.binary_search(&probe));
                prop_assert_eq!(compact.below(probe), plain.partition_point(|k| *k < probe));
                for from in 0..=plain.len() {
                    prop_assert_eq!(compact.gallop(from, probe), gallop(&plain, from, &probe));
                }
            }
            for (at, key) in plain.iter().enumerate() {
                prop_assert_eq!(compact.get(at), Some(*key));
            }
        }
    }

    /// A key not above the last one is refused and leaves the list as it was, IPv4 after IPv6
    /// among them.
    #[test]
    fn a_key_out_of_order_is_refused() {
        let mut keys = OrderKeys::default();
        assert_eq!(keys.push(7), Ok(()));
        assert_eq!(keys.push(7), Err(OutOfOrder));
        assert_eq!(keys.push(1 << 40), Ok(()));
        assert_eq!(keys.push(9), Err(OutOfOrder));
        assert_eq!(keys.iter().collect::<Vec<_>>(), [7, 1 << 40]);
    }

    /// Galloping from any start finds what a search of the rest finds.
    #[test]
    fn gallop_finds_the_partition_point_from_any_start() {
        let keys: Vec<u32> = (0..300).map(|i| i * 8 + (i % 7)).collect();
        for from in [0, 1, 2, 5, 64, 150, 299, 300] {
            for key in 0..2500 {
                let want = from + keys[from..].partition_point(|k| *k < key);
                assert_eq!(gallop(&keys, from, &key), want, "from {from}, key {key}");
            }
        }
        assert_eq!(gallop::<u32>(&[], 0, &5), 0);
    }
}
