//! Exposure: the matching hosts counted, and those with a position placed into web-mercator
//! tiles at the resolution's zoom ([`tile_of`]), each tile a bucket with its centroid, hosts,
//! services and dominant country; at most [`MAX_BUCKETS`], most hosts first.
//!
//! A centroid is the mean of its hosts' positions in whole micro-degrees ([`micro_degrees`]):
//! integer sums are the same in any order, so every engine (one pass in host order, hashed
//! groups, a sum over shards) gives the same bucket to the last bit without sorting anything.

use std::collections::BTreeMap;
use std::f64::consts::PI;

use periscope_model::CountryCode;
use periscope_model::record::Position;
use periscope_query::Resolution;

use crate::api::{Count, Exposure, ExposureBucket};
use crate::matching::{Hit, Matcher, satisfies_all};

/// The most buckets one answer holds.
pub const MAX_BUCKETS: usize = 500;

/// The latitude web-mercator tiles stop at, north and south.
const MAX_LATITUDE: f64 = 85.051_128_78;

/// The web-mercator tile `(x, y)` holding a position at `zoom`: the world is `2^zoom` tiles
/// across and down, x growing east from longitude -180, y growing south from the top edge.
/// Latitude is clamped to ±85.05112878; the east and south edges fall in the last tile.
pub fn tile_of(latitude: f64, longitude: f64, zoom: u8) -> (u32, u32) {
    let n = 2f64.powi(i32::from(zoom));
    let lat = latitude.clamp(-MAX_LATITUDE, MAX_LATITUDE).to_radians();
    let x = ((longitude + 180.0) / 360.0 * n).floor();
    let y = ((1.0 - (lat.tan() + 1.0 / lat.cos()).ln() / PI) / 2.0 * n).floor();
    let last = n - 1.0;
    // Both are clamped to 0..=2^zoom-1, so the casts are exact.
    (x.clamp(0.0, last) as u32, y.clamp(0.0, last) as u32)
}

/// Micro-degrees per degree: the unit in which centroids are summed.
pub const MICRO_DEGREES: f64 = 1e6;

/// A latitude or longitude in whole micro-degrees (about 11 cm at the equator), rounded to
/// the nearest, half away from zero: what a centroid sums. Stored positions lie within
/// ±180°, so the value fits an `i32`, and the sums of any number of hosts an engine can hold
/// fit an `i64`.
pub fn micro_degrees(degrees: f64) -> i32 {
    // Clamped to ±180°, so the cast is exact.
    (degrees.clamp(-180.0, 180.0) * MICRO_DEGREES).round() as i32
}

/// One tile's sums: positions in micro-degrees, hosts, services and hosts per country.
#[derive(Default)]
pub struct Tile {
    /// The [`micro_degrees`] of the tile's hosts' latitudes, summed.
    pub latitude_sum: i64,
    /// The [`micro_degrees`] of their longitudes, summed.
    pub longitude_sum: i64,
    /// Hosts in the tile.
    pub hosts: u64,
    /// Services counted for those hosts.
    pub services: u64,
    /// Hosts per GeoIP country.
    pub countries: BTreeMap<CountryCode, u32>,
}

/// What exposure needs of one matching host.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// The stored position, if any.
    pub position: Option<Position>,
    /// The GeoIP country.
    pub country: Option<CountryCode>,
    /// The services counted for the host (see the semantics doc).
    pub services: u64,
}

/// The services counted for a matching host: those satisfying every service-level clause
/// of the query, or all its current services when it has none.
fn services_of(clauses: &[periscope_query::Clause], hit: &Hit<'_>) -> u64 {
    let services = &hit.view.services;
    let n = if clauses.is_empty() {
        services.len()
    } else {
        services
            .iter()
            .filter(|s| satisfies_all(clauses, s))
            .count()
    };
    n as u64
}

/// The exposure answer over `hits`, every host matching `matcher`'s query.
pub fn exposure(matcher: &Matcher<'_>, hits: &[Hit<'_>], resolution: Resolution) -> Exposure {
    let clauses = matcher.service_clauses();
    exposure_of(
        hits.iter().map(|hit| Point {
            position: hit.view.rec.position.as_ref().map(|(p, _)| *p),
            country: hit.view.country(),
            services: services_of(clauses, hit),
        }),
        resolution,
    )
}

/// The exposure answer over the matching hosts, given as points.
pub fn exposure_of(points: impl IntoIterator<Item = Point>, resolution: Resolution) -> Exposure {
    let zoom = resolution.geotile_precision();
    let mut tiles: BTreeMap<(u32, u32), Tile> = BTreeMap::new();
    let mut service_count = 0;
    let mut unique_hosts = 0;
    for point in points {
        unique_hosts += 1;
        service_count += point.services;
        let Some(position) = point.position else {
            continue;
        };
        let tile = tiles
            .entry(tile_of(position.latitude, position.longitude, zoom))
            .or_default();
        tile.latitude_sum += i64::from(micro_degrees(position.latitude));
        tile.longitude_sum += i64::from(micro_degrees(position.longitude));
        tile.hosts += 1;
        tile.services += point.services;
        if let Some(country) = point.country {
            *tile.countries.entry(country).or_default() += 1;
        }
    }
    answer(tiles, zoom, unique_hosts, service_count, resolution)
}

