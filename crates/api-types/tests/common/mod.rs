//! Shared by the integration tests: a synthetic dataset in a reference index, and a small
//! JSON Schema validator for the subset of keywords the OpenAPI document uses (it refuses a
//! keyword or pattern it does not know, so it never silently passes what it cannot check).

#![allow(dead_code)] // Each test binary uses a part.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use periscope_index::{IndexConfig, ReferenceIndex};
use periscope_model::Timestamp;
use periscope_model::observation::ObservationReader;
use periscope_synth::{SynthConfig, write_dataset};
use serde_json::Value;

/// The instant the dataset describes and the searches run at.
pub fn now() -> Timestamp {
    Timestamp::parse("2026-11-20T00:00:00Z").unwrap()
}

/// A reference index over a small synthetic internet (built once per test binary).
pub fn index() -> &'static ReferenceIndex {
    static INDEX: OnceLock<ReferenceIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        let cfg = SynthConfig {
            hosts: 600,
            seed: 7,
            as_of: now(),
        };
        let mut out = Vec::new();
        write_dataset(&cfg, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut reader = ObservationReader::new(now());
        let mut index = ReferenceIndex::new(IndexConfig::default());
        for line in text.lines() {
            if let Some(obs) = reader.read_line(line).unwrap() {
                index.apply(&obs);
            }
        }
        index
    })
}

/// Validates JSON values against schemas of an OpenAPI document.
pub struct Validator<'a> {
    doc: &'a Value,
    /// Check only types, presence and bounds: skip `enum`, `pattern`, `format` and `anyOf`,
    /// the value checks the service layer makes rather than the body decoder.
    structural: bool,
}

impl<'a> Validator<'a> {
    /// A full validator.
    pub fn new(doc: &'a Value) -> Self {
        Self {
            doc,
            structural: false,
        }
    }

    /// A validator of types, presence and bounds only.
    pub fn structural(doc: &'a Value) -> Self {
        Self {
            doc,
            structural: true,
        }
    }

