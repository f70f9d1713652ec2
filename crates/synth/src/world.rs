//! The world a dataset describes: organisations, their autonomous systems and networks, and
//! the address plan that maps every host to one address. Built once per dataset; its size is
//! bounded by the number of organisations (at most [`MAX_ORGANIZATIONS`]), not by the number
//! of hosts, so memory stays flat however many hosts are written.
//!
//! **Address plan.** Hosts are numbered `0..hosts`. Organisation `j` owns the contiguous
//! range of host slots `start_j..start_j + count_j`, with counts Zipf-shaped by rank; the rank
//! of a host within its organisation picks the network (each network holds a contiguous range
//! of ranks). A rank is an IPv6 host or an IPv4 host by a stateless hash, so any part of the
//! generator (a domain record naming a sibling host) can recompute any host's address:
//! - IPv4: each network owns a power-of-two block of 240.0.0.0/4 (at least a /24) large
//!   enough that its hosts fill 30–80% of it; blocks are handed out largest first, so they are
//!   aligned without gaps. A rank maps to `base + 1 + (rank · stride mod (size − 2))` with a
//!   stride coprime to `size − 2`: a bijection, so addresses are unique and spread over the
//!   block.
//! - IPv6: each network owns a /48 of 3fff::/20; a rank maps either to subnet 0 with a small
//!   interface identifier (`…:0:0:0:2a`, as servers are often numbered) or to a subnet from 1
//!   to 255 with a scrambled 64-bit identifier (bijective in the rank), so addresses are
//!   unique too.
//!
//! Every network pre-renders the JSON of its location, ASN attributions, provider and WHOIS
//! (one variant per address family), which each host's service lines splice in.

use std::collections::HashSet;
use std::io;

use periscope_model::Timestamp;

use crate::json::{push_fixed4, push_ipv4, push_ipv6, push_str, push_u64};
use crate::rng::{Rng, hash_chance, hash3, mix};
use crate::tables::geo::{COUNTRIES, DATA_CENTRES, country_index};
use crate::tables::names;

/// The most organisations a dataset has.
pub(crate) const MAX_ORGANIZATIONS: u64 = 4_000;
/// The fewest organisations a dataset has.
pub(crate) const MIN_ORGANIZATIONS: u64 = 150;
/// One organisation per this many hosts, between the two bounds.
const HOSTS_PER_ORGANIZATION: u64 = 100;

/// Home countries of cloud providers.
const CLOUD_HOMES: &[&str] = &["US", "US", "DE", "NL", "GB", "JP"];

/// 240.0.0.0, the start of the IPv4 plan.
const V4_START: u64 = 0xf000_0000;
/// One past the end of 240.0.0.0/4.
const V4_END: u64 = 0x1_0000_0000;

/// Stream tags, so that different decisions about the same index draw independent numbers.
pub(crate) mod tag {
    /// Organisation construction.
    pub const ORG: u64 = 1;
    /// Network construction.
    pub const NET: u64 = 2;
    /// The IPv6-or-IPv4 decision of a rank.
    pub const V6: u64 = 3;
    /// The IPv6 addressing style of a rank.
    pub const V6_STYLE: u64 = 4;
    /// Per-host stream.
    pub const HOST: u64 = 5;
    /// Host-order permutation.
    pub const PERM: u64 = 6;
    /// Product choice per host and family.
    pub const PRODUCT: u64 = 7;
}

/// What kind of organisation it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OrgKind {
    /// A large cloud provider; half its hosts run tenants' workloads.
    Cloud,
    /// A hosting provider; likewise hosts tenants.
    Hosting,
    /// An internet service provider: customer routers, cameras, small servers.
    Isp,
    /// A company.
    Company,
    /// A university.
    University,
    /// A public body or non-profit.
    Public,
}

impl OrgKind {
    /// Whether its hosts may run tenants' workloads.
    pub(crate) fn hosts_tenants(self) -> bool {
        matches!(self, Self::Cloud | Self::Hosting)
    }

