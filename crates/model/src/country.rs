//! ISO 3166-1 alpha-2 country codes.

use std::fmt;

use crate::error::InvalidValue;

/// The 249 officially assigned ISO 3166-1 alpha-2 codes, plus `XK` (Kosovo), the user-assigned
/// code that GeoIP databases use. Sorted, so membership is a binary search.
const ASSIGNED: &str = "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ \
BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ \
CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ \
DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR \
GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU \
ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ \
LA LB LC LI LK LR LS LT LU LV LY \
MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ \
NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA \
RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ \
TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU \
WF WS XK YE YT ZA ZM ZW";

/// An assigned ISO 3166-1 alpha-2 code in uppercase, such as `DE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CountryCode([u8; 2]);

impl CountryCode {
    /// Parses exactly two uppercase letters naming an assigned code. Lowercase is refused,
    /// not folded: the query language requires the uppercase form.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let b = s.as_bytes();
        if b.len() != 2 || !b.iter().all(u8::is_ascii_uppercase) {
            return Err(InvalidValue::new(
                "country code",
                format!("{s:?} is not two uppercase letters"),
            ));
        }
        if !is_assigned([b[0], b[1]]) {
            return Err(InvalidValue::new(
                "country code",
                format!("{s} is not an assigned ISO 3166-1 code"),
            ));
        }
        Ok(Self([b[0], b[1]]))
    }

    /// Every accepted code, in order.
    pub fn all() -> impl Iterator<Item = CountryCode> {
        ASSIGNED.split(' ').map(|c| {
            let b = c.as_bytes();
            CountryCode([b[0], b[1]])
        })
    }

    /// The two letters.
    pub fn as_str(&self) -> &str {
        // Constructed only from ASCII uppercase letters.
        std::str::from_utf8(&self.0).unwrap_or("??")
    }
}

/// Binary search of [`ASSIGNED`], whose codes sit at byte offsets 0, 3, 6, … (Ingest looks up
/// two codes per observation; splitting the table on every call cost microseconds.)
fn is_assigned(code: [u8; 2]) -> bool {
    let table = ASSIGNED.as_bytes();
    let (mut lo, mut hi) = (0, table.len().div_ceil(3));
    while lo < hi {
        let mid = (lo + hi) / 2;
        match table[3 * mid..3 * mid + 2].cmp(&code[..]) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

impl fmt::Display for CountryCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_unique_and_complete() {
        let all: Vec<_> = CountryCode::all().collect();
        assert_eq!(all.len(), 250);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn parses() {
        assert_eq!(CountryCode::parse("DE").unwrap().as_str(), "DE");
        assert_eq!(CountryCode::parse("XK").unwrap().as_str(), "XK");
        let all: Vec<CountryCode> = CountryCode::all().collect();
        for a in b'A'..=b'Z' {
            for b in b'A'..=b'Z' {
                let text = String::from_utf8(vec![a, b]).unwrap();
                let listed = all.iter().any(|c| c.as_str() == text);
                assert_eq!(CountryCode::parse(&text).is_ok(), listed, "{text}");
            }
        }
        for bad in [
            "de", "De", "D", "DEU", "XX", "AA", "", "D1", "ÄB", "ZZ", "AB",
        ] {
            assert!(CountryCode::parse(bad).is_err(), "{bad:?}");
        }
    }
}
