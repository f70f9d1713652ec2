//! Files that cannot be used are refused by `Enricher::open`, naming the file, before any
//! observation is read: missing, not a MaxMind DB, a database of the wrong type.

use periscope_enrich::{EnrichConfig, EnrichError};
use serde_json::json;

use crate::support::{TempDir, geolite2_city, open_err, write_mmdb};

/// Asserts the message names the setting and the file, and contains `expected`.
fn check(error: &EnrichError, role: &str, path: &std::path::Path, expected: &str) {
    let message = error.to_string();
    assert!(message.contains(role), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains(expected),
        "{message:?} should contain {expected:?}"
    );
}

#[test]
fn a_missing_file_is_refused_naming_it() {
    let dir = TempDir::new("missing");
    let missing = dir.path("GeoLite2-City.mmdb");
    for (config, role) in [
        (
            EnrichConfig {
                geoip_city: Some(missing.clone()),
                ..EnrichConfig::default()
            },
            "geoip_city",
        ),
        (
            EnrichConfig {
                geoip_asn: Some(missing.clone()),
                ..EnrichConfig::default()
            },
            "geoip_asn",
        ),
        (
            EnrichConfig {
                asn_table: Some(missing.clone()),
                ..EnrichConfig::default()
            },
            "asn_table",
        ),
    ] {
        let error = open_err(config);
        assert!(matches!(error, EnrichError::Unreadable { .. }), "{error:?}");
        check(&error, role, &missing, "No such file");
    }
    // A directory is not a readable file either.
    let error = open_err(EnrichConfig {
        geoip_city: Some(dir.path("")),
        ..EnrichConfig::default()
    });
    assert!(matches!(error, EnrichError::Unreadable { .. }), "{error:?}");
}

#[test]
fn a_file_that_is_not_a_maxmind_db_is_refused() {
    let dir = TempDir::new("not-mmdb");
    let text = dir.write(
        "ip2asn-v4.tsv",
        "1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET\n",
    );
    let error = open_err(EnrichConfig {
        geoip_asn: Some(text.clone()),
        ..EnrichConfig::default()
    });
    assert!(matches!(error, EnrichError::NotMaxMind { .. }), "{error:?}");
    check(
        &error,
        "geoip_asn",
        &text,
        "is not a readable MaxMind DB file",
    );
}

#[test]
fn a_database_of_the_wrong_type_is_refused() {
    let dir = TempDir::new("wrong-type");
    let types = json!({"autonomous_system_number": "uint32", "is_anonymous": "boolean"});
    let Some(asn) = write_mmdb(
        &dir,
        "GeoLite2-ASN.mmdb",
        json!({"database_type": "GeoLite2-ASN", "ip_version": 6, "types": types,
               "networks": [["8.8.8.0/24", {"autonomous_system_number": 15169}]]}),
    ) else {
        return;
    };
    let Some(anonymous) = write_mmdb(
        &dir,
        "GeoIP2-Anonymous-IP.mmdb",
        json!({"database_type": "GeoIP2-Anonymous-IP", "ip_version": 6, "types": types,
               "networks": [["8.8.8.0/24", {"is_anonymous": true}]]}),
    ) else {
        return;
    };
    // The ASN file given as the location database: a swapped pair of settings.
    let error = open_err(EnrichConfig {
        geoip_city: Some(asn.clone()),
        ..EnrichConfig::default()
    });
    assert!(
        matches!(error, EnrichError::WrongDatabaseType { .. }),
        "{error:?}"
    );
    check(&error, "geoip_city", &asn, "is a \"GeoLite2-ASN\" database");
    check(&error, "geoip_city", &asn, "needs a location database");

    let error = open_err(EnrichConfig {
        geoip_asn: Some(anonymous.clone()),
        ..EnrichConfig::default()
    });
    check(&error, "geoip_asn", &anonymous, "needs an ASN database");

    // The real GeoLite2 City file given as the ASN database.
    if let Some((v4, _)) = geolite2_city() {
        let error = open_err(EnrichConfig {
            geoip_asn: Some(v4.clone()),
            ..EnrichConfig::default()
        });
        check(&error, "geoip_asn", &v4, "is a \"city ipv4\" database");
    }
}

#[test]
fn the_first_bad_file_stops_open_even_when_others_are_good() {
    let dir = TempDir::new("first-bad");
    let table = dir.write(
        "ip2asn.tsv",
        "1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET\n",
    );
    let missing = dir.path("GeoLite2-ASN.mmdb");
    let error = open_err(EnrichConfig {
        geoip_asn: Some(missing.clone()),
        asn_table: Some(table),
        ..EnrichConfig::default()
    });
    check(&error, "geoip_asn", &missing, "cannot read");
}

#[test]
fn the_config_section_reads_its_three_keys_and_refuses_others() {
    let config: EnrichConfig = serde_json::from_value(json!({
        "geoip_city": "/var/lib/geoip/GeoLite2-City.mmdb",
        "asn_table": "/var/lib/geoip/ip2asn-combined.tsv.gz",
    }))
    .expect("a valid section");
    assert_eq!(
        config.geoip_city.as_deref(),
        Some(std::path::Path::new("/var/lib/geoip/GeoLite2-City.mmdb"))
    );
    assert_eq!(config.geoip_asn, None);
    assert!(!config.is_empty());
    assert!(EnrichConfig::default().is_empty());
    let error = serde_json::from_value::<EnrichConfig>(json!({"geoip_country": "x.mmdb"}))
        .expect_err("an unknown key");
    assert!(error.to_string().contains("geoip_country"), "{error}");
}
