//! Where values come from and what is said when one cannot be used: [`Origin`] (a file line,
//! an environment variable, a flag), [`ConfigError`], the [`Raw`] value a key's parser reads,
//! and the walk over the file's spanned TOML document that applies each entry through the key
//! table in the order it was written, with its line.
//!
//! The file is read with `toml`'s spanned document parser rather than `serde` into the
//! section structs: serde's own messages ("unknown field `x`, expected one of …", "invalid
//! type: …") carry neither the dotted key nor the key's expectation, and the same parsers must
//! read the text of variables and flags, which are not TOML.

use std::fmt;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

use super::Config;
use super::declare::{find, known_keys};

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A line of a configuration file.
    File {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
    },
    /// An environment variable, by name.
    Env(String),
    /// A command-line flag, such as `--data`.
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => {
                write!(f, "the configuration file {} (line {line})", path.display())
            }
            Origin::Env(name) => write!(f, "the environment variable {name}"),
            Origin::Flag(flag) => write!(f, "the command-line flag {flag}"),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error("the configuration file {} is not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// What the parser said, with the line.
        message: String,
    },
    /// A key Periscope does not know (often a typo, so it is never ignored).
    #[error("unknown configuration key `{key}` in {origin}; known keys: {known}")]
    UnknownKey {
        /// The key, dotted (`limits.daily_search`).
        key: String,
        /// Where it was found.
        origin: Origin,
        /// The keys that would have been accepted there.
        known: String,
    },
    /// A known key with a value it cannot take.
    #[error("bad value for `{key}` in {origin}: expected {expected}, found {found}")]
    BadValue {
        /// The key, dotted.
        key: String,
        /// Where the value came from.
        origin: Origin,
        /// What the key accepts.
        expected: String,
        /// What was given.
        found: String,
    },
    /// Settings that cannot be used together, or a file they name that cannot be used.
    #[error("{0}")]
    Invalid(String),
}

/// A value to set a key from: a TOML value of the file, or the text of a variable or flag.
#[derive(Clone, Copy)]
pub(super) enum Raw<'a> {
    Toml(&'a DeValue<'a>),
    Text(&'a str),
}

impl<'a> Raw<'a> {
    /// The value for an error message.
    fn describe(self) -> String {
        match self {
            Raw::Text(s) => format!("{s:?}"),
            Raw::Toml(value) => match value {
                DeValue::String(s) => format!("the string {:?}", s.as_ref()),
                DeValue::Integer(i) => match i.radix() {
                    16 => format!("the integer 0x{}", i.as_str()),
                    8 => format!("the integer 0o{}", i.as_str()),
                    2 => format!("the integer 0b{}", i.as_str()),
                    _ => format!("the integer {}", i.as_str()),
                },
                DeValue::Float(x) => format!("the number {}", x.as_str()),
                DeValue::Boolean(b) => format!("the boolean {b}"),
                DeValue::Datetime(d) => format!("the date-time {d}"),
                DeValue::Array(_) => "an array".to_owned(),
                DeValue::Table(_) => "a table".to_owned(),
            },
        }
    }

    /// A string: a TOML string, or any text.
    pub(super) fn string(self) -> Option<&'a str> {
        match self {
            Raw::Text(s) => Some(s),
            Raw::Toml(DeValue::String(s)) => Some(s.as_ref()),
            Raw::Toml(_) => None,
        }
    }

    /// An integer: a TOML integer, or text of decimal digits (`_` allowed between them).
    pub(super) fn integer(self) -> Option<i128> {
        match self {
            Raw::Text(s) => {
                let s = s.trim();
                if s.starts_with('_') || s.ends_with('_') || s.contains("__") {
                    return None;
                }
                s.replace('_', "").parse().ok()
            }
            Raw::Toml(DeValue::Integer(i)) => i128::from_str_radix(i.as_str(), i.radix()).ok(),
            Raw::Toml(_) => None,
        }
    }

    /// A list of strings: a TOML array of strings, or comma-separated text.
    pub(super) fn strings(self) -> Option<Vec<&'a str>> {
        match self {
            Raw::Text(s) => Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect(),
            ),
            Raw::Toml(DeValue::Array(items)) => items
                .iter()
                .map(|item| match item.get_ref() {
                    DeValue::String(s) => Some(s.as_ref()),
                    _ => None,
                })
                .collect(),
            Raw::Toml(_) => None,
        }
    }
}

impl super::declare::Key {
    /// Sets this key of `config` from `raw`, which came from `origin`.
    pub(super) fn apply(
        &self,
        config: &mut Config,
        raw: Raw<'_>,
        origin: Origin,
    ) -> Result<(), ConfigError> {
        (self.set)(config, raw).ok_or_else(|| ConfigError::BadValue {
            key: self.dotted(),
            origin,
            expected: self.expected.to_owned(),
            found: raw.describe(),
        })
    }
}

/// Applies the configuration file at `path` to `config`, entry by entry in file order.
pub(super) fn apply_file(config: &mut Config, path: &Path) -> Result<(), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let document = DeTable::parse(&text).map_err(|mut e| {
        e.set_input(Some(&text));
        ConfigError::Syntax {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        }
    })?;
    let at = |span: std::ops::Range<usize>| Origin::File {
        path: path.to_owned(),
        line: line_of(&text, span.start),
    };
    for (top, value) in in_file_order(document.get_ref()) {
        let name = top.get_ref().as_ref();
        let section = super::SECTIONS.contains(&name);
        match value.get_ref() {
            DeValue::Table(table) if section => {
                for (key, value) in in_file_order(table) {
                    let key_name = key.get_ref().as_ref();
                    let Some(spec) = find(Some(name), key_name) else {
                        return Err(ConfigError::UnknownKey {
                            key: format!("{name}.{key_name}"),
                            origin: at(key.span()),
                            known: known_keys(Some(name)),
                        });
                    };
                    spec.apply(config, Raw::Toml(value.get_ref()), at(value.span()))?;
                }
            }
            other if section => {
                return Err(ConfigError::BadValue {
                    key: name.to_owned(),
                    origin: at(value.span()),
                    expected: format!("a table ([{name}])"),
                    found: Raw::Toml(other).describe(),
                });
            }
            other => {
                let Some(spec) = find(None, name) else {
                    return Err(ConfigError::UnknownKey {
                        key: name.to_owned(),
                        origin: at(top.span()),
                        known: known_keys(None),
                    });
                };
                spec.apply(config, Raw::Toml(other), at(value.span()))?;
            }
        }
    }
    Ok(())
}

/// A table's entries in the order they stand in the file (the parser keeps them sorted by
/// name), so the first problem reported is the first one written.
fn in_file_order<'t, 'i>(
    table: &'t DeTable<'i>,
) -> Vec<(&'t Spanned<DeString<'i>>, &'t Spanned<DeValue<'i>>)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    1 + text
        .as_bytes()
        .iter()
        .take(offset)
        .filter(|b| **b == b'\n')
        .count()
}
