//! The record layouts of each vendor, in MaxMind DB files the test writes with Debian's
//! `libmaxmind-db-writer-perl`: MaxMind City (nested, with subdivisions and an accuracy
//! radius), DB-IP City Lite (the same layout), IPinfo Lite (flat, `asn` as text), GeoLite2 ASN,
//! GeoIP2 ISP, and what happens to values the observation format refuses.

use periscope_enrich::{EnrichConfig, EnrichStats, Fill};
use periscope_model::record::{AsnAttribution, Location, NetworkProvider, Position};
use periscope_model::{Asn, CountryCode};
use serde_json::{Value, json};

use crate::support::{TempDir, assert_valid, observation, observation_with_host, open, write_mmdb};

fn maxmind_city_types() -> Value {
    json!({
        "city": "map", "continent": "map", "country": "map", "registered_country": "map",
        "location": "map", "subdivisions": ["array", "map"], "names": "map",
        "en": "utf8_string", "de": "utf8_string", "iso_code": "utf8_string",
        "code": "utf8_string", "geoname_id": "uint32", "latitude": "double",
        "longitude": "double", "accuracy_radius": "uint16", "time_zone": "utf8_string",
    })
}

fn names(en: &str) -> Value {
    json!({"en": en, "de": format!("{en} (de)")})
}

/// A GeoIP2 City record of Munich, in MaxMind's layout.
fn munich() -> Value {
    json!({
        "continent": {"code": "EU", "geoname_id": 6255148, "names": names("Europe")},
        "country": {"iso_code": "DE", "geoname_id": 2921044, "names": names("Germany")},
        "registered_country": {"iso_code": "DE", "names": names("Germany")},
        "subdivisions": [
            {"iso_code": "BY", "names": names("Bavaria")},
            {"iso_code": "091", "names": names("Upper Bavaria")},
        ],
        "city": {"geoname_id": 2867714, "names": names("Munich")},
        "location": {"latitude": 48.1374, "longitude": 11.5755, "accuracy_radius": 20,
                     "time_zone": "Europe/Berlin"},
    })
}

fn munich_location() -> Location {
    Location {
        continent: Some("Europe".into()),
        country_code: Some(CountryCode::parse("DE").expect("DE")),
        country_name: Some("Germany".into()),
        subdivision_1: Some("Bavaria".into()),
        subdivision_2: Some("Upper Bavaria".into()),
        city: Some("Munich".into()),
        position: Some(Position {
            latitude: 48.1374,
            longitude: 11.5755,
            accuracy_radius_km: Some(20),
        }),
    }
}

fn asn(n: u32, org: &str) -> AsnAttribution {
    AsnAttribution {
        asn: Asn::new(n).expect("an AS number"),
        organization: Some(org.into()),
    }
}

#[test]
fn maxmind_and_dbip_city_layouts_fill_every_location_field() {
    let dir = TempDir::new("city");
    for database_type in ["GeoIP2-City", "GeoLite2-City", "DBIP-City-Lite"] {
        let Some(file) = write_mmdb(
            &dir,
            &format!("{database_type}.mmdb"),
            json!({
                "database_type": database_type, "ip_version": 6,
                "types": maxmind_city_types(),
                "networks": [["81.169.145.0/24", munich()], ["2a01:238::/32", munich()]],
            }),
        ) else {
            return;
        };
        let enricher = open(EnrichConfig {
            geoip_city: Some(file),
            ..EnrichConfig::default()
        });
        assert_eq!(
            enricher
                .location_database()
                .map(|k| k.database_type.as_str()),
            Some(database_type)
        );
        for ip in ["81.169.145.7", "2a01:238:4000::1", "::ffff:81.169.145.7"] {
            let mut obs = observation(ip);
            let outcome = enricher.enrich(&mut obs);
            assert_eq!(outcome.location, Fill::Added, "{database_type} {ip}");
            assert_eq!(
                obs.host.location,
                Some(munich_location()),
                "{database_type} {ip}"
            );
        }
        let mut outside = observation("81.169.146.1");
        assert_eq!(enricher.enrich(&mut outside).location, Fill::NotFound);
        assert_eq!(outside.host.location, None);
    }
}

#[test]
fn a_country_database_fills_continent_and_country() {
    let dir = TempDir::new("country");
    let record = json!({
        "continent": {"code": "EU", "names": names("Europe")},
        "country": {"iso_code": "FR", "names": names("France")},
    });
    let Some(file) = write_mmdb(
        &dir,
        "country.mmdb",
        json!({"database_type": "GeoLite2-Country", "ip_version": 4,
               "types": maxmind_city_types(), "networks": [["90.0.0.0/9", record]]}),
    ) else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_city: Some(file),
        ..EnrichConfig::default()
    });
    let mut obs = observation("90.12.34.56");
    enricher.enrich(&mut obs);
    assert_eq!(
        obs.host.location,
        Some(Location {
            continent: Some("Europe".into()),
            country_code: Some(CountryCode::parse("FR").expect("FR")),
            country_name: Some("France".into()),
            ..Location::default()
        })
    );
}

