//! Feeds arbitrary UTF-8 to the query parser and the search-bar recognizer: neither may panic,
//! every accepted query's canonical text must parse back to the same query, and a recognized
//! search's shown text must parse to the search it runs.

#![no_main]

use libfuzzer_sys::fuzz_target;
use periscope_query::{Entry, parse, recognize};

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    match parse(input) {
        Ok(query) => {
            let text = query.to_string();
            assert_eq!(parse(&text).as_ref(), Ok(&query), "canonical text {text:?}");
        }
        Err(e) => assert!(!e.violations.is_empty()),
    }
    if let Entry::Search { query, text } = recognize(input) {
        assert_eq!(parse(&text), Ok(query), "recognized text {text:?}");
    }
});
