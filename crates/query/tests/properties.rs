//! Properties: parsing never panics, canonical text round-trips for every valid query, equal
//! searches written differently are equal values, and bare numbers and two-letter words are
//! never guessed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use periscope_model::{
    Asn, CountryCode, Cpe23, CveId, Cvss, CvssRange, DomainName, Ipv4Cidr, Port, ProtocolToken,
};
use periscope_query::{
    Ambiguity, Clause, Entry, Field, FilterQuery, Phrase, Query, parse, recognize,
};
use proptest::prelude::*;
use proptest::sample::{select, subsequence};

fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        any::<u128>().prop_map(|a| {
            let v6 = Ipv6Addr::from(a);
            v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
        }),
        // Addresses with long zero runs exercise RFC 5952 compression.
        (any::<u16>(), 0usize..8).prop_map(|(x, i)| {
            let mut s = [0u16; 8];
            s[i] = x;
            let v6 = Ipv6Addr::from(s);
            v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
        }),
    ]
}

fn label() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?",
        "_[a-z]{1,5}",
        select(vec![
            "bücher",
            "münchen",
            "例え",
            "ÆRØ",
            "WWW",
            "xn--bcher-kva"
        ])
        .prop_map(String::from),
    ]
}

fn dns_name(suffixes: Vec<&'static str>) -> impl Strategy<Value = DomainName> {
    (
        prop::collection::vec(label(), 1..4),
        select(suffixes),
        any::<bool>(),
    )
        .prop_filter_map("not a DNS name", |(labels, suffix, dot)| {
            let name = format!(
                "{}.{suffix}{}",
                labels.join("."),
                if dot { "." } else { "" }
            );
            DomainName::parse(&name).ok()
        })
}

fn registrable_domain() -> impl Strategy<Value = DomainName> {
    dns_name(vec![
        "example",
        "com",
        "co.uk",
        "de",
        "org",
        "xn--fiqs8s",
        "test",
    ])
    .prop_filter("a public suffix", |d| {
        parse(&format!("domain:{d}")) == Ok(Query::Domain(d.clone()))
    })
}

fn phrase() -> impl Strategy<Value = Phrase> {
    let words = select(vec![
        "Example",
        "Corp",
        "AND",
        "OR",
        "NOT",
        "(x)",
        "a:b",
        "&&",
        "||",
        "-",
        "Ünïcödé",
        "1.2.3.4",
        "port:22",
        "domain:x.example",
        "'",
        "\u{a0}",
        "日本",
        "GmbH",
        "!",
    ]);
    let space = select(vec![" ", "  ", "\u{a0}", "\u{2003}"]);
    prop::collection::vec((words, space), 1..6).prop_filter_map("not a phrase", |parts| {
        let text: String = parts.iter().flat_map(|(w, s)| [*w, *s]).collect();
        Phrase::new(&text).ok()
    })
}

fn cpe() -> impl Strategy<Value = Cpe23> {
    let component = prop_oneof![
        Just("*".to_owned()),
        Just("-".to_owned()),
        "[a-z0-9_.]{1,8}"
    ];
    (
        select(vec!["a", "o", "h"]),
        "[a-zA-Z0-9_]{1,10}",
        "[a-zA-Z0-9_]{1,10}",
        prop::collection::vec(component, 8),
    )
        .prop_filter_map("not a CPE", |(part, vendor, product, rest)| {
            Cpe23::parse(&format!(
                "cpe:2.3:{part}:{vendor}:{product}:{}",
                rest.join(":")
            ))
            .ok()
        })
}

fn clause(field: Field) -> BoxedStrategy<Clause> {
    match field {
        Field::Port => (1u16..=u16::MAX)
            .prop_filter_map("port", |p| Port::new(p).ok().map(Clause::Port))
            .boxed(),
        Field::Protocol => select(ProtocolToken::all().collect::<Vec<_>>())
            .prop_map(Clause::Protocol)
            .boxed(),
        Field::Organization => phrase().prop_map(Clause::Organization).boxed(),
        Field::Product => phrase().prop_map(Clause::Product).boxed(),
        Field::CertificateName => dns_name(vec!["example", "com", "co.uk", "localhost", "io"])
            .prop_map(Clause::CertificateName)
            .boxed(),
        Field::Country => select(CountryCode::all().collect::<Vec<_>>())
            .prop_map(Clause::Country)
            .boxed(),
        Field::Cpe => cpe().prop_map(Clause::Cpe).boxed(),
        Field::Cve => (1999u16..=9999, 0u32..=999_999_999)
            .prop_filter_map("cve", |(y, n)| CveId::from_parts(y, n).map(Clause::Cve))
            .boxed(),
        Field::Cvss => (0u8..=100, 0u8..=100)
            .prop_filter_map("cvss", |(a, b)| {
                let (lo, hi) = (
                    Cvss::from_tenths(a.min(b)).ok()?,
                    Cvss::from_tenths(a.max(b)).ok()?,
                );
                CvssRange::new(lo, hi).ok().map(Clause::Cvss)
            })
            .boxed(),
        Field::Exploit => any::<bool>().prop_map(Clause::Exploit).boxed(),
        Field::Domain | Field::Asn | Field::Cidr => {
            unreachable!("standalone fields have no clause")
        }
    }
}

fn filter_clauses() -> impl Strategy<Value = Vec<Clause>> {
    let fields: Vec<Field> = Field::ALL
        .into_iter()
        .filter(|f| !f.is_standalone())
        .collect();
    subsequence(fields, 1..=3)
        .prop_flat_map(|fields| fields.into_iter().map(clause).collect::<Vec<_>>())
}

