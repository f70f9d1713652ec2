//! CPE 2.3 identities in the formatted-string binding (`cpe:2.3:part:vendor:product:…`).

use std::fmt;

use crate::error::InvalidValue;

/// One complete CPE 2.3 formatted string: `cpe:2.3:` followed by exactly eleven components
/// (part, vendor, product, version, update, edition, language, sw_edition, target_sw,
/// target_hw, other).
///
/// Rules beyond the NISTIR 7695 grammar, so that a value names one identity:
/// - part is `a`, `o` or `h`; vendor and product are values, not `*` or `-`;
/// - a component is `*` (any), `-` (not applicable) or a value of letters, digits, `_`, `-`,
///   `.` and backslash-escaped punctuation; wildcards inside a value (`1.*`, `?`) are refused;
/// - matching is case-insensitive, so the canonical form is lowercase.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cpe23(Box<str>);

/// The number of colon-separated fields, `cpe` and `2.3` included.
const FIELDS: usize = 13;

/// The components after `cpe:2.3:`.
const COMPONENTS: usize = FIELDS - 2;

impl Cpe23 {
    /// Parses and lowercases a formatted string.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let err = |why: String| InvalidValue::new("CPE", why);
        if s.starts_with("cpe:/") {
            return Err(err(
                "the URI binding (cpe:/…) is CPE 2.2; give the 2.3 form cpe:2.3:…".into(),
            ));
        }
        let lower = s.to_ascii_lowercase();
        let Some(rest) = lower.strip_prefix("cpe:2.3:") else {
            return Err(err("must start with \"cpe:2.3:\"".into()));
        };
        let Components {
            first: components,
            found,
        } = split_unescaped(rest).map_err(err)?;
        if found != COMPONENTS {
            return Err(err(format!(
                "expected 11 components after cpe:2.3:, found {found}"
            )));
        }
        if !matches!(components[0], "a" | "o" | "h") {
            return Err(err(format!("part {:?} is not a, o or h", components[0])));
        }
        for (name, value) in [("vendor", components[1]), ("product", components[2])] {
            if value == "*" || value == "-" {
                return Err(err(format!("the {name} must be named, not {value:?}")));
            }
        }
        for c in &components[1..] {
            check_component(c).map_err(err)?;
        }
        Ok(Self(lower.into_boxed_str()))
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The vendor component, still escaped.
    pub fn vendor(&self) -> &str {
        self.component(1)
    }

    /// The product component, still escaped.
    pub fn product(&self) -> &str {
        self.component(2)
    }

    /// The version component, still escaped (`*` or `-` when not given).
    pub fn version(&self) -> &str {
        self.component(3)
    }

    fn component(&self, i: usize) -> &str {
        let rest = &self.0["cpe:2.3:".len()..];
        split_unescaped(rest)
            .ok()
            .and_then(|c| c.first.get(i).copied())
            .unwrap_or("")
    }
}

/// The components after `cpe:2.3:`: the first [`COMPONENTS`] of them (empty where there
/// are fewer) and how many there are.
struct Components<'s> {
    first: [&'s str; COMPONENTS],
    found: usize,
}

/// `s` split at the colons that are not preceded by an escaping backslash, without
/// allocating.
fn split_unescaped(s: &str) -> Result<Components<'_>, String> {
    let mut out = Components {
        first: [""; COMPONENTS],
        found: 0,
    };
    let mut push = |component| {
        if let Some(slot) = out.first.get_mut(out.found) {
            *slot = component;
        }
        out.found += 1;
    };
    let mut start = 0;
    let mut escaped = false;
    for (i, b) in s.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b':' => {
                push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if escaped {
        return Err("ends with a lone backslash".into());
    }
    push(&s[start..]);
    Ok(out)
}

fn check_component(c: &str) -> Result<(), String> {
    if c == "*" || c == "-" {
        return Ok(());
    }
    if c.is_empty() {
        return Err("a component is empty (use * or -)".into());
    }
    let mut escaped = false;
    for ch in c.chars() {
        if escaped {
            if !(ch.is_ascii_graphic() && !ch.is_ascii_alphanumeric() && ch != '_') {
                return Err(format!("\\{ch} is not an escaped punctuation character"));
            }
            escaped = false;
            continue;
        }
        match ch {
            '\\' => escaped = true,
            '*' | '?' => return Err(format!("wildcard {ch:?} inside {c:?}")),
            c if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') => {}
            other => return Err(format!("character {other:?} must be escaped or removed")),
        }
    }
    Ok(())
}

impl fmt::Display for Cpe23 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_complete_identities() {
        let c = Cpe23::parse("cpe:2.3:a:F5:Nginx:1.18.0:*:*:*:*:*:*:*").unwrap();
        assert_eq!(c.as_str(), "cpe:2.3:a:f5:nginx:1.18.0:*:*:*:*:*:*:*");
        assert_eq!(
            (c.vendor(), c.product(), c.version()),
            ("f5", "nginx", "1.18.0")
        );
        Cpe23::parse("cpe:2.3:o:microsoft:windows_10:-:*:*:*:*:*:x64:*").unwrap();
        Cpe23::parse(r"cpe:2.3:a:foo\!bar:baz\:qux:1.0:*:*:*:*:*:*:*").unwrap();
    }

    #[test]
    fn rejects_incomplete_or_wildcarded() {
        for bad in [
            "",
            "cpe:2.3:a:nginx",
            "cpe:/a:nginx:nginx:1.18.0",
            "cpe:2.2:a:f5:nginx:1:*:*:*:*:*:*:*",
            "cpe:2.3:x:f5:nginx:1:*:*:*:*:*:*:*",
            "cpe:2.3:a:*:nginx:1:*:*:*:*:*:*:*",
            "cpe:2.3:a:f5:nginx:1.*:*:*:*:*:*:*:*",
            "cpe:2.3:a:f5:nginx:1:*:*:*:*:*:*:*:*",
            "cpe:2.3:a:f5:ng inx:1:*:*:*:*:*:*:*",
            "cpe:2.3:a:f5:nginx::*:*:*:*:*:*:*",
            r"cpe:2.3:a:f5:nginx:1:*:*:*:*:*:*:\",
            "cpe:2.3:a:f5:nginx:1:*:*:*:*:*:*",
        ] {
            assert!(Cpe23::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_wrong_number_of_components_is_counted_whole() {
        for (cpe, found) in [
            ("cpe:2.3:a:nginx", 2),
            ("cpe:2.3:a:f5:nginx:1:*:*:*:*:*:*", 10),
            ("cpe:2.3:a:f5:nginx:1:*:*:*:*:*:*:*:*:*:*", 14),
            (r"cpe:2.3:a:f5:nginx\:x:1:*:*:*:*:*:*:*:*", 12),
        ] {
            let e = Cpe23::parse(cpe).unwrap_err().to_string();
            assert!(
                e.contains(&format!(
                    "expected 11 components after cpe:2.3:, found {found}"
                )),
                "{cpe}: {e}"
            );
        }
    }
}
