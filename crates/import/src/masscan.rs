//! masscan: not yet implemented.

use std::io::BufRead;

use crate::{Error, Importer, Item, Options, Tally};

/// Not yet implemented.
pub struct MasscanJsonImporter<R> {
    _input: R,
    tally: Tally,
}

impl<R: BufRead> MasscanJsonImporter<R> {
    /// Reads `input`.
    pub fn new(input: R, _options: &Options) -> Self {
        Self {
            _input: input,
            tally: Tally::default(),
        }
    }
}

impl<R: BufRead> Importer for MasscanJsonImporter<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        Err(Error::Options("masscan: not yet implemented".to_owned()))
    }

    fn tally(&self) -> &Tally {
        &self.tally
    }
}

/// Not yet implemented.
pub type MasscanXmlImporter<R> = MasscanJsonImporter<R>;