    fn v6_share(self) -> f64 {
        match self {
            Self::Cloud => 0.17,
            Self::Hosting => 0.12,
            Self::Isp => 0.12,
            Self::Company => 0.05,
            Self::University => 0.15,
            Self::Public => 0.06,
        }
    }
}

/// An organisation.
#[derive(Debug)]
pub(crate) struct Org {
    /// Its kind.
    pub kind: OrgKind,
    /// Legal name: `Northwind Traders Ltd`.
    pub name: String,
    /// Short name: `Northwind Traders`.
    pub short: String,
    /// Handle, as in netnames and AS names: `NORTHWIND`.
    pub handle: String,
    /// Its domain: `northwind.example`.
    pub domain: String,
    /// The first label of its domain: `northwind`.
    pub label: String,
    /// Home country (index into the country table).
    pub country: usize,
    /// Its autonomous systems, the first being the main one.
    pub asns: Vec<u32>,
    /// First host slot.
    pub start: u64,
    /// Number of hosts.
    pub count: u64,
    /// Its networks, as a range of indexes into [`World::nets`].
    pub nets: std::ops::Range<usize>,
    /// The transit or access provider it buys from (an organisation index).
    pub upstream: Option<usize>,
}

/// A network: a block of addresses in one place, announced by one AS.
#[derive(Debug)]
pub(crate) struct Net {
    /// First rank (within the organisation) of its hosts.
    pub rank_start: u64,
    /// Number of ranks.
    pub rank_count: u64,
    /// Country index.
    pub country: usize,
    /// City index within the country.
    pub city: usize,
    /// Region label for provider host names (`de1`).
    pub region: String,
    /// First address of the IPv4 block.
    pub v4_base: u32,
    /// Prefix length of the IPv4 block.
    pub v4_prefix: u8,
    v4_stride: u64,
    v4_span: u64,
    /// The IPv6 /48.
    pub v6_prefix: u128,
    /// `"location":{…}` with city and position.
    pub location_city: Vec<u8>,
    /// `"location":{…}` with the country only.
    pub location_country: Vec<u8>,
    /// `"asn":{…},"provider":{…},"whois":{…}` for IPv4 hosts (members present as recorded).
    pub enrichment_v4: Vec<u8>,
    /// The same for IPv6 hosts.
    pub enrichment_v6: Vec<u8>,
}

/// A host address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Addr {
    /// IPv4.
    V4(u32),
    /// IPv6.
    V6(u128),
}

impl Addr {
    /// Appends the address text.
    pub(crate) fn push(self, out: &mut Vec<u8>) {
        match self {
            Self::V4(a) => push_ipv4(out, a),
            Self::V6(a) => push_ipv6(out, a),
        }
    }
}

/// The world of one dataset.
#[derive(Debug)]
pub(crate) struct World {
    /// The seed.
    pub seed: u64,
    /// The instant the dataset describes.
    pub as_of: Timestamp,
    /// Number of hosts.
    pub hosts: u64,
    /// Organisations, largest first.
    pub orgs: Vec<Org>,
    /// Networks.
    pub nets: Vec<Net>,
    /// Indexes of companies (tenants of cloud and hosting providers).
    pub companies: Vec<usize>,
    perm_mul: u64,
    perm_add: u64,
}

