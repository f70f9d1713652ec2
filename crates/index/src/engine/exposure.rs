//! Exposure in one pass over the matching hosts. Each host with a position carries a *place
//! id*: its web-mercator tile at the finest zoom (8), its GeoIP country and its position in
//! micro-degrees, the distinct places numbered at build time. Hosts share their GeoIP
//! positions (one per city or network location), so a host takes two bytes while there are
//! fewer than 65,535 places and four beyond, where a position column took eight. Tiles nest
//! — at zoom `z` the tile is the zoom-8 tile's `x` and `y` shifted right by `8 - z` (the
//! zoom-8 coordinates are the same expression scaled by a power of two, exact in floating
//! point, then floored) — so one column serves every resolution and no position is projected
//! at query time.
//!
//! A query sums, per tile of its zoom, positions (in whole micro-degrees, as the reference
//! does, so the centroids are equal to the last bit), hosts and services into a dense array of
//! `4^zoom` tiles, and counts hosts per place id; the countries of each tile come from the
//! places afterwards (far fewer than hosts). Ordering and the bucket cap are the
//! reference's [`answer`].
//!
//! Over layers (`layers`), the hosts of the later layers are taken out first as [`Placed`]
//! (small: a delta) and added among the first layer's hosts as its walk passes their
//! addresses ([`Exposed::add_placed`]).

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;

use periscope_model::CountryCode;
use periscope_model::record::Position;
use periscope_query::Resolution;

use super::ids::Ids;
use super::persist::{LoadError, Reader, Writer};
use super::postings::NONE_U32;
use crate::api::Exposure;
use crate::reference::exposure::{Tile, answer, micro_degrees, tile_of};

/// 180° in micro-degrees: no stored position is farther from zero.
const DEGREES_180: u32 = 180_000_000;

/// The zoom of the stored tiles: the finest resolution's.
const ZOOM: u8 = 8;

/// Per host, its place id; and per place id, its zoom-8 tile, country and position.
#[derive(Debug, Default)]
pub(super) struct Places {
    /// Host ordinal → place id, or [`NONE_U32`] for a host without a position.
    place: Ids,
    /// While building: the `place` column (empty once finished or loaded).
    placing: Vec<u32>,
    /// Place id → its place.
    places: Vec<Place>,
    /// While building: the id of each place seen (empty once [`Self::finish`]ed or loaded).
    ids: HashMap<Place, u32>,
}

/// Where a host is, as exposure reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Place {
    /// Zoom-8 tile, `x << 8 | y`.
    tile: u16,
    country: Option<CountryCode>,
    /// Micro-degrees.
    latitude: i32,
    longitude: i32,
}

impl Places {
    /// Records the next host.
    pub fn add(&mut self, position: Option<&Position>, country: Option<CountryCode>) {
        let Some(p) = position else {
            self.placing.push(NONE_U32);
            return;
        };
        let (x, y) = tile_of(p.latitude, p.longitude, ZOOM);
        let place = Place {
            // Both are below 256 at zoom 8.
            tile: u16::try_from(x << 8 | y).unwrap_or(u16::MAX),
            country,
            latitude: micro_degrees(p.latitude),
            longitude: micro_degrees(p.longitude),
        };
        let next = u32::try_from(self.places.len()).unwrap_or(NONE_U32);
        let id = *self.ids.entry(place).or_insert(next);
        if id == next {
            self.places.push(place);
        }
        self.placing.push(id);
    }

    /// Ends the build: drops the lookup of ids and spare capacity.
    pub fn finish(&mut self) {
        self.ids = HashMap::new();
        self.place = Ids::new(std::mem::take(&mut self.placing));
        self.places.shrink_to_fit();
    }

