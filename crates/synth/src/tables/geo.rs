//! Where networks are: 39 real countries with their continent, regional internet registry,
//! legal-form suffixes for invented companies, and a few real cities with first- and
//! second-level subdivisions and coordinates.
//!
//! Places are real so that location facets and maps look like the internet; the hosts placed
//! there are not.

/// A city and the subdivisions it lies in.
#[derive(Debug)]
pub(crate) struct City {
    /// City name.
    pub name: &'static str,
    /// First-level subdivision (state, region), when GeoIP databases record one.
    pub subdivision_1: Option<&'static str>,
    /// Second-level subdivision (county, district), when recorded.
    pub subdivision_2: Option<&'static str>,
    /// Latitude in ten-thousandths of a degree.
    pub lat_e4: i64,
    /// Longitude in ten-thousandths of a degree.
    pub lon_e4: i64,
}

/// A country.
#[derive(Debug)]
pub(crate) struct Country {
    /// ISO 3166-1 alpha-2.
    pub code: &'static str,
    /// English short name as GeoIP databases give it.
    pub name: &'static str,
    /// Continent name.
    pub continent: &'static str,
    /// The regional internet registry that serves it.
    pub registry: &'static str,
    /// Relative share of organisations based here.
    pub weight: u32,
    /// Legal-form suffixes of companies registered here.
    pub suffixes: &'static [&'static str],
    /// Cities, the first being the main one.
    pub cities: &'static [City],
}

const fn c(
    name: &'static str,
    subdivision_1: Option<&'static str>,
    subdivision_2: Option<&'static str>,
    lat: f64,
    lon: f64,
) -> City {
    City {
        name,
        subdivision_1,
        subdivision_2,
        lat_e4: round_e4(lat),
        lon_e4: round_e4(lon),
    }
}

/// Degrees to ten-thousandths, rounded to nearest.
const fn round_e4(deg: f64) -> i64 {
    let x = deg * 10_000.0;
    (if x < 0.0 { x - 0.5 } else { x + 0.5 }) as i64
}

const EU: &str = "Europe";
const NA: &str = "North America";
const SA: &str = "South America";
const AS: &str = "Asia";
const AF: &str = "Africa";
const OC: &str = "Oceania";