impl World {
    /// Builds the world of a dataset.
    pub(crate) fn new(seed: u64, as_of: Timestamp, hosts: u64) -> io::Result<Self> {
        let n_orgs = (hosts / HOSTS_PER_ORGANIZATION).clamp(MIN_ORGANIZATIONS, MAX_ORGANIZATIONS);
        let mut rng = Rng::new(seed, tag::ORG);
        let mut orgs = build_orgs(&mut rng, n_orgs, hosts);
        let companies: Vec<usize> = (0..orgs.len())
            .filter(|&i| orgs[i].kind == OrgKind::Company)
            .collect();
        let access: Vec<usize> = (0..orgs.len())
            .filter(|&i| matches!(orgs[i].kind, OrgKind::Isp | OrgKind::Hosting))
            .collect();
        for (i, org) in orgs.iter_mut().enumerate() {
            let candidates: Vec<usize> = access.iter().copied().filter(|&a| a != i).collect();
            if !candidates.is_empty() {
                org.upstream = Some(rng.pick(&candidates));
            }
        }
        let nets = build_nets(seed, &mut orgs)?;
        let (perm_mul, perm_add) = permutation(seed, hosts);
        let mut world = Self {
            seed,
            as_of,
            hosts,
            orgs,
            nets,
            companies,
            perm_mul,
            perm_add,
        };
        world.render_networks();
        Ok(world)
    }

    /// The host slot written in position `i`: a fixed permutation of `0..hosts`, so that the
    /// file interleaves organisations as a scan would.
    pub(crate) fn slot(&self, i: u64) -> u64 {
        ((u128::from(i) * u128::from(self.perm_mul) + u128::from(self.perm_add))
            % u128::from(self.hosts)) as u64
    }

    /// The organisation and rank of a host slot.
    pub(crate) fn locate(&self, slot: u64) -> (usize, u64) {
        let j = self.orgs.partition_point(|o| o.start + o.count <= slot);
        (j, slot - self.orgs[j].start)
    }

    /// The network of rank `rank` of organisation `org`.
    pub(crate) fn net_of(&self, org: usize, rank: u64) -> usize {
        let range = self.orgs[org].nets.clone();
        let nets = &self.nets[range.clone()];
        range.start + nets.partition_point(|n| n.rank_start + n.rank_count <= rank)
    }

    /// Whether rank `rank` of organisation `org` is an IPv6 host.
    pub(crate) fn is_v6(&self, org: usize, rank: u64) -> bool {
        let share = self.orgs[org].kind.v6_share();
        hash_chance(hash3(self.seed ^ tag::V6, org as u64, rank), share)
    }

    /// The address of rank `rank` of organisation `org`.
    pub(crate) fn address(&self, org: usize, rank: u64) -> Addr {
        let net = &self.nets[self.net_of(org, rank)];
        let local = rank - net.rank_start;
        if self.is_v6(org, rank) {
            let style = hash3(self.seed ^ tag::V6_STYLE, org as u64, rank);
            let (subnet, iid) = if style % 5 < 2 {
                (0u128, u128::from(rank) + 1)
            } else {
                (
                    u128::from(style >> 56) | 1,
                    u128::from(mix(rank ^ self.seed)),
                )
            };
            Addr::V6(net.v6_prefix | (subnet << 64) | iid)
        } else {
            let offset = 1 + (local * net.v4_stride) % net.v4_span;
            Addr::V4(net.v4_base + offset as u32)
        }
    }

    /// Pre-renders each network's location and enrichment JSON.
    fn render_networks(&mut self) {
        for ni in 0..self.nets.len() {
            let org_index = self.orgs.partition_point(|o| o.nets.end <= ni);
            let mut rng = Rng::new(self.seed, hash3(tag::NET, ni as u64, 1));
            let (city_json, country_json, v4, v6) = {
                let org = &self.orgs[org_index];
                let net = &self.nets[ni];
                let city_json = render_location(&mut rng, net, true);
                let country_json = render_location(&mut rng, net, false);
                let upstream = org.upstream.map(|u| &self.orgs[u]);
                let (v4, v6) = render_enrichment(&mut rng, org, upstream, net, ni);
                (city_json, country_json, v4, v6)
            };
            let net = &mut self.nets[ni];
            net.location_city = city_json;
            net.location_country = country_json;
            net.enrichment_v4 = v4;
            net.enrichment_v6 = v6;
        }
    }
}

