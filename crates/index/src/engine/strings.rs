//! Postings keyed by text, held compactly: [`StrPostings`]. Host names are the reason — at
//! ten million hosts most stored names (reverse DNS of ISP pools, cloud VM names) belong to
//! one host each, so a hash map with an owned key and a one-value bitmap per name cost about
//! 130 bytes a name, and loading it allocated three times per name.
//!
//! Built in a hash map (`insert`), then *frozen* ([`StrPostings::freeze`]): the keys sorted
//! and front coded ([`FrontCoded`]: each key as what it adds to the one before), and per key
//! either its only ordinal (most keys) or the number of its *shared set* among the keys with
//! several. A shared set of at most [`SMALL_SET`] ordinals (most of them: a certificate name
//! on a few services, a product word of a rare product) is a slice of one ordinal pool, 4
//! bytes an ordinal; a bitmap for a set that small cost about 90 bytes in three allocations.
//! Larger sets are bitmaps. A lookup is a binary search over the coded keys' blocks. The
//! index file holds the coded keys as they are in memory and every shared set as a bitmap;
//! loading moves the small ones to the pool.
//!
//! **Key order:** domain names are held with their labels reversed ([`KeyOrder`]:
//! `example.pool.10-1-2-3` for `10-1-2-3.pool.example`), so that the names of one zone sort
//! together and share all but their first label with their neighbours: the host names of ten
//! million hosts code to about a fifth of their length, where in their own order (sharing
//! only the start of the first label) they kept most of it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write as _;
use std::marker::PhantomData;

use roaring::RoaringBitmap;

use super::front_coded::{FrontCoded, Refused};
use super::persist::{LoadError, Reader, Writer};

/// Text keys → ordinals, the keys held in order `O`; see the module documentation.
#[derive(Debug, Default)]
pub(super) struct StrPostings<O: KeyOrder = AsGiven> {
    /// While building: per key (in its held form), its ordinals. Empty once frozen.
    building: HashMap<Box<str>, RoaringBitmap>,
    order: PhantomData<O>,
    /// The keys in their held form, ascending.
    keys: FrontCoded,
    /// Per key: its only ordinal, or (when `shared` holds the key) its shared set's number.
    values: Box<[u32]>,
    /// The keys with more than one ordinal; shared set `j` is that of the `j`-th of them.
    shared: RoaringBitmap,
    /// Shared set `j` is `pool[starts[j]..starts[j + 1]]` (ascending) when that range is not
    /// empty, else the bitmap of `big` at its rank among the sets in `big_sets`.
    starts: Box<[u32]>,
    pool: Box<[u32]>,
    /// The shared sets of more than [`SMALL_SET`] ordinals, by number.
    big_sets: RoaringBitmap,
    big: Box<[RoaringBitmap]>,
}

/// How the keys of a [`StrPostings`] are held (a type, so that postings of names cannot be
/// made or read in another order); see the module documentation.
pub(super) trait KeyOrder: Default + std::fmt::Debug {
    /// `key` as held in this order; holding a held key again gives the key back.
    fn held(key: &str) -> Cow<'_, str>;
}

/// Keys held as given (words, CPEs).
#[derive(Debug, Default)]
pub(super) struct AsGiven;

impl KeyOrder for AsGiven {
    fn held(key: &str) -> Cow<'_, str> {
        Cow::Borrowed(key)
    }
}

/// Domain names held with their labels reversed.
#[derive(Debug, Default)]
pub(super) struct LabelsReversed;

impl KeyOrder for LabelsReversed {
    fn held(key: &str) -> Cow<'_, str> {
        if !key.contains('.') {
            return Cow::Borrowed(key);
        }
        let mut out = String::with_capacity(key.len());
        for (i, label) in key.rsplit('.').enumerate() {
            if i > 0 {
                out.push('.');
            }
            out.push_str(label);
        }
        Cow::Owned(out)
    }
}

/// The largest shared set held in the pool rather than as a bitmap.
const SMALL_SET: u64 = 32;

/// The shared sets of a [`StrPostings`] as it is being frozen or read.
#[derive(Default)]
struct SharedSets {
    starts: Vec<u32>,
    pool: Vec<u32>,
    big_sets: RoaringBitmap,
    big: Vec<RoaringBitmap>,
}

