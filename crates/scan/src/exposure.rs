//! Exposure: the matching hosts counted, and those with a position placed into web-mercator
//! tiles at the resolution's zoom ([`tile_of`]), each tile a bucket with its centroid, hosts,
//! services and dominant country; at most [`MAX_BUCKETS`], most hosts first.

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

/// One tile's sums: positions summed in host order, hosts, services and hosts per country.
#[derive(Default)]
pub struct Tile {
    /// Latitudes of the tile's hosts, summed in host order.
    pub latitude_sum: f64,
    /// Longitudes, summed in host order.
    pub longitude_sum: f64,
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
        tile.latitude_sum += position.latitude;
        tile.longitude_sum += position.longitude;
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
            latitude: t.latitude_sum / t.hosts as f64,
            longitude: t.longitude_sum / t.hosts as f64,
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