/// Zipf–Mandelbrot sizes: organisation `i` has weight `1/(i + 2)`.
fn zipf_starts(n_orgs: u64, hosts: u64) -> Vec<u64> {
    const SCALE: u128 = 1 << 40;
    let weights: Vec<u128> = (0..n_orgs).map(|i| SCALE / u128::from(i + 2)).collect();
    let total: u128 = weights.iter().sum();
    let mut acc = 0u128;
    let mut starts = Vec::with_capacity(weights.len() + 1);
    for w in &weights {
        starts.push((acc * u128::from(hosts) / total) as u64);
        acc += w;
    }
    starts.push(hosts);
    starts
}

fn build_orgs(rng: &mut Rng, n_orgs: u64, hosts: u64) -> Vec<Org> {
    let starts = zipf_starts(n_orgs, hosts);
    let country_weights: Vec<(u32, usize)> = COUNTRIES
        .iter()
        .enumerate()
        .map(|(i, c)| (c.weight, i))
        .collect();
    let mut used_short = HashSet::new();
    let mut used_domain = HashSet::new();
    let mut next_asn = 0u64;
    let asn_offset = rng.below(1023);
    let mut orgs = Vec::with_capacity(n_orgs as usize);
    for i in 0..n_orgs as usize {
        let kind = match i {
            0..3 => OrgKind::Cloud,
            3..6 => OrgKind::Hosting,
            6..16 => OrgKind::Isp,
            _ => rng.weighted(&[
                (70, OrgKind::Company),
                (9, OrgKind::University),
                (6, OrgKind::Public),
                (8, OrgKind::Hosting),
                (7, OrgKind::Isp),
            ]),
        };
        let country = match kind {
            OrgKind::Cloud => country_index(rng.pick(CLOUD_HOMES)),
            _ => rng.weighted(&country_weights),
        };
        let (name, short, first, second) = loop {
            let first = rng.pick(names::FIRST);
            let (short, second) = match kind {
                OrgKind::Cloud => {
                    let s = rng.pick(names::CLOUD);
                    (format!("{first} {s}"), s)
                }
                OrgKind::Hosting => {
                    let s = rng.pick(names::HOSTING);
                    (format!("{first} {s}"), s)
                }
                OrgKind::Isp => {
                    let s = rng.pick(names::ISP);
                    (format!("{first} {s}"), s)
                }
                OrgKind::Company => {
                    let s = rng.pick(names::COMPANY);
                    (format!("{first} {s}"), s)
                }
                OrgKind::University => {
                    let pattern = rng.pick(names::UNIVERSITY);
                    (pattern.replace("{}", first), "university")
                }
                OrgKind::Public => {
                    let pattern = rng.pick(names::PUBLIC);
                    let s = pattern.trim_start_matches("{} ");
                    (pattern.replace("{}", first), s)
                }
            };
            if used_short.insert(short.clone()) {
                let name = match kind {
                    OrgKind::University | OrgKind::Public => short.clone(),
                    _ => {
                        let suffixes = COUNTRIES[country].suffixes;
                        format!("{short} {}", rng.pick(suffixes))
                    }
                };
                break (name, short, first, second);
            }
        };
        let label = {
            let first = first.to_ascii_lowercase();
            let second: String = second
                .split_whitespace()
                .next()
                .unwrap_or("net")
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>()
                .to_ascii_lowercase();
            let candidates = [first.clone(), format!("{first}-{second}")];
            let mut chosen = None;
            for c in candidates {
                if used_domain.insert(c.clone()) {
                    chosen = Some(c);
                    break;
                }
            }
            let mut n = 2;
            while chosen.is_none() {
                let c = format!("{first}-{second}{n}");
                if used_domain.insert(c.clone()) {
                    chosen = Some(c);
                }
                n += 1;
            }
            chosen.unwrap_or_default()
        };
        let n_asns = match kind {
            OrgKind::Cloud => 3,
            OrgKind::Hosting | OrgKind::Isp => 2,
            _ => 1 + u64::from(rng.chance(0.1)),
        };
        let asns = (0..n_asns)
            .map(|_| {
                let k = next_asn;
                next_asn += 1;
                private_asn(k, asn_offset, rng)
            })
            .collect();
        orgs.push(Org {
            kind,
            handle: label.to_ascii_uppercase(),
            domain: format!("{label}.example"),
            label,
            name,
            short,
            country,
            asns,
            start: starts[i],
            count: starts[i + 1] - starts[i],
            nets: 0..0,
            upstream: None,
        });
    }
    orgs
}