impl SharedSets {
    /// Adds the next shared set; fails when the pool would pass 4 Gi ordinals.
    fn push(&mut self, ordinals: RoaringBitmap) -> Result<(), TooLong> {
        let number = u32::try_from(self.starts.len()).map_err(|_| TooLong)?;
        let start = u32::try_from(self.pool.len()).map_err(|_| TooLong)?;
        self.starts.push(start);
        if ordinals.len() <= SMALL_SET {
            self.pool.extend(&ordinals);
            u32::try_from(self.pool.len()).map_err(|_| TooLong)?;
        } else {
            self.big_sets.insert(number);
            self.big.push(ordinals);
        }
        Ok(())
    }

    /// The sets, exactly sized, into `set`.
    fn finish<O: KeyOrder>(mut self, set: &mut StrPostings<O>) {
        // Bounded by `push`.
        self.starts.push(self.pool.len() as u32);
        set.starts = self.starts.into_boxed_slice();
        set.pool = self.pool.into_boxed_slice();
        set.big_sets = self.big_sets;
        set.big = self.big.into_boxed_slice();
    }
}

impl<O: KeyOrder> StrPostings<O> {
    /// Adds `ordinal` under `key` (while building).
    pub fn insert(&mut self, key: &str, ordinal: u32) {
        let key = O::held(key);
        match self.building.get_mut(key.as_ref()) {
            Some(b) => super::postings::push(b, ordinal),
            None => {
                let mut b = RoaringBitmap::new();
                b.insert(ordinal);
                self.building.insert(key.into(), b);
            }
        }
    }

    /// Ends the build: the compact form, exactly sized. Fails when the keys exceed 4 GiB.
    pub fn freeze(&mut self) -> Result<(), TooLong> {
        let mut building = std::mem::take(&mut self.building);
        for (key, ordinals) in self.drain_frozen() {
            *building.entry(key).or_default() |= ordinals;
        }
        let mut entries: Vec<(Box<str>, RoaringBitmap)> = building.into_iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if u32::try_from(entries.len()).is_err() {
            return Err(TooLong);
        }
        // The keys are distinct and sorted: only their length can be refused.
        let keys = FrontCoded::from_sorted(entries.iter().map(|(k, _)| k.as_bytes()))
            .map_err(|_| TooLong)?;
        let mut values = Vec::with_capacity(entries.len());
        let mut shared = RoaringBitmap::new();
        let mut sets = SharedSets::default();
        for (i, (_, ordinals)) in entries.into_iter().enumerate() {
            // Bounded above.
            if ordinals.len() == 1
                && let Some(only) = ordinals.min()
            {
                values.push(only);
            } else {
                shared.insert(i as u32);
                values.push(sets.starts.len() as u32);
                sets.push(ordinals)?;
            }
        }
        self.keys = keys;
        self.values = values.into_boxed_slice();
        self.shared = shared;
        sets.finish(self);
        Ok(())
    }

    /// The frozen entries (keys in their held form), taken out (so that a frozen set can be
    /// extended and frozen again).
    fn drain_frozen(&mut self) -> Vec<(Box<str>, RoaringBitmap)> {
        let mut out = Vec::with_capacity(self.keys.len());
        self.keys.for_each(|i, key| {
            out.push((
                String::from_utf8_lossy(key).into(),
                self.ordinals(i).into_owned(),
            ));
        });
        *self = Self::default();
        out
    }

    /// Key `i` in ascending order of the held form, as given (empty past the last).
    pub fn key(&self, i: usize) -> String {
        // Keys are UTF-8: made from `str`s, checked on load.
        let held = String::from_utf8(self.keys.get(i).unwrap_or_default()).unwrap_or_default();
        if let Cow::Owned(given) = O::held(&held) {
            return given;
        }
        held
    }

