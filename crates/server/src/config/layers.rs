//! Where values come from and how they reach the derived `Deserialize` of
//! [`Config`]: [`Origin`] (a file line or an environment variable),
//! [`ConfigError`], and the deserializer that hands each key its value from the file and the
//! environment.
//!
//! serde asks a struct's deserializer for the struct with the names of its fields; this one
//! answers with the fields that have a value: the file's entries in the order they were
//! written (an unknown key is an error at its place, with its line and the keys known
//! there), then the fields only the environment sets (`PERISCOPE_` + section + field, in
//! upper case; a variable set to the empty string is unset). A field nothing sets is left
//! to the struct's `#[serde(default)]`. Each value is read through the field's
//! `deserialize_with` function (`parse`), and a value it refuses becomes
//! [`ConfigError::BadValue`] with the key, the origin, the expectation and what was found.
//! Which fields are sections is learnt once from the derived code itself ([`shape`]), so no
//! list of keys is kept beside the structs.

use std::cell::Cell;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::Deserialize as _;
use serde::de::value::{SeqDeserializer, StrDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

use super::Config;

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
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => {
                write!(f, "the configuration file {} (line {line})", path.display())
            }
            Origin::Env(name) => write!(f, "the environment variable {name}"),
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
    /// Settings that cannot be used together, flags that cannot be applied, or a file they
    /// name that cannot be used.
    #[error("{0}")]
    Invalid(String),
}

/// The configuration file, parsed.
pub(super) struct File<'t> {
    path: &'t Path,
    text: &'t str,
    document: DeTable<'t>,
}

impl<'t> File<'t> {
    /// Reads the file at `path` into `text`.
    pub(super) fn read(path: &Path) -> Result<String, ConfigError> {
        std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })
    }

    /// Parses `text`, read from `path`.
    pub(super) fn parse(path: &'t Path, text: &'t str) -> Result<Self, ConfigError> {
        let document = DeTable::parse(text).map_err(|mut e| {
            e.set_input(Some(text));
            ConfigError::Syntax {
                path: path.to_owned(),
                message: e.to_string().trim_end().to_owned(),
            }
        })?;
        Ok(File {
            path,
            text,
            document: document.into_inner(),
        })
    }

    /// The origin of what stands at `span`.
    fn at(&self, span: std::ops::Range<usize>) -> Origin {
        let line = 1 + self.text.as_bytes()[..span.start.min(self.text.len())]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        Origin::File {
            path: self.path.to_owned(),
            line,
        }
    }
}

/// The environment: the value of a variable, if set.
pub(super) type Env<'e> = &'e dyn Fn(&str) -> Option<String>;

/// What one reading of the configuration takes values from.
#[derive(Clone, Copy)]
pub(super) struct Sources<'s> {
    /// The configuration file, if it is read.
    pub(super) file: Option<&'s File<'s>>,
    /// The environment, if it is read (a variable set to the empty string already unset).
    pub(super) env: Option<Env<'s>>,
}

/// Reads `Config` from `sources`.
pub(super) fn read(sources: Sources<'_>) -> Result<Config, ConfigError> {
    let top = Node {
        sources,
        section: None,
        table: sources.file.map(|file| &file.document),
    };
    Config::deserialize(top).map_err(|e| match e {
        Error::Config(e) => e,
        other => ConfigError::Invalid(other.to_string()),
    })
}

/// The dotted key of `field` in `section`.
pub(super) fn dotted(section: Option<&str>, field: &str) -> String {
    match section {
        Some(section) => format!("{section}.{field}"),
        None => field.to_owned(),
    }
}

/// The environment variable of the dotted `key`: `PERISCOPE_SECTION_FIELD`.
pub(super) fn env_name(key: &str) -> String {
    format!(
        "{}{}",
        super::ENV_PREFIX,
        key.replace('.', "_").to_ascii_uppercase()
    )
}

/// What went wrong while reading.
#[derive(Debug)]
enum Error {
    /// A whole error, where the key and the origin are known.
    Config(ConfigError),
    /// A value a field's parser refused, and what the field expects (the key, the origin and
    /// what was found are added where the value was handed over).
    Refused(String),
    /// Anything else serde says (nothing the derived structs say with these sources).
    Other(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(e) => e.fmt(f),
            Error::Refused(expected) => write!(f, "expected {expected}"),
            Error::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Error::Other(message.to_string())
    }

    fn invalid_value(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Error::Refused(expected.to_string())
    }
}