/// The `k`-th ASN of the plan: the 1,023 16-bit private ASNs (64512–65534) first, in a
/// seed-dependent order, then 32-bit private ASNs from 4200000000 upwards.
fn private_asn(k: u64, offset: u64, rng: &mut Rng) -> u32 {
    if k < 1023 {
        // 389 is coprime to 1023 = 3 · 11 · 31, so this is a bijection on 0..1023.
        (64_512 + (k * 389 + offset) % 1023) as u32
    } else {
        (4_200_000_000 + (k - 1023) * 100 + rng.below(100)) as u32
    }
}

fn build_nets(seed: u64, orgs: &mut [Org]) -> io::Result<Vec<Net>> {
    let mut nets = Vec::new();
    for (oi, org) in orgs.iter_mut().enumerate() {
        let mut rng = Rng::new(seed, hash3(tag::NET, oi as u64, 0));
        let wanted: u64 = match org.kind {
            OrgKind::Cloud => rng.between(4, 8),
            OrgKind::Hosting => rng.between(1, 3),
            OrgKind::Isp => rng.between(2, 4),
            OrgKind::Company => rng.weighted(&[(70, 1), (22, 2), (8, 3)]),
            OrgKind::University => rng.between(1, 2),
            OrgKind::Public => 1,
        };
        let n = wanted.min((org.count / 8).max(1));
        // Split the ranks 1/(k+1)-proportionally.
        let weights: Vec<u64> = (0..n).map(|k| 1_000_000 / (k + 1)).collect();
        let total: u64 = weights.iter().sum();
        let first = nets.len();
        let mut acc = 0u64;
        let mut dc_offset = rng.below(DATA_CENTRES.len() as u64) as usize;
        for (k, w) in weights.iter().enumerate() {
            let rank_start = (u128::from(acc) * u128::from(org.count) / u128::from(total)) as u64;
            acc += w;
            let rank_end = (u128::from(acc) * u128::from(org.count) / u128::from(total)) as u64;
            let (country, city) = match org.kind {
                OrgKind::Cloud => {
                    let (cc, city) = DATA_CENTRES[(dc_offset + k) % DATA_CENTRES.len()];
                    (country_index(cc), city)
                }
                OrgKind::Hosting if k > 0 => {
                    dc_offset += 1 + rng.below(3) as usize;
                    let (cc, city) = DATA_CENTRES[dc_offset % DATA_CENTRES.len()];
                    (country_index(cc), city)
                }
                OrgKind::Company if k > 0 && rng.chance(0.3) => {
                    let c = rng.below(COUNTRIES.len() as u64) as usize;
                    (c, 0)
                }
                _ => {
                    let cities = COUNTRIES[org.country].cities.len();
                    let city = if k == 0 {
                        0
                    } else {
                        rng.below(cities as u64) as usize
                    };
                    (org.country, city)
                }
            };
            let count = rank_end - rank_start;
            let density = 0.3 + 0.5 * (rng.below(1000) as f64 / 1000.0);
            let needed = (count as f64 / density).ceil() as u64 + 2;
            let size = needed.next_power_of_two().max(256);
            let span = size - 2;
            let mut stride = ((span as f64 * 0.618_033_988_7) as u64) | 1;
            while gcd(stride, span) != 1 {
                stride += 2;
            }
            let region = format!(
                "{}{}",
                COUNTRIES[country].code.to_ascii_lowercase(),
                city + 1
            );
            nets.push(Net {
                rank_start,
                rank_count: count,
                country,
                city,
                region,
                v4_base: 0,
                v4_prefix: (32 - size.trailing_zeros()) as u8,
                v4_stride: stride % span,
                v4_span: span,
                v6_prefix: 0,
                location_city: Vec::new(),
                location_country: Vec::new(),
                enrichment_v4: Vec::new(),
                enrichment_v6: Vec::new(),
            });
        }
        org.nets = first..nets.len();
    }
    // IPv4 blocks, largest first so that every block is aligned without gaps.
    let mut order: Vec<usize> = (0..nets.len()).collect();
    order.sort_by_key(|&i| (nets[i].v4_prefix, i));
    let mut next = V4_START;
    for i in order {
        let size = 1u64 << (32 - u32::from(nets[i].v4_prefix));
        if next + size > V4_END {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "too many hosts for the synthetic address plan (240.0.0.0/4)",
            ));
        }
        nets[i].v4_base = next as u32;
        next += size;
    }
    // IPv6 /48s: 28 bits of 3fff::/20, an odd multiplier makes the numbering a bijection.
    let v6_offset = mix(seed ^ 0x6666) & 0x0fff_ffff;
    for (i, net) in nets.iter_mut().enumerate() {
        let id = ((i as u64).wrapping_mul(0x09e3_779b) + v6_offset) & 0x0fff_ffff;
        net.v6_prefix = (0x3fffu128 << 112) | (u128::from(id) << 80);
    }
    Ok(nets)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A multiplier coprime to `hosts` and an offset: `i ↦ (a·i + b) mod hosts` is a bijection.
