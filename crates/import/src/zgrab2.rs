//! zgrab2: not yet implemented.

use std::io::BufRead;

use crate::{Error, Importer, Item, Options, Tally};

/// Not yet implemented.
pub struct Zgrab2Importer<R> {
    _input: R,
    tally: Tally,
}

impl<R: BufRead> Zgrab2Importer<R> {
    /// Reads `input`.
    pub fn new(input: R, _options: &Options) -> Result<Self, Error> {
        Ok(Self {
            _input: input,
            tally: Tally::default(),
        })
    }
}

impl<R: BufRead> Importer for Zgrab2Importer<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        Err(Error::Options("zgrab2: not yet implemented".to_owned()))
    }

    fn tally(&self) -> &Tally {
        &self.tally
    }
}
