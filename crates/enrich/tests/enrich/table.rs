//! The iptoasn TSV layout (`range_start range_end asn country organisation`), from fixtures
//! written by the test: IPv4, IPv6, combined, numeric IPv4 and gzip files, ranges that are not
//! routed, and the order of precedence after a MaxMind ASN file.

use std::io::Write;

use periscope_enrich::{AsnTable, EnrichConfig, EnrichError, Fill};
use periscope_model::Asn;
use periscope_model::record::{AsnAttribution, NetworkProvider};

use crate::support::{TempDir, ip, observation, open, open_err, write_mmdb};

const V4: &str = "\
1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET
1.0.1.0\t1.0.3.255\t0\tNone\tNot routed
8.8.4.0\t8.8.4.255\t15169\tUS\tGOOGLE
8.8.8.0\t8.8.8.255\t15169\tUS\tGOOGLE
9.9.9.0\t9.9.9.255\t19281\tUS\tQUAD9-AS-1
";

const V6: &str = "\
2001:4860::\t2001:4860:ffff:ffff:ffff:ffff:ffff:ffff\t15169\tUS\tGOOGLE
2606:4700::\t2606:4700:ffff:ffff:ffff:ffff:ffff:ffff\t13335\tUS\tCLOUDFLARENET
";

fn entry(table: &AsnTable, address: &str) -> Option<(u32, Option<String>)> {
    table
        .lookup(ip(address))
        .map(|e| (e.asn.get(), e.organization.as_deref().map(str::to_owned)))
}

fn google() -> Option<(u32, Option<String>)> {
    Some((15169, Some("GOOGLE".into())))
}

#[test]
fn ranges_are_found_at_their_bounds_and_not_outside() {
    let dir = TempDir::new("table");
    let combined = format!("{V6}{V4}");
    for (name, text) in [("v4.tsv", V4), ("combined.tsv", combined.as_str())] {
        let table = AsnTable::load(&dir.write(name, text)).expect("a valid table");
        assert_eq!(table.not_routed(), 1, "{name}");
        assert_eq!(entry(&table, "8.8.8.0"), google());
        assert_eq!(entry(&table, "8.8.8.8"), google());
        assert_eq!(entry(&table, "8.8.8.255"), google());
        assert_eq!(entry(&table, "8.8.9.0"), None);
        assert_eq!(entry(&table, "8.8.7.255"), None);
        assert_eq!(
            entry(&table, "1.0.0.1"),
            Some((13335, Some("CLOUDFLARENET".into())))
        );
        // AS 0: not routed, so not found.
        assert_eq!(entry(&table, "1.0.2.1"), None);
        assert_eq!(entry(&table, "0.0.0.1"), None);
        assert_eq!(entry(&table, "255.255.255.255"), None);
        // IPv4-mapped IPv6 is the IPv4 address.
        assert_eq!(entry(&table, "::ffff:8.8.8.8"), google());
    }
    let combined = AsnTable::load(&dir.write("c.tsv", &combined)).expect("valid");
    assert_eq!(combined.len(), 6);
    assert_eq!(entry(&combined, "2001:4860:4860::8888"), google());
    assert_eq!(entry(&combined, "2001:4861::"), None);
    // Families never mix: 8.8.8.8 as a number is not an IPv6 address of the table.
    assert_eq!(entry(&combined, "::808:808"), None);
}

#[test]
fn numeric_ipv4_and_gzip_files_read_alike() {
    let dir = TempDir::new("table-forms");
    let u32_form =
        "16777216\t16777471\t13335\tUS\tCLOUDFLARENET\n134744064\t134744319\t15169\tUS\tGOOGLE\n";
    let table = AsnTable::load(&dir.write("v4-u32.tsv", u32_form)).expect("valid");
    assert_eq!(entry(&table, "8.8.8.8"), google());
    assert_eq!(
        entry(&table, "1.0.0.200"),
        Some((13335, Some("CLOUDFLARENET".into())))
    );

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(V6.as_bytes()).expect("compress");
    let path = dir.write("v6.tsv.gz", gz.finish().expect("compress"));
    let table = AsnTable::load(&path).expect("valid");
    assert_eq!(
        entry(&table, "2606:4700::6810:84e5"),
        Some((13335, Some("CLOUDFLARENET".into())))
    );
}