fn permutation(seed: u64, hosts: u64) -> (u64, u64) {
    let mut rng = Rng::new(seed, tag::PERM);
    let mut a = ((hosts as f64 * 0.618_033_988_7) as u64 + rng.below(hosts.max(1))) | 1;
    a %= hosts.max(1);
    while hosts > 1 && gcd(a, hosts) != 1 {
        a = (a + 1) % hosts;
    }
    (a.max(1), rng.below(hosts.max(1)))
}

fn render_location(rng: &mut Rng, net: &Net, with_city: bool) -> Vec<u8> {
    let country = &COUNTRIES[net.country];
    let city = &country.cities[net.city];
    let mut o = Vec::with_capacity(256);
    o.extend_from_slice(b"\"location\":{\"continent\":");
    push_str(&mut o, country.continent);
    o.extend_from_slice(b",\"country_code\":");
    push_str(&mut o, country.code);
    o.extend_from_slice(b",\"country_name\":");
    push_str(&mut o, country.name);
    if with_city {
        if let Some(s1) = city.subdivision_1 {
            o.extend_from_slice(b",\"subdivision_1\":");
            push_str(&mut o, s1);
        }
        if let Some(s2) = city.subdivision_2 {
            o.extend_from_slice(b",\"subdivision_2\":");
            push_str(&mut o, s2);
        }
        o.extend_from_slice(b",\"city\":");
        push_str(&mut o, city.name);
        let jitter = |rng: &mut Rng| rng.below(601) as i64 - 300;
        let lat = (city.lat_e4 + jitter(rng)).clamp(-900_000, 900_000);
        let lon = (city.lon_e4 + jitter(rng)).clamp(-1_800_000, 1_800_000);
        o.extend_from_slice(b",\"latitude\":");
        push_fixed4(&mut o, lat);
        o.extend_from_slice(b",\"longitude\":");
        push_fixed4(&mut o, lon);
        let radius = rng.weighted(&[
            (5, 1u64),
            (15, 5),
            (20, 10),
            (25, 20),
            (20, 50),
            (10, 100),
            (5, 200),
        ]);
        o.extend_from_slice(b",\"accuracy_radius_km\":");
        push_u64(&mut o, radius);
    }
    o.push(b'}');
    o
}

