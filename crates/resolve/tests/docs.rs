//! `docs/domain-resolution.md` stays true to the code: every excluded range, every wire
//! string and the numbers it quotes.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use periscope_resolve::{
    CACHE_ENTRIES, CACHE_MAX_TTL, DEFAULT_TIMEOUT, DomainResolution, NEGATIVE_CACHE_MAX_TTL,
    SPECIAL_PURPOSE,
};

/// The page, read from the running test's checkout (a build directory shared between clones
/// can hand this binary to another one).
fn page() -> String {
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    );
    std::fs::read_to_string(crate_dir.join("../../docs/domain-resolution.md")).unwrap()
}

#[test]
fn every_excluded_range_is_listed_with_its_reference() {
    let page = page();
    let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("| `")).collect();
    for range in SPECIAL_PURPOSE {
        let cell = format!("| `{range}` |");
        let row = rows.iter().find(|row| row.starts_with(&cell));
        let row = row.unwrap_or_else(|| panic!("{range} is not in the table of the page"));
        assert!(row.ends_with(&format!("| {} |", range.reference)), "{row}");
        assert!(row.contains(range.purpose), "{row}");
    }
    let listed = rows.iter().filter(|row| row.contains('/')).count();
    assert_eq!(
        listed,
        SPECIAL_PURPOSE.len(),
        "the page lists a range the code does not"
    );
}

#[test]
fn every_status_is_documented() {
    let page = page();
    for status in DomainResolution::STATUSES {
        assert!(page.contains(&format!("| `{status}` |")), "{status}");
    }
}

#[test]
fn the_numbers_quoted_are_the_code_s() {
    let page = page();
    for quoted in [
        format!("default {} s", DEFAULT_TIMEOUT.as_secs()),
        format!("at most {CACHE_ENTRIES} responses"),
        format!("at most {} s", CACHE_MAX_TTL.as_secs()),
        format!("at most {} s", NEGATIVE_CACHE_MAX_TTL.as_secs()),
    ] {
        assert!(page.contains(&quoted), "{quoted}");
    }
}
