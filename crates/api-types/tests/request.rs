//! Request decoding: every violation code of every member, unknown members, bodies that are
//! not JSON or not objects, content types, the size limit, defaults, `null`, and character
//! (not byte) counting. Rows of cases, one helper per outcome.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::fmt::Debug;

use periscope_api_types::request::MAX_DETAIL_CURSOR_CHARS;
use periscope_api_types::{
    ErrorCode, ExposureBody, HostDetailBody, MAX_BODY_BYTES, QueryBody, RequestBody, RequestError,
    SearchBody, Violation, decode,
};

const JSON: Option<&str> = Some("application/json");

/// The `(field, code)` pairs `body` is refused with.
fn violations<T: RequestBody + Debug>(body: &str) -> Vec<(String, String)> {
    match decode::<T>(JSON, body.as_bytes()) {
        Err(RequestError::Invalid(v)) => v.into_iter().map(|v| (v.field, v.code)).collect(),
        other => panic!("{body}: expected violations, got {other:?}"),
    }
}

/// Rows of `(body, expected (field, code) pairs in order)`.
fn check_invalid<T: RequestBody + Debug>(cases: &[(&str, &[(&str, &str)])]) {
    for (body, expected) in cases {
        let got = violations::<T>(body);
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(f, c)| ((*f).to_owned(), (*c).to_owned()))
            .collect();
        assert_eq!(got, expected, "body {body}");
    }
}

fn ok<T: RequestBody + Debug>(body: &str) -> T {
    decode::<T>(JSON, body.as_bytes()).unwrap_or_else(|e| panic!("{body}: {e}"))
}

fn invalid_json<T: RequestBody + Debug>(content_type: Option<&str>, body: &[u8]) {
    match decode::<T>(content_type, body) {
        Err(e @ RequestError::InvalidJson(_)) => assert_eq!(e.code(), ErrorCode::InvalidJson),
        other => panic!(
            "{:?} as {content_type:?}: expected invalid_json, got {other:?}",
            String::from_utf8_lossy(body)
        ),
    }
}

