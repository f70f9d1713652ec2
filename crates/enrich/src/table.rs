//! The iptoasn table: address ranges to autonomous systems, from a TSV file, searched by
//! binary search.
//!
//! iptoasn publishes `ip2asn-v4.tsv`, `ip2asn-v6.tsv` and `ip2asn-combined.tsv` (and
//! `ip2asn-v4-u32.tsv`, with IPv4 addresses as numbers), plain or gzip-compressed. Each line is
//! `range_start TAB range_end TAB as_number TAB country_code TAB as_description`; the range is
//! inclusive. AS number 0 marks a range that is not routed: it is kept out of the table, so its
//! addresses are not found. The country column is the registration country of the AS, not a
//! location, and is not used.
//!
//! **Invariant:** after [`AsnTable::load`], the ranges of each family are sorted and do not
//! overlap, so a lookup is one binary search. A line that breaks the layout, or a range that
//! overlaps another, is an error naming its line.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use periscope_model::Asn;

use crate::EnrichError;

/// An AS with its description, shared by every range it announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsEntry {
    /// The AS number.
    pub asn: Asn,
    /// The description iptoasn gives (`CLOUDFLARENET`, `GOOGLE`…), when not empty.
    pub organization: Option<Box<str>>,
}

#[derive(Debug, Clone, Copy)]
struct Range<T> {
    start: T,
    end: T,
    entry: u32,
}

/// Sorted, non-overlapping ranges of IPv4 and IPv6 addresses, each to an [`AsEntry`].
#[derive(Debug, Default)]
pub struct AsnTable {
    v4: Vec<Range<u32>>,
    /// For each /16 prefix `p`, how many IPv4 ranges start before `p << 16` (65,537 entries),
    /// so a lookup searches only the ranges starting in its own /16.
    v4_by_16: Vec<u32>,
    v6: Vec<Range<u128>>,
    entries: Vec<AsEntry>,
    not_routed: u64,
}

/// A range as read, with its line for errors.
struct Pending {
    start: IpAddr,
    end: IpAddr,
    entry: u32,
    line: u64,
}

impl AsnTable {
    /// Reads the table at `path` (gzip is recognised by its first bytes).
    pub fn load(path: &Path) -> Result<AsnTable, EnrichError> {
        let unreadable = |source| EnrichError::Unreadable {
            role: "asn_table",
            path: path.to_path_buf(),
            source,
        };
        let mut file = BufReader::new(std::fs::File::open(path).map_err(unreadable)?);
        let gzip = file
            .fill_buf()
            .map_err(unreadable)?
            .starts_with(&[0x1f, 0x8b]);
        if gzip {
            let decoder = flate2::bufread::MultiGzDecoder::new(file);
            AsnTable::read(BufReader::new(decoder), path)
        } else {
            AsnTable::read(file, path)
        }
    }

