//! A deterministic synthetic internet, written in the Periscope observation format
//! (`docs/observation-format.md`): the demo dataset of `periscope serve --demo`, the fixture of
//! tests and the load of benchmarks.
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! use periscope_model::Timestamp;
//! use periscope_synth::{SynthConfig, write_dataset};
//!
//! let cfg = SynthConfig {
//!     hosts: 10_000,
//!     seed: 1,
//!     as_of: Timestamp::parse("2026-11-20T00:00:00Z").expect("valid"),
//! };
//! let mut file = std::fs::File::create("demo.jsonl")?;
//! let stats = write_dataset(&cfg, &mut file)?;
//! eprintln!("{} records", stats.records);
//! # Ok(())
//! # }
//! ```
//!
//! **Deterministic.** The same `(hosts, seed, as_of)` gives byte-identical output on every
//! platform and with every dependency version: the generator uses its own SplitMix64 stream,
//! only integer arithmetic and correctly rounded IEEE-754 operations (no library maths
//! functions, whose last bits vary between platforms) for everything that shapes the data, and
//! hand-written JSON. Every host draws from its own stream, seeded by `(seed, host slot)`.
//!
//! **Streaming.** Memory is bounded by the number of organisations (at most 4,000), not by the
//! number of hosts: nothing is kept per host (about 18 MB resident from 400,000 hosts up).
//! Output is produced in chunks of about 256 KiB, so `out` needs no `BufWriter`. On one core
//! it generates about a million records (1 GB) a second; `periscope bench synth` measures it.
//!
//! **Safe to show.** Addresses come only from space no real host holds: IPv4 240.0.0.0/4
//! and IPv6 3fff::/20 (RFC 9637, documentation). Every DNS name ends in `.example`. ASNs come
//! from the private-use ranges 64512–65534 and 4200000000–4294967294. Organisation names are
//! invented from word lists; certificate authorities are invented. Places (countries,
//! subdivisions, cities, coordinates), software products, CPEs and CVE identifiers are real.
//!
//! # The shape of the data
//!
//! - **Organisations**: `hosts / 100`, between 150 and 4,000, sized Zipf-like (organisation
//!   `i` holds a share proportional to `1/(i+2)`): ranks 0–2 are cloud providers, 3–5 hosting
//!   providers, 6–15 internet service providers, and the long tail is 70% companies, 9%
//!   universities, 6% public bodies, 8% hosting providers and 7% ISPs. Names like "Northwind
//!   Traders Ltd" (legal-form suffix of the home country), domain `northwind.example`, handle
//!   `NORTHWIND`. Each owns one to three private ASNs and one to eight networks: clouds in
//!   data-centre regions on several continents, others mostly in their home country. 39
//!   countries with 1–7 real cities each.
//! - **Addresses** (the `world` module has the plan): each network owns an aligned IPv4 block
//!   of 240.0.0.0/4 (at least a /24, 30–80% used) and an IPv6 /48 of 3fff::/20; every host has
//!   exactly one address, and about 10% of hosts are IPv6.
//! - **Host enrichment** (per network, so hosts of one block agree): location with city and
//!   position for 88% of hosts, country only for 9%, none for 3% (positions within ±0.03° of
//!   the city, accuracy radius 1–200 km); the three ASN attributions name the organisation's AS,
//!   except that BGP names the upstream provider on about 12% of networks, the research dataset
//!   a sibling AS on 3%, and each is missing on 2–5%; provider enrichment on 90% and WHOIS
//!   (description, netname like `NORTHWIND-NET`, organisation, the network's CIDR, the
//!   registry of the country) on 95% of networks.
//! - **Names**: 45% of cloud and hosting hosts run a company tenant's workload and carry the
//!   tenant's names and certificates; other ISP and provider hosts have generic names
//!   (`240-1-2-3.dyn.eastlink-telecom.example`, `vm-240-1-2-3.de1.pennyroyal-cloud.example`).
//!   Reverse DNS on about 60% of IPv4 hosts and never on IPv6; a forward DNS name on about
//!   three hosts in ten, with the stored domain on most of them.
//! - **Services**: by host role (web, mail, shell, database, Windows, router, camera,
//!   industrial controller, infrastructure, VPN; mixed by organisation kind), so `http`,
//!   `https` and `ssh` make up more than half of the service lines; 14% of hosts add a
//!   uniformly chosen registry protocol, so every token appears in a dataset of a few thousand
//!   hosts. Ports are registered ports, or for 4% of the services of tokens that have them one
//!   of the documented [`ALTERNATE_PORTS`]. IPv6 hosts only get tokens whose registry entry
//!   says `ipv6: true`.
//! - **Observations**: 3% failed (error text, no captured data), 3% partial (error text, some
//!   data, HTTP exchange incomplete), the rest completed. About 10% of services (35% of those
//!   whose latest scan failed) also have an older observation, four to fourteen days old,
//!   written before or after the current line, often with an older product version. Current
//!   observations are dated within the four days before `as_of`; nothing is dated after it.
//! - **Captured data**: products with versions and CPE 2.3 identities on about three service
//!   lines in four; vulnerability enrichment (present on 90% of services with a known version)
//!   lists the CVEs of that product version, so the same version always carries the same CVEs,
//!   and about a quarter of service lines list one; TLS on HTTPS and the implicit-TLS ports,
//!   and after STARTTLS sometimes, with the host's certificate (its names and organisation,
//!   issued by an invented public CA, a private CA or self-signed; 4% expired); HTTP status,
//!   title and server; SSH versions, host-key algorithm, `SHA256:` fingerprint and HASSH;
//!   bounded summaries for the rest.
//! - **Domain records** (about 6% of lines): half of the hosts with a forward name get a record
//!   resolving that name to the host (and sometimes siblings); the first host of every
//!   organisation carries records for the organisation's apex and `www` names, which resolve
//!   to several of its hosts, including an IPv6 one when there is one nearby.
//!
//! `docs/synthetic-data.md` describes the same shape for operators, with measured shares.