fn repeat(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

fn with_query(query: &str) -> String {
    serde_json::json!({ "query": query }).to_string()
}

#[test]
fn search_member_violations() {
    check_invalid::<SearchBody>(&[
        (r#"{}"#, &[("query", "required")]),
        (r#"{"query":null}"#, &[("query", "required")]),
        (r#"{"query":""}"#, &[("query", "required")]),
        (r#"{"query":5}"#, &[("query", "wrong_type")]),
        (r#"{"query":true}"#, &[("query", "wrong_type")]),
        (r#"{"query":["port:22"]}"#, &[("query", "wrong_type")]),
        (r#"{"query":{"port":22}}"#, &[("query", "wrong_type")]),
        (
            r#"{"query":"port:22","limit":0}"#,
            &[("limit", "out_of_range")],
        ),
        (
            r#"{"query":"port:22","limit":101}"#,
            &[("limit", "out_of_range")],
        ),
        (
            r#"{"query":"port:22","limit":-1}"#,
            &[("limit", "out_of_range")],
        ),
        (
            r#"{"query":"port:22","limit":-1.0}"#,
            &[("limit", "out_of_range")],
        ),
        (
            r#"{"query":"port:22","limit":1e3}"#,
            &[("limit", "out_of_range")],
        ),
        (
            r#"{"query":"port:22","limit":99999999999999999999999}"#,
            &[("limit", "out_of_range")],
        ),
        (
            r#"{"query":"port:22","limit":2.5}"#,
            &[("limit", "wrong_type")],
        ),
        (
            r#"{"query":"port:22","limit":"25"}"#,
            &[("limit", "wrong_type")],
        ),
        (
            r#"{"query":"port:22","limit":true}"#,
            &[("limit", "wrong_type")],
        ),
        (
            r#"{"query":"port:22","limit":[25]}"#,
            &[("limit", "wrong_type")],
        ),
        (
            r#"{"query":"port:22","cursor":5}"#,
            &[("cursor", "wrong_type")],
        ),
        (
            r#"{"query":"port:22","foo":1}"#,
            &[("foo", "unknown_field")],
        ),
        (
            r#"{"query":"port:22","Query":"x"}"#,
            &[("Query", "unknown_field")],
        ),
        // Every violation at once: documented members in table order, then unknown members
        // in body order.
        (
            r#"{"zeta":1,"cursor":[],"limit":"x","alpha":null}"#,
            &[
                ("query", "required"),
                ("limit", "wrong_type"),
                ("cursor", "wrong_type"),
                ("zeta", "unknown_field"),
                ("alpha", "unknown_field"),
            ],
        ),
    ]);
}

#[test]
fn query_length_counts_characters_not_bytes() {
    for c in ['a', 'é', '日', '🦀'] {
        let at_max = with_query(&repeat(c, 512));
        assert_eq!(ok::<SearchBody>(&at_max).query.chars().count(), 512, "{c}");
        assert_eq!(ok::<QueryBody>(&at_max).query, repeat(c, 512));
        let over = with_query(&repeat(c, 513));
        assert_eq!(
            violations::<SearchBody>(&over),
            [("query".to_owned(), "too_long".to_owned())],
            "{c}"
        );
        assert_eq!(
            violations::<QueryBody>(&over),
            [("query".to_owned(), "too_long".to_owned())]
        );
    }
    // One character is enough, even one that is several bytes.
    assert_eq!(ok::<SearchBody>(&with_query("🦀")).query, "🦀");
    // Escapes count as the character they stand for.
    let escaped = format!(r#"{{"query":"{}"}}"#, "\\u00e9".repeat(512));
    assert_eq!(ok::<SearchBody>(&escaped).query, repeat('é', 512));
}

#[test]
fn search_defaults_and_accepted_values() {
    let cases: &[(&str, SearchBody)] = &[
        (
            r#"{"query":"port:22"}"#,
            SearchBody {
                query: "port:22".into(),
                limit: 25,
                cursor: None,
            },
        ),
        (
            r#"{"query":"port:22","limit":null,"cursor":null}"#,
            SearchBody {
                query: "port:22".into(),
                limit: 25,
                cursor: None,
            },
        ),
        (
            r#"{"cursor":"sc1_abc","limit":1,"query":"  port:22  "}"#,
            SearchBody {
                query: "  port:22  ".into(),
                limit: 1,
                cursor: Some("sc1_abc".into()),
            },
        ),
        (
            r#"{"query":"x","limit":100,"cursor":""}"#,
            SearchBody {
                query: "x".into(),
                limit: 100,
                cursor: Some(String::new()),
            },
        ),
        // JSON Schema integers: a whole number written with a fraction or exponent.
        (
            r#"{"query":"x","limit":25.0}"#,
            SearchBody {
                query: "x".into(),
                limit: 25,
                cursor: None,
            },
        ),
        (
            r#"{"query":"x","limit":1e2}"#,
            SearchBody {
                query: "x".into(),
                limit: 100,
                cursor: None,
            },
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(&ok::<SearchBody>(body), expected, "{body}");
    }
}

#[test]
fn count_and_facets_take_only_a_query() {
    assert_eq!(
        ok::<QueryBody>(r#"{"query":"asn:64512"}"#),
        QueryBody {
            query: "asn:64512".into()
        }
    );
    check_invalid::<QueryBody>(&[
        (r#"{}"#, &[("query", "required")]),
        (r#"{"query":1}"#, &[("query", "wrong_type")]),
        (
            r#"{"query":"port:22","limit":5}"#,
            &[("limit", "unknown_field")],
        ),
        (
            r#"{"query":"port:22","cursor":"x"}"#,
            &[("cursor", "unknown_field")],
        ),
        (
            r#"{"query":"port:22","resolution":"global"}"#,
            &[("resolution", "unknown_field")],
        ),
    ]);
}

#[test]
fn exposure_members() {
    assert_eq!(
        ok::<ExposureBody>(r#"{"query":"port:22"}"#),
        ExposureBody {
            query: "port:22".into(),
            resolution: "global".into()
        }
    );
    assert_eq!(
        ok::<ExposureBody>(r#"{"query":"port:22","resolution":null}"#).resolution,
        "global"
    );
    // The value is the service's to check (unsupported_resolution).
    assert_eq!(
        ok::<ExposureBody>(r#"{"query":"port:22","resolution":"mars"}"#).resolution,
        "mars"
    );
    check_invalid::<ExposureBody>(&[
        (r#"{"resolution":"local"}"#, &[("query", "required")]),
        (
            r#"{"query":"port:22","resolution":3}"#,
            &[("resolution", "wrong_type")],
        ),
        (
            r#"{"query":"port:22","limit":3}"#,
            &[("limit", "unknown_field")],
        ),
    ]);
}

#[test]
fn host_detail_members() {
    assert_eq!(
        ok::<HostDetailBody>(r#"{"ip":"240.0.0.1"}"#),
        HostDetailBody {
            ip: "240.0.0.1".into(),
            limit: 20,
            cursor: None
        }
    );
    assert_eq!(
        ok::<HostDetailBody>(r#"{"ip":"3fff::1","limit":1,"cursor":"abc"}"#),
        HostDetailBody {
            ip: "3fff::1".into(),
            limit: 1,
            cursor: Some("abc".into())
        }
    );
    // The address is the service's to check (invalid_ip), even when empty.
    assert_eq!(ok::<HostDetailBody>(r#"{"ip":""}"#).ip, "");
    let at_max =
        serde_json::json!({"ip": "240.0.0.1", "cursor": repeat('ü', MAX_DETAIL_CURSOR_CHARS)});
    assert_eq!(
        ok::<HostDetailBody>(&at_max.to_string())
            .cursor
            .unwrap()
            .chars()
            .count(),
        512
    );
    let over =
        serde_json::json!({"ip": "240.0.0.1", "cursor": repeat('ü', MAX_DETAIL_CURSOR_CHARS + 1)});
    check_invalid::<HostDetailBody>(&[
        (r#"{}"#, &[("ip", "required")]),
        (r#"{"ip":null}"#, &[("ip", "required")]),
        (r#"{"ip":167772161}"#, &[("ip", "wrong_type")]),
        (
            r#"{"ip":"240.0.0.1","limit":0}"#,
            &[("limit", "out_of_range")],
        ),
        (
            r#"{"ip":"240.0.0.1","limit":21}"#,
            &[("limit", "out_of_range")],
        ),
        (
            r#"{"ip":"240.0.0.1","limit":"5"}"#,
            &[("limit", "wrong_type")],
        ),
        (
            r#"{"ip":"240.0.0.1","cursor":false}"#,
            &[("cursor", "wrong_type")],
        ),
        (&over.to_string(), &[("cursor", "too_long")]),
        (
            r#"{"ip":"240.0.0.1","query":"port:22"}"#,
            &[("query", "unknown_field")],
        ),
    ]);
}

#[test]
fn bodies_that_are_not_json_objects() {
    for body in [
        &b""[..],
        b" ",
        b"{",
        b"{\"query\":}",
        b"{'query':'port:22'}",
        b"{\"query\":\"port:22\",}",
        b"{\"query\":\"port:22\"} {}",
        b"{\"query\":\"port:22\"}x",
        b"{\"query\":\"\xff\"}",
        b"{\"query\":\"port:22\",\"limit\":1e400}",
        // A repeated member name is refused: which value wins would be a guess.
        b"{\"query\":\"port:22\",\"query\":\"port:23\"}",
        b"{\"query\":\"port:22\",\"foo\":1,\"foo\":2}",
    ] {
        invalid_json::<SearchBody>(JSON, body);
    }
    // Valid JSON that is not an object names the body.
    for body in [
        "[]",
        r#"["query"]"#,
        r#""port:22""#,
        "25",
        "null",
        "true",
        "1.5",
    ] {
        assert_eq!(
            violations::<SearchBody>(body),
            [("body".to_owned(), "wrong_type".to_owned())],
            "{body}"
        );
    }
    // Whitespace around the object is fine; nested duplicates are the member's problem.
    assert_eq!(
        ok::<QueryBody>(" \n{\"query\":\"port:22\"}\n ").query,
        "port:22"
    );
    assert_eq!(
        violations::<QueryBody>(r#"{"query":{"a":1,"a":2}}"#),
        [("query".to_owned(), "wrong_type".to_owned())]
    );
}

#[test]
fn content_types() {
    let body = br#"{"query":"port:22"}"#;
    for accepted in [
        "application/json",
        "Application/JSON",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        " application/json ",
    ] {
        assert_eq!(
            decode::<QueryBody>(Some(accepted), body).unwrap().query,
            "port:22",
            "{accepted}"
        );
    }
    invalid_json::<QueryBody>(None, body);
    for refused in [
        "",
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/jsonx",
        "application/json-seq",
        "application/problem+json",
        "text/json",
        "multipart/form-data; boundary=x",
    ] {
        invalid_json::<QueryBody>(Some(refused), body);
    }
}

#[test]
fn body_size_limit() {
    let pad = |total: usize| {
        let mut body = br#"{"query":"port:22"}"#.to_vec();
        body.resize(total, b' ');
        body
    };
    assert_eq!(
        decode::<QueryBody>(JSON, &pad(MAX_BODY_BYTES))
            .unwrap()
            .query,
        "port:22"
    );
    let err = decode::<QueryBody>(JSON, &pad(MAX_BODY_BYTES + 1)).unwrap_err();
    assert_eq!(err, RequestError::BodyTooLarge);
    assert_eq!(err.code(), ErrorCode::BodyTooLarge);
    // Size is checked before anything else.
    assert_eq!(
        decode::<QueryBody>(Some("text/plain"), &vec![b'x'; MAX_BODY_BYTES + 1]).unwrap_err(),
        RequestError::BodyTooLarge
    );
}

#[test]
fn request_errors_become_error_bodies() {
    let cases: Vec<(RequestError, ErrorCode, usize)> = vec![
        (RequestError::BodyTooLarge, ErrorCode::BodyTooLarge, 0),
        (
            decode::<QueryBody>(JSON, b"{").unwrap_err(),
            ErrorCode::InvalidJson,
            0,
        ),
        (
            decode::<SearchBody>(JSON, br#"{"limit":0,"x":1}"#).unwrap_err(),
            ErrorCode::ValidationFailed,
            3,
        ),
    ];
    for (err, code, violations) in cases {
        assert_eq!(err.code(), code);
        let body = err.clone().into_body("req-1");
        assert_eq!(body.code, code);
        assert_eq!(body.status(), code.status());
        assert_eq!(body.request_id, "req-1");
        assert_eq!(body.violations.len(), violations);
        assert!(body.message.starts_with(code.message()), "{}", body.message);
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["code"], code.as_str());
        assert!(json["violations"].is_array(), "violations always present");
        for v in json["violations"].as_array().unwrap() {
            let message = v["message"].as_str().unwrap();
            assert!(!message.is_empty());
            assert!(v["field"].is_string() && v["code"].is_string());
        }
    }
    // The JSON error's position reaches the message.
    let body = decode::<QueryBody>(JSON, b"{\"query\":}")
        .unwrap_err()
        .into_body("r");
    assert!(body.message.contains("column"), "{}", body.message);
}

#[test]
fn violation_messages_name_the_member_and_the_bound() {
    let RequestError::Invalid(v) = decode::<SearchBody>(
        JSON,
        format!(
            r#"{{"query":"{}","limit":500,"bogus":1}}"#,
            repeat('x', 600)
        )
        .as_bytes(),
    )
    .unwrap_err() else {
        panic!("expected violations");
    };
    let messages: Vec<&str> = v.iter().map(|v| v.message.as_str()).collect();
    assert!(
        messages[0].contains("600") && messages[0].contains("512"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("1 to 100") && messages[1].contains("500"),
        "{messages:?}"
    );
    assert!(
        messages[2].contains("\"bogus\"") && messages[2].contains("query, limit, cursor"),
        "{messages:?}"
    );
}

#[test]
fn query_language_violations_convert_to_wire_violations() {
    let err = periscope_query::parse("port:70000 protocol:nosuch").unwrap_err();
    let wire: Vec<Violation> = err.violations.iter().map(Violation::from).collect();
    assert!(!wire.is_empty());
    for (w, v) in wire.iter().zip(&err.violations) {
        assert_eq!(w.field, "query");
        assert_eq!(w.code, v.code.as_str());
        assert_eq!(w.message, v.detail);
    }
    let v = Violation::from(periscope_query::parse_resolution("mars").unwrap_err());
    assert_eq!(
        (v.field.as_str(), v.code.as_str()),
        ("resolution", "unsupported_resolution")
    );
    let v = Violation::from(periscope_query::parse_detail_ip("240.0.0.1/24").unwrap_err());
    assert_eq!((v.field.as_str(), v.code.as_str()), ("ip", "invalid_ip"));
    let v = Violation::from(periscope_query::check_cursor_format("sc1_short").unwrap_err());
    assert_eq!((v.field.as_str(), v.code.as_str()), ("cursor", "invalid"));
}

// A body of 512 KiB of unknown members answers a small 422: at most MAX_VIOLATIONS listed,
// the rest counted in one violation on `body`; a giant member name is cut. (Before: one
// violation per member, each repeating the name, about 7.6 MB.)
#[test]
fn the_violations_of_a_huge_body_are_capped() {
    use periscope_api_types::request::MAX_VIOLATIONS;
    let mut body = String::from("{");
    let mut n = 0;
    while body.len() < MAX_BODY_BYTES - 64 {
        if n > 0 {
            body.push(',');
        }
        body.push_str(&format!("\"m{n:06}\":0"));
        n += 1;
    }
    body.push('}');
    let Err(RequestError::Invalid(list)) = decode::<SearchBody>(JSON, body.as_bytes()) else {
        panic!("expected violations");
    };
    assert_eq!(list.len(), MAX_VIOLATIONS + 1);
    assert_eq!(list[0].field, "query");
    assert_eq!(list[1].field, "m000000");
    let last = list.last().unwrap();
    assert_eq!(
        (last.field.as_str(), last.code.as_str()),
        ("body", "unknown_field")
    );
    assert!(
        last.message
            .starts_with(&format!("{} more members", n - (MAX_VIOLATIONS - 1))),
        "{}",
        last.message
    );
    let encoded = serde_json::to_vec(&RequestError::Invalid(list).into_body("req_x")).unwrap();
    assert!(encoded.len() < 8_192, "{} bytes", encoded.len());

    let giant = format!("{{\"query\":\"port:22\",\"{}\":1}}", repeat('z', 400_000));
    let got = violations::<SearchBody>(&giant);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, format!("{}…", repeat('z', 100)));
}
