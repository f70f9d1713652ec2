//! Sorted, distinct keys held front coded: [`FrontCoded`]. Each key is kept as the length of
//! the prefix it shares with the key before it and the bytes after that prefix, in blocks of
//! [`BLOCK`] keys whose first key is whole (shares nothing), so a lookup is a binary search
//! over the blocks' first keys and a walk of at most one block. Sorted names share most of
//! their bytes with their neighbours — the more so with their labels reversed
//! (`example.pool.10-1-2-3` beside `example.pool.10-1-2-4`, see `strings`) — so the host names of
//! ten million hosts take about a fifth of their plain length.
//!
//! Layout of a key (also in the index file): the shared prefix's length and the suffix's
//! length as LEB128 varints, then the suffix. The file holds the bytes alone; a load walks
//! them once, checking each key (lengths in bounds, strictly ascending, a block's first key
//! whole) and noting where each block starts.

use std::cmp::Ordering;

/// Keys per block: one whole key, then fifteen that share a prefix with the one before.
pub(super) const BLOCK: usize = 16;

/// Strictly ascending byte keys; see the module documentation.
#[derive(Debug, Default)]
pub(super) struct FrontCoded {
    bytes: Box<[u8]>,
    /// Where block `b` (keys `b * BLOCK..`) starts in `bytes`.
    blocks: Box<[u32]>,
    len: usize,
}

impl FrontCoded {
    /// Codes `keys`, which must be strictly ascending (keys out of order are refused as a
    /// load would refuse them).
    pub fn from_sorted<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> Result<Self, Refused> {
        let mut bytes = Vec::new();
        let mut blocks = Vec::new();
        let mut previous: &[u8] = &[];
        let mut len = 0usize;
        for key in keys {
            if len > 0 && previous >= key {
                return Err(Refused::Invalid("keys out of order"));
            }
            let shared = if len.is_multiple_of(BLOCK) {
                blocks.push(u32::try_from(bytes.len()).map_err(|_| Refused::TooLong)?);
                0
            } else {
                common_prefix(previous, key)
            };
            push_varint(&mut bytes, shared);
            push_varint(&mut bytes, key.len() - shared);
            bytes.extend_from_slice(&key[shared..]);
            previous = key;
            len += 1;
        }
        u32::try_from(bytes.len()).map_err(|_| Refused::TooLong)?;
        Ok(Self {
            bytes: bytes.into_boxed_slice(),
            blocks: blocks.into_boxed_slice(),
            len,
        })
    }

    /// Reads `len` keys coded in `bytes` (as [`Self::bytes`] gives them), checking every
    /// one; says what is wrong otherwise.
    pub fn from_bytes(bytes: Vec<u8>, len: usize) -> Result<Self, Refused> {
        u32::try_from(bytes.len()).map_err(|_| Refused::TooLong)?;
        let mut blocks = Vec::with_capacity(len.div_ceil(BLOCK));
        // The key read and the one before it, their buffers reused.
        let (mut key, mut before): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
        let mut at = 0usize;
        for i in 0..len {
            let start = at;
            let (shared, suffix) = read_entry(&bytes, &mut at)
                .ok_or(Refused::Invalid("a key runs past the keys' bytes"))?;
            if i % BLOCK == 0 {
                if shared != 0 {
                    return Err(Refused::Invalid("a block's first key is not whole"));
                }
                // Below `bytes.len()`, checked above.
                blocks.push(start as u32);
            }
            if shared > key.len() {
                return Err(Refused::Invalid("a key shares more than the key before it"));
            }
            std::mem::swap(&mut key, &mut before);
            key.clear();
            key.extend_from_slice(&before[..shared]);
            key.extend_from_slice(suffix);
            if i > 0 && before >= key {
                return Err(Refused::Invalid("keys out of order"));
            }
        }
        if at != bytes.len() {
            return Err(Refused::Invalid("bytes after the last key"));
        }
        Ok(Self {
            bytes: bytes.into_boxed_slice(),
            blocks: blocks.into_boxed_slice(),
            len,
        })
    }