    /// Reads a table from `input`; `path` names it in errors.
    pub fn read(mut input: impl BufRead, path: &Path) -> Result<AsnTable, EnrichError> {
        let error = |line: u64, reason: String| EnrichError::Table {
            path: PathBuf::from(path),
            line,
            reason,
        };
        let mut table = AsnTable::default();
        let mut interned: HashMap<(u32, Box<str>), u32> = HashMap::new();
        let mut pending = Vec::new();
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            let n = (&mut input)
                .take(1 << 16)
                .read_until(b'\n', &mut buf)
                .map_err(|e| error(line_no + 1, format!("cannot read: {e}")))?;
            if n == 0 {
                break;
            }
            line_no += 1;
            if !buf.ends_with(b"\n") && n == 1 << 16 {
                return Err(error(line_no, "longer than 64 KiB".to_owned()));
            }
            let text = std::str::from_utf8(&buf)
                .map_err(|_| error(line_no, "not UTF-8".to_owned()))?
                .trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() || text.starts_with('#') {
                continue;
            }
            let Some(row) = parse_line(text).map_err(|reason| error(line_no, reason))? else {
                table.not_routed += 1;
                continue;
            };
            let key = (row.asn.get(), Box::<str>::from(row.organization));
            let entry = match interned.get(&key) {
                Some(&i) => i,
                None => {
                    let i = u32::try_from(table.entries.len())
                        .map_err(|_| error(line_no, "too many systems".to_owned()))?;
                    table.entries.push(AsEntry {
                        asn: row.asn,
                        organization: (!key.1.is_empty()).then(|| key.1.clone()),
                    });
                    interned.insert(key, i);
                    i
                }
            };
            pending.push(Pending {
                start: row.start,
                end: row.end,
                entry,
                line: line_no,
            });
        }
        table.index(pending, &error)?;
        Ok(table)
    }

    /// Sorts the ranges per family and refuses overlaps.
    fn index(
        &mut self,
        mut pending: Vec<Pending>,
        error: &impl Fn(u64, String) -> EnrichError,
    ) -> Result<(), EnrichError> {
        pending.sort_by_key(|p| (p.start.is_ipv6(), key(p.start)));
        for pair in pending.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if a.start.is_ipv6() == b.start.is_ipv6() && key(b.start) <= key(a.end) {
                return Err(error(
                    b.line,
                    format!(
                        "range {}-{} overlaps {}-{} of line {}",
                        b.start, b.end, a.start, a.end, a.line
                    ),
                ));
            }
        }
        for p in pending {
            match (p.start, p.end) {
                (IpAddr::V4(s), IpAddr::V4(e)) => self.v4.push(Range {
                    start: u32::from(s),
                    end: u32::from(e),
                    entry: p.entry,
                }),
                (s, e) => self.v6.push(Range {
                    start: key(s),
                    end: key(e),
                    entry: p.entry,
                }),
            }
        }
        self.v4_by_16 = (0..=1u32 << 16)
            .map(|p| {
                let bound = u64::from(p) << 16;
                // At most 2^32 ranges of distinct starts: the count fits in u32.
                self.v4.partition_point(|r| u64::from(r.start) < bound) as u32
            })
            .collect();
        Ok(())
    }

    /// The AS whose range holds `ip` (an IPv4-mapped IPv6 address is looked up as IPv4).
    pub fn lookup(&self, ip: IpAddr) -> Option<&AsEntry> {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let entry = match ip {
            IpAddr::V4(v4) => self.find_v4(u32::from(v4)),
            IpAddr::V6(v6) => find(&self.v6, u128::from(v6)),
        }?;
        self.entries.get(entry as usize)
    }

    /// How many routed ranges the table holds.
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// Whether the table holds no routed range.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many lines named a range that is not routed (AS 0).
    pub fn not_routed(&self) -> u64 {
        self.not_routed
    }
}

impl AsnTable {
    /// [`find`] within the ranges that start in the /16 of `ip`, and the one before them.
    fn find_v4(&self, ip: u32) -> Option<u32> {
        let p = (ip >> 16) as usize;
        let (Some(&lo), Some(&hi)) = (self.v4_by_16.get(p), self.v4_by_16.get(p + 1)) else {
            // An empty `AsnTable::default()` has no index.
            return find(&self.v4, ip);
        };
        let (lo, hi) = (lo as usize, hi as usize);
        let after = lo + self.v4[lo..hi].partition_point(|r| r.start <= ip);
        let r = self.v4.get(after.checked_sub(1)?)?;
        (ip <= r.end).then_some(r.entry)
    }
}

fn find<T: Ord + Copy>(ranges: &[Range<T>], ip: T) -> Option<u32> {
    let after = ranges.partition_point(|r| r.start <= ip);
    let r = ranges.get(after.checked_sub(1)?)?;
    (ip <= r.end).then_some(r.entry)
}

/// An address as one number, IPv4 and IPv6 alike (families never compare with each other).
fn key(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

struct Row<'a> {
    start: IpAddr,
    end: IpAddr,
    asn: Asn,
    organization: &'a str,
}

