//! Exposure in SQL, three statements: the totals over every matching host (hosts, and the
//! services counted for each — those satisfying the query's service-level clauses, or all
//! current services when it has none); per tile, the positioned hosts, their services and
//! their latitudes and longitudes summed in host order; per tile and country, the hosts.
//! Buckets, centroids, the dominant country and the 500-bucket bound are
//! `periscope-scan`'s [`answer`], the reference's own code.
//!
//! Exactness: tiles were computed by the shared `tile_of` when the position was written,
//! and positions are stored as the bytes of the `f64`. The centroid sums are `arraySum` over
//! the tile's values sorted by address — a left-to-right sum in host order, as the
//! reference adds them — and come back as the bytes of the `f64`, so the bucket answers are
//! the reference's bit for bit.

use std::collections::BTreeMap;

use periscope_query::{Query, Resolution};
use periscope_scan::api::{Exposure, IndexError};
use periscope_scan::exposure::{Tile, answer};

use crate::client::Client;
use crate::query::{NEWEST, Statement};
use crate::rows::{FACT_LOCATION, FACT_POSITION, RESOLUTIONS};

fn bad(what: &str, field: &[u8]) -> IndexError {
    IndexError::Unavailable(format!(
        "ClickHouse answered something unexpected: {what} {:?}",
        String::from_utf8_lossy(field)
    ))
}

fn number<T: std::str::FromStr>(field: &[u8]) -> Result<T, IndexError> {
    std::str::from_utf8(field)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| bad("a number", field))
}

/// An `f64` from the hex of its 8 little-endian bytes.
fn float(field: &[u8]) -> Result<f64, IndexError> {
    let text = std::str::from_utf8(field).map_err(|_| bad("float bytes", field))?;
    let bytes = crate::sql::unhex(text).map_err(|_| bad("float bytes", field))?;
    let bytes: [u8; 8] = bytes.try_into().map_err(|_| bad("float bytes", field))?;
    Ok(f64::from_le_bytes(bytes))
}

fn tile_key(field: &[u8]) -> Result<(u32, u32), IndexError> {
    let text = std::str::from_utf8(field).map_err(|_| bad("a tile", field))?;
    let (x, y) = text.split_once('/').ok_or_else(|| bad("a tile", field))?;
    Ok((
        x.parse().map_err(|_| bad("a tile", field))?,
        y.parse().map_err(|_| bad("a tile", field))?,
    ))
}

/// The exposure answer of `query` at `resolution`.
pub fn exposure(
    client: &Client,
    statement: &Statement<'_>,
    query: &Query,
    resolution: Resolution,
) -> Result<Exposure, IndexError> {
    let db = statement.db;
    let index = RESOLUTIONS
        .iter()
        .position(|r| *r == resolution)
        .map_or(1, |i| i + 1);
    let (services, host) = statement.current_services(query, &[], None);
    let per_host = format!("SELECT addr, count() AS n FROM ({services}){host} GROUP BY addr");
    let totals = client.rows(&format!(
        "SELECT count(), sum(n) FROM ({per_host}) FORMAT TabSeparated"
    ))?;
    let (unique_hosts, service_count) = match totals.first().map(Vec::as_slice) {
        Some([hosts, services]) => (number(hosts)?, number(services)?),
        _ => return Err(bad("exposure totals", &totals.concat().concat())),
    };
    let positions = format!(
        "SELECT addr, reinterpretAsFloat64(argMax(lat, {NEWEST})) AS c_lat, \
         reinterpretAsFloat64(argMax(lon, {NEWEST})) AS c_lon, \
         arrayElement(argMax(tiles, {NEWEST}), {index}) AS c_tile \
         FROM {db}.facts WHERE fact = {FACT_POSITION} GROUP BY addr"
    );
    let placed = format!(
        "SELECT addr, n, c_lat, c_lon, c_tile FROM ({per_host}) AS matching \
         ANY INNER JOIN ({positions}) AS positions USING addr"
    );
    let sum = |column: &str| {
        format!(
            "hex(reinterpretAsString(arraySum(arrayMap(x -> x.2, \
             arraySort(x -> x.1, groupArray((addr, {column})))))))"
        )
    };
    let rows = client.rows(&format!(
        "SELECT c_tile, count(), sum(n), {}, {} FROM ({placed}) GROUP BY c_tile \
         FORMAT TabSeparated",
        sum("c_lat"),
        sum("c_lon")
    ))?;
    let mut tiles: BTreeMap<(u32, u32), Tile> = BTreeMap::new();
    for row in rows {
        let [key, hosts, services, lat, lon] = row.as_slice() else {
            return Err(bad("a tile row", &row.concat()));
        };
        tiles.insert(
            tile_key(key)?,
            Tile {
                latitude_sum: float(lat)?,
                longitude_sum: float(lon)?,
                hosts: number(hosts)?,
                services: number(services)?,
                countries: BTreeMap::new(),
            },
        );
    }
    let countries = format!(
        "SELECT addr, argMax(country, {NEWEST}) AS c_country FROM {db}.facts \
         WHERE fact = {FACT_LOCATION} GROUP BY addr HAVING c_country != ''"
    );
    let rows = client.rows(&format!(
        "SELECT c_tile, c_country, count() FROM (SELECT addr, c_tile FROM ({placed})) AS placed \
         ANY INNER JOIN ({countries}) AS countries USING addr GROUP BY c_tile, c_country \
         FORMAT TabSeparated"
    ))?;
    for row in rows {
        let [key, country, hosts] = row.as_slice() else {
            return Err(bad("a tile country row", &row.concat()));
        };
        let code = std::str::from_utf8(country)
            .ok()
            .and_then(|c| periscope_model::CountryCode::parse(c).ok())
            .ok_or_else(|| bad("a country", country))?;
        let tile = tiles
            .get_mut(&tile_key(key)?)
            .ok_or_else(|| bad("a country of an unknown tile", key))?;
        tile.countries.insert(code, number(hosts)?);
    }
    Ok(answer(
        tiles,
        resolution.geotile_precision(),
        unique_hosts,
        service_count,
        resolution,
    ))
}