    /// The coded keys, as [`Self::from_bytes`] reads them.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Approximate bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.len() + self.blocks.len() * 4
    }

    /// Key `i` (`None` past the last).
    pub fn get(&self, i: usize) -> Option<Vec<u8>> {
        if i >= self.len {
            return None;
        }
        // The keys of its block up to it, decoded into one buffer.
        let mut at = *self.blocks.get(i / BLOCK)? as usize;
        let mut key = Vec::new();
        for _ in 0..=i % BLOCK {
            next_key(&self.bytes, &mut at, &mut key)?;
        }
        Some(key)
    }

    /// The position of `key`, if held.
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        // The last block whose first key is not above `key`.
        let block = self
            .blocks
            .partition_point(|start| self.first_key(*start as usize) <= key)
            .checked_sub(1)?;
        let mut found = None;
        self.walk_block(block, |at, held| match held.cmp(key) {
            Ordering::Less => true,
            Ordering::Equal => {
                found = Some(at);
                false
            }
            Ordering::Greater => false,
        });
        found
    }

    /// Calls `f` with each key and its position, in order.
    pub fn for_each(&self, mut f: impl FnMut(usize, &[u8])) {
        for block in 0..self.blocks.len() {
            self.walk_block(block, |at, key| {
                f(at, key);
                true
            });
        }
    }

    /// The first key of the block starting at byte `start` (whole, so borrowed).
    fn first_key(&self, start: usize) -> &[u8] {
        let mut at = start;
        read_entry(&self.bytes, &mut at).map_or(&[], |(_, suffix)| suffix)
    }

    /// Walks the keys of block `block` while `f` (given each key's position and bytes)
    /// returns true.
    fn walk_block(&self, block: usize, mut f: impl FnMut(usize, &[u8]) -> bool) {
        let Some(start) = self.blocks.get(block) else {
            return;
        };
        let mut at = *start as usize;
        let mut key: Vec<u8> = Vec::new();
        let first = block * BLOCK;
        for i in first..self.len.min(first + BLOCK) {
            // Checked when made or read.
            if next_key(&self.bytes, &mut at, &mut key).is_none() || !f(i, &key) {
                return;
            }
        }
    }
}

/// Why keys were not coded or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// More than 4 GiB of coded keys.
    TooLong,
    /// The keys or their bytes are not what [`FrontCoded`] writes.
    Invalid(&'static str),
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn push_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        // The low seven bits, with the continuation bit.
        out.push((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The varint at `*at`, moving past it; `None` when it runs past the end or past 32 bits.
fn read_varint(bytes: &[u8], at: &mut usize) -> Option<usize> {
    let mut n = 0usize;
    for shift in (0..35).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        n |= usize::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return u32::try_from(n).is_ok().then_some(n);
        }
    }
    None
}

/// Turns `key`, the key before the entry at `*at`, into that entry's key, moving past it.
fn next_key(bytes: &[u8], at: &mut usize, key: &mut Vec<u8>) -> Option<()> {
    let (shared, suffix) = read_entry(bytes, at)?;
    key.truncate(shared);
    key.extend_from_slice(suffix);
    Some(())
}

/// The entry at `*at` (shared prefix length, suffix), moving past it.
fn read_entry<'a>(bytes: &'a [u8], at: &mut usize) -> Option<(usize, &'a [u8])> {
    let shared = read_varint(bytes, at)?;
    let suffix_len = read_varint(bytes, at)?;
    let suffix = bytes.get(*at..at.checked_add(suffix_len)?)?;
    *at += suffix_len;
    Some((shared, suffix))
}

