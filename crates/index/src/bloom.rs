//! The store's per-run key filters: a split-block Bloom filter (the layout Parquet's and
//! Impala's filters use), which says of a key either "not in this run" (always right) or "may
//! be", so a batch's lookups skip most runs without searching their indexes.
//!
//! A batch's keys are spread over the key space, and most are in no run or in one of the few
//! dozen a store holds; searching every run's index for each key was two fifths of the store
//! thread's time at 10M hosts (`docs/benchmarks.md`). A filter answers with one 32-byte block
//! and takes 10 bits a key (the run's index in memory takes 8 bytes).
//!
//! **Invariant:** no false "not in": every key [`Filter::of`] was given, [`Filter::may_contain`]
//! answers true. A false "may be" costs a search, never a wrong answer.

/// Bits of filter per key: about 1% of absent keys answer "may be".
const BITS_PER_KEY: usize = 10;

/// Odd constants giving each of a block's eight words its own bit of a key's hash
/// (Parquet's `SALT`).
const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

/// A set of key hashes, answering "not in" or "may be".
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    blocks: Vec<[u32; 8]>,
}

impl Filter {
    /// The filter of `hashes` (each a key's [`host_hash`] or [`name_hash`]), of which there
    /// are `count`.
    pub(crate) fn of(count: usize, hashes: impl IntoIterator<Item = u64>) -> Self {
        let blocks = (count * BITS_PER_KEY).div_ceil(256).max(1);
        let mut filter = Self {
            blocks: vec![[0; 8]; blocks],
        };
        for hash in hashes {
            let (block, bits) = filter.place(hash);
            for (word, bit) in filter.blocks[block].iter_mut().zip(bits) {
                *word |= bit;
            }
        }
        filter
    }

    /// False when no key of the hash `hash` was given.
    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        let (block, bits) = self.place(hash);
        // All eight words tested, without a branch per word: the test compiles to a few vector
        // instructions, and a caller asking many keys in a row keeps its loads in flight.
        self.blocks[block]
            .iter()
            .zip(bits)
            .fold(true, |all, (word, bit)| all & (word & bit != 0))
    }

    /// The block of `hash` (from its high half) and the bit it sets in each of the block's
    /// words (from its low half).
    fn place(&self, hash: u64) -> (usize, [u32; 8]) {
        let block = ((hash >> 32) * self.blocks.len() as u64) >> 32;
        // Truncation on purpose: the low half picks the bits.
        #[allow(clippy::cast_possible_truncation)]
        let low = hash as u32;
        let bits = SALT.map(|salt| 1 << (low.wrapping_mul(salt) >> 27));
        // Below `blocks.len()`, which is a `usize`.
        #[allow(clippy::cast_possible_truncation)]
        (block as usize, bits)
    }
}

/// The hash of a host order key ([`crate::durable::HostKey`]'s number).
pub(crate) fn host_hash(order_key: u128) -> u64 {
    // The two halves folded; an IPv4 key's high half is 0.
    #[allow(clippy::cast_possible_truncation)]
    mix((order_key as u64) ^ (order_key >> 64) as u64 ^ 0x9e37_79b9_7f4a_7c15)
}

/// The hash of a domain name as a run's name index holds it.
pub(crate) fn name_hash(name: &str) -> u64 {
    mix(crate::durable::fnv1a(name.as_bytes()))
}

/// MurmurHash3's 64-bit finalizer: every input bit moves about half the output bits, so
/// nearby keys (consecutive addresses) land in unrelated blocks.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::{Filter, host_hash, name_hash};
    use proptest::prelude::*;

    proptest! {
        /// Every key given is "may be", whatever the keys and however many.
        #[test]
        fn a_filter_never_says_a_given_key_is_absent(
            keys in prop::collection::btree_set(any::<u128>(), 0..2_000),
            names in prop::collection::btree_set("[a-z0-9.-]{1,30}", 0..300),
        ) {
            let hosts = Filter::of(keys.len(), keys.iter().map(|k| host_hash(*k)));
            for key in &keys {
                prop_assert!(hosts.may_contain(host_hash(*key)), "{key} said absent");
            }
            let named = Filter::of(names.len(), names.iter().map(|n| name_hash(n)));
            for name in &names {
                prop_assert!(named.may_contain(name_hash(name)), "{name} said absent");
            }
        }
    }

    /// Consecutive IPv4 keys, the worst case for a weak hash: of as many absent consecutive
    /// keys, about 1% answer "may be" (at most 2%, so the filter saves the searches it is for).
    #[test]
    fn a_filter_answers_may_be_for_few_absent_keys() {
        let present = 0x0a00_0000_u128..0x0a00_0000 + 100_000;
        let filter = Filter::of(100_000, present.clone().map(host_hash));
        let absent = present.end..present.end + 100_000;
        let false_positives = absent.filter(|k| filter.may_contain(host_hash(*k))).count();
        assert!(
            false_positives < 2_000,
            "{false_positives} of 100,000 absent keys answered \"may be\""
        );
    }
}