/// The exposure answer from the tiles (by `(x, y)` at `zoom`) and the totals.
pub fn answer(
    tiles: BTreeMap<(u32, u32), Tile>,
    zoom: u8,
    unique_hosts: u64,
    service_count: u64,
    resolution: Resolution,
) -> Exposure {
    let mut buckets: Vec<ExposureBucket> = tiles
        .into_iter()
        .map(|((x, y), t)| ExposureBucket {
            key: format!("{zoom}/{x}/{y}"),
            latitude: centroid(t.latitude_sum, t.hosts),
            longitude: centroid(t.longitude_sum, t.hosts),
            unique_hosts: t.hosts,
            service_count: t.services,
            country: dominant(&t.countries),
        })
        .collect();
    buckets.sort_by(|a, b| {
        b.unique_hosts
            .cmp(&a.unique_hosts)
            .then_with(|| a.key.cmp(&b.key))
    });
    let bounded = buckets.len() > MAX_BUCKETS;
    buckets.truncate(MAX_BUCKETS);
    Exposure {
        unique_hosts: Count::exact(unique_hosts),
        service_count,
        resolution,
        buckets,
        bounded,
    }
}

/// The mean in degrees of `hosts` coordinates summing to `sum` micro-degrees.
fn centroid(sum: i64, hosts: u64) -> f64 {
    sum as f64 / hosts as f64 / MICRO_DEGREES
}

/// The most common country (ties: the smallest code) and the number of distinct countries.
fn dominant(countries: &BTreeMap<CountryCode, u32>) -> Option<(CountryCode, u32)> {
    let mut best: Option<(CountryCode, u32)> = None;
    for (code, n) in countries {
        if best.is_none_or(|(_, m)| *n > m) {
            best = Some((*code, *n));
        }
    }
    best.map(|(code, _)| (code, countries.len() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_tiles() {
        let cases: &[(f64, f64, u8, (u32, u32))] = &[
            (0.0, 0.0, 4, (8, 8)),
            (0.0, 0.0, 0, (0, 0)),
            (85.051_128_78, -180.0, 4, (0, 0)),
            (90.0, -180.0, 6, (0, 0)),
            (-90.0, 180.0, 4, (15, 15)),
            (-85.0, 179.999, 8, (255, 255)),
            // Munich, New York, Sydney: the OpenStreetMap tiles holding them.
            (48.1374, 11.5755, 8, (136, 88)),
            (40.7128, -74.0060, 4, (4, 6)),
            (-33.8688, 151.2093, 6, (58, 38)),
            // Just either side of the prime meridian and the equator.
            (0.001, -0.001, 4, (7, 7)),
            (-0.001, 0.001, 4, (8, 8)),
        ];
        for (lat, lon, zoom, want) in cases {
            assert_eq!(tile_of(*lat, *lon, *zoom), *want, "{lat} {lon} at {zoom}");
        }
    }

    #[test]
    fn micro_degrees_round_to_the_nearest() {
        assert_eq!(micro_degrees(0.0), 0);
        assert_eq!(micro_degrees(48.137_4), 48_137_400);
        assert_eq!(micro_degrees(-33.868_8), -33_868_800);
        assert_eq!(micro_degrees(0.000_000_4), 0);
        assert_eq!(micro_degrees(0.000_000_6), 1);
        assert_eq!(micro_degrees(-0.000_000_6), -1);
        assert_eq!(micro_degrees(180.0), 180_000_000);
        assert_eq!(micro_degrees(-180.0), -180_000_000);
    }

    #[test]
    fn centroids_do_not_depend_on_the_order_of_hosts() {
        // Three positions whose f64 sum depends on the order of addition.
        let at = |latitude: f64| Point {
            position: Some(Position {
                latitude,
                longitude: latitude / 2.0,
                accuracy_radius_km: None,
            }),
            country: None,
            services: 1,
        };
        let values = [0.1, 0.2, 0.3];
        assert_ne!(
            (values[0] + values[1]) + values[2],
            values[0] + (values[1] + values[2])
        );
        let forward = exposure_of(values.map(at), Resolution::Global);
        let backward = exposure_of(
            [values[2], values[1], values[0]].map(at),
            Resolution::Global,
        );
        assert_eq!(forward.buckets.len(), 1);
        assert_eq!(forward.buckets, backward.buckets);
        let bucket = &forward.buckets[0];
        assert_eq!(bucket.latitude, 600_000.0 / 3.0 / MICRO_DEGREES);
        assert_eq!(bucket.longitude, 300_000.0 / 3.0 / MICRO_DEGREES);
    }

    #[test]
    fn dominant_country_breaks_ties_by_code() {
        let de = CountryCode::parse("DE").unwrap();
        let fr = CountryCode::parse("FR").unwrap();
        let nl = CountryCode::parse("NL").unwrap();
        assert_eq!(dominant(&BTreeMap::new()), None);
        assert_eq!(
            dominant(&BTreeMap::from([(fr, 2), (de, 2), (nl, 1)])),
            Some((de, 3))
        );
        assert_eq!(dominant(&BTreeMap::from([(fr, 3), (de, 2)])), Some((fr, 2)));
    }
}
