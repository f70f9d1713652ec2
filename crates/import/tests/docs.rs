//! `docs/importers.md` prints the service-name tables; this keeps them equal to the code's.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use periscope_import::services::{CENSYS, MASSCAN, NMAP, On, Row, SHODAN};

fn rendered(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .map(|r| {
            let on = match r.on {
                On::Tcp => "tcp",
                On::Udp => "udp",
                On::Any => "any",
            };
            let tls = if r.tls { "yes" } else { "no" };
            format!("| `{}` | {on} | {tls} | `{}` |", r.name, r.token)
        })
        .collect()
}

#[test]
fn the_documented_tables_are_the_code_tables() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/importers.md"
    ))
    .unwrap();
    for (name, rows) in [
        ("nmap", NMAP),
        ("masscan", MASSCAN),
        ("shodan", SHODAN),
        ("censys", CENSYS),
    ] {
        let marker = format!("<!-- table {name} -->\n");
        let table = doc
            .split(&marker)
            .nth(1)
            .unwrap_or_else(|| panic!("no {marker:?} in docs/importers.md"));
        let documented: Vec<String> = table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(str::to_owned)
            .collect();
        assert_eq!(
            documented,
            rendered(rows),
            "the {name} table of docs/importers.md"
        );
    }
}
