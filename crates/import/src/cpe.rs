//! CPE 2.2 URIs (`cpe:/a:openbsd:openssh:8.4`, as Nmap writes them) to CPE 2.3 formatted
//! strings (`cpe:2.3:a:openbsd:openssh:8.4:*:*:*:*:*:*:*`).
//!
//! A missing or empty component is `*` (ANY, as in 2.2); a packed edition
//! (`~edition~sw_edition~target_sw~target_hw~other`) is unpacked; percent-encoded characters
//! are decoded and every character other than letters, digits, `_`, `-` and `.` is
//! backslash-escaped, as the 2.3 binding requires. The result is lowercase. A URI that is
//! not CPE 2.2 gives `None`; whether the result is a valid CPE is the model's check.

/// The CPE 2.3 formatted string of a CPE 2.2 URI, or `None` when `uri` is not one. A
/// string that already is CPE 2.3 is returned lowercased.
pub fn to_cpe23(uri: &str) -> Option<String> {
    let uri = uri.trim();
    if uri.starts_with("cpe:2.3:") {
        return Some(uri.to_ascii_lowercase());
    }
    let rest = uri
        .strip_prefix("cpe:/")
        .or_else(|| uri.strip_prefix("CPE:/"))?;
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() > 7 || parts.first().is_none_or(|p| !matches!(*p, "a" | "o" | "h")) {
        return None;
    }
    // part vendor product version update edition language sw_edition target_sw target_hw other
    let mut out: [String; 11] = std::array::from_fn(|_| "*".to_owned());
    for (i, part) in parts.iter().enumerate() {
        if i == 5
            && let Some(packed) = part.strip_prefix('~')
        {
            let packed: Vec<&str> = packed.split('~').collect();
            if packed.len() != 5 {
                return None;
            }
            out[5] = value(packed[0])?;
            for (j, p) in packed[1..].iter().enumerate() {
                out[7 + j] = value(p)?;
            }
        } else {
            out[i] = value(part)?;
        }
    }
    Some(format!("cpe:2.3:{}", out.join(":")))
}

/// One 2.2 component as a 2.3 value.
fn value(component: &str) -> Option<String> {
    if component.is_empty() {
        return Some("*".to_owned());
    }
    if component == "-" {
        return Some("-".to_owned());
    }
    let bytes = component.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    let text = String::from_utf8(decoded).ok()?;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
            out.push(c);
        } else if c.is_ascii_graphic() {
            out.push('\\');
            out.push(c);
        } else {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_nmap_cpes() {
        for (uri, want) in [
            (
                "cpe:/a:openbsd:openssh:8.4",
                Some("cpe:2.3:a:openbsd:openssh:8.4:*:*:*:*:*:*:*"),
            ),
            (
                "cpe:/o:linux:linux_kernel",
                Some("cpe:2.3:o:linux:linux_kernel:*:*:*:*:*:*:*:*"),
            ),
            (
                "cpe:/a:debian:openssh:9.2p1%2bdeb12u3",
                Some("cpe:2.3:a:debian:openssh:9.2p1\\+deb12u3:*:*:*:*:*:*:*"),
            ),
            (
                "cpe:/a:apache:http_server:2.4.57::~~~~x64~",
                Some("cpe:2.3:a:apache:http_server:2.4.57:*:*:*:*:*:x64:*"),
            ),
            (
                "cpe:/a:Igor_Sysoev:Nginx:1.2.3:beta",
                Some("cpe:2.3:a:igor_sysoev:nginx:1.2.3:beta:*:*:*:*:*:*"),
            ),
            ("cpe:/x:foo:bar", None),
            ("not a cpe", None),
        ] {
            assert_eq!(to_cpe23(uri).as_deref(), want, "{uri}");
        }
    }
}