/// The fields of a struct and which of them are sections, as the derived code asks for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shape {
    /// The fields, in declaration order, each with the fields of its section if it is one.
    pub(super) fields: Vec<(&'static str, Option<&'static [&'static str]>)>,
}

impl Shape {
    /// Whether the top-level field `name` is a section.
    fn is_section(&self, name: &str) -> bool {
        self.fields
            .iter()
            .any(|(field, inner)| *field == name && inner.is_some())
    }
}

/// The shape of [`Config`]: its fields, and which are sections with what fields.
pub(super) fn shape() -> &'static Shape {
    static SHAPE: LazyLock<Shape> = LazyLock::new(|| {
        let top = probe(None).unwrap_or_default();
        Shape {
            fields: top
                .iter()
                .map(|field| (*field, probe(Some(field))))
                .collect(),
        }
    });
    &SHAPE
}

/// The fields of the struct `Config` has at the top level (`field` `None`) or in `field`,
/// `None` when that field is not a struct: asks the derived `Deserialize` with a
/// deserializer that hands over only that field and stops at its value.
fn probe(field: Option<&'static str>) -> Option<&'static [&'static str]> {
    let found = Cell::new(None);
    // The probe always ends in an error: it stops where it has learnt what it asked.
    let _ = Config::deserialize(Probe {
        field,
        found: &found,
    });
    found.get()
}

/// The deserializer of [`probe`].
struct Probe<'p> {
    /// The field to hand over; `None`: this is the struct asked about.
    field: Option<&'static str>,
    found: &'p Cell<Option<&'static [&'static str]>>,
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(Error::Other("probed".to_owned()))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.field {
            None => {
                self.found.set(Some(fields));
                Err(Error::Other("probed".to_owned()))
            }
            Some(field) => visitor.visit_map(ProbeField {
                field: Some(field),
                found: self.found,
            }),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The one field a [`Probe`] hands over.
struct ProbeField<'p> {
    field: Option<&'static str>,
    found: &'p Cell<Option<&'static [&'static str]>>,
}

impl<'de> MapAccess<'de> for ProbeField<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.field.take() {
            Some(field) => seed.deserialize(StrDeserializer::new(field)).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        seed.deserialize(Probe {
            field: None,
            found: self.found,
        })
    }
}

/// The deserializer of the top level or of a section.
struct Node<'s> {
    sources: Sources<'s>,
    /// The section, `None` at the top level.
    section: Option<&'static str>,
    /// The file's table here (the document, or the section's table), if the file has one.
    table: Option<&'s DeTable<'s>>,
}

/// A field with a value, as a struct's deserializer hands it over.
enum Entry<'s> {
    /// A key and its value.
    Value {
        field: &'static str,
        value: Value<'s>,
        origin: Origin,
    },
    /// A section, with the file's table of it if there is one.
    Section {
        field: &'static str,
        table: Option<&'s DeTable<'s>>,
    },
    /// Something that stops the reading here.
    Refused(ConfigError),
}

impl<'s> Node<'s> {
    /// The fields with a value, in the order the file has them, then the rest in declaration
    /// order; the first problem of the file stops the list there.
    fn entries(&self, fields: &'static [&'static str]) -> Vec<Entry<'s>> {
        let sections = |name: &str| self.section.is_none() && shape().is_section(name);
        let env = |field: &str| {
            let name = env_name(&dotted(self.section, field));
            let value = (self.sources.env?)(&name)?;
            Some((value, Origin::Env(name)))
        };
        let mut entries = Vec::new();
        let mut written = Vec::new();
        if let (Some(file), Some(table)) = (self.sources.file, self.table) {
            for (key, value) in in_file_order(table) {
                let name = key.get_ref().as_ref();
                let Some(field) = fields.iter().copied().find(|f| *f == name) else {
                    entries.push(Entry::Refused(ConfigError::UnknownKey {
                        key: dotted(self.section, name),
                        origin: file.at(key.span()),
                        known: self.known(fields),
                    }));
                    return entries;
                };
                written.push(field);
                let entry = match value.get_ref() {
                    DeValue::Table(table) if sections(field) => Entry::Section {
                        field,
                        table: Some(table),
                    },
                    other if sections(field) => Entry::Refused(ConfigError::BadValue {
                        key: field.to_owned(),
                        origin: file.at(value.span()),
                        expected: format!("a table ([{field}])"),
                        found: describe_toml(other),
                    }),
                    other => match env(field) {
                        Some((text, origin)) => Entry::Value {
                            field,
                            value: Value::Text(text),
                            origin,
                        },
                        None => Entry::Value {
                            field,
                            value: Value::Toml(other),
                            origin: file.at(value.span()),
                        },
                    },
                };
                let refused = matches!(entry, Entry::Refused(_));
                entries.push(entry);
                if refused {
                    return entries;
                }
            }
        }
        for field in fields.iter().copied().filter(|f| !written.contains(f)) {
            if sections(field) {
                entries.push(Entry::Section { field, table: None });
            } else if let Some((text, origin)) = env(field) {
                entries.push(Entry::Value {
                    field,
                    value: Value::Text(text),
                    origin,
                });
            }
        }
        entries
    }

    /// The keys accepted here (at the top level: its keys and the sections), for an error.
    fn known(&self, fields: &[&str]) -> String {
        let mut keys = Vec::new();
        let mut sections = Vec::new();
        for field in fields {
            if self.section.is_none() && shape().is_section(field) {
                sections.push(format!("[{field}]"));
            } else {
                keys.push(dotted(self.section, field));
            }
        }
        keys.extend(sections);
        keys.join(", ")
    }
}

