//! shodan: not yet implemented.

use std::io::BufRead;

use crate::{Error, Importer, Item, Options, Tally};

/// Not yet implemented.
pub struct ShodanImporter<R> {
    _input: R,
    tally: Tally,
}

impl<R: BufRead> ShodanImporter<R> {
    /// Reads `input`.
    pub fn new(input: R, _options: &Options) -> Result<Self, Error> {
        Ok(Self {
            _input: input,
            tally: Tally::default(),
        })
    }
}

impl<R: BufRead> Importer for ShodanImporter<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        Err(Error::Options("shodan: not yet implemented".to_owned()))
    }

    fn tally(&self) -> &Tally {
        &self.tally
    }
}
