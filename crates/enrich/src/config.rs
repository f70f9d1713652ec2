//! What the `[enrich]` section of the configuration names: the files enrichment reads.

use std::path::PathBuf;

use serde::Deserialize;

/// The enrichment files. Every one is optional; with none, enrichment does nothing.
///
/// Deserialized from the `[enrich]` section of the configuration file (`geoip_city`,
/// `geoip_asn`, `asn_table`), which the command line also fills from
/// `PERISCOPE_ENRICH_GEOIP_CITY`, `PERISCOPE_ENRICH_GEOIP_ASN`, `PERISCOPE_ENRICH_ASN_TABLE`
/// and the `--geoip-city`, `--geoip-asn`, `--asn-table` flags.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnrichConfig {
    /// A MaxMind DB file with locations: GeoLite2/GeoIP2 City or Country, DB-IP City or
    /// Country, IPinfo Lite, or ip-location-db's City/Country builds.
    pub geoip_city: Option<PathBuf>,
    /// A MaxMind DB file with ASNs: GeoLite2 ASN, GeoIP2 ISP, DB-IP ASN, IPinfo Lite, or
    /// ip-location-db's ASN builds.
    pub geoip_asn: Option<PathBuf>,
    /// An iptoasn-style TSV table (`range_start range_end asn country organisation`), plain
    /// or gzip-compressed. Consulted for ASNs after `geoip_asn`.
    pub asn_table: Option<PathBuf>,
}

impl EnrichConfig {
    /// Whether no file is named, so enrichment would do nothing.
    pub fn is_empty(&self) -> bool {
        self.geoip_city.is_none() && self.geoip_asn.is_none() && self.asn_table.is_none()
    }
}