#[test]
fn ipinfo_lite_gives_country_and_asn_from_one_file() {
    let dir = TempDir::new("ipinfo");
    let types = json!({
        "asn": "utf8_string", "as_name": "utf8_string", "as_domain": "utf8_string",
        "country_code": "utf8_string", "country": "utf8_string",
        "continent_code": "utf8_string", "continent": "utf8_string",
    });
    let cloudflare = json!({
        "asn": "AS13335", "as_name": "Cloudflare, Inc.", "as_domain": "cloudflare.com",
        "country_code": "AU", "country": "Australia",
        "continent_code": "OC", "continent": "Oceania",
    });
    let Some(file) = write_mmdb(
        &dir,
        "ipinfo_lite.mmdb",
        json!({"database_type": "ipinfo lite.mmdb", "ip_version": 6, "types": types,
               "networks": [["1.1.1.0/24", cloudflare]]}),
    ) else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_city: Some(file.clone()),
        geoip_asn: Some(file),
        ..EnrichConfig::default()
    });
    let mut obs = observation("1.1.1.1");
    let outcome = enricher.enrich(&mut obs);
    assert_eq!((outcome.location, outcome.asn), (Fill::Added, Fill::Added));
    assert_eq!(
        obs.host.location,
        Some(Location {
            continent: Some("Oceania".into()),
            country_code: Some(CountryCode::parse("AU").expect("AU")),
            country_name: Some("Australia".into()),
            ..Location::default()
        })
    );
    assert_eq!(obs.host.asn.network, Some(asn(13335, "Cloudflare, Inc.")));
    assert_valid(&obs);
    assert_eq!(
        obs.host.provider,
        Some(NetworkProvider {
            as_organization: Some("Cloudflare, Inc.".into()),
            ..NetworkProvider::default()
        })
    );
}

fn asn_types() -> Value {
    json!({
        "autonomous_system_number": "uint32", "autonomous_system_organization": "utf8_string",
        "isp": "utf8_string", "organization": "utf8_string",
    })
}

/// A GeoLite2 ASN file of Google's and Quad9's networks.
fn geolite2_asn(dir: &TempDir) -> Option<std::path::PathBuf> {
    let google =
        json!({"autonomous_system_number": 15169, "autonomous_system_organization": "GOOGLE"});
    let quad9 =
        json!({"autonomous_system_number": 19281, "autonomous_system_organization": "QUAD9-AS-1"});
    write_mmdb(
        dir,
        "GeoLite2-ASN.mmdb",
        json!({"database_type": "GeoLite2-ASN", "ip_version": 6, "types": asn_types(),
               "networks": [["8.8.8.0/24", google], ["2001:4860::/32", google],
                            ["9.9.9.0/24", quad9]]}),
    )
}

#[test]
fn geolite2_asn_fills_the_network_asn_and_the_provider() {
    let dir = TempDir::new("asn");
    let Some(file) = geolite2_asn(&dir) else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_asn: Some(file),
        ..EnrichConfig::default()
    });
    for (ip, expected) in [
        ("8.8.8.8", Some(asn(15169, "GOOGLE"))),
        ("2001:4860:4860::8888", Some(asn(15169, "GOOGLE"))),
        ("9.9.9.9", Some(asn(19281, "QUAD9-AS-1"))),
        ("9.9.10.1", None),
    ] {
        let mut obs = observation(ip);
        let outcome = enricher.enrich(&mut obs);
        let fill = if expected.is_some() {
            Fill::Added
        } else {
            Fill::NotFound
        };
        assert_eq!(outcome.asn, fill, "{ip}");
        assert_eq!(outcome.location, Fill::NotConfigured, "{ip}");
        assert_eq!(
            obs.host
                .provider
                .as_ref()
                .and_then(|p| p.as_organization.clone()),
            expected.as_ref().and_then(|a| a.organization.clone()),
            "{ip}"
        );
        assert_eq!(obs.host.asn.network, expected, "{ip}");
        assert_valid(&obs);
        // The other attributions belong to other sources.
        assert_eq!((obs.host.asn.research, obs.host.asn.bgp), (None, None));
    }
}