/// The country table.
pub(crate) static COUNTRIES: &[Country] = &[
    Country {
        code: "DE",
        name: "Germany",
        continent: EU,
        registry: "ripencc",
        weight: 9,
        suffixes: &["GmbH", "GmbH", "AG", "GmbH & Co. KG"],
        cities: &[
            c(
                "Frankfurt am Main",
                Some("Hesse"),
                Some("Darmstadt Government Region"),
                50.1109,
                8.6821,
            ),
            c(
                "Munich",
                Some("Bavaria"),
                Some("Upper Bavaria"),
                48.1374,
                11.5755,
            ),
            c("Berlin", Some("Berlin"), None, 52.5200, 13.4050),
            c(
                "Nuremberg",
                Some("Bavaria"),
                Some("Middle Franconia"),
                49.4521,
                11.0767,
            ),
        ],
    },
    Country {
        code: "GB",
        name: "United Kingdom",
        continent: EU,
        registry: "ripencc",
        weight: 7,
        suffixes: &["Ltd", "Ltd", "plc", "LLP"],
        cities: &[
            c(
                "London",
                Some("England"),
                Some("Greater London"),
                51.5072,
                -0.1276,
            ),
            c(
                "Manchester",
                Some("England"),
                Some("Greater Manchester"),
                53.4808,
                -2.2426,
            ),
            c(
                "Edinburgh",
                Some("Scotland"),
                Some("City of Edinburgh"),
                55.9533,
                -3.1883,
            ),
        ],
    },
    Country {
        code: "FR",
        name: "France",
        continent: EU,
        registry: "ripencc",
        weight: 6,
        suffixes: &["SAS", "SA", "SARL"],
        cities: &[
            c(
                "Paris",
                Some("Île-de-France"),
                Some("Paris"),
                48.8566,
                2.3522,
            ),
            c(
                "Lyon",
                Some("Auvergne-Rhône-Alpes"),
                Some("Rhône"),
                45.7640,
                4.8357,
            ),
            c(
                "Roubaix",
                Some("Hauts-de-France"),
                Some("Nord"),
                50.6942,
                3.1746,
            ),
            c(
                "Marseille",
                Some("Provence-Alpes-Côte d'Azur"),
                Some("Bouches-du-Rhône"),
                43.2965,
                5.3698,
            ),
        ],
    },
    Country {
        code: "NL",
        name: "Netherlands",
        continent: EU,
        registry: "ripencc",
        weight: 5,
        suffixes: &["B.V.", "B.V.", "N.V."],
        cities: &[
            c(
                "Amsterdam",
                Some("North Holland"),
                Some("Amsterdam"),
                52.3676,
                4.9041,
            ),
            c(
                "Rotterdam",
                Some("South Holland"),
                Some("Rotterdam"),
                51.9244,
                4.4777,
            ),
            c(
                "Eindhoven",
                Some("North Brabant"),
                Some("Eindhoven"),
                51.4416,
                5.4697,
            ),
        ],
    },
    Country {
        code: "SE",
        name: "Sweden",
        continent: EU,
        registry: "ripencc",
        weight: 2,
        suffixes: &["AB"],
        cities: &[
            c(
                "Stockholm",
                Some("Stockholm County"),
                Some("Stockholm Municipality"),
                59.3293,
                18.0686,
            ),
            c(
                "Gothenburg",
                Some("Västra Götaland County"),
                Some("Gothenburg Municipality"),
                57.7089,
                11.9746,
            ),
        ],
    },
    Country {
        code: "PL",
        name: "Poland",
        continent: EU,
        registry: "ripencc",
        weight: 2,
        suffixes: &["Sp. z o.o.", "S.A."],
        cities: &[
            c("Warsaw", Some("Mazovia"), Some("Warsaw"), 52.2297, 21.0122),
            c(
                "Kraków",
                Some("Lesser Poland"),
                Some("Kraków"),
                50.0647,
                19.9450,
            ),
        ],
    },
    Country {
        code: "ES",
        name: "Spain",
        continent: EU,
        registry: "ripencc",
        weight: 2,
        suffixes: &["S.L.", "S.A."],
        cities: &[
            c("Madrid", Some("Madrid"), Some("Madrid"), 40.4168, -3.7038),
            c(
                "Barcelona",
                Some("Catalonia"),
                Some("Barcelona"),
                41.3874,
                2.1686,
            ),
        ],
    },
    Country {
        code: "IT",
        name: "Italy",
        continent: EU,
        registry: "ripencc",
        weight: 2,
        suffixes: &["S.r.l.", "S.p.A."],
        cities: &[
            c("Milan", Some("Lombardy"), Some("Milan"), 45.4642, 9.1900),
            c("Rome", Some("Lazio"), Some("Rome"), 41.9028, 12.4964),
        ],
    },
    Country {
        code: "CH",
        name: "Switzerland",
        continent: EU,
        registry: "ripencc",
        weight: 1,
        suffixes: &["AG", "GmbH", "SA"],
        cities: &[
            c(
                "Zurich",
                Some("Zurich"),
                Some("Zurich District"),
                47.3769,
                8.5417,
            ),
            c("Geneva", Some("Geneva"), None, 46.2044, 6.1432),
        ],
    },
    Country {
        code: "FI",
        name: "Finland",
        continent: EU,
        registry: "ripencc",
        weight: 1,
        suffixes: &["Oy", "Oyj"],
        cities: &[c(
            "Helsinki",
            Some("Uusimaa"),
            Some("Helsinki"),
            60.1699,
            24.9384,
        )],
    },
    Country {
        code: "IE",
        name: "Ireland",
        continent: EU,
        registry: "ripencc",
        weight: 1,
        suffixes: &["Ltd", "DAC"],
        cities: &[c(
            "Dublin",
            Some("Leinster"),
            Some("Dublin City"),
            53.3498,
            -6.2603,
        )],
    },
    Country {
        code: "CZ",
        name: "Czechia",
        continent: EU,
        registry: "ripencc",
        weight: 1,
        suffixes: &["s.r.o.", "a.s."],
        cities: &[
            c("Prague", Some("Prague"), None, 50.0755, 14.4378),
            c(
                "Brno",
                Some("South Moravian Region"),
                Some("Brno-City District"),
                49.1951,
                16.6068,
            ),
        ],
    },
    Country {
        code: "AT",
        name: "Austria",
        continent: EU,
        registry: "ripencc",
        weight: 1,
        suffixes: &["GmbH", "AG"],
        cities: &[c("Vienna", Some("Vienna"), None, 48.2082, 16.3738)],
    },
    Country {
        code: "RO",
        name: "Romania",
        continent: EU,
        registry: "ripencc",
        weight: 1,
        suffixes: &["S.R.L.", "S.A."],
        cities: &[c("Bucharest", Some("Bucharest"), None, 44.4268, 26.1025)],
    },
    Country {
        code: "UA",
        name: "Ukraine",
        continent: EU,
        registry: "ripencc",
        weight: 1,
        suffixes: &["LLC", "PJSC"],
        cities: &[c("Kyiv", Some("Kyiv City"), None, 50.4501, 30.5234)],
    },
    Country {
        code: "TR",
        name: "Türkiye",
        continent: AS,
        registry: "ripencc",
        weight: 1,
        suffixes: &["A.Ş.", "Ltd. Şti."],
        cities: &[
            c("Istanbul", Some("Istanbul"), None, 41.0082, 28.9784),
            c("Ankara", Some("Ankara"), None, 39.9334, 32.8597),
        ],
    },
    Country {
        code: "AE",
        name: "United Arab Emirates",
        continent: AS,
        registry: "ripencc",
        weight: 1,
        suffixes: &["LLC", "FZ-LLC"],
        cities: &[c("Dubai", Some("Dubai"), None, 25.2048, 55.2708)],
    },
    Country {
        code: "IL",
        name: "Israel",
        continent: AS,
        registry: "ripencc",
        weight: 1,
        suffixes: &["Ltd"],
        cities: &[c(
            "Tel Aviv",
            Some("Tel Aviv District"),
            None,
            32.0853,
            34.7818,
        )],
    },
    Country {
        code: "US",
        name: "United States",
        continent: NA,
        registry: "arin",
        weight: 22,
        suffixes: &["Inc.", "Inc.", "LLC", "Corp.", "Co."],
        cities: &[
            c(
                "Ashburn",
                Some("Virginia"),
                Some("Loudoun County"),
                39.0438,
                -77.4874,
            ),
            c(
                "San Jose",
                Some("California"),
                Some("Santa Clara County"),
                37.3382,
                -121.8863,
            ),
            c(
                "Dallas",
                Some("Texas"),
                Some("Dallas County"),
                32.7767,
                -96.7970,
            ),
            c(
                "New York",
                Some("New York"),
                Some("New York County"),
                40.7128,
                -74.0060,
            ),
            c(
                "Chicago",
                Some("Illinois"),
                Some("Cook County"),
                41.8781,
                -87.6298,
            ),
            c(
                "Seattle",
                Some("Washington"),
                Some("King County"),
                47.6062,
                -122.3321,
            ),
            c(
                "Atlanta",
                Some("Georgia"),
                Some("Fulton County"),
                33.7490,
                -84.3880,
            ),
        ],
    },
    Country {
        code: "CA",
        name: "Canada",
        continent: NA,
        registry: "arin",
        weight: 3,
        suffixes: &["Inc.", "Ltd.", "Corp."],
        cities: &[
            c(
                "Toronto",
                Some("Ontario"),
                Some("Toronto"),
                43.6532,
                -79.3832,
            ),
            c(
                "Montreal",
                Some("Quebec"),
                Some("Montréal"),
                45.5019,
                -73.5674,
            ),
            c(
                "Vancouver",
                Some("British Columbia"),
                Some("Metro Vancouver"),
                49.2827,
                -123.1207,
            ),
        ],
    },
    Country {
        code: "MX",
        name: "Mexico",
        continent: NA,
        registry: "lacnic",
        weight: 1,
        suffixes: &["S.A. de C.V."],
        cities: &[
            c("Mexico City", Some("Mexico City"), None, 19.4326, -99.1332),
            c(
                "Monterrey",
                Some("Nuevo León"),
                Some("Monterrey"),
                25.6866,
                -100.3161,
            ),
        ],
    },
    Country {
        code: "BR",
        name: "Brazil",
        continent: SA,
        registry: "lacnic",
        weight: 3,
        suffixes: &["Ltda.", "S.A."],
        cities: &[
            c(
                "São Paulo",
                Some("São Paulo"),
                Some("São Paulo"),
                -23.5558,
                -46.6396,
            ),
            c(
                "Rio de Janeiro",
                Some("Rio de Janeiro"),
                Some("Rio de Janeiro"),
                -22.9068,
                -43.1729,
            ),
            c(
                "Fortaleza",
                Some("Ceará"),
                Some("Fortaleza"),
                -3.7319,
                -38.5267,
            ),
        ],
    },
    Country {
        code: "AR",
        name: "Argentina",
        continent: SA,
        registry: "lacnic",
        weight: 1,
        suffixes: &["S.A.", "S.R.L."],
        cities: &[c(
            "Buenos Aires",
            Some("Buenos Aires F.D."),
            None,
            -34.6037,
            -58.3816,
        )],
    },
    Country {
        code: "CL",
        name: "Chile",
        continent: SA,
        registry: "lacnic",
        weight: 1,
        suffixes: &["SpA", "S.A."],
        cities: &[c(
            "Santiago",
            Some("Santiago Metropolitan"),
            Some("Santiago Province"),
            -33.4489,
            -70.6693,
        )],
    },
    Country {
        code: "CO",
        name: "Colombia",
        continent: SA,
        registry: "lacnic",
        weight: 1,
        suffixes: &["S.A.S."],
        cities: &[c("Bogotá", Some("Bogota D.C."), None, 4.7110, -74.0721)],
    },
    Country {
        code: "JP",
        name: "Japan",
        continent: AS,
        registry: "apnic",
        weight: 4,
        suffixes: &["K.K.", "Co., Ltd."],
        cities: &[
            c("Tokyo", Some("Tokyo"), None, 35.6762, 139.6503),
            c("Osaka", Some("Osaka"), None, 34.6937, 135.5023),
        ],
    },
    Country {
        code: "SG",
        name: "Singapore",
        continent: AS,
        registry: "apnic",
        weight: 2,
        suffixes: &["Pte. Ltd."],
        cities: &[c("Singapore", None, None, 1.3521, 103.8198)],
    },
    Country {
        code: "IN",
        name: "India",
        continent: AS,
        registry: "apnic",
        weight: 3,
        suffixes: &["Pvt. Ltd.", "Ltd."],
        cities: &[
            c(
                "Mumbai",
                Some("Maharashtra"),
                Some("Mumbai Suburban"),
                19.0760,
                72.8777,
            ),
            c(
                "Bengaluru",
                Some("Karnataka"),
                Some("Bengaluru Urban"),
                12.9716,
                77.5946,
            ),
            c(
                "Chennai",
                Some("Tamil Nadu"),
                Some("Chennai"),
                13.0827,
                80.2707,
            ),
        ],
    },
    Country {
        code: "KR",
        name: "South Korea",
        continent: AS,
        registry: "apnic",
        weight: 2,
        suffixes: &["Co., Ltd."],
        cities: &[
            c("Seoul", Some("Seoul"), None, 37.5665, 126.9780),
            c("Busan", Some("Busan"), None, 35.1796, 129.0756),
        ],
    },
    Country {
        code: "HK",
        name: "Hong Kong",
        continent: AS,
        registry: "apnic",
        weight: 1,
        suffixes: &["Limited"],
        cities: &[c("Hong Kong", None, None, 22.3193, 114.1694)],
    },
    Country {
        code: "TW",
        name: "Taiwan",
        continent: AS,
        registry: "apnic",
        weight: 1,
        suffixes: &["Co., Ltd."],
        cities: &[c("Taipei", Some("Taipei City"), None, 25.0330, 121.5654)],
    },
    Country {
        code: "ID",
        name: "Indonesia",
        continent: AS,
        registry: "apnic",
        weight: 1,
        suffixes: &["Tbk"],
        cities: &[c("Jakarta", Some("Jakarta"), None, -6.2088, 106.8456)],
    },
    Country {
        code: "VN",
        name: "Vietnam",
        continent: AS,
        registry: "apnic",
        weight: 1,
        suffixes: &["JSC", "Co., Ltd."],
        cities: &[
            c("Hanoi", Some("Hanoi"), None, 21.0278, 105.8342),
            c(
                "Ho Chi Minh City",
                Some("Ho Chi Minh"),
                None,
                10.8231,
                106.6297,
            ),
        ],
    },
    Country {
        code: "AU",
        name: "Australia",
        continent: OC,
        registry: "apnic",
        weight: 2,
        suffixes: &["Pty Ltd"],
        cities: &[
            c(
                "Sydney",
                Some("New South Wales"),
                Some("Sydney"),
                -33.8688,
                151.2093,
            ),
            c(
                "Melbourne",
                Some("Victoria"),
                Some("Melbourne"),
                -37.8136,
                144.9631,
            ),
            c(
                "Perth",
                Some("Western Australia"),
                Some("Perth"),
                -31.9523,
                115.8613,
            ),
        ],
    },
    Country {
        code: "NZ",
        name: "New Zealand",
        continent: OC,
        registry: "apnic",
        weight: 1,
        suffixes: &["Limited"],
        cities: &[c("Auckland", Some("Auckland"), None, -36.8485, 174.7633)],
    },
    Country {
        code: "ZA",
        name: "South Africa",
        continent: AF,
        registry: "afrinic",
        weight: 1,
        suffixes: &["(Pty) Ltd"],
        cities: &[
            c(
                "Johannesburg",
                Some("Gauteng"),
                Some("City of Johannesburg"),
                -26.2041,
                28.0473,
            ),
            c(
                "Cape Town",
                Some("Western Cape"),
                Some("City of Cape Town"),
                -33.9249,
                18.4241,
            ),
        ],
    },
    Country {
        code: "NG",
        name: "Nigeria",
        continent: AF,
        registry: "afrinic",
        weight: 1,
        suffixes: &["Ltd"],
        cities: &[c("Lagos", Some("Lagos"), None, 6.5244, 3.3792)],
    },
    Country {
        code: "KE",
        name: "Kenya",
        continent: AF,
        registry: "afrinic",
        weight: 1,
        suffixes: &["Ltd"],
        cities: &[c("Nairobi", Some("Nairobi County"), None, -1.2921, 36.8219)],
    },
    Country {
        code: "EG",
        name: "Egypt",
        continent: AF,
        registry: "afrinic",
        weight: 1,
        suffixes: &["S.A.E."],
        cities: &[c(
            "Cairo",
            Some("Cairo Governorate"),
            None,
            30.0444,
            31.2357,
        )],
    },
];