    fn ordinals(&self, i: usize) -> Cow<'_, RoaringBitmap> {
        let Some(value) = self.values.get(i).copied() else {
            return Cow::Owned(RoaringBitmap::new());
        };
        if self.shared.contains(i as u32) {
            return self.shared_set(value);
        }
        let mut one = RoaringBitmap::new();
        one.insert(value);
        Cow::Owned(one)
    }

    /// Shared set `j` (empty when there is none).
    fn shared_set(&self, j: u32) -> Cow<'_, RoaringBitmap> {
        let j = j as usize;
        if let (Some(start), Some(end)) = (self.starts.get(j), self.starts.get(j + 1))
            && start < end
        {
            let ordinals = self.pool.get(*start as usize..*end as usize).unwrap_or(&[]);
            return Cow::Owned(
                RoaringBitmap::from_sorted_iter(ordinals.iter().copied()).unwrap_or_default(),
            );
        }
        let big = (self.big_sets.rank(j as u32) as usize).checked_sub(1);
        match big.and_then(|b| self.big.get(b)) {
            Some(b) if self.big_sets.contains(j as u32) => Cow::Borrowed(b),
            _ => Cow::Owned(RoaringBitmap::new()),
        }
    }

    /// Every shared set, in order.
    fn shared_sets(&self) -> impl ExactSizeIterator<Item = Cow<'_, RoaringBitmap>> {
        (0..self.starts.len().saturating_sub(1)).map(|j| self.shared_set(j as u32))
    }

    /// The ordinals under `key` (empty when none; a frozen set only).
    pub fn get(&self, key: &str) -> Option<Cow<'_, RoaringBitmap>> {
        debug_assert!(self.building.is_empty(), "a lookup before freeze");
        let at = self.keys.find(O::held(key).as_bytes())?;
        Some(self.ordinals(at))
    }

    /// Keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Approximate bytes held (frozen).
    pub fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes()
            + self.values.len() * 4
            + self.shared.serialized_size()
            + (self.starts.len() + self.pool.len()) * 4
            + self.big_sets.serialized_size()
            + self
                .big
                .iter()
                .map(|b| b.serialized_size() + 24)
                .sum::<usize>()
    }

    /// Writes the frozen form (the index file; see `persist`).
    pub fn write<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        debug_assert!(self.building.is_empty(), "a save before freeze");
        w.len(self.keys.len())?;
        w.len(self.keys.bytes().len())?;
        w.write_all(self.keys.bytes())?;
        w.u32s(&self.values)?;
        w.bitmap(&self.shared)?;
        let sets = self.shared_sets();
        w.len(sets.len())?;
        for set in sets {
            w.bitmap(&set)?;
        }
        Ok(())
    }

    /// Reads what [`Self::write`] wrote, every ordinal below `limit`.
    pub fn read<R: std::io::Read>(
        r: &mut Reader<R>,
        what: &str,
        limit: usize,
    ) -> Result<Self, LoadError> {
        let bad = |why: &str| LoadError::Corrupt(format!("{what}: {why}"));
        let n = r.len(what)?;
        let bytes = r.len(what)?;
        let keys = FrontCoded::from_bytes(r.bytes(bytes)?, n).map_err(|e| match e {
            Refused::TooLong => bad("keys past 4 GiB"),
            Refused::Invalid(why) => bad(why),
        })?;
        let values = r.u32s(n)?;
        let shared = r.bitmap(what)?;
        let count = r.len(what)?;
        let mut sets = SharedSets::default();
        for _ in 0..count {
            let ordinals = r.bitmap(what)?;
            if ordinals.len() < 2 || ordinals.max().is_some_and(|m| m as usize >= limit) {
                return Err(bad("an ordinal beyond the index"));
            }
            sets.push(ordinals)
                .map_err(|TooLong| bad("too many shared ordinals"))?;
        }
        let mut set = Self {
            building: HashMap::new(),
            order: PhantomData,
            keys,
            values: values.into_boxed_slice(),
            shared,
            ..Self::default()
        };
        sets.finish(&mut set);
        set.check(limit).map_err(bad)?;
        Ok(set)
    }

    /// The structural checks of a loaded set.
    fn check(&self, limit: usize) -> Result<(), &'static str> {
        let mut utf8 = true;
        self.keys
            .for_each(|_, key| utf8 &= std::str::from_utf8(key).is_ok());
        if !utf8 {
            return Err("a key is not UTF-8");
        }
        if self
            .shared
            .max()
            .is_some_and(|m| m as usize >= self.keys.len())
            || self.shared.len() + 1 != self.starts.len() as u64
        {
            return Err("shared keys");
        }
        let mut next_shared = 0u32;
        for (i, v) in self.values.iter().enumerate() {
            if self.shared.contains(i as u32) {
                if *v != next_shared {
                    return Err("shared keys");
                }
                next_shared += 1;
            } else if *v as usize >= limit {
                return Err("an ordinal beyond the index");
            }
        }
        Ok(())
    }
}

