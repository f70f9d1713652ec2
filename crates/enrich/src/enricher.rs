//! The enricher: the opened files, the precedence rules, and what each observation got.
//!
//! Precedence: what an observation already carries wins, block by block. A `host.location`
//! that is present (even without a position) is kept whole; a `host.asn.network` that is
//! present is kept; a `host.provider` that is present is kept. Only absent blocks are filled.
//! ASNs come from `geoip_asn` first and from `asn_table` when that file has no record.

use std::fmt;
use std::net::IpAddr;

use periscope_model::Asn;
use periscope_model::CountryCode;
use periscope_model::observation::{Observation, ServiceObservation};
use periscope_model::record::{AsnAttribution, Location, NetworkProvider, Position};

use crate::mmdb::{GeoDb, Named, Num, Record, Role};
use crate::{AsnTable, DatabaseKind, EnrichConfig, EnrichError, is_internal};

/// The longest location string the observation format accepts, in characters.
const MAX_PLACE: usize = 128;
/// The longest AS organisation of an ASN attribution.
const MAX_ASN_ORG: usize = 1024;
/// The longest network-provider string.
const MAX_PROVIDER: usize = 256;
/// The largest accuracy radius, in kilometres.
const MAX_RADIUS_KM: u32 = 20_000;

/// The opened enrichment files. `Send + Sync`: one enricher serves every reader thread.
pub struct Enricher {
    city: Option<GeoDb>,
    asn: Option<GeoDb>,
    table: Option<AsnTable>,
}

/// What one block of one observation got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Filled from a file.
    Added,
    /// The observation already carried it; kept as it was.
    Kept,
    /// No file had a record for the address.
    NotFound,
    /// A private, loopback or link-local address: not looked up.
    Internal,
    /// No file for this block was configured.
    NotConfigured,
    /// A record was there but could not be decoded (a damaged file).
    Failed,
}

/// What [`Enricher::enrich`] did to one observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrichOutcome {
    /// `host.location`.
    pub location: Fill,
    /// `host.asn.network` (and `host.provider` with it).
    pub asn: Fill,
    /// Values a file gave that the observation format refuses (an unassigned country code, a
    /// position out of range, an over-long name…), left out and counted here.
    pub dropped_values: u32,
    /// Why a record could not be decoded, when a block [`Fill::Failed`].
    pub failure: Option<String>,
}

/// Counts over many observations, for the importer's report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnrichStats {
    /// Observations seen.
    pub observations: u64,
    /// Locations filled.
    pub location_added: u64,
    /// Locations the observation already carried.
    pub location_kept: u64,
    /// Public addresses the location file does not place.
    pub location_not_found: u64,
    /// ASNs filled.
    pub asn_added: u64,
    /// ASNs the observation already carried.
    pub asn_kept: u64,
    /// Public addresses no ASN file knows.
    pub asn_not_found: u64,
    /// Observations of internal addresses (private, loopback, link-local), not looked up.
    pub internal: u64,
    /// Values left out because the format refuses them.
    pub dropped_values: u64,
    /// Lookups that failed on a damaged record.
    pub failures: u64,
    /// The first such failure.
    pub first_failure: Option<String>,
}

impl EnrichStats {
    /// Adds one outcome.
    pub fn record(&mut self, outcome: &EnrichOutcome) {
        self.observations += 1;
        let mut count =
            |fill: Fill, added: &mut u64, kept: &mut u64, not_found: &mut u64| match fill {
                Fill::Added => *added += 1,
                Fill::Kept => *kept += 1,
                Fill::NotFound => *not_found += 1,
                Fill::Failed => self.failures += 1,
                Fill::Internal | Fill::NotConfigured => {}
            };
        count(
            outcome.location,
            &mut self.location_added,
            &mut self.location_kept,
            &mut self.location_not_found,
        );
        count(
            outcome.asn,
            &mut self.asn_added,
            &mut self.asn_kept,
            &mut self.asn_not_found,
        );
        if outcome.location == Fill::Internal || outcome.asn == Fill::Internal {
            self.internal += 1;
        }
        self.dropped_values += u64::from(outcome.dropped_values);
        if self.first_failure.is_none() {
            self.first_failure.clone_from(&outcome.failure);
        }
    }
}

impl fmt::Display for EnrichStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "enrichment of {} observations: location added {}, kept {}, not found {}; \
             ASN added {}, kept {}, not found {}; internal addresses {}; values dropped {}",
            self.observations,
            self.location_added,
            self.location_kept,
            self.location_not_found,
            self.asn_added,
            self.asn_kept,
            self.asn_not_found,
            self.internal,
            self.dropped_values,
        )?;
        if self.failures > 0 {
            write!(f, "; failed lookups {}", self.failures)?;
            if let Some(first) = &self.first_failure {
                write!(f, " (first: {first})")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Enricher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Enricher")
            .field("city", &self.city.as_ref().map(GeoDb::kind))
            .field("asn", &self.asn.as_ref().map(GeoDb::kind))
            .field("table_ranges", &self.table.as_ref().map(AsnTable::len))
            .finish()
    }
}

