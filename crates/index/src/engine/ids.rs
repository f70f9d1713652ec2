//! [`Ids`]: a column of dense ids (a product title's, a place's) with "none" among them,
//! two bytes a value while every id is below 65,535, four otherwise. At ten
//! million hosts the product-title column alone is 26 million values; the titles and places
//! a scan holds number in the thousands.

use super::persist::{LoadError, Reader, Writer};
use super::postings::NONE_U32;

/// The two-byte form's "none".
const NONE_U16: u16 = u16::MAX;

/// Ids by ordinal, each below `u32::MAX` or [`NONE_U32`]; see the module documentation.
#[derive(Debug)]
pub(super) enum Ids {
    /// Every id below [`NONE_U16`].
    Narrow(Box<[u16]>),
    Wide(Box<[u32]>),
}

impl Default for Ids {
    fn default() -> Self {
        Self::Narrow(Box::default())
    }
}

impl Ids {
    /// The column of `ids`, in its narrow form when every id allows.
    pub fn new(ids: Vec<u32>) -> Self {
        let narrow = ids
            .iter()
            .all(|id| *id == NONE_U32 || *id < u32::from(NONE_U16));
        if !narrow {
            return Self::Wide(ids.into_boxed_slice());
        }
        Self::Narrow(
            ids.into_iter()
                // Checked above.
                .map(|id| if id == NONE_U32 { NONE_U16 } else { id as u16 })
                .collect(),
        )
    }

    /// The id at `at` ([`NONE_U32`] for none), `None` past the end.
    #[inline]
    pub fn get(&self, at: usize) -> Option<u32> {
        match self {
            Self::Narrow(ids) => ids.get(at).map(|id| widen(*id)),
            Self::Wide(ids) => ids.get(at).copied(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Self::Narrow(ids) => ids.len(),
            Self::Wide(ids) => ids.len(),
        }
    }

    /// Every id in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len()).filter_map(|at| self.get(at))
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Narrow(ids) => ids.len() * 2,
            Self::Wide(ids) => ids.len() * 4,
        }
    }

    /// Writes the column as `u32`s (the index file's layout whatever the form).
    pub fn write<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        match self {
            Self::Wide(ids) => w.u32s(ids),
            Self::Narrow(ids) => {
                for chunk in ids.chunks(1 << 14) {
                    let wide: Vec<u32> = chunk.iter().map(|id| widen(*id)).collect();
                    w.u32s(&wide)?;
                }
                Ok(())
            }
        }
    }

    /// Reads `n` ids that [`Self::write`] wrote.
    pub fn read<R: std::io::Read>(r: &mut Reader<R>, n: usize) -> Result<Self, LoadError> {
        Ok(Self::new(r.u32s(n)?))
    }
}

/// A narrow id as the wide form holds it.
#[inline]
fn widen(id: u16) -> u32 {
    if id == NONE_U16 {
        NONE_U32
    } else {
        u32::from(id)
    }
}

#[cfg(test)]
mod tests {
    use super::{Ids, NONE_U16, NONE_U32};
    use crate::engine::persist::{Reader, Writer};
    use proptest::prelude::*;

    proptest! {
        /// Either form answers every position as the plain list, and reads back as written.
        #[test]
        fn ids_answer_as_their_plain_list(
            ids in prop::collection::vec(prop_oneof![
                Just(NONE_U32),
                0u32..100,
                Just(u32::from(NONE_U16) - 1),
                Just(u32::from(NONE_U16)),
                any::<u32>(),
            ], 0..50),
        ) {
            let column = Ids::new(ids.clone());
            let wide = ids.iter().any(|id| *id != NONE_U32 && *id >= u32::from(NONE_U16));
            prop_assert_eq!(matches!(column, Ids::Wide(_)), wide);
            prop_assert_eq!(column.len(), ids.len());
            for (at, id) in ids.iter().enumerate() {
                prop_assert_eq!(column.get(at), Some(*id));
            }
            prop_assert_eq!(column.get(ids.len()), None);
            let mut bytes = Vec::new();
            column.write(&mut Writer::new(&mut bytes)).expect("in memory");
            prop_assert_eq!(bytes.len(), ids.len() * 4);
            let read = Ids::read(&mut Reader::new(bytes.as_slice()), ids.len()).expect("written");
            prop_assert_eq!((0..ids.len()).map(|at| read.get(at)).collect::<Vec<_>>(), ids.iter().map(|id| Some(*id)).collect::<Vec<_>>());
        }
    }
}