/// Text keys past 4 GiB.
#[derive(Debug, Clone, Copy)]
pub(super) struct TooLong;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frozen_lookups_answer_as_the_map_did() {
        lookups_answer_as_the_map_did::<AsGiven>();
        lookups_answer_as_the_map_did::<LabelsReversed>();
    }

    /// Postings held in order `O` answer as a map of their keys did: frozen, written and read
    /// back, and frozen again; each key comes back as given at its position.
    fn lookups_answer_as_the_map_did<O: KeyOrder>() {
        let mut set = StrPostings::<O>::default();
        let mut map: HashMap<String, RoaringBitmap> = HashMap::new();
        let mut seed = 7u64;
        for ordinal in 0..5_000u32 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let key = format!("k{}.{}.example", (seed >> 33) % 3_000, seed % 7);
            set.insert(&key, ordinal);
            map.entry(key).or_default().insert(ordinal);
        }
        // Shared sets on both sides of the pool's limit, and one spanning containers.
        let sizes = [SMALL_SET - 1, SMALL_SET, SMALL_SET + 1, 5_000];
        for (i, size) in sizes.into_iter().enumerate() {
            let key = format!("big{i}");
            for ordinal in (0..size as u32).map(|o| o * 37 + i as u32) {
                set.insert(&key, ordinal);
                map.entry(key.clone()).or_default().insert(ordinal);
            }
        }
        set.freeze().expect("small");
        assert_eq!(set.len(), map.len());
        assert_eq!(
            set.big.len(),
            2,
            "the sets above the pool's limit are bitmaps"
        );
        for (key, ordinals) in &map {
            assert_eq!(set.get(key).as_deref(), Some(ordinals), "{key}");
        }
        assert!(set.get("absent").is_none());
        assert!(set.get("").is_none());
        // Written and read back, it answers the same.
        let mut bytes = Vec::new();
        set.write(&mut Writer::new(&mut bytes)).expect("in memory");
        let limit = 5_000 * 37 + sizes.len();
        let read = StrPostings::<O>::read(&mut Reader::new(bytes.as_slice()), "test", limit)
            .expect("what was written");
        for (key, ordinals) in &map {
            assert_eq!(read.get(key).as_deref(), Some(ordinals), "{key} read back");
        }
        let mut keys: Vec<String> = (0..read.len()).map(|i| read.key(i)).collect();
        keys.sort();
        let mut expected: Vec<String> = map.keys().cloned().collect();
        expected.sort();
        assert_eq!(keys, expected, "the keys by position");
        // An ordinal at the limit is refused.
        let refused =
            StrPostings::<O>::read(&mut Reader::new(bytes.as_slice()), "test", limit - 38);
        assert!(refused.is_err(), "an ordinal beyond the index was accepted");
        // Freezing again after more inserts keeps everything.
        set.insert("k1.1.example", 9_999);
        set.insert("new", 10_000);
        set.insert("big0", 1_000_001);
        set.freeze().expect("small");
        map.entry("k1.1.example".into()).or_default().insert(9_999);
        map.entry("new".into()).or_default().insert(10_000);
        map.entry("big0".into()).or_default().insert(1_000_001);
        for (key, ordinals) in &map {
            assert_eq!(set.get(key).as_deref(), Some(ordinals), "{key}");
        }
    }

    /// Reversing a name's labels twice gives it back; a name without a dot is its own form.
    #[test]
    fn reversed_labels_read_back() {
        assert_eq!(LabelsReversed::held("a.b.example"), "example.b.a");
        assert_eq!(LabelsReversed::held("example.b.a"), "a.b.example");
        assert_eq!(LabelsReversed::held("example"), "example");
        assert_eq!(LabelsReversed::held("a..b."), ".b..a");
        assert_eq!(LabelsReversed::held(".b..a"), "a..b.");
    }
}