#[test]
fn an_asn_or_provider_the_observation_carries_is_kept() {
    let dir = TempDir::new("asn-kept");
    let Some(file) = geolite2_asn(&dir) else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_asn: Some(file),
        ..EnrichConfig::default()
    });
    let mut carried = observation_with_host(
        "8.8.8.8",
        r#"{"asn":{"network":{"asn":64512,"organization":"Scanner's own"}}}"#,
    );
    assert_eq!(enricher.enrich(&mut carried).asn, Fill::Kept);
    assert_eq!(carried.host.asn.network, Some(asn(64512, "Scanner's own")));
    assert_eq!(carried.host.provider, None);

    // A provider block of its own is kept too, while the missing ASN is filled.
    let mut provider = observation_with_host("8.8.8.8", r#"{"provider":{"isp":"Export's ISP"}}"#);
    assert_eq!(enricher.enrich(&mut provider).asn, Fill::Added);
    assert_eq!(provider.host.asn.network, Some(asn(15169, "GOOGLE")));
    assert_eq!(
        provider.host.provider,
        Some(NetworkProvider {
            isp: Some("Export's ISP".into()),
            ..NetworkProvider::default()
        })
    );
}

#[test]
fn geoip2_isp_fills_isp_and_organization() {
    let dir = TempDir::new("isp");
    let record = json!({
        "autonomous_system_number": 3320, "autonomous_system_organization": "Deutsche Telekom AG",
        "isp": "Deutsche Telekom", "organization": "Deutsche Telekom AG",
    });
    let Some(file) = write_mmdb(
        &dir,
        "isp.mmdb",
        json!({"database_type": "GeoIP2-ISP", "ip_version": 6, "types": asn_types(),
               "networks": [["80.128.0.0/11", record]]}),
    ) else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_asn: Some(file),
        ..EnrichConfig::default()
    });
    let mut obs = observation("80.130.1.2");
    enricher.enrich(&mut obs);
    assert_eq!(obs.host.asn.network, Some(asn(3320, "Deutsche Telekom AG")));
    assert_eq!(
        obs.host.provider,
        Some(NetworkProvider {
            organization: Some("Deutsche Telekom AG".into()),
            as_organization: Some("Deutsche Telekom AG".into()),
            isp: Some("Deutsche Telekom".into()),
        })
    );
}

#[test]
fn values_the_format_refuses_are_dropped_and_counted() {
    let dir = TempDir::new("refused");
    let types = json!({
        "country_code": "utf8_string", "city": "utf8_string", "state1": "utf8_string",
        "state2": "utf8_string", "latitude": "float", "longitude": "float",
    });
    // ip-location-db's flat layout, with an unassigned country code, an over-long city name
    // and a latitude out of range; the subdivision survives.
    let bad = json!({"country_code": "EU", "city": "x".repeat(200), "state1": "Somewhere",
                     "state2": "", "latitude": 95.0, "longitude": 10.0});
    let good = json!({"country_code": "CH", "city": "Zurich", "state1": "Zurich",
                      "state2": "", "latitude": 47.3976, "longitude": 8.5442});
    let Some(file) = write_mmdb(
        &dir,
        "flat.mmdb",
        json!({"database_type": "city", "ip_version": 4, "types": types,
               "networks": [["5.0.0.0/8", bad], ["129.132.0.0/16", good]]}),
    ) else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_city: Some(file),
        ..EnrichConfig::default()
    });
    let mut stats = EnrichStats::default();

    let mut obs = observation("5.1.2.3");
    let outcome = enricher.enrich(&mut obs);
    stats.record(&outcome);
    assert_eq!(outcome.dropped_values, 3, "{outcome:?}");
    assert_valid(&obs);
    assert_eq!(
        obs.host.location,
        Some(Location {
            subdivision_1: Some("Somewhere".into()),
            ..Location::default()
        })
    );

    let mut zurich = observation("129.132.1.1");
    let outcome = enricher.enrich(&mut zurich);
    stats.record(&outcome);
    assert_eq!(outcome.dropped_values, 0);
    let location = zurich.host.location.expect("located");
    assert_eq!(
        location.country_code.map(|c| c.to_string()).as_deref(),
        Some("CH")
    );
    assert_eq!(location.city.as_deref(), Some("Zurich"));
    // Written as 32-bit floats, as ip-location-db does.
    let position = location.position.expect("a position");
    assert!((position.latitude - 47.3976).abs() < 1e-4, "{position:?}");
    assert_eq!(position.accuracy_radius_km, None);

    assert_eq!(stats.location_added, 2);
    assert_eq!(stats.dropped_values, 3);
    assert!(stats.to_string().contains("values dropped 3"), "{stats}");
}

