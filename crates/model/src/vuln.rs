//! Vulnerability newtypes: CVE identifiers, CVSS scores and inclusive CVSS ranges.

use std::fmt;

use crate::error::{InvalidValue, all_digits};

/// A CVE identifier in its exact form `CVE-YYYY-NNNN…`: uppercase `CVE`, a four-digit year,
/// and a sequence number of 4 to 9 digits that has no leading zero when longer than four
/// digits (so each identifier has exactly one spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CveId {
    year: u16,
    number: u32,
}

impl CveId {
    /// Parses the exact uppercase form.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let err = |why: &'static str| InvalidValue::new("CVE id", why);
        let rest = s
            .strip_prefix("CVE-")
            .ok_or_else(|| err("must start with uppercase \"CVE-\""))?;
        let (year, number) = rest
            .split_once('-')
            .ok_or_else(|| err("expected CVE-YYYY-NNNN"))?;
        if year.len() != 4 || !all_digits(year) {
            return Err(err("the year must be four digits"));
        }
        if !(4..=9).contains(&number.len()) || !all_digits(number) {
            return Err(err("the sequence number must be 4 to 9 digits"));
        }
        if number.len() > 4 && number.starts_with('0') {
            return Err(err(
                "a sequence number longer than four digits has no leading zero",
            ));
        }
        let year: u16 = year.parse().map_err(|_| err("bad year"))?;
        if year < 1999 {
            return Err(err("CVE years start at 1999"));
        }
        let number: u32 = number.parse().map_err(|_| err("bad sequence number"))?;
        Ok(Self { year, number })
    }

    /// The year part.
    pub fn year(self) -> u16 {
        self.year
    }

    /// The sequence number.
    pub fn number(self) -> u32 {
        self.number
    }

    /// Builds an identifier from its parts; `None` when they are out of range.
    pub fn from_parts(year: u16, number: u32) -> Option<Self> {
        ((1999..=9999).contains(&year) && number <= 999_999_999).then_some(Self { year, number })
    }
}

impl fmt::Display for CveId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CVE-{}-{:04}", self.year, self.number)
    }
}

/// A CVSS score, 0.0 through 10.0, held in tenths so that it compares exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cvss(u8);

impl Cvss {
    /// The lowest score.
    pub const MIN: Cvss = Cvss(0);
    /// The highest score.
    pub const MAX: Cvss = Cvss(100);

    /// From tenths of a point (0..=100).
    pub fn from_tenths(t: u8) -> Result<Self, InvalidValue> {
        if t > 100 {
            return Err(InvalidValue::new("CVSS score", "above 10.0"));
        }
        Ok(Self(t))
    }

    /// From a JSON number: finite, within 0.0..=10.0, at most one decimal place.
    pub fn from_f64(x: f64) -> Result<Self, InvalidValue> {
        if !x.is_finite() || !(0.0..=10.0).contains(&x) {
            return Err(InvalidValue::new(
                "CVSS score",
                format!("{x} is outside 0.0..=10.0"),
            ));
        }
        let tenths = (x * 10.0).round();
        if (tenths - x * 10.0).abs() > 1e-6 {
            return Err(InvalidValue::new(
                "CVSS score",
                format!("{x} has more than one decimal place"),
            ));
        }
        Self::from_tenths(tenths as u8)
    }

    /// Parses `7`, `7.5` or `10.0`: one or two integer digits and at most one decimal digit.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let (int, frac) = s.split_once('.').unwrap_or((s, "0"));
        let leading_zero = int.len() == 2 && int.starts_with('0');
        if !(1..=2).contains(&int.len())
            || !all_digits(int)
            || leading_zero
            || frac.len() != 1
            || !all_digits(frac)
        {
            return Err(InvalidValue::new(
                "CVSS score",
                format!("{s:?} is not a score like 7.5"),
            ));
        }
        let tenths = int.parse::<u16>().unwrap_or(u16::MAX) * 10 + frac.parse::<u16>().unwrap_or(0);
        u8::try_from(tenths)
            .map_err(|_| InvalidValue::new("CVSS score", "above 10.0"))
            .and_then(Self::from_tenths)
    }

    /// Tenths of a point.
    pub fn tenths(self) -> u8 {
        self.0
    }

    /// The score as a number.
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / 10.0
    }
}

impl fmt::Display for Cvss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0 / 10, self.0 % 10)
    }
}

/// An inclusive range of CVSS scores with `min <= max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CvssRange {
    min: Cvss,
    max: Cvss,
}

impl CvssRange {
    /// Builds a range; `min` must not exceed `max`.
    pub fn new(min: Cvss, max: Cvss) -> Result<Self, InvalidValue> {
        if min > max {
            return Err(InvalidValue::new(
                "CVSS range",
                format!("{min} is above {max}"),
            ));
        }
        Ok(Self { min, max })
    }

    /// Parses `<min>-<max>`, for example `7.0-10.0`.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let (lo, hi) = s.split_once('-').ok_or_else(|| {
            InvalidValue::new("CVSS range", "expected <min>-<max>, e.g. 7.0-10.0")
        })?;
        Self::new(Cvss::parse(lo)?, Cvss::parse(hi)?)
    }

    /// The lower bound.
    pub fn min(self) -> Cvss {
        self.min
    }

    /// The upper bound.
    pub fn max(self) -> Cvss {
        self.max
    }

    /// True when `score` lies within the range, bounds included.
    pub fn contains(self, score: Cvss) -> bool {
        self.min <= score && score <= self.max
    }
}

impl fmt::Display for CvssRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cve_ids() {
        for ok in [
            "CVE-2014-0160",
            "CVE-2021-44228",
            "CVE-1999-0001",
            "CVE-2024-123456789",
        ] {
            assert_eq!(CveId::parse(ok).unwrap().to_string(), ok);
        }
        for bad in [
            "cve-2014-0160",
            "CVE-2014-160",
            "CVE-14-0160",
            "CVE-2014-01600",
            "CVE-2014-0160x",
            "CVE-2014",
            "CVE-1998-0001",
            "CVE-2014-1234567890",
            " CVE-2014-0160",
            "CVE-2O14-0160",
        ] {
            assert!(CveId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn cvss() {
        assert_eq!(CvssRange::parse("7-10").unwrap().to_string(), "7.0-10.0");
        assert_eq!(CvssRange::parse("0.0-3.9").unwrap().to_string(), "0.0-3.9");
        assert!(
            CvssRange::parse("5.0-5.0")
                .unwrap()
                .contains(Cvss::parse("5").unwrap())
        );
        for bad in [
            "", "7", "7.0", "9-7", "0-10.1", "-1-5", "7.55-8", "7.-8", "a-b", "1-2-3", "07.0-8",
            "100-100",
        ] {
            assert!(CvssRange::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(Cvss::from_f64(9.8).unwrap().tenths(), 98);
        assert!(Cvss::from_f64(9.85).is_err());
        assert!(Cvss::from_f64(f64::NAN).is_err());
        assert!(Cvss::from_f64(10.5).is_err());
    }
}
