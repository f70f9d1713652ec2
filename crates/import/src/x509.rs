//! The few fields of a DER X.509 certificate the observation format keeps (Masscan's `X509`
//! banner is the base64 DER of the leaf): subject CN and O, issuer CN and O, validity, and
//! the DNS names of the subject alternative name extension. A minimal DER walker, not a
//! validator: anything it cannot read leaves the field out.

/// What [`read`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Fields {
    /// Subject common name.
    pub subject_cn: Option<String>,
    /// Subject organisation.
    pub subject_o: Option<String>,
    /// Issuer common name.
    pub issuer_cn: Option<String>,
    /// Issuer organisation.
    pub issuer_o: Option<String>,
    /// notBefore, RFC 3339.
    pub not_before: Option<String>,
    /// notAfter, RFC 3339.
    pub not_after: Option<String>,
    /// DNS names of the subject alternative name extension.
    pub dns_names: Vec<String>,
}

/// One DER element: its tag and contents, and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, b| (a << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The elements of a constructed value's contents.
fn children(mut input: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    while let Some((tag, content, rest)) = element(input) {
        out.push((tag, content));
        input = rest;
    }
    out
}

const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
const OID_O: &[u8] = &[0x55, 0x04, 0x0a];
const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];

/// (CN, O) of a Name.
fn name(content: &[u8]) -> (Option<String>, Option<String>) {
    let (mut cn, mut o) = (None, None);
    for (_, set) in children(content) {
        for (_, attr) in children(set) {
            let parts = children(attr);
            let (Some((0x06, oid)), Some((_, value))) = (parts.first(), parts.get(1)) else {
                continue;
            };
            let text = String::from_utf8(value.to_vec()).ok();
            if *oid == OID_CN && cn.is_none() {
                cn = text;
            } else if *oid == OID_O && o.is_none() {
                o = text;
            }
        }
    }
    (cn, o)
}

/// A UTCTime (`YYMMDDHHMMSSZ`) or GeneralizedTime (`YYYYMMDDHHMMSSZ`) as RFC 3339.
fn time(tag: u8, content: &[u8]) -> Option<String> {
    let t = std::str::from_utf8(content).ok()?.strip_suffix('Z')?;
    let full = match (tag, t.len()) {
        (0x17, 12) => {
            let year: u32 = t[..2].parse().ok()?;
            format!("{}{t}", if year >= 50 { "19" } else { "20" })
        }
        (0x18, 14) => t.to_owned(),
        _ => return None,
    };
    if !full.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(format!(
        "{}-{}-{}T{}:{}:{}Z",
        &full[0..4],
        &full[4..6],
        &full[6..8],
        &full[8..10],
        &full[10..12],
        &full[12..14]
    ))
}