#[test]
fn a_damaged_record_is_counted_as_a_failure_not_a_panic() {
    let dir = TempDir::new("damaged");
    let Some(file) = geolite2_asn(&dir) else {
        return;
    };
    // Break the control byte of the string "QUAD9-AS-1" (type 2, length 10: 0x4a) into an
    // extended type that does not exist; the file still opens, the record does not decode.
    let mut bytes = std::fs::read(&file).expect("read the file");
    let at = bytes
        .windows(10)
        .position(|w| w == b"QUAD9-AS-1")
        .expect("the organisation is in the file");
    assert_eq!(bytes[at - 1], 0x4a);
    bytes[at - 1] = 0x00;
    bytes[at] = 0xff;
    let damaged = dir.write("damaged.mmdb", bytes);
    let enricher = open(EnrichConfig {
        geoip_asn: Some(damaged),
        ..EnrichConfig::default()
    });
    let mut stats = EnrichStats::default();
    let mut quad9 = observation("9.9.9.9");
    let outcome = enricher.enrich(&mut quad9);
    stats.record(&outcome);
    assert_eq!(outcome.asn, Fill::Failed, "{outcome:?}");
    assert!(
        outcome
            .failure
            .as_deref()
            .is_some_and(|f| f.starts_with("9.9.9.9: ")),
        "{outcome:?}"
    );
    assert_eq!(quad9.host.asn.network, None);
    // The undamaged record still reads.
    let mut google = observation("8.8.8.8");
    stats.record(&enricher.enrich(&mut google));
    assert_eq!(google.host.asn.network, Some(asn(15169, "GOOGLE")));
    assert_eq!((stats.failures, stats.asn_added), (1, 1));
    assert!(
        stats
            .to_string()
            .contains("failed lookups 1 (first: 9.9.9.9: "),
        "{stats}"
    );

    // With an iptoasn table as well, the table answers for the damaged record.
    let with_table = open(EnrichConfig {
        geoip_asn: Some(dir.path("damaged.mmdb")),
        asn_table: Some(dir.write("t.tsv", "9.9.9.0\t9.9.9.255\t19281\tUS\tQUAD9-AS-1\n")),
        ..EnrichConfig::default()
    });
    let mut quad9 = observation("9.9.9.9");
    let outcome = with_table.enrich(&mut quad9);
    assert_eq!((outcome.asn, outcome.failure), (Fill::Added, None));
    assert_eq!(quad9.host.asn.network, Some(asn(19281, "QUAD9-AS-1")));
}

#[test]
fn domain_lines_are_left_alone_and_the_enricher_is_shared_by_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<periscope_enrich::Enricher>();
    let enricher = open(EnrichConfig::default());
    assert!(enricher.is_empty());
    let now = periscope_model::Timestamp::parse("2026-11-25T00:00:00Z").expect("a timestamp");
    let line = r#"{"kind":"domain","name":"example.com","addresses":["8.8.8.8"],"observed_at":"2026-11-20T12:00:00Z"}"#;
    let mut domain = periscope_model::observation::ObservationReader::new(now)
        .read_line(line)
        .expect("a domain line")
        .expect("not blank");
    let before = domain.clone();
    assert_eq!(enricher.enrich_observation(&mut domain), None);
    assert_eq!(domain, before);
}

#[test]
fn older_ipinfo_files_write_codes_where_lite_writes_names() {
    let dir = TempDir::new("ipinfo-old");
    let types = json!({
        "country": "utf8_string", "country_name": "utf8_string", "continent": "utf8_string",
        "continent_name": "utf8_string", "asn": "utf8_string", "as_name": "utf8_string",
    });
    // IPinfo's former free "country_asn" file: codes in `country` and `continent`.
    let telia = json!({"country": "SE", "country_name": "Sweden", "continent": "EU",
                       "asn": "AS1299", "as_name": "Arelion Sweden AB"});
    // A continent given only as a code is named as MaxMind names it.
    let ntt = json!({"country": "JP", "continent": "AS"});
    let Some(file) = write_mmdb(
        &dir,
        "country_asn.mmdb",
        json!({"database_type": "ipinfo country_asn.mmdb", "ip_version": 6, "types": types,
               "networks": [["62.115.0.0/16", telia], ["61.112.0.0/12", ntt]]}),
    ) else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_city: Some(file.clone()),
        geoip_asn: Some(file),
        ..EnrichConfig::default()
    });
    let mut obs = observation("62.115.1.1");
    enricher.enrich(&mut obs);
    assert_eq!(
        obs.host.location,
        Some(Location {
            continent: Some("Europe".into()),
            country_code: Some(CountryCode::parse("SE").expect("SE")),
            country_name: Some("Sweden".into()),
            ..Location::default()
        })
    );
    assert_eq!(obs.host.asn.network, Some(asn(1299, "Arelion Sweden AB")));
    assert_valid(&obs);

    let mut obs = observation("61.113.1.1");
    enricher.enrich(&mut obs);
    let location = obs.host.location.expect("located");
    assert_eq!(location.continent.as_deref(), Some("Asia"));
    assert_eq!(
        location.country_code.map(|c| c.to_string()).as_deref(),
        Some("JP")
    );
    assert_eq!(location.country_name, None);
}
