//! Exposure in SQL, two statements: the totals over every matching host (hosts, and the
//! services counted for each — those satisfying the query's service-level clauses, or all
//! current services when it has none); and per tile and country, the positioned hosts,
//! their services and the sums of their latitudes and longitudes, folded into tiles here.
//! The second aggregates every host's current position and country in one `GROUP BY addr`
//! (which ClickHouse spills to disk past the memory bound) and joins the matching hosts to
//! it, so that the join holds only the matching hosts in memory.
//! Buckets, centroids, the dominant country and the 500-bucket bound are
//! `periscope-scan`'s [`answer`], the reference's own code.
//!
//! Exactness: tiles were computed by the shared `tile_of` when the position was written,
//! and positions are stored in whole micro-degrees by the shared `micro_degrees`, which is
//! what the reference sums: integer sums are the same in any order and on any shard, so the
//! bucket answers are the reference's bit for bit.

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
    // Every host's position and country in one `GROUP BY addr` (which spills to disk past the
    // memory bound), joined to the matching hosts: only the matching hosts are held in memory
    // for the join, not every host's position and country (at 10M hosts that took 6.3 GiB).
    let rows = client.rows(&format!(
        "SELECT c_tile, c_country, count(), sum(n), sum(c_lat), sum(c_lon) FROM ( \
           SELECT addr, \
             arrayElement(argMaxIf(tiles, {NEWEST}, fact = {FACT_POSITION}), {index}) AS c_tile, \
             argMaxIf(lat, {NEWEST}, fact = {FACT_POSITION}) AS c_lat, \
             argMaxIf(lon, {NEWEST}, fact = {FACT_POSITION}) AS c_lon, \
             argMaxIf(country, {NEWEST}, fact = {FACT_LOCATION}) AS c_country \
           FROM {db}.facts WHERE fact IN ({FACT_POSITION}, {FACT_LOCATION}) \
           GROUP BY addr HAVING countIf(fact = {FACT_POSITION}) > 0) AS placed \
         ANY INNER JOIN ({per_host}) AS matching USING addr \
         GROUP BY c_tile, c_country FORMAT TabSeparated"
    ))?;
    let mut tiles: BTreeMap<(u32, u32), Tile> = BTreeMap::new();
    for row in rows {
        let [key, country, hosts, services, lat, lon] = row.as_slice() else {
            return Err(bad("a tile row", &row.concat()));
        };
        let tile = tiles.entry(tile_key(key)?).or_default();
        let hosts: u64 = number(hosts)?;
        tile.hosts += hosts;
        tile.services += number::<u64>(services)?;
        tile.latitude_sum += number::<i64>(lat)?;
        tile.longitude_sum += number::<i64>(lon)?;
        if !country.is_empty() {
            let code = std::str::from_utf8(country)
                .ok()
                .and_then(|c| periscope_model::CountryCode::parse(c).ok())
                .ok_or_else(|| bad("a country", country))?;
            let hosts = u32::try_from(hosts).map_err(|_| bad("a host count", &row[2]))?;
            *tile.countries.entry(code).or_default() += hosts;
        }
    }
    Ok(answer(
        tiles,
        resolution.geotile_precision(),
        unique_hosts,
        service_count,
        resolution,
    ))
}
