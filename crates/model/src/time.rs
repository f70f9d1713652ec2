//! Timestamps: whole seconds since the Unix epoch, parsed from and written as RFC 3339.
//!
//! Parsing accepts any RFC 3339 offset and fractional seconds (dropped); output is always UTC
//! with a trailing `Z`, as the specification requires. Hand-written because both ingest and
//! `synth` handle hundreds of thousands of timestamps a second.

use std::fmt;

use crate::error::InvalidValue;

/// An instant with one-second resolution, between 1970-01-01 and 9999-12-31.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// 9999-12-31T23:59:59Z.
const MAX_SECS: i64 = 253_402_300_799;

impl Timestamp {
    /// From seconds since the epoch; `None` outside 1970..=9999.
    pub fn from_unix(secs: i64) -> Option<Self> {
        (0..=MAX_SECS).contains(&secs).then_some(Self(secs))
    }

    /// Seconds since the epoch.
    pub fn unix(self) -> i64 {
        self.0
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
    pub fn parse(s: &str) -> Result<Self, InvalidValue> {
        let err = |why: &'static str| InvalidValue::new("timestamp", why);
        let b = s.as_bytes();
        if b.len() < 20 {
            return Err(err("expected RFC 3339, e.g. 2026-11-20T13:04:11Z"));
        }
        let num = |r: std::ops::Range<usize>| -> Result<i64, InvalidValue> {
            let part = &b[r];
            if !part.iter().all(u8::is_ascii_digit) {
                return Err(err("expected RFC 3339, e.g. 2026-11-20T13:04:11Z"));
            }
            Ok(part
                .iter()
                .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0')))
        };
        if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
            return Err(err("expected RFC 3339, e.g. 2026-11-20T13:04:11Z"));
        }
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
            return Err(err("no such date"));
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err(err("no such time of day"));
        }
        let mut i = 19;
        if b[i] == b'.' {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return Err(err("a decimal point must be followed by digits"));
            }
        }
        let offset = match &b[i..] {
            b"Z" | b"z" => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let digits = [*h1, *h2, *m1, *m2];
                if !digits.iter().all(u8::is_ascii_digit) {
                    return Err(err("bad UTC offset"));
                }
                let (h, m) = (
                    i64::from((h1 - b'0') * 10 + (h2 - b'0')),
                    i64::from((m1 - b'0') * 10 + (m2 - b'0')),
                );
                if h > 23 || m > 59 {
                    return Err(err("bad UTC offset"));
                }
                let off = h * 3600 + m * 60;
                if *sign == b'+' { off } else { -off }
            }
            _ => return Err(err("expected Z or a ±HH:MM offset at the end")),
        };
        let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
            - offset;
        Self::from_unix(secs).ok_or_else(|| err("outside the years 1970 to 9999"))
    }

    /// Writes `YYYY-MM-DDTHH:MM:SSZ` into `out` without allocating.
    pub fn write_rfc3339(self, out: &mut Vec<u8>) {
        let days = self.0.div_euclid(86_400);
        let rem = self.0.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let mut buf = *b"0000-00-00T00:00:00Z";
        let put = |buf: &mut [u8; 20], at: usize, v: i64, width: usize| {
            let mut v = v;
            for k in (0..width).rev() {
                buf[at + k] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        put(&mut buf, 0, y, 4);
        put(&mut buf, 5, m, 2);
        put(&mut buf, 8, d, 2);
        put(&mut buf, 11, rem / 3600, 2);
        put(&mut buf, 14, rem % 3600 / 60, 2);
        put(&mut buf, 17, rem % 60, 2);
        out.extend_from_slice(&buf);
    }

    /// The start (00:00:00Z) of this instant's UTC day.
    pub fn start_of_day(self) -> Self {
        Self(self.0 - self.0.rem_euclid(86_400))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut v = Vec::with_capacity(20);
        self.write_rfc3339(&mut v);
        f.write_str(std::str::from_utf8(&v).map_err(|_| fmt::Error)?)
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_writes() {
        let t = Timestamp::parse("2026-11-20T13:04:11Z").unwrap();
        assert_eq!(t.unix(), 1_795_179_851);
        assert_eq!(t.to_string(), "2026-11-20T13:04:11Z");
        assert_eq!(
            Timestamp::parse("2026-11-20T14:04:11.123+01:00").unwrap(),
            t
        );
        assert_eq!(
            Timestamp::parse("2024-02-29T00:00:00Z")
                .unwrap()
                .to_string(),
            "2024-02-29T00:00:00Z"
        );
        assert_eq!(Timestamp::parse("1970-01-01T00:00:00Z").unwrap().unix(), 0);
        assert_eq!(t.start_of_day().to_string(), "2026-11-20T00:00:00Z");
    }

    #[test]
    fn rejects() {
        for bad in [
            "",
            "2026-11-20",
            "2026-11-20 13:04:11Z",
            "2026-11-20T13:04:11",
            "2026-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-20T24:00:00Z",
            "2026-11-20T13:60:00Z",
            "2026-11-20T13:04:60Z",
            "2026-11-20T13:04:11.Z",
            "2026-11-20T13:04:11+0100",
            "1969-12-31T23:59:59Z",
            "2026-11-20T13:04:11+24:00",
            "+026-11-20T13:04:11Z",
            "2026-11-20T13:04:11ZZ",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn round_trips(secs in 0i64..=MAX_SECS) {
            let t = Timestamp::from_unix(secs).unwrap();
            prop_assert_eq!(Timestamp::parse(&t.to_string()).unwrap(), t);
        }
    }
}