    /// Approximate bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.place.heap_bytes() + self.places.len() * size_of::<Place>()
    }

    /// Writes the columns (the index file; see `persist`).
    pub fn write<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        w.len(self.places.len())?;
        for place in &self.places {
            w.u16(place.tile)?;
            match place.country {
                Some(cc) => w.write_all(cc.as_str().as_bytes())?,
                None => w.write_all(b"\0\0")?,
            }
            w.u32s(&[
                place.latitude.cast_unsigned(),
                place.longitude.cast_unsigned(),
            ])?;
        }
        self.place.write(w)
    }

    /// Reads what [`Self::write`] wrote, checked against the hosts' countries
    /// (`facets::country_id`).
    pub fn read<R: std::io::Read>(r: &mut Reader<R>, countries: &[u16]) -> Result<Self, LoadError> {
        let bad = |what: &str| LoadError::Corrupt(what.to_owned());
        let count = r.len("place ids")?;
        let places = r.vec(count, |r| {
            let tile = r.u16()?;
            let b = r.array::<2>()?;
            let country = if b == [0, 0] {
                None
            } else {
                let text = std::str::from_utf8(&b).map_err(|_| bad("a place's country"))?;
                Some(CountryCode::parse(text).map_err(|_| bad("a place's country"))?)
            };
            let [latitude, longitude] = r.u32s(2)?[..] else {
                return Err(bad("a place's position"));
            };
            let (latitude, longitude) = (latitude.cast_signed(), longitude.cast_signed());
            if latitude.unsigned_abs() > DEGREES_180 || longitude.unsigned_abs() > DEGREES_180 {
                return Err(bad("a position beyond ±180°"));
            }
            Ok(Place {
                tile,
                country,
                latitude,
                longitude,
            })
        })?;
        let place = Ids::read(r, countries.len())?;
        let consistent = place.iter().zip(countries).all(|(id, country)| {
            id == NONE_U32
                || places
                    .get(id as usize)
                    .is_some_and(|p| super::facets::country_id(p.country) == *country)
        });
        if !consistent {
            return Err(bad("place ids do not fit the hosts' countries"));
        }
        let mut sorted = places.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(bad("a place id appears twice"));
        }
        Ok(Self {
            place,
            placing: Vec::new(),
            places,
            ids: HashMap::new(),
        })
    }
}

impl Places {
    /// What exposure needs of host `h` of this index, for adding it to another's answer.
    pub fn placed(&self, h: u32, key: u128, services: u64) -> Placed {
        let id = self.place.get(h as usize).unwrap_or(NONE_U32);
        let place = self.places.get(id as usize).copied();
        Placed {
            key,
            place,
            services,
        }
    }
}

/// A matching host of a later layer: its host-order key, its place (when it has a
/// position) and its services counted.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placed {
    pub key: u128,
    place: Option<Place>,
    services: u64,
}

/// The sums of one tile while a query runs.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    /// Latitudes in micro-degrees.
    latitude: i64,
    /// Longitudes in micro-degrees.
    longitude: i64,
    hosts: u64,
    services: u64,
}

/// One exposure answer being summed.
pub(super) struct Exposed<'a> {
    places: &'a Places,
    zoom: u8,
    resolution: Resolution,
    tiles: Vec<Sums>,
    hits: Vec<u32>,
    /// Hosts of later layers per zoom-8 tile and country.
    placed_hits: BTreeMap<(u16, Option<CountryCode>), u32>,
    unique_hosts: u64,
    service_count: u64,
}

impl<'a> Exposed<'a> {
    /// An empty answer at `resolution`.
    pub fn new(places: &'a Places, resolution: Resolution) -> Self {
        let zoom = resolution.geotile_precision().min(ZOOM);
        Self {
            places,
            zoom,
            resolution,
            tiles: vec![Sums::default(); 1 << (2 * u32::from(zoom))],
            hits: vec![0; places.places.len()],
            placed_hits: BTreeMap::new(),
            unique_hosts: 0,
            service_count: 0,
        }
    }

    /// Counts matching host `h` with `services` services counted.
    #[inline]
    pub fn add(&mut self, h: u32, services: u64) {
        self.unique_hosts += 1;
        self.service_count += services;
        let id = self.places.place.get(h as usize).unwrap_or(NONE_U32);
        let (Some(hits), Some(&place)) = (
            self.hits.get_mut(id as usize),
            self.places.places.get(id as usize),
        ) else {
            return;
        };
        *hits += 1;
        self.sum(place, services);
    }

