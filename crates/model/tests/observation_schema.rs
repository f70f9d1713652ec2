//! `docs/observation.schema.json` against the reader and the registry, and the format doc's
//! tables against the schema, so that the doc, the schema and the code cannot drift apart
//! silently.
//!
//! The reader is probed, not described: its members at each level come from the list it gives
//! when it rejects an unknown member; its bounds from the values it accepts and refuses.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod support;

use std::collections::BTreeSet;

use periscope_model::{CountryCode, EvidenceKind, ProtocolToken};
use serde_json::Value;
use support::*;

/// The reason the reader gives for a required member that is absent or null.
const REQUIRED: &str = "missing: this member is required";

const NO_CONTROLS: &str = r"^[^\u0000-\u001F\u007F]*$";

/// The project's `docs/` directory. Read from the environment cargo gives the running test,
/// not the one it was compiled in: a build directory shared between clones can hand this
/// binary to another checkout.
fn docs() -> std::path::PathBuf {
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    );
    crate_dir.join("../../docs")
}

fn schema() -> Value {
    let text = std::fs::read_to_string(docs().join("observation.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn format_doc() -> String {
    std::fs::read_to_string(docs().join("observation-format.md")).unwrap()
}

/// Follows a local `$ref`, and an `anyOf` of `null` and one schema (how optional members that
/// refer to a definition are written).
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").unwrap();
        return resolve(root, &root["$defs"][name]);
    }
    if let Some(branches) = node.get("anyOf").and_then(Value::as_array) {
        let not_null: Vec<&Value> = branches
            .iter()
            .filter(|b| b.get("type") != Some(&Value::from("null")))
            .collect();
        if not_null.len() == 1 && not_null[0].get("$ref").is_some() {
            return resolve(root, not_null[0]);
        }
    }
    node
}

/// The name of the definition a node refers to, through an optional `anyOf` with `null`.
fn def_name(node: &Value) -> Option<&str> {
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        return r.strip_prefix("#/$defs/");
    }
    node.get("anyOf")?
        .as_array()?
        .iter()
        .find_map(|b| b.get("$ref")?.as_str()?.strip_prefix("#/$defs/"))
}

/// One member of the schema: its dotted path and its (resolved) schema.
struct Member<'a> {
    path: String,
    schema: &'a Value,
    raw: &'a Value,
}

/// Every member below the object schema `node`, depth first; summary values as `summary.k`.
fn members<'a>(root: &'a Value, node: &'a Value, prefix: &str, out: &mut Vec<Member<'a>>) {
    let node = resolve(root, node);
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}.{name}")
        }
    };
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (name, raw) in props {
            let path = join(name);
            let schema = resolve(root, raw);
            out.push(Member {
                path: path.clone(),
                schema,
                raw,
            });
            members(root, schema, &path, out);
        }
    }
    if let Some(patterns) = node.get("patternProperties").and_then(Value::as_object) {
        for value in patterns.values() {
            out.push(Member {
                path: join("k"),
                schema: value,
                raw: value,
            });
        }
    }
}

/// The object members of each kind of line, with the base line to probe them on.
fn kinds(root: &Value) -> Vec<(&'static str, Vec<Member<'_>>)> {
    let mut service = Vec::new();
    members(root, &root["$defs"]["service"], "", &mut service);
    let mut domain = Vec::new();
    members(root, &root["$defs"]["domain"], "", &mut domain);
    vec![("service", service), ("domain", domain)]
}

/// A valid line on which `path` may be set: the base whose protocol may carry its block.
fn base_for(kind: &str, path: &str) -> &'static str {
    match (kind, path.split('.').next()) {
        ("domain", _) => DOMAIN,
        (_, Some("ssh")) => SSH,
        (_, Some("summary")) => SUMMARY,
        _ => FULL_HTTPS,
    }
}

fn is_object(schema: &Value) -> bool {
    types(schema).contains("object") && schema.get("properties").is_some()
}

fn types(schema: &Value) -> BTreeSet<String> {
    match schema.get("type") {
        Some(Value::String(t)) => [t.clone()].into(),
        Some(Value::Array(ts)) => ts.iter().map(|t| t.as_str().unwrap().to_owned()).collect(),
        _ => BTreeSet::new(),
    }
}

