//! MaxMind DB files: which database types a setting accepts, and the record layouts of the
//! vendors that publish in this format.
//!
//! One record type ([`Record`]) reads every documented layout, because the vendors differ only
//! in names and nesting:
//! - MaxMind GeoLite2/GeoIP2 City, Country and Enterprise, and DB-IP's files (which copy
//!   MaxMind's layout): `continent.names.en`, `country.iso_code`, `country.names.en`,
//!   `subdivisions[].names.en`, `city.names.en`, `location.{latitude, longitude,
//!   accuracy_radius}`, Enterprise's `traits.autonomous_system_*`;
//! - MaxMind GeoLite2 ASN / GeoIP2 ISP, DB-IP ASN and ip-location-db's ASN files:
//!   `autonomous_system_number`, `autonomous_system_organization` (ISP: `isp`,
//!   `organization`);
//! - IPinfo Lite: flat strings `country_code`, `country`, `continent_code`, `continent`, `asn`
//!   (`"AS15169"`), `as_name`; IPinfo's older free files: `country` (the code),
//!   `country_name`, `continent` (the code), `continent_name`;
//! - ip-location-db's City/Country files: flat `country_code`, `state1`, `state2`, `city`,
//!   `latitude`, `longitude` (empty strings for missing values).
//!
//! A member that is a string in one layout and a map in another (`city`, `country`,
//! `continent`) is read by [`Named`], which accepts both.

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use maxminddb::{MaxMindDbError, Reader};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::EnrichError;

/// What the metadata of an opened MaxMind DB file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseKind {
    /// The `database_type` of its metadata, e.g. `GeoLite2-City`.
    pub database_type: String,
    /// 4 for an IPv4-only file, 6 for one that holds IPv6 (and usually IPv4) networks.
    pub ip_version: u16,
    /// When it was built, in seconds since 1970.
    pub build_epoch: u64,
}

/// Which setting a file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `geoip_city`: locations.
    City,
    /// `geoip_asn`: autonomous systems.
    Asn,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::City => "geoip_city",
            Role::Asn => "geoip_asn",
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Role::City => {
                "a location database (GeoLite2/GeoIP2 City, Country or Enterprise, DB-IP City or \
                 Country, IPinfo Lite, ip-location-db city or country)"
            }
            Role::Asn => {
                "an ASN database (GeoLite2 ASN, GeoIP2 ISP or Enterprise, DB-IP ASN, IPinfo Lite, \
                 ip-location-db asn)"
            }
        }
    }

    /// Whether a database of this type has what the role needs. Vendors name their types
    /// differently (`GeoLite2-City`, `DBIP-City-Lite`, `city`, `ipinfo lite.mmdb`…), so the
    /// type is matched by the words it contains, case-insensitively.
    fn accepts(self, database_type: &str) -> bool {
        let t = database_type.to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| t.contains(w));
        if t.contains("ipinfo") || t.contains("enterprise") {
            return true;
        }
        match self {
            Role::City => has(&["city", "country", "location"]),
            Role::Asn => has(&["asn", "isp"]),
        }
    }
}

/// An opened, checked MaxMind DB file.
pub(crate) struct GeoDb {
    reader: Reader<Vec<u8>>,
    kind: DatabaseKind,
}

impl GeoDb {
    /// Reads `path` whole and checks that it is a MaxMind DB file of a type `role` accepts.
    pub(crate) fn open(path: &Path, role: Role) -> Result<GeoDb, EnrichError> {
        let bytes = std::fs::read(path).map_err(|source| EnrichError::Unreadable {
            role: role.name(),
            path: path.to_path_buf(),
            source,
        })?;
        let reader = Reader::from_source(bytes).map_err(|e| EnrichError::NotMaxMind {
            role: role.name(),
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let meta = reader.metadata();
        let kind = DatabaseKind {
            database_type: meta.database_type.clone(),
            ip_version: meta.ip_version,
            build_epoch: meta.build_epoch,
        };
        if !role.accepts(&kind.database_type) {
            return Err(EnrichError::WrongDatabaseType {
                role: role.name(),
                path: PathBuf::from(path),
                database_type: kind.database_type,
                expected: role.expected(),
            });
        }
        Ok(GeoDb { reader, kind })
    }

    pub(crate) fn kind(&self) -> &DatabaseKind {
        &self.kind
    }

    /// The record of `ip`, `Ok(None)` when the file has none (an IPv6 address in an IPv4-only
    /// file included), an error when the record cannot be decoded.
    pub(crate) fn lookup(&self, ip: IpAddr) -> Result<Option<Record<'_>>, MaxMindDbError> {
        let ip = match ip {
            IpAddr::V6(v6) if self.kind.ip_version == 4 => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => return Ok(None),
            },
            other => other,
        };
        self.reader.lookup(ip)?.decode::<Record<'_>>()
    }
}

/// One record of any documented layout. Members a layout lacks stay `None`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Record<'a> {
    #[serde(borrow)]
    pub continent: Option<Named<'a>>,
    #[serde(borrow)]
    pub country: Option<Named<'a>>,
    #[serde(borrow)]
    pub country_code: Option<&'a str>,
    #[serde(borrow)]
    pub country_name: Option<&'a str>,
    #[serde(borrow)]
    pub continent_code: Option<&'a str>,
    #[serde(borrow)]
    pub continent_name: Option<&'a str>,
    #[serde(borrow)]
    pub subdivisions: Option<Vec<Named<'a>>>,
    #[serde(borrow)]
    pub state1: Option<&'a str>,
    #[serde(borrow)]
    pub state2: Option<&'a str>,
    #[serde(borrow)]
    pub city: Option<Named<'a>>,
    pub location: Option<GeoLocation>,
    pub latitude: Option<Num>,
    pub longitude: Option<Num>,
    pub autonomous_system_number: Option<Num>,
    #[serde(borrow)]
    pub autonomous_system_organization: Option<&'a str>,
    #[serde(borrow)]
    pub asn: Option<AsnValue<'a>>,
    #[serde(borrow)]
    pub as_name: Option<&'a str>,
    #[serde(borrow)]
    pub isp: Option<&'a str>,
    #[serde(borrow)]
    pub organization: Option<&'a str>,
    #[serde(borrow)]
    pub traits: Option<Traits<'a>>,
}