#[test]
fn the_table_fills_asn_and_provider() {
    let dir = TempDir::new("table-enrich");
    let enricher = open(EnrichConfig {
        asn_table: Some(dir.write("v4.tsv", V4)),
        ..EnrichConfig::default()
    });
    let mut obs = observation("9.9.9.9");
    let outcome = enricher.enrich(&mut obs);
    assert_eq!(
        (outcome.location, outcome.asn),
        (Fill::NotConfigured, Fill::Added)
    );
    assert_eq!(
        obs.host.asn.network,
        Some(AsnAttribution {
            asn: Asn::new(19281).expect("asn"),
            organization: Some("QUAD9-AS-1".into())
        })
    );
    assert_eq!(
        obs.host.provider,
        Some(NetworkProvider {
            as_organization: Some("QUAD9-AS-1".into()),
            ..NetworkProvider::default()
        })
    );
    let mut unrouted = observation("1.0.2.1");
    assert_eq!(enricher.enrich(&mut unrouted).asn, Fill::NotFound);
    let mut private = observation("10.1.1.1");
    assert_eq!(enricher.enrich(&mut private).asn, Fill::Internal);
}

#[test]
fn the_maxmind_asn_file_comes_first_and_the_table_fills_its_gaps() {
    let dir = TempDir::new("precedence");
    let types = serde_json::json!({
        "autonomous_system_number": "uint32", "autonomous_system_organization": "utf8_string",
    });
    let Some(mmdb) = write_mmdb(
        &dir,
        "asn.mmdb",
        serde_json::json!({"database_type": "GeoLite2-ASN", "ip_version": 6, "types": types,
            "networks": [["8.8.8.0/24", {"autonomous_system_number": 15169,
                                         "autonomous_system_organization": "Google LLC"}]]}),
    ) else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_asn: Some(mmdb),
        asn_table: Some(dir.write("v4.tsv", V4)),
        ..EnrichConfig::default()
    });
    let org = |address: &str| {
        let mut obs = observation(address);
        enricher.enrich(&mut obs);
        obs.host.asn.network.and_then(|n| n.organization)
    };
    // Both know 8.8.8.8: the MaxMind file's name wins.
    assert_eq!(org("8.8.8.8").as_deref(), Some("Google LLC"));
    // Only the table knows 9.9.9.9 and 8.8.4.4.
    assert_eq!(org("9.9.9.9").as_deref(), Some("QUAD9-AS-1"));
    assert_eq!(org("8.8.4.4").as_deref(), Some("GOOGLE"));
    assert_eq!(org("7.7.7.7"), None);
}

/// The error a table text gives, as the message a user reads.
fn table_error(text: &str) -> String {
    let dir = TempDir::new("bad-table");
    let path = dir.write("bad.tsv", text);
    let error = open_err(EnrichConfig {
        asn_table: Some(path.clone()),
        ..EnrichConfig::default()
    });
    assert!(matches!(error, EnrichError::Table { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    message
}

#[test]
fn a_malformed_line_is_refused_with_its_line_number() {
    for (text, expected) in [
        (
            "1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET\n1.0.4.0 1.0.7.255 38803 AU GTELECOM\n",
            "line 2: expected 5 tab-separated columns",
        ),
        (
            "1.0.0.0\t1.0.0.255\t13335\tUS\tX\n\n8.8.8.0\t8.8.8.256\t15169\tUS\tGOOGLE\n",
            "line 3: range_end: \"8.8.8.256\" is not an IP address",
        ),
        (
            "8.8.8.255\t8.8.8.0\t15169\tUS\tGOOGLE\n",
            "line 1: range_end 8.8.8.0 is before range_start 8.8.8.255",
        ),
        (
            "8.8.8.0\t8.8.8.255\tAS-GOOGLE\tUS\tGOOGLE\n",
            "line 1: asn: \"AS-GOOGLE\" is not an AS number",
        ),
        (
            "8.8.8.0\t2001:db8::\t15169\tUS\tGOOGLE\n",
            "line 1: range 8.8.8.0-2001:db8:: mixes",
        ),
        (
            "8.8.8.0\t8.8.8.255\t15169\tUS\tGOOGLE\n1.0.0.0\t1.0.0.255\t13335\tUS\tX\n8.8.8.128\t8.8.9.0\t1\tUS\tY\n",
            "line 3: range 8.8.8.128-8.8.9.0 overlaps 8.8.8.0-8.8.8.255 of line 1",
        ),
    ] {
        let message = table_error(text);
        assert!(
            message.contains(expected),
            "{message:?} should contain {expected:?}"
        );
    }
}