/// One line; `None` for a range that is not routed (AS 0).
fn parse_line(text: &str) -> Result<Option<Row<'_>>, String> {
    let fields: Vec<&str> = text.splitn(5, '\t').collect();
    if fields.len() < 3 {
        return Err(format!(
            "expected 5 tab-separated columns (range_start range_end asn country organisation), \
             found {}",
            fields.len()
        ));
    }
    let start = address(fields[0]).map_err(|e| format!("range_start: {e}"))?;
    let end = address(fields[1]).map_err(|e| format!("range_end: {e}"))?;
    if start.is_ipv4() != end.is_ipv4() {
        return Err(format!(
            "range {start}-{end} mixes an IPv4 and an IPv6 address"
        ));
    }
    if key(end) < key(start) {
        return Err(format!("range_end {end} is before range_start {start}"));
    }
    let number: u32 = fields[2]
        .trim()
        .strip_prefix("AS")
        .unwrap_or(fields[2].trim())
        .parse()
        .map_err(|_| format!("asn: {:?} is not an AS number", fields[2]))?;
    if number == 0 {
        return Ok(None);
    }
    let asn = Asn::new(number).map_err(|e| format!("asn: {e}"))?;
    let organization = fields.get(4).map_or("", |o| o.trim());
    if organization.chars().any(char::is_control) {
        return Err("organisation: contains a control character".to_owned());
    }
    Ok(Some(Row {
        start,
        end,
        asn,
        organization,
    }))
}

/// An address as text, or an IPv4 address as a number (`ip2asn-v4-u32.tsv`).
fn address(field: &str) -> Result<IpAddr, String> {
    let field = field.trim();
    if !field.is_empty() && field.bytes().all(|b| b.is_ascii_digit()) {
        return field
            .parse::<u32>()
            .map(|n| IpAddr::V4(n.into()))
            .map_err(|_| format!("{field} is larger than an IPv4 address"));
    }
    field
        .parse()
        .map_err(|_| format!("{field:?} is not an IP address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64, for reproducible random tables.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The indexed lookup answers as a linear scan of the lines does, on random tables of
    /// ranges of every size (within one /16, across /16s, touching, with gaps).
    #[test]
    fn indexed_lookup_agrees_with_a_linear_scan() {
        let mut state = 7;
        for round in 0..20 {
            let mut text = String::new();
            let mut ranges = Vec::new();
            let mut start: u64 = next(&mut state) % (1 << 20);
            while ranges.len() < 300 {
                let size = 1 + next(&mut state) % [16, 300, 70_000, 3_000_000][round % 4];
                let end = start + size - 1;
                if end > u64::from(u32::MAX) {
                    break;
                }
                let asn = 1 + next(&mut state) % 5;
                text.push_str(&format!(
                    "{}\t{}\t{asn}\tUS\tAS-{asn}\n",
                    std::net::Ipv4Addr::from(start as u32),
                    std::net::Ipv4Addr::from(end as u32)
                ));
                ranges.push((start as u32, end as u32, asn as u32));
                start = end + 1 + next(&mut state) % 3 * (next(&mut state) % 100_000);
            }
            let table = AsnTable::read(text.as_bytes(), Path::new("random.tsv")).expect("valid");
            let mut probes: Vec<u32> = (0..2_000).map(|_| next(&mut state) as u32).collect();
            for &(s, e, _) in &ranges {
                probes.extend([s, e, s.wrapping_sub(1), e.wrapping_add(1)]);
            }
            for ip in probes {
                let expected = ranges
                    .iter()
                    .find(|&&(s, e, _)| s <= ip && ip <= e)
                    .map(|r| r.2);
                let got = table
                    .lookup(IpAddr::V4(ip.into()))
                    .map(|entry| entry.asn.get());
                assert_eq!(
                    got,
                    expected,
                    "round {round}, {}",
                    std::net::Ipv4Addr::from(ip)
                );
            }
        }
        assert_eq!(
            AsnTable::default().lookup("8.8.8.8".parse().expect("ip")),
            None
        );
    }
}