/// Indexes into [`COUNTRIES`] (country, city) of the data-centre regions where cloud and
/// hosting providers place networks, most popular first.
pub(crate) static DATA_CENTRES: &[(&str, usize)] = &[
    ("US", 0),
    ("DE", 0),
    ("NL", 0),
    ("GB", 0),
    ("US", 1),
    ("SG", 0),
    ("JP", 0),
    ("FR", 2),
    ("US", 2),
    ("AU", 0),
    ("BR", 0),
    ("IN", 0),
    ("CA", 1),
    ("IE", 0),
    ("SE", 0),
    ("ZA", 0),
    ("KR", 0),
    ("AE", 0),
];

/// The index of a country code in [`COUNTRIES`].
pub(crate) fn country_index(code: &str) -> usize {
    COUNTRIES
        .iter()
        .position(|c| c.code == code)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use periscope_model::CountryCode;

    #[test]
    fn table_is_valid() {
        assert!(COUNTRIES.len() >= 30);
        for c in COUNTRIES {
            CountryCode::parse(c.code).unwrap();
            assert!(!c.cities.is_empty() && !c.suffixes.is_empty(), "{}", c.code);
            assert!(
                ["ripencc", "arin", "apnic", "lacnic", "afrinic"].contains(&c.registry),
                "{}",
                c.code
            );
            for city in c.cities {
                assert!(city.lat_e4.abs() <= 900_000 && city.lon_e4.abs() <= 1_800_000);
                assert!(city.subdivision_2.is_none() || city.subdivision_1.is_some());
            }
        }
        let mut codes: Vec<_> = COUNTRIES.iter().map(|c| c.code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), COUNTRIES.len());
        for (code, city) in DATA_CENTRES {
            let c = &COUNTRIES[country_index(code)];
            assert_eq!(c.code, *code);
            assert!(*city < c.cities.len(), "{code} {city}");
        }
    }
}
