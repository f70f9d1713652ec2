//! Postings keyed by text, held compactly: [`StrPostings`]. Host names are the reason — at
//! ten million hosts most stored names (reverse DNS of ISP pools, cloud VM names) belong to
//! one host each, so a hash map with an owned key and a one-value bitmap per name cost about
//! 130 bytes a name, and loading it allocated three times per name.
//!
//! Built in a hash map (`insert`), then *frozen* ([`StrPostings::freeze`]): the keys sorted
//! and concatenated into one buffer with their end offsets, and per key either its only
//! ordinal (most keys) or the index of a bitmap among the few keys with several. A lookup is
//! a binary search over the keys. The index file holds the frozen form as it is in memory
//! (one read per array).

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write as _;

use roaring::RoaringBitmap;

use super::persist::{LoadError, Reader, Writer};

/// Text keys → ordinals; see the module documentation.
#[derive(Debug, Default)]
pub(super) struct StrPostings {
    /// While building: per key, its ordinals. Empty once frozen.
    building: HashMap<Box<str>, RoaringBitmap>,
    /// The keys, ascending, concatenated.
    text: Box<str>,
    /// Key `i` is `text[ends[i - 1]..ends[i]]` (`ends[-1]` = 0).
    ends: Box<[u32]>,
    /// Per key: its only ordinal, or (when `shared` holds the key) an index into `bitmaps`.
    values: Box<[u32]>,
    /// The keys with more than one ordinal.
    shared: RoaringBitmap,
    /// The ordinals of the keys in `shared`, in key order.
    bitmaps: Box<[RoaringBitmap]>,
}

impl StrPostings {
    /// Adds `ordinal` under `key` (while building).
    pub fn insert(&mut self, key: &str, ordinal: u32) {
        match self.building.get_mut(key) {
            Some(b) => {
                b.insert(ordinal);
            }
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
        let bytes: usize = entries.iter().map(|(k, _)| k.len()).sum();
        if u32::try_from(bytes).is_err() || u32::try_from(entries.len()).is_err() {
            return Err(TooLong);
        }
        let mut text = String::with_capacity(bytes);
        let mut ends = Vec::with_capacity(entries.len());
        let mut values = Vec::with_capacity(entries.len());
        let mut shared = RoaringBitmap::new();
        let mut bitmaps = Vec::new();
        for (i, (key, ordinals)) in entries.into_iter().enumerate() {
            text.push_str(&key);
            // Both bounded above.
            ends.push(text.len() as u32);
            if ordinals.len() == 1
                && let Some(only) = ordinals.min()
            {
                values.push(only);
            } else {
                shared.insert(i as u32);
                values.push(bitmaps.len() as u32);
                bitmaps.push(ordinals);
            }
        }
        self.text = text.into_boxed_str();
        self.ends = ends.into_boxed_slice();
        self.values = values.into_boxed_slice();
        self.shared = shared;
        self.bitmaps = bitmaps.into_boxed_slice();
        Ok(())
    }

    /// The frozen entries, taken out (so that a frozen set can be extended and frozen again).
    fn drain_frozen(&mut self) -> Vec<(Box<str>, RoaringBitmap)> {
        let out = (0..self.ends.len())
            .map(|i| (self.key(i).into(), self.ordinals(i).into_owned()))
            .collect();
        *self = Self::default();
        out
    }

    /// Key `i` in ascending order (empty past the last).
    pub fn key(&self, i: usize) -> &str {
        let start = i
            .checked_sub(1)
            .and_then(|p| self.ends.get(p))
            .map_or(0, |e| *e as usize);
        let end = self.ends.get(i).map_or(start, |e| *e as usize);
        self.text.get(start..end).unwrap_or("")
    }

    fn ordinals(&self, i: usize) -> Cow<'_, RoaringBitmap> {
        let Some(value) = self.values.get(i).copied() else {
            return Cow::Owned(RoaringBitmap::new());
        };
        if self.shared.contains(i as u32) {
            return self
                .bitmaps
                .get(value as usize)
                .map_or_else(|| Cow::Owned(RoaringBitmap::new()), Cow::Borrowed);
        }
        let mut one = RoaringBitmap::new();
        one.insert(value);
        Cow::Owned(one)
    }