impl<'de, 's> Deserializer<'de> for Node<'s> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(Error::Other(
            "the configuration is read into structs only".to_owned(),
        ))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let entries = self.entries(fields);
        visitor.visit_map(Entries {
            sources: self.sources,
            section: self.section,
            entries: entries.into_iter(),
            pending: None,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// A struct's fields with values, handed over one by one.
struct Entries<'s> {
    sources: Sources<'s>,
    section: Option<&'static str>,
    entries: std::vec::IntoIter<Entry<'s>>,
    /// The entry whose key was handed over and whose value is next.
    pending: Option<Entry<'s>>,
}

impl<'de, 's> MapAccess<'de> for Entries<'s> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        let field = match entry {
            Entry::Refused(e) => return Err(Error::Config(e)),
            Entry::Value { field, .. } | Entry::Section { field, .. } => field,
        };
        self.pending = Some(entry);
        seed.deserialize(StrDeserializer::new(field)).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        match self.pending.take() {
            Some(Entry::Value {
                field,
                value,
                origin,
            }) => seed.deserialize(value.deserializer()).map_err(|e| match e {
                Error::Refused(expected) => Error::Config(ConfigError::BadValue {
                    key: dotted(self.section, field),
                    origin,
                    expected,
                    found: value.describe(),
                }),
                other => other,
            }),
            Some(Entry::Section { field, table }) => seed.deserialize(Node {
                sources: self.sources,
                section: Some(field),
                table,
            }),
            // `next_key_seed` returns a refusal instead of keeping it.
            Some(Entry::Refused(_)) | None => {
                Err(Error::Other("a value was asked before its key".to_owned()))
            }
        }
    }
}

/// A key's value: the text of a variable, or a TOML value of the file.
enum Value<'s> {
    Text(String),
    Toml(&'s DeValue<'s>),
}

impl Value<'_> {
    /// A deserializer of the value.
    fn deserializer(&self) -> Leaf<'_> {
        match self {
            Value::Text(text) => Leaf::Text(text),
            Value::Toml(value) => Leaf::Toml(value),
        }
    }

    /// The value for an error message.
    fn describe(&self) -> String {
        match self {
            Value::Text(text) => format!("{text:?}"),
            Value::Toml(value) => describe_toml(value),
        }
    }
}

/// A TOML value for an error message.
fn describe_toml(value: &DeValue<'_>) -> String {
    match value {
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
    }
}

/// The deserializer of one value. The text of a variable is handed over as bytes, a TOML
/// string as a string, so a parser can tell `"5"` written in the file (a string) from `5` in
/// a variable (a number written out); a value no key takes (a float, a boolean, a date, a
/// table) as a unit.
#[derive(Clone, Copy)]
enum Leaf<'v> {
    Text(&'v str),
    Toml(&'v DeValue<'v>),
}

impl<'de> Deserializer<'de> for Leaf<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Leaf::Text(text) => visitor.visit_bytes(text.as_bytes()),
            Leaf::Toml(DeValue::String(s)) => visitor.visit_str(s.as_ref()),
            Leaf::Toml(DeValue::Integer(i)) => match i128::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) => visitor.visit_i128(n),
                Err(_) => visitor.visit_unit(),
            },
            Leaf::Toml(DeValue::Array(items)) => visitor.visit_seq(SeqDeserializer::new(
                items.iter().map(|item| Leaf::Toml(item.get_ref())),
            )),
            Leaf::Toml(_) => visitor.visit_unit(),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de, 'v> IntoDeserializer<'de, Error> for Leaf<'v> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
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