fn names_of(object: &Value) -> BTreeSet<String> {
    object["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

/// The members the reader accepts in the object at `path` ("" for the line), from the list it
/// gives when it rejects an unknown one.
fn reader_members(kind: &str, path: &str) -> BTreeSet<String> {
    let probe = if path.is_empty() {
        "zz_probe".to_owned()
    } else {
        format!("{path}.zz_probe")
    };
    let line = set(base_for(kind, path), &probe, "0");
    let e = read(&line).unwrap_err();
    assert_eq!(e.field, probe, "{e}");
    let list = e
        .reason
        .strip_prefix("unknown member; the members here are: ")
        .unwrap_or_else(|| panic!("{e}"));
    list.split(", ").map(str::to_owned).collect()
}

#[test]
fn member_names_match_the_reader_at_every_level() {
    let root = schema();
    let mut levels = 0;
    for (kind, members) in kinds(&root) {
        let top = resolve(&root, &root["$defs"][kind]);
        assert_eq!(names_of(top), reader_members(kind, ""), "{kind} line");
        levels += 1;
        for m in members.iter().filter(|m| is_object(m.schema)) {
            assert_eq!(
                names_of(m.schema),
                reader_members(kind, &m.path),
                "{kind} {}",
                m.path
            );
            levels += 1;
        }
    }
    // line ×2, product, vulnerabilities, tls, certificate, http, ssh, host, location, asn,
    // research, bgp, network, provider, whois.
    assert_eq!(levels, 16);
}

#[test]
fn every_object_forbids_other_members() {
    fn walk(node: &Value, path: &str) {
        match node {
            Value::Object(map) => {
                if map.contains_key("properties") || map.contains_key("patternProperties") {
                    assert_eq!(
                        map.get("additionalProperties"),
                        Some(&Value::Bool(false)),
                        "{path}"
                    );
                }
                // Conditions and their consequences constrain members; they define none.
                for (k, v) in map
                    .iter()
                    .filter(|(k, _)| !["if", "then", "not"].contains(&k.as_str()))
                {
                    walk(v, &format!("{path}/{k}"));
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, path)),
            _ => {}
        }
    }
    let root = schema();
    assert_eq!(
        root["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let variants: Vec<&str> = root["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["$ref"].as_str().unwrap())
        .collect();
    assert_eq!(variants, ["#/$defs/service", "#/$defs/domain"]);
    walk(&root, "");
}

#[test]
fn required_members_match_the_reader() {
    let root = schema();
    for (kind, members) in kinds(&root) {
        let mut objects: Vec<(String, &Value)> = vec![(String::new(), &root["$defs"][kind])];
        objects.extend(
            members
                .iter()
                .filter(|m| is_object(m.schema))
                .map(|m| (m.path.clone(), m.schema)),
        );
        for (path, object) in objects {
            let required: BTreeSet<String> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().map(|n| n.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default();
            for name in names_of(object) {
                let member = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                let base = base_for(kind, &member);
                if required.contains(&name) {
                    let e = read(&remove(base, &member)).unwrap_err();
                    assert_eq!(
                        (e.field.as_str(), e.reason.as_str()),
                        (member.as_str(), REQUIRED),
                        "{e}"
                    );
                } else {
                    // Optional: null means absent (the same result, whatever it is), and
                    // absence alone is no error (latitude may still need longitude).
                    let absent = read(&remove(base, &member));
                    assert_eq!(read(&set(base, &member, "null")), absent, "{kind} {member}");
                    if let Err(e) = absent {
                        assert!(!(e.field == member && e.reason == REQUIRED), "{e}");
                    }
                }
            }
        }
    }
}

/// Free-text members: a string with `maxLength` and no other rule than (maybe) no controls.
fn free_text<'a>(members: &'a [Member<'a>]) -> impl Iterator<Item = (&'a Member<'a>, u64)> {
    members.iter().filter_map(|m| {
        let s = m.schema;
        let plain = types(s).contains("string")
            && def_name(m.raw).is_none()
            && s.get("format").is_none()
            && s.get("enum").is_none()
            && s.get("pattern").is_none_or(|p| p == NO_CONTROLS);
        Some((m, s.get("maxLength")?.as_u64()?)).filter(|_| plain)
    })
}

#[test]
fn free_text_bounds_and_control_characters_match_the_reader() {
    let root = schema();
    let mut checked = 0;
    for (kind, members) in kinds(&root) {
        for (m, max) in free_text(&members) {
            let base = base_for(kind, &m.path);
            let at = |text: &str| read(&set_str(base, &m.path, text));
            let longest = chars('a', max as usize);
            assert!(
                at(&longest).is_ok(),
                "{} of {max}: {:?}",
                m.path,
                at(&longest)
            );
            let e = at(&format!("{longest}a")).unwrap_err();
            assert_eq!(e.field, m.path, "{e}");
            assert!(e.reason.contains(&format!("the limit is {max}")), "{e}");
            let control = at("a\u{1}b");
            if m.schema.get("pattern").is_some() {
                let e = control.unwrap_err();
                assert_eq!(
                    (e.field.as_str(), e.reason.contains("control")),
                    (m.path.as_str(), true),
                    "{e}"
                );
            } else {
                assert!(control.is_ok(), "{}: {control:?}", m.path);
            }
            checked += 1;
        }
    }
    // error; product 2; tls 2; certificate 4; http 2; ssh 5; a summary value; location 5;
    // the organisation of 3 ASN attributions; provider 3; whois 4.
    assert_eq!(checked, 32);
}

#[test]
fn numeric_bounds_match_the_reader() {
    let root = schema();
    let mut checked = 0;
    for (kind, members) in kinds(&root) {
        for m in &members {
            let (Some(min), Some(max)) = (m.schema.get("minimum"), m.schema.get("maximum")) else {
                continue;
            };
            let (min, max) = (min.as_i64().unwrap(), max.as_i64().unwrap());
            let base = base_for(kind, &m.path);
            for inside in [min, max] {
                let r = read(&set(base, &m.path, &inside.to_string()));
                assert!(r.is_ok(), "{} = {inside}: {r:?}", m.path);
            }
            for outside in [min - 1, max + 1] {
                let e = read(&set(base, &m.path, &outside.to_string())).unwrap_err();
                assert_eq!(e.field, m.path, "{} = {outside}: {e}", m.path);
            }
            if types(m.schema).contains("integer") {
                let e = read(&set(base, &m.path, &format!("{min}.5"))).unwrap_err();
                assert_eq!(
                    (e.field.as_str(), e.reason.contains("not an integer")),
                    (m.path.as_str(), true),
                    "{e}"
                );
            }
            checked += 1;
        }
    }
    // port, max_cvss, status_code, latitude, longitude, accuracy_radius_km, asn ×3.
    assert_eq!(checked, 9);
}

/// `n` distinct valid items of the definition `def`.
fn items(def: &str, n: usize) -> String {
    let items: Vec<String> = (0..n)
        .map(|i| match def {
            "cveId" => format!("\"CVE-2020-{:05}\"", 10_000 + i),
            "dnsName" | "certificateName" => format!("\"h{i}.example\""),
            "ip" => format!("\"240.0.{}.{}\"", i / 256, i % 256),
            other => panic!("no items for {other}"),
        })
        .collect();
    format!("[{}]", items.join(","))
}

#[test]
fn array_bounds_match_the_reader() {
    let root = schema();
    let mut checked = 0;
    for (kind, members) in kinds(&root) {
        for m in members.iter().filter(|m| types(m.schema).contains("array")) {
            let def = def_name(&m.schema["items"]).unwrap();
            let base = base_for(kind, &m.path);
            let max = m.schema["maxItems"].as_u64().unwrap() as usize;
            let min = m
                .schema
                .get("minItems")
                .map_or(0, |v| v.as_u64().unwrap() as usize);
            for ok in [min, max] {
                let r = read(&set(base, &m.path, &items(def, ok)));
                assert!(r.is_ok(), "{} of {ok}: {r:?}", m.path);
            }
            let mut outside = vec![max + 1];
            if min > 0 {
                outside.push(min - 1);
            }
            for n in outside {
                let e = read(&set(base, &m.path, &items(def, n))).unwrap_err();
                assert_eq!(e.field, m.path, "{} of {n}: {e}", m.path);
            }
            if m.schema.get("uniqueItems") == Some(&Value::Bool(true)) {
                let twice = items(def, 1).replace(']', &format!(",{}", &items(def, 1)[1..]));
                let e = read(&set(base, &m.path, &twice)).unwrap_err();
                assert_eq!(e.field, format!("{}[1]", m.path), "{e}");
            }
            checked += 1;
        }
    }
    // cves, subject_alt_names, reverse_dns, addresses.
    assert_eq!(checked, 4);
}

#[test]
fn summary_bounds_match_the_reader() {
    let root = schema();
    let summary = &root["$defs"]["service"]["properties"]["summary"];
    let max = summary["maxProperties"].as_u64().unwrap() as usize;
    let (pattern, _) = summary["patternProperties"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(pattern, "^[a-z0-9_]{1,64}$");
    let object = |n: usize| {
        let members: Vec<String> = (0..n).map(|i| format!("\"k{i}\":\"v\"")).collect();
        format!("{{{}}}", members.join(","))
    };
    assert!(read(&set(SUMMARY, "summary", &object(max))).is_ok());
    assert_eq!(
        read(&set(SUMMARY, "summary", &object(max + 1)))
            .unwrap_err()
            .field,
        "summary"
    );
    for (key, ok) in [
        ("a_0", true),
        (&*chars('z', 64), true),
        (&*chars('z', 65), false),
        ("", false),
        ("A", false),
        ("a-b", false),
    ] {
        let line = set(
            SUMMARY,
            "summary",
            &format!("{{{}:\"v\"}}", Value::from(key)),
        );
        assert_eq!(read(&line).is_ok(), ok, "{key:?}");
    }
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn enumerations_match_the_code() {
    let root = schema();
    let service = &root["$defs"]["service"]["properties"];
    let tokens: BTreeSet<String> = ProtocolToken::all()
        .map(|t| t.as_str().to_owned())
        .collect();
    assert_eq!(strings(&service["protocol"]["enum"]), tokens);
    let countries: BTreeSet<String> = CountryCode::all().map(|c| c.as_str().to_owned()).collect();
    assert_eq!(strings(&root["$defs"]["countryCode"]["enum"]), countries);
    for (member, values) in [
        ("transport", &service["transport"]),
        ("status", &service["status"]),
    ] {
        for value in strings(&values["enum"]) {
            // "failed" with the minimal line: it carries nothing captured.
            assert!(
                read(&set_str(MINIMAL, member, &value)).is_ok(),
                "{member} {value}"
            );
            let e = read(&set_str(MINIMAL, member, &value.to_uppercase())).unwrap_err();
            assert_eq!(e.field, member);
        }
    }
    assert_eq!(
        root["$defs"]["service"]["properties"]["kind"]["const"],
        "service"
    );
    assert_eq!(
        root["$defs"]["domain"]["properties"]["kind"]["const"],
        "domain"
    );
}

/// The tokens named by the `allOf` rule whose `then` empties `block`, and whether the rule's
/// `if` holds for the tokens in its list (`enum`) or for those outside it (`not`).
fn carrier_rule(root: &Value, block: &str) -> (BTreeSet<String>, bool) {
    let rules = root["$defs"]["service"]["allOf"].as_array().unwrap();
    let rule = rules
        .iter()
        .find(|r| {
            r["if"]["properties"].get("protocol").is_some()
                && r["then"]["properties"].get(block).is_some()
        })
        .unwrap_or_else(|| panic!("no rule for {block}"));
    let protocol = &rule["if"]["properties"]["protocol"];
    match protocol.get("not") {
        Some(inner) => (listed(inner), false),
        None => (listed(protocol), true),
    }
}

fn listed(node: &Value) -> BTreeSet<String> {
    match node.get("const") {
        Some(c) => [c.as_str().unwrap().to_owned()].into(),
        None => strings(&node["enum"]),
    }
}

#[test]
fn which_protocols_carry_which_block_matches_the_registry_and_the_reader() {
    let root = schema();
    let blocks = [
        ("tls", "{}"),
        ("http", r#"{"complete":true}"#),
        ("ssh", "{}"),
        ("summary", "{}"),
    ];
    for (block, value) in blocks {
        let (list, list_refuses) = carrier_rule(&root, block);
        for token in ProtocolToken::all() {
            let carries_by_schema = list.contains(token.as_str()) != list_refuses;
            let entry = token.entry();
            let carries_by_registry = match block {
                "tls" => entry.tls,
                "http" => entry.evidence_kind == EvidenceKind::Http,
                "ssh" => entry.evidence_kind == EvidenceKind::Ssh,
                _ => entry.evidence_kind == EvidenceKind::Summary,
            };
            assert_eq!(carries_by_schema, carries_by_registry, "{block} on {token}");
            let line = set(&set_str(MINIMAL, "protocol", token.as_str()), block, value);
            let carries_by_reader = read(&line).is_ok();
            assert_eq!(
                carries_by_reader,
                carries_by_registry,
                "{block} on {token}: {:?}",
                read(&line)
            );
        }
    }
    let failed = root["$defs"]["service"]["allOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["if"]["properties"]["status"]["const"] == "failed")
        .unwrap();
    let emptied: BTreeSet<String> = failed["then"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let refused_by_reader: BTreeSet<String> = names_of(&root["$defs"]["service"])
        .into_iter()
        .filter(|name| {
            let line = set_str(FULL_HTTPS, "status", "failed");
            let line = [
                "product",
                "vulnerabilities",
                "tls",
                "http",
                "ssh",
                "summary",
            ]
            .iter()
            .filter(|b| *b != name)
            .fold(line, |l, b| remove(&l, b));
            // ssh and summary are not on the https base: put them there.
            let line = match name.as_str() {
                "ssh" => set(&line, "ssh", "{}"),
                "summary" => set(&line, "summary", "{}"),
                _ => line,
            };
            read(&line).is_err_and(|e| e.field == *name && e.reason.contains("failed"))
        })
        .collect();
    assert_eq!(emptied, refused_by_reader);
}

/// The first-column member names of the tables under each heading of the format doc.
fn doc_table_members(doc: &str) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in doc.lines() {
        if line.starts_with('#') {
            sections.push((line.trim_start_matches('#').trim().to_owned(), Vec::new()));
        } else if let Some(rest) = line.strip_prefix("| `") {
            let name = rest.split('`').next().unwrap().to_owned();
            if let Some((_, names)) = sections.last_mut() {
                names.push(name);
            }
        }
    }
    sections
}

#[test]
fn the_format_doc_names_the_members_of_the_schema() {
    let root = schema();
    let sections = doc_table_members(&format_doc());
    let section = |title: &str| -> Vec<String> {
        sections
            .iter()
            .find(|(t, _)| t == title)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| panic!("no section {title}"))
    };
    // Service: the identity table, the captured-data table and the host table.
    let mut service: BTreeSet<String> = BTreeSet::new();
    let mut host: BTreeSet<String> = BTreeSet::new();
    for title in [
        "Service identity and scan outcome",
        "Captured data",
        "Host enrichment: `host`",
    ] {
        for name in section(title) {
            let mut parts = name.split('.');
            let first = parts.next().unwrap().to_owned();
            if first == "host" {
                host.insert(parts.next().unwrap().to_owned());
            }
            service.insert(first);
        }
    }
    assert_eq!(service, names_of(&root["$defs"]["service"]));
    assert_eq!(
        host,
        names_of(resolve(
            &root,
            &root["$defs"]["service"]["properties"]["host"]
        ))
    );
    let domain: BTreeSet<String> = section("`kind: \"domain\"`").into_iter().collect();
    assert_eq!(domain, names_of(&root["$defs"]["domain"]));
}

#[test]
fn the_format_doc_lists_the_registry_tls_tokens() {
    let doc = format_doc();
    // A paragraph over several lines, ending at the first full stop.
    let marker = "**TLS-capable tokens:**";
    let after = &doc[doc.find(marker).unwrap() + marker.len()..];
    let listed: BTreeSet<&str> = after[..after.find('.').unwrap()]
        .split_whitespace()
        .collect();
    let registry: BTreeSet<&str> = ProtocolToken::all()
        .filter(|t| t.entry().tls)
        .map(|t| t.as_str())
        .collect();
    assert_eq!(listed, registry);
    let count = format!("{} entries", ProtocolToken::all().count());
    assert!(doc.contains(&count), "the doc should say {count}");
}