#[cfg(test)]
mod tests {
    use super::{BLOCK, FrontCoded, Refused, push_varint};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn coded(keys: &BTreeSet<Vec<u8>>) -> FrontCoded {
        FrontCoded::from_sorted(keys.iter().map(Vec::as_slice)).expect("ascending")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Coded keys answer as their sorted list — each by position, each lookup, the walk —
        /// and read back from their bytes the same; keys that are not held are not found.
        #[test]
        fn coded_keys_answer_as_their_list(
            keys in prop::collection::btree_set(
                prop::collection::vec(prop::sample::select(b"ab.-\xc3\xa9\x00\xff".to_vec()), 0..40),
                0..200,
            ),
            probes in prop::collection::vec(
                prop::collection::vec(prop::sample::select(b"ab.-\xc3\xa9\x00\xff".to_vec()), 0..40),
                0..50,
            ),
        ) {
            let list: Vec<Vec<u8>> = keys.iter().cloned().collect();
            let set = coded(&keys);
            let read = FrontCoded::from_bytes(set.bytes().to_vec(), list.len()).expect("written");
            for held in [&set, &read] {
                prop_assert_eq!(held.len(), list.len());
                for (i, key) in list.iter().enumerate() {
                    prop_assert_eq!(held.get(i), Some(key.clone()));
                    prop_assert_eq!(held.find(key), Some(i));
                }
                prop_assert_eq!(held.get(list.len()), None);
                for probe in &probes {
                    prop_assert_eq!(held.find(probe), list.binary_search(probe).ok());
                }
                let mut walked = Vec::new();
                held.for_each(|i, key| walked.push((i, key.to_vec())));
                prop_assert_eq!(walked, list.iter().cloned().enumerate().collect::<Vec<_>>());
            }
        }
    }

    /// Names sharing long prefixes take a fraction of their length.
    #[test]
    fn shared_prefixes_are_kept_once() {
        let keys: BTreeSet<Vec<u8>> = (0..1_000)
            .map(|i| format!("example.pool.10-1-{}-{}", i / 256, i % 256).into_bytes())
            .collect();
        let plain: usize = keys.iter().map(Vec::len).sum();
        let set = coded(&keys);
        assert!(
            set.bytes().len() * 3 < plain,
            "{} coded bytes for {plain} plain",
            set.bytes().len()
        );
    }

    /// Keys out of order are refused when coded, and bytes that are not a coding when read.
    #[test]
    fn what_is_not_a_coding_is_refused() {
        let backwards = FrontCoded::from_sorted([b"b".as_slice(), b"a"]);
        assert_eq!(backwards.err(), Some(Refused::Invalid("keys out of order")));
        let twice = FrontCoded::from_sorted([b"a".as_slice(), b"a"]);
        assert_eq!(twice.err(), Some(Refused::Invalid("keys out of order")));

        let keys: BTreeSet<Vec<u8>> = (0..40).map(|i| format!("k{i:03}").into_bytes()).collect();
        let good = coded(&keys).bytes().to_vec();
        let refused = |bytes: Vec<u8>, len: usize| FrontCoded::from_bytes(bytes, len).err();
        assert_eq!(
            refused(good[..good.len() - 1].to_vec(), keys.len()),
            Some(Refused::Invalid("a key runs past the keys' bytes"))
        );
        assert_eq!(
            refused(good.clone(), keys.len() - 1),
            Some(Refused::Invalid("bytes after the last key"))
        );
        // The first key claiming a shared prefix.
        let mut first_shares = good.clone();
        first_shares[0] = 1;
        assert_eq!(
            refused(first_shares, keys.len()),
            Some(Refused::Invalid("a block's first key is not whole"))
        );
        // The second key sharing more than the first holds.
        let mut second = Vec::new();
        for (shared, suffix) in [(0, b"ab".as_slice()), (3, b"c")] {
            push_varint(&mut second, shared);
            push_varint(&mut second, suffix.len());
            second.extend_from_slice(suffix);
        }
        assert_eq!(
            refused(second, 2),
            Some(Refused::Invalid("a key shares more than the key before it"))
        );
        // A block's first key below the key before it.
        let mut blocks = Vec::new();
        for i in 0..=BLOCK {
            let key = if i == BLOCK {
                b"a".to_vec()
            } else {
                format!("b{i:02}").into_bytes()
            };
            push_varint(&mut blocks, 0);
            push_varint(&mut blocks, key.len());
            blocks.extend_from_slice(&key);
        }
        assert_eq!(
            refused(blocks, BLOCK + 1),
            Some(Refused::Invalid("keys out of order"))
        );
    }
}