fn render_enrichment(
    rng: &mut Rng,
    org: &Org,
    upstream: Option<&Org>,
    net: &Net,
    net_index: usize,
) -> (Vec<u8>, Vec<u8>) {
    let ci = net.country;
    let k = net_index - org.nets.start;
    let asn = org.asns[k % org.asns.len()];
    let bgp_name = if rng.chance(0.5) {
        format!("{}-AS, {}", org.handle, COUNTRIES[org.country].code)
    } else {
        format!("{}-AS", org.handle)
    };
    let mut common = Vec::with_capacity(512);
    // ASN attributions: usually all three agree; sometimes one is missing, the research set
    // names a sibling AS, or BGP names the upstream that announces the block.
    let research = match rng.below(100) {
        0..94 => Some((asn, org.name.clone())),
        94..97 => Some((org.asns[(k + 1) % org.asns.len()], org.name.clone())),
        _ => None,
    };
    let bgp = match (rng.below(100), upstream) {
        (0..86, _) | (86..98, None) => Some((asn, bgp_name)),
        (86..98, Some(up)) => Some((up.asns[0], format!("{}-AS", up.handle))),
        _ => None,
    };
    let network = (!rng.chance(0.05)).then(|| (asn, org.name.clone()));
    let attributions = [("research", research), ("bgp", bgp), ("network", network)];
    if attributions.iter().any(|(_, a)| a.is_some()) {
        common.extend_from_slice(b"\"asn\":{");
        let mut first = true;
        for (key, a) in attributions {
            let Some((number, name)) = a else { continue };
            if !first {
                common.push(b',');
            }
            first = false;
            push_str(&mut common, key);
            common.extend_from_slice(b":{\"asn\":");
            push_u64(&mut common, u64::from(number));
            common.extend_from_slice(b",\"organization\":");
            push_str(&mut common, &name);
            common.push(b'}');
        }
        common.push(b'}');
    }
    if rng.chance(0.9) {
        let isp = match upstream {
            Some(up)
                if matches!(
                    org.kind,
                    OrgKind::Company | OrgKind::University | OrgKind::Public
                ) && rng.chance(0.4) =>
            {
                up.short.as_str()
            }
            _ => org.short.as_str(),
        };
        if !common.is_empty() {
            common.push(b',');
        }
        common.extend_from_slice(b"\"provider\":{\"organization\":");
        push_str(&mut common, &org.name);
        common.extend_from_slice(b",\"as_organization\":");
        push_str(&mut common, &org.name);
        common.extend_from_slice(b",\"isp\":");
        push_str(&mut common, isp);
        common.push(b'}');
    }
    let whois_country = if org.kind == OrgKind::Cloud && rng.chance(0.5) {
        org.country
    } else {
        ci
    };
    let whois = rng.chance(0.95).then(|| {
        let description = match org.kind {
            OrgKind::Cloud => format!("{} compute region {}", org.short, net.region),
            OrgKind::Hosting => format!("{} dedicated servers", org.short),
            OrgKind::Isp => format!("{} broadband customers", org.short),
            OrgKind::Company => format!("{} corporate network", org.short),
            OrgKind::University => format!("{} campus network", org.short),
            OrgKind::Public => format!("{} administration network", org.short),
        };
        let netname = if org.nets.len() == 1 {
            format!("{}-NET", org.handle)
        } else {
            format!("{}-{}-{}", org.handle, COUNTRIES[ci].code, k + 1)
        };
        let mut w = Vec::with_capacity(256);
        w.extend_from_slice(b"\"whois\":{\"description\":");
        push_str(&mut w, &description);
        w.extend_from_slice(b",\"netname\":");
        push_str(&mut w, &netname);
        w.extend_from_slice(b",\"organization\":");
        push_str(&mut w, &org.name);
        w.extend_from_slice(b",\"cidr\":\"");
        let cidr_at = w.len();
        w.extend_from_slice(b"\",\"registry\":");
        push_str(&mut w, COUNTRIES[whois_country].registry);
        w.extend_from_slice(b",\"country_code\":");
        push_str(&mut w, COUNTRIES[whois_country].code);
        w.push(b'}');
        (w, cidr_at)
    });
    let finish = |cidr: &dyn Fn(&mut Vec<u8>)| {
        let mut o = common.clone();
        if let Some((w, at)) = &whois {
            if !o.is_empty() {
                o.push(b',');
            }
            o.extend_from_slice(&w[..*at]);
            cidr(&mut o);
            o.extend_from_slice(&w[*at..]);
        }
        o
    };
    let v4 = finish(&|o: &mut Vec<u8>| {
        push_ipv4(o, net.v4_base);
        o.push(b'/');
        push_u64(o, u64::from(net.v4_prefix));
    });
    let v6 = finish(&|o: &mut Vec<u8>| {
        push_ipv6(o, net.v6_prefix);
        o.extend_from_slice(b"/48");
    });
    (v4, v6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(hosts: u64) -> World {
        World::new(1, Timestamp::from_unix(1_800_000_000).unwrap(), hosts).unwrap()
    }

    #[test]
    fn slots_permute_and_locate() {
        for hosts in [1u64, 2, 7, 1000, 4096] {
            let w = world(hosts);
            let mut seen: Vec<u64> = (0..hosts).map(|i| w.slot(i)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..hosts).collect::<Vec<_>>(), "{hosts}");
            for s in 0..hosts {
                let (o, r) = w.locate(s);
                assert!(r < w.orgs[o].count);
                let n = &w.nets[w.net_of(o, r)];
                assert!(n.rank_start <= r && r < n.rank_start + n.rank_count);
            }
        }
    }

    #[test]
    fn addresses_are_unique_and_inside_their_blocks() {
        let w = world(30_000);
        let mut seen = HashSet::new();
        for s in 0..w.hosts {
            let (o, r) = w.locate(s);
            let net = &w.nets[w.net_of(o, r)];
            let a = w.address(o, r);
            match a {
                Addr::V4(ip) => {
                    let size = 1u64 << (32 - u32::from(net.v4_prefix));
                    assert!(ip > net.v4_base && u64::from(ip) < u64::from(net.v4_base) + size - 1);
                    assert_eq!(ip >> 28, 0xf);
                    assert_eq!(u64::from(net.v4_base) % size, 0);
                }
                Addr::V6(ip) => {
                    assert_eq!(ip >> 80, net.v6_prefix >> 80);
                    assert_eq!(ip >> 108, 0x3fff0);
                }
            }
            assert!(seen.insert(a), "{a:?}");
        }
    }

    #[test]
    fn the_largest_dataset_fits_the_address_plan() {
        let w = world(crate::MAX_HOSTS);
        let last = w
            .nets
            .iter()
            .map(|n| u64::from(n.v4_base) + (1u64 << (32 - u32::from(n.v4_prefix))))
            .max()
            .unwrap();
        assert!(last <= V4_END);
        let (o, r) = w.locate(crate::MAX_HOSTS - 1);
        assert_eq!(o, w.orgs.len() - 1);
        assert_eq!(r, w.orgs[o].count - 1);
    }

    #[test]
    fn organisations_are_named_uniquely_and_sized_zipf_like() {
        let w = world(1_000_000);
        assert_eq!(w.orgs.len() as u64, MAX_ORGANIZATIONS);
        let mut names = HashSet::new();
        let mut domains = HashSet::new();
        for o in &w.orgs {
            assert!(names.insert(o.short.clone()), "{}", o.short);
            assert!(domains.insert(o.domain.clone()), "{}", o.domain);
            for &asn in &o.asns {
                assert!(
                    (64_512..=65_534).contains(&asn)
                        || (4_200_000_000..=4_294_967_294).contains(&asn)
                );
            }
        }
        assert_eq!(w.orgs.iter().map(|o| o.count).sum::<u64>(), 1_000_000);
        assert!(w.orgs[0].count > 50_000 && w.orgs[0].count < 100_000);
        assert!(w.orgs[3999].count > 10);
    }
}