mod generate;
mod json;
mod rng;
mod tables;
mod world;

use std::io::{self, Write};

use periscope_model::Timestamp;

pub use tables::protocols::{ALTERNATE_PORTS, alternate_ports};

/// The most hosts one dataset can have (the IPv4 plan needs room in 240.0.0.0/4).
pub const MAX_HOSTS: u64 = 50_000_000;

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthConfig {
    /// Number of hosts (unique addresses), 1 to [`MAX_HOSTS`].
    pub hosts: u64,
    /// The seed; the same seed gives the same dataset.
    pub seed: u64,
    /// The instant the dataset describes: every observation is dated at or before it.
    pub as_of: Timestamp,
}

/// Service observations by scan status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// `completed`.
    pub completed: u64,
    /// `partial`.
    pub partial: u64,
    /// `failed`.
    pub failed: u64,
}

/// What a run wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SynthStats {
    /// Lines written.
    pub records: u64,
    /// `kind: "service"` lines.
    pub service_observations: u64,
    /// Service lines by status.
    pub by_status: StatusCounts,
    /// Service lines that an observation of the same service key supersedes.
    pub older_observations: u64,
    /// Service lines whose vulnerability enrichment lists at least one CVE.
    pub vulnerable_observations: u64,
    /// `kind: "domain"` lines.
    pub domain_records: u64,
    /// IPv4 hosts.
    pub hosts_v4: u64,
    /// IPv6 hosts.
    pub hosts_v6: u64,
    /// Organisations in the world (some may own no host in a small dataset).
    pub organizations: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Output is handed to the writer in chunks of about this size.
const CHUNK: usize = 256 * 1024;

/// Writes the dataset of `cfg` to `out`, one observation per line.
///
/// Fails with [`io::ErrorKind::InvalidInput`] when `cfg.hosts` is 0 or above [`MAX_HOSTS`],
/// and with the writer's error when writing fails (what was written stays written).
pub fn write_dataset(cfg: &SynthConfig, out: &mut impl Write) -> io::Result<SynthStats> {
    if cfg.hosts == 0 || cfg.hosts > MAX_HOSTS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the number of hosts must be between 1 and {MAX_HOSTS}, not {}",
                cfg.hosts
            ),
        ));
    }
    let world = world::World::new(cfg.seed, cfg.as_of, cfg.hosts)?;
    let mut generator = generate::Generator::new(&world);
    let mut bytes = 0u64;
    for i in 0..cfg.hosts {
        generator.host(i);
        if generator.out.len() >= CHUNK {
            out.write_all(&generator.out)?;
            bytes += generator.out.len() as u64;
            generator.out.clear();
        }
    }
    out.write_all(&generator.out)?;
    bytes += generator.out.len() as u64;
    out.flush()?;
    let mut stats = generator.stats;
    stats.bytes = bytes;
    stats.organizations = world.orgs.len() as u64;
    Ok(stats)
}
