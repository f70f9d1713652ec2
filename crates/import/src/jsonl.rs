//! Periscope's own observation JSON Lines, through the model's reader: every line maps to
//! itself and nothing is dropped except rejected lines (reported). `periscope ingest` reads
//! this format through its own tuned line reader; `convert` reads it here.

use std::io::BufRead;

use periscope_model::observation::ObservationReader;

use crate::lines::{JsonLine, JsonLines};
use crate::{Error, Imported, Importer, Item, Options, Record, Rejected, Tally};

/// Reads observation lines.
pub struct JsonlImporter<R> {
    lines: JsonLines<R>,
    reader: ObservationReader,
    tally: Tally,
}

impl<R: BufRead> JsonlImporter<R> {
    /// Reads `input`.
    pub fn new(input: R, options: &Options) -> Self {
        Self {
            lines: JsonLines::new(input),
            reader: ObservationReader::new(options.now),
            tally: Tally::default(),
        }
    }
}

impl<R: BufRead> Importer for JsonlImporter<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        loop {
            let Some(line) = self.lines.next_line()? else {
                return Ok(None);
            };
            let number = self.lines.number();
            let text = match line {
                JsonLine::Blank => {
                    let _ = self.reader.read_line("");
                    continue;
                }
                JsonLine::Bad(reason) => {
                    let _ = self.reader.read_line("");
                    self.tally.records += 1;
                    return Ok(Some(Item::Rejected(Rejected {
                        line: number,
                        field: "(line)".to_owned(),
                        reason,
                    })));
                }
                JsonLine::Text(text) => text,
            };
            self.tally.records += 1;
            return Ok(Some(match self.reader.read_line(&text) {
                Ok(Some(observation)) => Item::Record(Record {
                    line: number,
                    observations: vec![Imported {
                        observation,
                        line: text,
                    }],
                }),
                Ok(None) => continue,
                Err(e) => Item::Rejected(Rejected {
                    line: number,
                    field: e.field,
                    reason: e.reason,
                }),
            }));
        }
    }

    fn tally(&self) -> &Tally {
        &self.tally
    }
}