/// Reads the fields of a DER certificate; `None` when it is not one.
pub fn read(der: &[u8]) -> Option<Fields> {
    let (0x30, cert, _) = element(der)? else {
        return None;
    };
    let (0x30, tbs, _) = element(cert)? else {
        return None;
    };
    let mut parts = children(tbs).into_iter().peekable();
    // [0] version is optional.
    if parts.peek().is_some_and(|(tag, _)| *tag == 0xa0) {
        parts.next();
    }
    let _serial = parts.next()?;
    let _signature = parts.next()?;
    let (_, issuer) = parts.next()?;
    let (_, validity) = parts.next()?;
    let (_, subject) = parts.next()?;
    let _key = parts.next()?;
    let mut fields = Fields::default();
    (fields.issuer_cn, fields.issuer_o) = name(issuer);
    (fields.subject_cn, fields.subject_o) = name(subject);
    let times = children(validity);
    fields.not_before = times.first().and_then(|(t, c)| time(*t, c));
    fields.not_after = times.get(1).and_then(|(t, c)| time(*t, c));
    for (tag, content) in parts {
        if tag != 0xa3 {
            continue;
        }
        let Some((0x30, extensions, _)) = element(content) else {
            continue;
        };
        for (_, extension) in children(extensions) {
            let ext = children(extension);
            if ext.first().map(|(_, oid)| *oid) != Some(OID_SAN) {
                continue;
            }
            let Some((0x04, value)) = ext.last().copied() else {
                continue;
            };
            let Some((0x30, names, _)) = element(value) else {
                continue;
            };
            for (tag, name) in children(names) {
                if tag == 0x82
                    && let Ok(name) = String::from_utf8(name.to_vec())
                {
                    fields.dns_names.push(name);
                }
            }
        }
    }
    Some(fields)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use base64::Engine;

    /// A leaf certificate made with `openssl req`/`openssl x509 -req` for this test (no key
    /// is kept): subject O=Northwind Loopback Ltd, CN=www.loopback-test.example; issuer
    /// O=Periscope Test CA, CN=Periscope Test Root; SANs two DNS names and 127.0.0.1.
    const LEAF: &str = "MIIDmDCCAoCgAwIBAgIUZTrTuOGhQD9DLcEjqch50buNdMkwDQYJKoZIhvcNAQELBQAwOjEaMBgGA1UECgwRUGVyaXNjb3BlIFRlc3QgQ0ExHDAaBgNVBAMME1BlcmlzY29wZSBUZXN0IFJvb3QwHhcNMjYxMTI1MTYyNzA3WhcNMjYxMjE1MTYyNzA3WjBFMR8wHQYDVQQKDBZOb3J0aHdpbmQgTG9vcGJhY2sgTHRkMSIwIAYDVQQDDBl3d3cubG9vcGJhY2stdGVzdC5leGFtcGxlMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA8fDPnomLU6ssHKnKgSiTo/H7xRKD3VpEhn6wflnmdq2OFHZZHyJdjTGgUgHHPrV602ANuYsOFfK/IHbQke/CCuJLI1EkcELPGWXGXBDQ5q8hOAPHgsKW3hx1Kl8KscTOEq0M7pROp8HOiJAsaReDs5X1pb4RiKd/hoGCRlb14gwvzWk6y9vJq1zLPjijYuc/xymVDqkqAg2piCu7PZ/EjvonQERYKGt0ipllWDJgI7EP2wbO7ySRJOrfgmlZSFIXP3WBuUz190RsGRp9RpN1jp1vVcUne23pCL6O7P7y9LORAYAbfSzTeisfoVMSOfGPXQ6TJpYbCb6sVjvJNRb0DwIDAQABo4GKMIGHMEUGA1UdEQQ+MDyCGXd3dy5sb29wYmFjay10ZXN0LmV4YW1wbGWCGWFwaS5sb29wYmFjay10ZXN0LmV4YW1wbGWHBH8AAAEwHQYDVR0OBBYEFJN31LmnlDC4PLajUhTzYZuxuE3XMB8GA1UdIwQYMBaAFCA7oS6yn1TxCFD5Vm1VRA99QtIHMA0GCSqGSIb3DQEBCwUAA4IBAQCQUJGwzYOgrleGjnWAiY8FEFSpxD1XL27E/7oLs9tzII/ei1cS9mBB9ojhNM8X9xgl4xkcf1mdd2ZNxo1CPOewwj9TNvI6t1D1kWaa06vlkdPmu8YYkgqY3+GRRs8ckt6XH32CUqN+yy0/T6Kp8Ak4MsBbFGGsd1INyaH4u48tzo7CkWpq5trX+/pNgOnj4nTnnsv6o8fBdnumFtINS+MmvXv/MAH3GDTRJGvHopmN09j/ek6/jkuTJBf0O+JBbij3ispdEO7Fem5xTkqFLq5CcWIGtfvK1T4ZYxhhcQb9KSHHEHvy/Nja7XvcFv/9WMsmsEAE9K/gJukxjEfsd4e9";

    #[test]
    fn reads_what_openssl_prints() {
        let der = base64::engine::general_purpose::STANDARD
            .decode(LEAF)
            .unwrap();
        let f = read(&der).unwrap();
        assert_eq!(f.subject_cn.as_deref(), Some("www.loopback-test.example"));
        assert_eq!(f.subject_o.as_deref(), Some("Northwind Loopback Ltd"));
        assert_eq!(f.issuer_cn.as_deref(), Some("Periscope Test Root"));
        assert_eq!(f.issuer_o.as_deref(), Some("Periscope Test CA"));
        assert_eq!(f.not_before.as_deref(), Some("2026-11-25T16:27:07Z"));
        assert_eq!(f.not_after.as_deref(), Some("2026-12-15T16:27:07Z"));
        assert_eq!(
            f.dns_names,
            ["www.loopback-test.example", "api.loopback-test.example"]
        );
        assert_eq!(read(b"\x30\x03\x02\x01\x00"), None);
        assert_eq!(read(b"junk"), None);
    }
}
