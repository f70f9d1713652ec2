//! Cookies of both services: read one by name from a request, write one `HttpOnly`,
//! `SameSite=Lax`, scoped to a path, `Secure` when the service is reached over https.

use axum::http::{HeaderMap, HeaderValue, header};

/// The value of cookie `name` in the request, if present.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// A `Set-Cookie` value: `{name}={value}; Path={path}; HttpOnly; SameSite=Lax`, then
/// `Max-Age` when given (`Some(0)` with an empty value deletes the cookie), then `Secure` when
/// the service is reached over https. `name`, `value` and `path` are tokens this workspace
/// makes (names, base64url, paths), never user input.
pub fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    max_age: Option<i64>,
    secure: bool,
) -> HeaderValue {
    let mut text = format!("{name}={value}; Path={path}; HttpOnly; SameSite=Lax");
    if let Some(age) = max_age {
        text.push_str(&format!("; Max-Age={age}"));
    }
    if secure {
        text.push_str("; Secure");
    }
    #[allow(clippy::expect_used)] // Names, paths and values are ASCII tokens.
    HeaderValue::from_str(&text).expect("cookie text is a valid header value")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_by_name_and_written_http_only_lax() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; periscope_signin=xyz; b=2"),
        );
        assert_eq!(cookie(&headers, "periscope_signin"), Some("xyz"));
        assert_eq!(cookie(&headers, "missing"), None);
        assert_eq!(
            set_cookie("s", "v", "/auth", None, false),
            "s=v; Path=/auth; HttpOnly; SameSite=Lax"
        );
        assert_eq!(
            set_cookie("s", "", "/", Some(0), true),
            "s=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Secure"
        );
    }
}