    /// Adds a host at `place` with `services` services counted to its tile's sums.
    #[inline]
    fn sum(&mut self, place: Place, services: u64) {
        let shift = ZOOM - self.zoom;
        let (x, y) = (
            usize::from(place.tile >> 8) >> shift,
            usize::from(place.tile & 0xff) >> shift,
        );
        if let Some(sums) = self.tiles.get_mut(x << self.zoom | y) {
            sums.latitude += i64::from(place.latitude);
            sums.longitude += i64::from(place.longitude);
            sums.hosts += 1;
            sums.services += services;
        }
    }

    /// The answer over no host.
    pub fn nothing(resolution: Resolution) -> Exposure {
        let zoom = resolution.geotile_precision().min(ZOOM);
        answer(BTreeMap::new(), zoom, 0, 0, resolution)
    }

    /// Counts a matching host of a later layer; called in host order among [`Self::add`].
    pub fn add_placed(&mut self, p: &Placed) {
        self.unique_hosts += 1;
        self.service_count += p.services;
        let Some(place) = p.place else {
            return;
        };
        *self
            .placed_hits
            .entry((place.tile, place.country))
            .or_default() += 1;
        self.sum(place, p.services);
    }

    /// The answer.
    pub fn finish(self) -> Exposure {
        let shift = ZOOM - self.zoom;
        let mask = (1usize << self.zoom) - 1;
        let mut tiles: BTreeMap<(u32, u32), Tile> = BTreeMap::new();
        for (i, sums) in self.tiles.iter().enumerate() {
            if sums.hosts == 0 {
                continue;
            }
            // Both below 256.
            let key = ((i >> self.zoom) as u32, (i & mask) as u32);
            tiles.insert(
                key,
                Tile {
                    latitude_sum: sums.latitude,
                    longitude_sum: sums.longitude,
                    hosts: sums.hosts,
                    services: sums.services,
                    countries: BTreeMap::new(),
                },
            );
        }
        let mut count = |hits: u32, tile: u16, country: Option<CountryCode>| {
            let Some(country) = country.filter(|_| hits > 0) else {
                return;
            };
            let key = (
                u32::from(tile >> 8) >> shift,
                u32::from(tile & 0xff) >> shift,
            );
            if let Some(t) = tiles.get_mut(&key) {
                *t.countries.entry(country).or_default() += hits;
            }
        };
        for (hits, place) in self.hits.iter().zip(&self.places.places) {
            count(*hits, place.tile, place.country);
        }
        for ((tile, country), hits) in &self.placed_hits {
            count(*hits, *tile, *country);
        }
        answer(
            tiles,
            self.zoom,
            self.unique_hosts,
            self.service_count,
            self.resolution,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The zoom-8 tile shifted gives the tile `tile_of` computes at every coarser zoom.
    #[test]
    fn tiles_nest() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut cases: Vec<(f64, f64)> = (0..200_000)
            .map(|_| (next() * 180.0 - 90.0, next() * 360.0 - 180.0))
            .collect();
        // Tile edges at zoom 8 and the extremes.
        for i in 0..=256 {
            let lon = f64::from(i) / 256.0 * 360.0 - 180.0;
            cases.push((0.0, lon));
            cases.push((f64::from(i) / 256.0 * 170.0 - 85.0, lon));
        }
        cases.extend([(90.0, 180.0), (-90.0, -180.0), (85.051_128_78, 0.0)]);
        for (lat, lon) in cases {
            let (x8, y8) = tile_of(lat, lon, 8);
            for zoom in [0u8, 2, 4, 6] {
                let shift = 8 - zoom;
                assert_eq!(
                    (x8 >> shift, y8 >> shift),
                    tile_of(lat, lon, zoom),
                    "{lat} {lon} at {zoom}"
                );
            }
        }
    }
}