    /// The ordinals under `key` (empty when none; a frozen set only).
    pub fn get(&self, key: &str) -> Option<Cow<'_, RoaringBitmap>> {
        debug_assert!(self.building.is_empty(), "a lookup before freeze");
        let (mut low, mut high) = (0, self.ends.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(self.ordinals(mid)),
            }
        }
        None
    }

    /// Keys.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Approximate bytes held (frozen).
    pub fn heap_bytes(&self) -> usize {
        self.text.len()
            + self.ends.len() * 8
            + self.shared.serialized_size()
            + self
                .bitmaps
                .iter()
                .map(|b| b.serialized_size() + 24)
                .sum::<usize>()
    }

    /// Writes the frozen form (the index file; see `persist`).
    pub fn write<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        debug_assert!(self.building.is_empty(), "a save before freeze");
        w.len(self.ends.len())?;
        w.len(self.text.len())?;
        w.write_all(self.text.as_bytes())?;
        w.u32s(&self.ends)?;
        w.u32s(&self.values)?;
        w.bitmap(&self.shared)?;
        w.bitmaps(self.bitmaps.iter())
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
        let text = String::from_utf8(r.bytes(bytes)?).map_err(|_| bad("not UTF-8"))?;
        let ends = r.u32s(n)?;
        let values = r.u32s(n)?;
        let shared = r.bitmap(what)?;
        let bitmaps = r.bitmaps(what)?;
        let set = Self {
            building: HashMap::new(),
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
            values: values.into_boxed_slice(),
            shared,
            bitmaps: bitmaps.into_boxed_slice(),
        };
        set.check(limit).map_err(bad)?;
        Ok(set)
    }

    /// The structural checks of a loaded set.
    fn check(&self, limit: usize) -> Result<(), &'static str> {
        let mut start = 0usize;
        for end in &self.ends {
            let end = *end as usize;
            if end < start || end > self.text.len() || !self.text.is_char_boundary(end) {
                return Err("key offsets");
            }
            start = end;
        }
        if start != self.text.len() {
            return Err("key offsets");
        }
        if (1..self.ends.len()).any(|i| self.key(i - 1) >= self.key(i)) {
            return Err("keys out of order");
        }
        if self
            .shared
            .max()
            .is_some_and(|m| m as usize >= self.ends.len())
            || self.shared.len() != self.bitmaps.len() as u64
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
        if self
            .bitmaps
            .iter()
            .any(|b| b.len() < 2 || b.max().is_some_and(|m| m as usize >= limit))
        {
            return Err("an ordinal beyond the index");
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
        let mut set = StrPostings::default();
        let mut map: HashMap<String, RoaringBitmap> = HashMap::new();
        let mut seed = 7u64;
        for ordinal in 0..5_000u32 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let key = format!("k{}.example", (seed >> 33) % 3_000);
            set.insert(&key, ordinal);
            map.entry(key).or_default().insert(ordinal);
        }
        set.freeze().expect("small");
        assert_eq!(set.len(), map.len());
        for (key, ordinals) in &map {
            assert_eq!(set.get(key).as_deref(), Some(ordinals), "{key}");
        }
        assert!(set.get("absent").is_none());
        assert!(set.get("").is_none());
        // Freezing again after more inserts keeps everything.
        set.insert("k1.example", 9_999);
        set.insert("new", 10_000);
        set.freeze().expect("small");
        map.entry("k1.example".into()).or_default().insert(9_999);
        map.entry("new".into()).or_default().insert(10_000);
        for (key, ordinals) in &map {
            assert_eq!(set.get(key).as_deref(), Some(ordinals), "{key}");
        }
    }
}