impl Enricher {
    /// Opens and checks every file `config` names, before anything is enriched.
    pub fn open(config: &EnrichConfig) -> Result<Enricher, EnrichError> {
        Ok(Enricher {
            city: config
                .geoip_city
                .as_deref()
                .map(|p| GeoDb::open(p, Role::City))
                .transpose()?,
            asn: config
                .geoip_asn
                .as_deref()
                .map(|p| GeoDb::open(p, Role::Asn))
                .transpose()?,
            table: config
                .asn_table
                .as_deref()
                .map(AsnTable::load)
                .transpose()?,
        })
    }

    /// Whether no file is open, so [`Enricher::enrich`] changes nothing.
    pub fn is_empty(&self) -> bool {
        self.city.is_none() && self.asn.is_none() && self.table.is_none()
    }

    /// The metadata of the location file, when one is open.
    pub fn location_database(&self) -> Option<&DatabaseKind> {
        self.city.as_ref().map(GeoDb::kind)
    }

    /// The metadata of the ASN file, when one is open.
    pub fn asn_database(&self) -> Option<&DatabaseKind> {
        self.asn.as_ref().map(GeoDb::kind)
    }

    /// The ASN table, when one is open.
    pub fn asn_table(&self) -> Option<&AsnTable> {
        self.table.as_ref()
    }

    /// Enriches a service line; a domain line carries no host and is left alone (`None`).
    pub fn enrich_observation(&self, observation: &mut Observation) -> Option<EnrichOutcome> {
        match observation {
            Observation::Service(s) => Some(self.enrich(s)),
            Observation::Domain(_) => None,
        }
    }

    /// Fills the location, the network ASN and the provider of `obs` where it carries none.
    pub fn enrich(&self, obs: &mut ServiceObservation) -> EnrichOutcome {
        let mut out = EnrichOutcome {
            location: Fill::NotConfigured,
            asn: Fill::NotConfigured,
            dropped_values: 0,
            failure: None,
        };
        let internal = is_internal(obs.ip);
        let host = &mut obs.host;

        if host.location.is_some() {
            out.location = Fill::Kept;
        } else if let Some(db) = &self.city {
            out.location = if internal {
                Fill::Internal
            } else {
                match db.lookup(obs.ip) {
                    Ok(Some(record)) => match location(&record, &mut out.dropped_values) {
                        Some(found) => {
                            host.location = Some(found);
                            Fill::Added
                        }
                        None => Fill::NotFound,
                    },
                    Ok(None) => Fill::NotFound,
                    Err(e) => {
                        out.failure = Some(format!("{}: {e}", obs.ip));
                        Fill::Failed
                    }
                }
            };
        }

        if host.asn.network.is_some() {
            out.asn = Fill::Kept;
        } else if self.asn.is_some() || self.table.is_some() {
            out.asn = if internal {
                Fill::Internal
            } else {
                match self.network(obs.ip, &mut out.dropped_values) {
                    Ok(Some((attribution, provider))) => {
                        host.asn.network = Some(attribution);
                        if host.provider.is_none() && provider != NetworkProvider::default() {
                            host.provider = Some(provider);
                        }
                        Fill::Added
                    }
                    Ok(None) => Fill::NotFound,
                    Err(failure) => {
                        out.failure.get_or_insert(failure);
                        Fill::Failed
                    }
                }
            };
        }
        out
    }

    /// The ASN of `ip` from the ASN file, else from the table. An error (a damaged record of
    /// the ASN file) only when the table does not answer either.
    fn network(
        &self,
        ip: IpAddr,
        dropped: &mut u32,
    ) -> Result<Option<(AsnAttribution, NetworkProvider)>, String> {
        let mut failure = None;
        if let Some(db) = &self.asn {
            match db.lookup(ip) {
                Ok(Some(record)) => {
                    if let Some(found) = network(&record, dropped) {
                        return Ok(Some(found));
                    }
                }
                Ok(None) => {}
                Err(e) => failure = Some(format!("{ip}: {e}")),
            }
        }
        match self.table.as_ref().and_then(|t| t.lookup(ip)) {
            Some(entry) => {
                let org = entry.organization.as_deref();
                Ok(Some(attribution(entry.asn, org, dropped)))
            }
            None => failure.map_or(Ok(None), Err),
        }
    }
}