/// MaxMind's `location` map.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct GeoLocation {
    pub latitude: Option<Num>,
    pub longitude: Option<Num>,
    pub accuracy_radius: Option<Num>,
}

/// GeoIP2 Enterprise's `traits` map (the network members; the rest is ignored).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Traits<'a> {
    pub autonomous_system_number: Option<Num>,
    #[serde(borrow)]
    pub autonomous_system_organization: Option<&'a str>,
    #[serde(borrow)]
    pub isp: Option<&'a str>,
    #[serde(borrow)]
    pub organization: Option<&'a str>,
}

/// A place: a plain string (IPinfo, ip-location-db) or MaxMind's map with `names.en` and
/// `iso_code` (or `code`, for continents).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Named<'a> {
    pub name: Option<&'a str>,
    pub code: Option<&'a str>,
}

#[derive(Deserialize)]
struct NamedMap<'a> {
    #[serde(borrow)]
    names: Option<Names<'a>>,
    #[serde(borrow)]
    iso_code: Option<&'a str>,
    #[serde(borrow)]
    code: Option<&'a str>,
}

#[derive(Deserialize)]
struct Names<'a> {
    #[serde(borrow)]
    en: Option<&'a str>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Named<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NamedVisitor;
        impl<'de> Visitor<'de> for NamedVisitor {
            type Value = Named<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a name, or a map with names and a code")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Named {
                    name: Some(v),
                    code: None,
                })
            }
            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Self::Value, M::Error> {
                let m = NamedMap::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Named {
                    name: m.names.and_then(|n| n.en),
                    code: m.iso_code.or(m.code),
                })
            }
        }
        deserializer.deserialize_any(NamedVisitor)
    }
}

/// A number of any MaxMind DB numeric type: vendors write coordinates as `double` (MaxMind)
/// or `float` (ip-location-db), radii as `uint16`, AS numbers as `uint32`, and the decoder
/// refuses a type other than the one asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
}

impl Num {
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Num::Unsigned(n) => n as f64,
            Num::Signed(n) => n as f64,
            Num::Float(x) => x,
        }
    }

    /// The value as a whole number, when it is one.
    pub(crate) fn as_u64(self) -> Option<u64> {
        match self {
            Num::Unsigned(n) => Some(n),
            Num::Signed(n) => u64::try_from(n).ok(),
            Num::Float(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NumVisitor;
        impl Visitor<'_> for NumVisitor {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num::Unsigned(v))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Num, E> {
                u64::try_from(v)
                    .map(Num::Unsigned)
                    .map_err(|_| E::custom("a number past 64 bits"))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num::Signed(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num::Float(v))
            }
        }
        deserializer.deserialize_any(NumVisitor)
    }
}

/// IPinfo writes the ASN as text (`"AS15169"`); others as a number.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AsnValue<'a> {
    Number(u64),
    Text(&'a str),
}

impl AsnValue<'_> {
    /// The number, or the text when it is not one.
    pub(crate) fn number(self) -> Result<u64, String> {
        match self {
            AsnValue::Number(n) => Ok(n),
            AsnValue::Text(t) => {
                let digits = t
                    .strip_prefix("AS")
                    .or_else(|| t.strip_prefix("as"))
                    .unwrap_or(t);
                digits.parse().map_err(|_| t.to_owned())
            }
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for AsnValue<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AsnVisitor;
        impl<'de> Visitor<'de> for AsnVisitor {
            type Value = AsnValue<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an AS number, or text such as \"AS15169\"")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(AsnValue::Text(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(AsnValue::Number(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                u64::try_from(v)
                    .map(AsnValue::Number)
                    .map_err(|_| E::custom(format!("negative AS number {v}")))
            }
        }
        deserializer.deserialize_any(AsnVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_types_by_role() {
        for (t, city, asn) in [
            ("GeoLite2-City", true, false),
            ("GeoIP2-City", true, false),
            ("GeoLite2-Country", true, false),
            ("GeoIP2-Enterprise", true, true),
            ("DBIP-City-Lite", true, false),
            ("DBIP-Country-Lite", true, false),
            ("DBIP-Location (compat=City)", true, false),
            ("city", true, false),
            ("city ipv4", true, false),
            ("country", true, false),
            ("GeoLite2-ASN", false, true),
            ("DBIP-ASN-Lite (compat=GeoLite2-ASN)", false, true),
            ("GeoIP2-ISP", false, true),
            ("asn", false, true),
            ("ipinfo lite.mmdb", true, true),
            ("GeoIP2-Anonymous-IP", false, false),
            ("GeoIP2-Connection-Type", false, false),
            ("GeoIP2-Domain", false, false),
        ] {
            assert_eq!(Role::City.accepts(t), city, "{t} as geoip_city");
            assert_eq!(Role::Asn.accepts(t), asn, "{t} as geoip_asn");
        }
    }

    #[test]
    fn asn_text_and_numbers() {
        assert_eq!(AsnValue::Text("AS15169").number(), Ok(15169));
        assert_eq!(AsnValue::Text("13335").number(), Ok(13335));
        assert_eq!(AsnValue::Number(64512).number(), Ok(64512));
        assert_eq!(AsnValue::Text("ASX").number(), Err("ASX".to_owned()));
    }
}