fn query() -> impl Strategy<Value = Query> {
    prop_oneof![
        ip().prop_map(Query::Ip),
        (any::<u32>(), 24u8..=32).prop_filter_map("cidr", |(a, p)| Ipv4Cidr::new(
            Ipv4Addr::from(a),
            p
        )
        .ok()
        .map(Query::Cidr)),
        registrable_domain().prop_map(Query::Domain),
        (1u32..=u32::MAX).prop_filter_map("asn", |a| Asn::new(a).ok().map(Query::Asn)),
        filter_clauses().prop_filter_map("filter", |c| FilterQuery::new(c).ok().map(Query::Filter)),
    ]
}

/// Fragments that look like the query language, to reach deep into the parser.
fn queryish() -> impl Strategy<Value = String> {
    let fragment = select(vec![
        "port:",
        "22",
        "0",
        "65536",
        "protocol:",
        "ssh",
        "SSH",
        "organization:",
        "product:",
        "\"",
        "Acme Corp",
        "certificate.name:",
        "country:",
        "DE",
        "cpe:",
        "cpe:2.3:a:x:y:*:*:*:*:*:*:*:*",
        "cve:",
        "CVE-2014-0160",
        "cvss:",
        "7-10",
        "exploit:",
        "yes",
        "domain:",
        "example.com",
        "co.uk",
        "bücher",
        "asn:",
        "AS",
        "15169",
        "cidr:",
        "192.0.2.1",
        "/24",
        "/8",
        "::",
        "2001:db8",
        "%eth0",
        "AND",
        "and",
        "OR",
        "NOT",
        "&&",
        "||",
        "!",
        "-",
        "+",
        "(",
        ")",
        "[",
        "]",
        "*",
        "?",
        "#",
        "@",
        "https://",
        ".",
        ":",
        "\u{0}",
        "\t",
        "\u{200b}",
        "ü",
        "İ",
        "\u{a0}",
    ]);
    let joiner = select(vec!["", "", " ", "  ", " AND ", "\n"]);
    prop::collection::vec((fragment, joiner), 0..10)
        .prop_map(|parts| parts.iter().flat_map(|(f, j)| [*f, *j]).collect())
}

/// What must hold of any input: no panic, canonical round trip on success, well-formed errors.
fn any_input_is_handled(input: &str) -> Result<(), TestCaseError> {
    match parse(input) {
        Ok(q) => {
            let text = q.to_string();
            prop_assert_eq!(parse(&text), Ok(q), "canonical text {:?}", text);
        }
        Err(e) => {
            prop_assert!(!e.violations.is_empty());
            let mut codes = e.codes();
            codes.dedup();
            prop_assert_eq!(codes.len(), e.violations.len(), "each code once");
            for v in &e.violations {
                prop_assert_eq!(v.field(), "query");
                prop_assert!(!v.detail.is_empty());
            }
        }
    }
    if let Entry::Search { query, text } = recognize(input) {
        prop_assert_eq!(parse(&text), Ok(query));
    }
    Ok(())
}

proptest! {
    #[test]
    fn parse_never_panics_on_any_string(input in any::<String>()) {
        any_input_is_handled(&input)?;
    }

    #[test]
    fn parse_never_panics_on_long_strings(input in ".{400,700}") {
        any_input_is_handled(&input)?;
    }

    #[test]
    fn parse_never_panics_on_queryish_strings(input in queryish()) {
        any_input_is_handled(&input)?;
    }

    #[test]
    fn canonical_text_round_trips(q in query()) {
        let text = q.to_string();
        prop_assert_eq!(parse(&text), Ok(q.clone()), "canonical text {:?}", text);
        prop_assert!(text.chars().count() <= periscope_query::MAX_QUERY_CHARS);
        if let Entry::Search { query, text: shown } = recognize(&text) {
            prop_assert_eq!(query, q);
            prop_assert_eq!(shown, text);
        }
    }

    #[test]
    fn clause_order_and_joiners_do_not_matter(
        clauses in filter_clauses().prop_shuffle(),
        joiners in prop::collection::vec(select(vec![" ", "   ", " AND ", "\tAND\n", "\n"]), 2),
        padding in select(vec!["", " ", "\t\n "]),
    ) {
        let mut text = padding.to_owned();
        for (i, c) in clauses.iter().enumerate() {
            if i > 0 {
                text.push_str(joiners[i - 1]);
            }
            text.push_str(&c.to_string());
        }
        text.push_str(padding);
        let want = Query::Filter(FilterQuery::new(clauses).unwrap());
        prop_assert_eq!(parse(&text), Ok(want));
    }

    #[test]
    fn bare_numbers_are_never_guessed(n in "[0-9]{1,40}", pad in select(vec!["", " ", "\t "])) {
        let entry = recognize(&format!("{pad}{n}{pad}"));
        prop_assert!(
            matches!(&entry, Entry::NotGuessed(g) if g.ambiguity == Ambiguity::BareNumber),
            "{:?}", entry
        );
    }

    #[test]
    fn two_letter_words_are_never_guessed(w in "\\p{L}{2}", pad in select(vec!["", " ", "\n"])) {
        let entry = recognize(&format!("{pad}{w}{pad}"));
        prop_assert!(
            matches!(&entry, Entry::NotGuessed(g) if g.ambiguity == Ambiguity::TwoLetterWord),
            "{:?}", entry
        );
    }
}