    /// The schema `#/components/schemas/<name>`.
    pub fn schema(&self, name: &str) -> &'a Value {
        let s = &self.doc["components"]["schemas"][name];
        assert!(s.is_object(), "no schema {name}");
        s
    }

    /// Every error, empty when `value` is valid.
    pub fn errors(&self, schema: &Value, value: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        self.check(schema, value, "$", &mut errors);
        errors
    }

    /// Validates against the named component schema; panics with every error.
    pub fn assert_valid(&self, name: &str, value: &Value) {
        let errors = self.errors(self.schema(name), value);
        assert!(
            errors.is_empty(),
            "{name} does not match its schema:\n{}\n{}",
            errors.join("\n"),
            serde_json::to_string_pretty(value).unwrap()
        );
    }

    fn resolve(&self, reference: &str) -> &'a Value {
        let pointer = reference
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("non-local $ref {reference}"));
        self.doc
            .pointer(pointer)
            .unwrap_or_else(|| panic!("dangling $ref {reference}"))
    }

    fn check(&self, schema: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
        let Value::Object(s) = schema else {
            panic!("the schema at {path} is not an object: {schema}");
        };
        let mut fail = |msg: String| errs.push(format!("{path}: {msg}"));
        let mut nested: Vec<String> = Vec::new();
        for (keyword, kw) in s {
            match keyword.as_str() {
                "$ref" => self.check(self.resolve(kw.as_str().unwrap()), v, path, &mut nested),
                "type" => {
                    let types: Vec<&str> = match kw {
                        Value::String(t) => vec![t.as_str()],
                        Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
                        _ => panic!("bad type at {path}"),
                    };
                    if !types.iter().any(|t| has_type(v, t)) {
                        fail(format!("expected {types:?}, got {v}"));
                    }
                }
                "properties" => {
                    if let Value::Object(o) = v {
                        for (name, sub) in kw.as_object().unwrap() {
                            if let Some(x) = o.get(name) {
                                self.check(sub, x, &format!("{path}.{name}"), &mut nested);
                            }
                        }
                    }
                }
                "required" => {
                    if let Value::Object(o) = v {
                        for name in kw.as_array().unwrap() {
                            if !o.contains_key(name.as_str().unwrap()) {
                                fail(format!("missing required member {name}"));
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    if let Value::Object(o) = v {
                        let declared = s.get("properties").and_then(Value::as_object);
                        for (name, x) in o {
                            if declared.is_some_and(|d| d.contains_key(name)) {
                                continue;
                            }
                            match kw {
                                Value::Bool(false) => fail(format!("undeclared member {name:?}")),
                                Value::Bool(true) => {}
                                sub => self.check(sub, x, &format!("{path}.{name}"), &mut nested),
                            }
                        }
                    }
                }
                "items" => {
                    if let Value::Array(a) = v {
                        for (i, x) in a.iter().enumerate() {
                            self.check(kw, x, &format!("{path}[{i}]"), &mut nested);
                        }
                    }
                }
                "enum" => {
                    if !self.structural && !kw.as_array().unwrap().contains(v) {
                        fail(format!("{v} is not one of {kw}"));
                    }
                }
                "const" => {
                    if v != kw {
                        fail(format!("{v} is not {kw}"));
                    }
                }
                "minimum" | "maximum" => {
                    if let Some(x) = v.as_f64() {
                        let bound = kw.as_f64().unwrap();
                        let ok = if keyword == "minimum" {
                            x >= bound
                        } else {
                            x <= bound
                        };
                        if !ok {
                            fail(format!("{v} is beyond the {keyword} {bound}"));
                        }
                    }
                }
                "minLength" | "maxLength" => {
                    if let Value::String(text) = v {
                        let n = text.chars().count() as u64;
                        let bound = kw.as_u64().unwrap();
                        if (keyword == "minLength" && n < bound)
                            || (keyword == "maxLength" && n > bound)
                        {
                            fail(format!("{n} characters is beyond the {keyword} {bound}"));
                        }
                    }
                }
                "minItems" | "maxItems" => {
                    if let Value::Array(a) = v {
                        let n = a.len() as u64;
                        let bound = kw.as_u64().unwrap();
                        if (keyword == "minItems" && n < bound)
                            || (keyword == "maxItems" && n > bound)
                        {
                            fail(format!("{n} items is beyond the {keyword} {bound}"));
                        }
                    }
                }
                "maxProperties" => {
                    if let Value::Object(o) = v
                        && o.len() as u64 > kw.as_u64().unwrap()
                    {
                        fail(format!("more than {kw} members"));
                    }
                }
                "uniqueItems" => {
                    if let Value::Array(a) = v
                        && kw == &Value::Bool(true)
                        && a.iter().enumerate().any(|(i, x)| a[..i].contains(x))
                    {
                        fail("items are not unique".into());
                    }
                }
                "anyOf" | "oneOf" => {
                    if keyword == "anyOf" && self.structural {
                        continue;
                    }
                    let passing = kw
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|sub| self.errors_at(sub, v, path).is_empty())
                        .count();
                    let ok = if keyword == "anyOf" {
                        passing >= 1
                    } else {
                        passing == 1
                    };
                    if !ok {
                        fail(format!("{passing} alternatives of {keyword} match {v}"));
                    }
                }
                "format" => {
                    if let (false, Value::String(text)) = (self.structural, v)
                        && !format_ok(kw.as_str().unwrap(), text)
                    {
                        fail(format!("{text:?} is not a {kw}"));
                    }
                }
                "pattern" => {
                    if let (false, Value::String(text)) = (self.structural, v)
                        && !pattern_ok(kw.as_str().unwrap(), text)
                    {
                        fail(format!("{text:?} does not match {kw}"));
                    }
                }
                "description" | "default" | "discriminator" | "summary" | "examples" => {}
                other => panic!("the test validator does not know the keyword {other:?}"),
            }
        }
        errs.extend(nested);
    }

    fn errors_at(&self, schema: &Value, v: &Value, path: &str) -> Vec<String> {
        let mut errs = Vec::new();
        self.check(schema, v, path, &mut errs);
        errs
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_u64() || v.is_i64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => panic!("unknown type {other}"),
    }
}

fn format_ok(format: &str, text: &str) -> bool {
    match format {
        "date-time" => Timestamp::parse(text).is_ok(),
        "ipv4" => text.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<Ipv6Addr>().is_ok(),
        other => panic!("the test validator does not know the format {other:?}"),
    }
}

fn pattern_ok(pattern: &str, text: &str) -> bool {
    let all = |s: &str, f: fn(char) -> bool| !s.is_empty() && s.chars().all(f);
    let hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    match pattern {
        "Z$" => text.ends_with('Z'),
        "^[0-9]+$" => all(text, |c| c.is_ascii_digit()),
        "^[A-Z]{2}$" => text.len() == 2 && all(text, |c| c.is_ascii_uppercase()),
        "^[0-9a-f]{64}$" => text.len() == 64 && all(text, hex),
        "^[0-9a-f]{32}$" => text.len() == 32 && all(text, hex),
        "^sc1_[A-Za-z0-9_-]{32}$" => text.strip_prefix("sc1_").is_some_and(|rest| {
            rest.len() == 32 && all(rest, |c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }),
        "^[0-9]+/[0-9]+/[0-9]+$" => {
            let parts: Vec<&str> = text.split('/').collect();
            parts.len() == 3 && parts.iter().all(|p| all(p, |c| c.is_ascii_digit()))
        }
        other => panic!("the test validator does not know the pattern {other:?}"),
    }
}

/// Every JSON `null` in a value, by path.
pub fn nulls(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Null => out.push(path.to_owned()),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                nulls(x, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                nulls(x, &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}
