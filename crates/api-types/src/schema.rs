//! The response schemas of the OpenAPI document, derived from the response types
//! (`#[derive(JsonSchema)]` in [`crate::response`], [`crate::host`] and [`crate::error`]):
//! the generator's settings, the one transform that states the wire's rules, and the few
//! schemas a Rust type cannot say by itself (an RFC 3339 timestamp string, an IP address).
//!
//! The derives read the serde attributes: a member with `skip_serializing_if` is not
//! `required`, `rename_all`/`tag` name members and variants. Descriptions are the doc
//! comments of the fields and types. `wire` then removes what the generator adds for
//! deserializing and what the document does not say: `null` (no response member is ever
//! `null`; an absent member is omitted) and the integer and float `format` names (`uint32`,
//! `double`, …), whose bounds stay as `minimum`/`maximum`; and it joins the lines of a
//! description (a doc comment wrapped in the source is one paragraph). Response objects
//! leave `additionalProperties` open (the derives never close it).

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value};

use crate::error::ErrorBody;
use crate::response::{
    AllowanceResponse, CapabilitiesResponse, CountResponse, ExposureResponse, FacetsResponse,
    HostDetailResponse, SearchResponse,
};

/// Every response schema and the error body, by name under `components.schemas`, with the
/// schemas they refer to.
pub fn response_schemas() -> Map<String, Value> {
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
        })
        .with_transform(RecursiveTransform(wire))
        .into_generator();
    generator.subschema_for::<ErrorBody>();
    generator.subschema_for::<CapabilitiesResponse>();
    generator.subschema_for::<AllowanceResponse>();
    generator.subschema_for::<SearchResponse>();
    generator.subschema_for::<CountResponse>();
    generator.subschema_for::<FacetsResponse>();
    generator.subschema_for::<ExposureResponse>();
    generator.subschema_for::<HostDetailResponse>();
    generator.take_definitions(true)
}

/// The wire's rules on one schema (applied to every subschema): no `null` alternative, no
/// numeric `format` names, descriptions on one line.
fn wire(schema: &mut Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    // `"type": ["string", "null"]` → `"type": "string"`.
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            obj.insert("type".into(), only);
        }
    }
    // `"anyOf": [{"$ref": …}, {"type": "null"}]` → the `$ref` itself.
    if let Some(Value::Array(alternatives)) = obj.get_mut("anyOf") {
        alternatives.retain(|a| a.get("type").is_none_or(|t| t != "null"));
        if let [Value::Object(only)] = alternatives.as_slice() {
            let only = only.clone();
            obj.remove("anyOf");
            obj.extend(only);
        }
    }
    // A doc comment's lines, wrapped in the source, are one paragraph.
    if let Some(Value::String(text)) = obj.get_mut("description") {
        *text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    let numeric_format = obj.get("format").and_then(Value::as_str).is_some_and(|f| {
        matches!(f, "double" | "float" | "int" | "uint")
            || f.strip_prefix("int")
                .or_else(|| f.strip_prefix("uint"))
                .is_some_and(|bits| bits.parse::<u8>().is_ok())
    });
    if numeric_format {
        obj.remove("format");
    }
}

/// An RFC 3339 timestamp in UTC with a trailing `Z` (the member's doc says what it dates).
pub(crate) fn timestamp(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "format": "date-time", "pattern": "Z$" })
}

/// An IPv4 or IPv6 address, as text.
pub(crate) fn ip_address(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "anyOf": [
            { "type": "string", "format": "ipv4" },
            { "type": "string", "format": "ipv6" }
        ]
    })
}

/// A string of one of `values`, written in place (no schema of its own).
pub(crate) fn string_enum(values: impl IntoIterator<Item = &'static str>) -> Schema {
    let values: Vec<&str> = values.into_iter().collect();
    json_schema!({ "type": "string", "enum": values })
}