/// The location a record gives, `None` when it gives nothing usable.
fn location(r: &Record<'_>, dropped: &mut u32) -> Option<Location> {
    let mut place = |s: Option<&str>| text(s, MAX_PLACE, dropped);
    let (country_code, country_name) = code_and_name(r.country);
    let country_code_text = country_code.or(r.country_code).filter(|c| !c.is_empty());
    let (continent_code, continent_name) = code_and_name(r.continent);
    let continent = continent_name
        .or(r.continent_name)
        .or_else(|| continent_code.or(r.continent_code).and_then(continent_of));
    let subdivision = |i: usize| r.subdivisions.as_ref()?.get(i)?.name;
    let mut loc = Location {
        continent: place(continent),
        country_code: None,
        country_name: place(country_name.or(r.country_name)),
        subdivision_1: place(subdivision(0).or(r.state1)),
        subdivision_2: place(subdivision(1).or(r.state2)),
        city: place(r.city.and_then(|c| c.name)),
        position: None,
    };
    if let Some(code) = country_code_text {
        match CountryCode::parse(code) {
            Ok(c) => loc.country_code = Some(c),
            Err(_) => *dropped += 1,
        }
    }
    let (lat, lon, radius) = match &r.location {
        Some(l) => (l.latitude, l.longitude, l.accuracy_radius),
        None => (r.latitude, r.longitude, None),
    };
    let radius = radius.map(|n| {
        n.as_u64()
            .and_then(|km| u32::try_from(km).ok())
            .unwrap_or(u32::MAX)
    });
    if let (Some(latitude), Some(longitude)) = (lat.map(Num::as_f64), lon.map(Num::as_f64)) {
        if (-90.0..=90.0).contains(&latitude) && (-180.0..=180.0).contains(&longitude) {
            let accuracy_radius_km = radius.filter(|&km| {
                let ok = km <= MAX_RADIUS_KM;
                if !ok {
                    *dropped += 1;
                }
                ok
            });
            loc.position = Some(Position {
                latitude,
                longitude,
                accuracy_radius_km,
            });
        } else {
            *dropped += 1;
        }
    }
    (loc != Location::default()).then_some(loc)
}

/// The code and the name of a place. A flat value of two uppercase letters is a code: older
/// IPinfo files write `country: "CA"` beside `country_name`, and `continent: "NA"`.
fn code_and_name(place: Option<Named<'_>>) -> (Option<&str>, Option<&str>) {
    let Some(Named { name, code }) = place else {
        return (None, None);
    };
    match name {
        Some(n) if code.is_none() && n.len() == 2 && n.bytes().all(|b| b.is_ascii_uppercase()) => {
            (Some(n), None)
        }
        _ => (code, name),
    }
}

/// The English name of a continent code, as MaxMind names them.
fn continent_of(code: &str) -> Option<&'static str> {
    Some(match code {
        "AF" => "Africa",
        "AN" => "Antarctica",
        "AS" => "Asia",
        "EU" => "Europe",
        "NA" => "North America",
        "OC" => "Oceania",
        "SA" => "South America",
        _ => return None,
    })
}

/// The ASN attribution and provider fields a record gives.
fn network(r: &Record<'_>, dropped: &mut u32) -> Option<(AsnAttribution, NetworkProvider)> {
    let traits = r.traits.as_ref();
    let number = match (r.autonomous_system_number, r.asn) {
        (Some(n), _) => n.as_u64().unwrap_or(0),
        (None, Some(v)) => match v.number() {
            Ok(n) => n,
            Err(_) => {
                *dropped += 1;
                return None;
            }
        },
        (None, None) => traits
            .and_then(|t| t.autonomous_system_number)?
            .as_u64()
            .unwrap_or(0),
    };
    let Some(asn) = u32::try_from(number).ok().and_then(|n| Asn::new(n).ok()) else {
        // AS 0 and numbers past 32 bits are no AS.
        *dropped += 1;
        return None;
    };
    let org = r
        .autonomous_system_organization
        .or(r.as_name)
        .or(traits.and_then(|t| t.autonomous_system_organization));
    let (attribution, mut provider) = attribution(asn, org, dropped);
    provider.isp = text(r.isp.or(traits.and_then(|t| t.isp)), MAX_PROVIDER, dropped);
    provider.organization = text(
        r.organization.or(traits.and_then(|t| t.organization)),
        MAX_PROVIDER,
        dropped,
    );
    Some((attribution, provider))
}

fn attribution(
    asn: Asn,
    org: Option<&str>,
    dropped: &mut u32,
) -> (AsnAttribution, NetworkProvider) {
    let attribution = AsnAttribution {
        asn,
        organization: text(org, MAX_ASN_ORG, dropped),
    };
    let provider = NetworkProvider {
        as_organization: text(org, MAX_PROVIDER, dropped),
        ..NetworkProvider::default()
    };
    (attribution, provider)
}

/// A string the format accepts: not blank, at most `max` characters, no control characters.
/// Blank is absent; anything else refused is counted in `dropped`.
fn text(s: Option<&str>, max: usize, dropped: &mut u32) -> Option<String> {
    let s = s?.trim();
    if s.is_empty() {
        return None;
    }
    if s.chars().count() > max || s.chars().any(char::is_control) {
        *dropped += 1;
        return None;
    }
    Some(s.to_owned())
}
