//! Turning one host into observation lines: its names, services, certificates and the
//! domain records that name it.
//!
//! Everything about a host is drawn from its own random stream (seeded by the dataset seed and
//! the host's slot), so a host's lines do not depend on any other host. The host's enrichment
//! JSON (`"host":{…}`) is rendered once and spliced into each of its service lines;
//! certificates are rendered at most once per host and generation. All output goes to one
//! reused byte buffer that the caller drains into its writer.

use periscope_model::protocol::{EvidenceKind, ProtocolEntry, REGISTRY};
use periscope_model::{ProtocolToken, Timestamp};

use crate::json::{
    push_base64_unpadded, push_hex, push_ipv4_dashed, push_str, push_str_inner, push_tenths,
    push_u64,
};
use crate::rng::{Rng, hash2, hash3};
use crate::tables::names;
use crate::tables::products::{self, Product, Version};
use crate::tables::protocols::{CertKind, alternate_ports, summary_fields, tls_profile, transport};
use crate::tables::roles::Role;
use crate::tables::tls::{HOST_KEY_ALGORITHMS, PUBLIC_CAS, SESSIONS};
use crate::world::{Addr, OrgKind, World, tag};
use crate::{StatusCounts, SynthStats};

const DAY: i64 = 86_400;
/// Current observations are dated within this many seconds before `as_of`.
const CURRENT_WINDOW: u64 = 4 * 86_400;
/// Older observations are dated this far before `as_of`, plus up to [`OLDER_WINDOW`].
const OLDER_BASE: u64 = 4 * 86_400;
const OLDER_WINDOW: u64 = 10 * 86_400;
/// Domain records are dated within this many seconds before `as_of`.
const DOMAIN_WINDOW: u64 = 3 * 86_400;
/// Titles of camera web interfaces without an identified product.
const CAMERA_TITLES: &[&str] = &["NVR Login", "Web Client", "IP Camera"];
/// Titles of pages that do not name the organisation.
const PLAIN_TITLES: &[&str] = &[
    "Index of /",
    "Login",
    "Default Web Site Page",
    "Coming soon",
];
/// SSH servers whose software the scan saw but could not map to a product.
const UNIDENTIFIED_SSH: &[&str] = &["Cisco-1.25", "RomSShell_4.31", "ROSSSH", "SSHD"];
/// The most services one host exposes.
const MAX_SERVICES: usize = 12;

/// Shares the generator aims at (documented in the crate docs).
pub(crate) mod share {
    /// Service observations that failed.
    pub const FAILED: f64 = 0.032;
    /// Service observations that are partial.
    pub const PARTIAL: f64 = 0.027;
    /// Services with an older observation besides the current one.
    pub const OLDER: f64 = 0.09;
    /// Failed services with an older, successful observation.
    pub const OLDER_OF_FAILED: f64 = 0.35;
    /// Hosts with one extra long-tail protocol.
    pub const LONG_TAIL: f64 = 0.14;
    /// Services moved to a documented alternate port.
    pub const ALTERNATE_PORT: f64 = 0.04;
    /// Hosts of cloud and hosting providers that run a tenant's workload.
    pub const TENANT: f64 = 0.45;
}

/// How far a scan got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Completed,
    Partial,
    Failed,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Partial => "partial",
            Self::Failed => "failed",
        }
    }
}

/// One service of the current host.
#[derive(Debug, Clone, Copy)]
struct Svc {
    entry: &'static ProtocolEntry,
    port: u16,
    transport: &'static str,
}

/// Values that summary, banner and title templates refer to.
struct Ctx<'a> {
    version: &'a str,
    detail: &'a str,
    name: &'a str,
    banner: &'a str,
    org: &'a str,
    handle: &'a str,
    domain: &'a str,
    tls: bool,
    n: u64,
}

/// Expands a template (see [`crate::tables::protocols::Field`]) into `out`.
fn expand(out: &mut String, tpl: &str, ctx: &Ctx<'_>) {
    let mut rest = tpl;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        let Some(close) = after.find('}') else {
            out.push_str(after);
            return;
        };
        match &after[1..close] {
            "v" => out.push_str(ctx.version),
            "d" => out.push_str(ctx.detail),
            "name" => out.push_str(ctx.name),
            "banner" => out.push_str(ctx.banner),
            "org" => out.push_str(ctx.org),
            "ORG" => out.push_str(ctx.handle),
            "dom" => out.push_str(ctx.domain),
            "tls" => out.push_str(if ctx.tls { "true" } else { "false" }),
            "n" => out.push_str(&ctx.n.to_string()),
            _ => out.push_str(&after[..=close]),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
}

/// The last second a timestamp can hold (9999-12-31T23:59:59Z).
const MAX_UNIX: i64 = 253_402_300_799;

/// A timestamp, clamped into the years 1970–9999.
fn ts(secs: i64) -> Timestamp {
    match Timestamp::from_unix(secs.clamp(0, MAX_UNIX)) {
        Some(t) => t,
        None => unreachable!("clamped into range"),
    }
}

/// A rendered certificate and whether browsers trust it.
#[derive(Debug, Default)]
struct CertSlot {
    json: Vec<u8>,
    trusted: bool,
    ready: bool,
}

/// The generator: the world, the output buffer and reusable per-host scratch space.
pub(crate) struct Generator<'w> {
    world: &'w World,
    /// The output; the caller drains it.
    pub out: Vec<u8>,
    /// Running totals.
    pub stats: SynthStats,
    // Per-host state, reset by `host`.
    slot: u64,
    org: usize,
    name_org: usize,
    tenant: bool,
    rank: u64,
    net: usize,
    addr: Addr,
    role: Role,
    rng: Rng,
    ip: Vec<u8>,
    head: Vec<u8>,
    host_json: Vec<u8>,
    primary: String,
    generic: String,
    dns_name: bool,
    services: Vec<Svc>,
    site_cert: [CertSlot; 2],
    device_cert: CertSlot,
    key_algorithm: &'static str,
    scratch: String,
    banner: String,
}

impl<'w> Generator<'w> {
    /// A generator over `world`.
    pub(crate) fn new(world: &'w World) -> Self {
        Self {
            world,
            out: Vec::with_capacity(1 << 19),
            stats: SynthStats::default(),
            slot: 0,
            org: 0,
            name_org: 0,
            tenant: false,
            rank: 0,
            net: 0,
            addr: Addr::V4(0),
            role: Role::Web,
            rng: Rng::new(0, 0),
            ip: Vec::with_capacity(48),
            head: Vec::with_capacity(96),
            host_json: Vec::with_capacity(2048),
            primary: String::with_capacity(128),
            generic: String::with_capacity(128),
            dns_name: false,
            services: Vec::with_capacity(MAX_SERVICES),
            site_cert: Default::default(),
            device_cert: CertSlot::default(),
            key_algorithm: "ssh-ed25519",
            scratch: String::with_capacity(256),
            banner: String::with_capacity(256),
        }
    }

    /// Appends every line of the host written in position `i`.
    pub(crate) fn host(&mut self, i: u64) {
        let w = self.world;
        self.slot = w.slot(i);
        let (org, rank) = w.locate(self.slot);
        self.org = org;
        self.rank = rank;
        self.net = w.net_of(org, rank);
        self.addr = w.address(org, rank);
        self.rng = Rng::new(w.seed, hash3(tag::HOST, self.slot, 0));
        for c in &mut self.site_cert {
            c.ready = false;
        }
        self.device_cert.ready = false;
        self.ip.clear();
        self.addr.push(&mut self.ip);
        self.head.clear();
        self.head
            .extend_from_slice(b"{\"kind\":\"service\",\"ip\":\"");
        self.head.extend_from_slice(&self.ip);
        self.head.extend_from_slice(b"\",\"port\":");
        match self.addr {
            Addr::V4(_) => self.stats.hosts_v4 += 1,
            Addr::V6(_) => self.stats.hosts_v6 += 1,
        }
        self.role = self.pick_role();
        self.key_algorithm = self.rng.weighted(HOST_KEY_ALGORITHMS);
        self.choose_names();
        self.render_host_json();
        self.choose_services();
        for k in 0..self.services.len() {
            let svc = self.services[k];
            self.service(svc);
        }
        self.domain_records();
    }

    fn is_v6(&self) -> bool {
        matches!(self.addr, Addr::V6(_))
    }

    fn pick_role(&mut self) -> Role {
        use Role::{Camera, Ics, Web};
        let role = self.rng.weighted(Role::mix(self.world.orgs[self.org].kind));
        // IPv6 scans do not reach most device protocols; such hosts are servers instead.
        if self.is_v6() && matches!(role, Camera | Ics) {
            Web
        } else {
            role
        }
    }

    /// Host names: the primary name, a provider's generic name, whether a forward name is
    /// stored. Sets `name_org` (the tenant on provider hosts).
    fn choose_names(&mut self) {
        let w = self.world;
        let org = &w.orgs[self.org];
        self.tenant =
            org.kind.hosts_tenants() && !w.companies.is_empty() && self.rng.chance(share::TENANT);
        self.name_org = if self.tenant {
            w.companies[self.rng.below(w.companies.len() as u64) as usize]
        } else {
            self.org
        };
        // The provider's generic name for this address.
        self.generic.clear();
        let net = &w.nets[self.net];
        let mut tmp = Vec::with_capacity(40);
        match self.addr {
            Addr::V4(a) => push_ipv4_dashed(&mut tmp, a),
            Addr::V6(_) => {
                tmp.extend_from_slice(b"h");
                push_hex(&mut tmp, self.rank, 6);
            }
        }
        let id = String::from_utf8(tmp).unwrap_or_default();
        match org.kind {
            OrgKind::Isp => {
                let pool = self
                    .rng
                    .pick(&["dyn", "static", "cust", "pool", "dsl", "fiber"]);
                self.generic = format!("{id}.{pool}.{}", org.domain);
            }
            OrgKind::Cloud => self.generic = format!("vm-{id}.{}.{}", net.region, org.domain),
            OrgKind::Hosting => self.generic = format!("srv-{id}.{}", org.domain),
            _ => {}
        }
        // The primary name: the organisation's own name for the host, or the generic one.
        self.primary.clear();
        if self.generic.is_empty() || self.tenant {
            let name_org = &w.orgs[self.name_org];
            let label = self.rng.pick(self.role.spec().labels);
            self.primary.push_str(label);
            if self.rng.chance(0.5) {
                self.primary.push_str(&self.rng.between(1, 20).to_string());
            }
            self.primary.push('.');
            if name_org.kind == OrgKind::University && self.rng.chance(0.3) {
                self.primary.push_str(self.rng.pick(names::DEPARTMENTS));
                self.primary.push('.');
            }
            self.primary.push_str(&name_org.domain);
        } else {
            self.primary.push_str(&self.generic);
        }
        let p_dns = match (org.kind, self.tenant) {
            (_, true) => 0.5,
            (OrgKind::Isp, _) => 0.05,
            (OrgKind::Cloud | OrgKind::Hosting, _) => 0.1,
            _ => 0.45,
        };
        self.dns_name = self.rng.chance(p_dns);
    }

    fn render_host_json(&mut self) {
        let w = self.world;
        let net = &w.nets[self.net];
        let v6 = self.is_v6();
        let o = &mut self.host_json;
        o.clear();
        o.extend_from_slice(b"\"host\":{");
        let mut first = true;
        let location = match self.rng.below(100) {
            0..88 => Some(&net.location_city),
            88..97 => Some(&net.location_country),
            _ => None,
        };
        if let Some(l) = location {
            o.extend_from_slice(l);
            first = false;
        }
        let enrichment = if v6 {
            &net.enrichment_v6
        } else {
            &net.enrichment_v4
        };
        if !enrichment.is_empty() {
            if !first {
                o.push(b',');
            }
            o.extend_from_slice(enrichment);
            first = false;
        }
        // Reverse DNS: IPv4 only, about six hosts in ten.
        if !v6 {
            let kind = w.orgs[self.org].kind;
            let (p_own, p_generic) = match (kind, self.tenant) {
                (_, true) => (0.3, 0.35),
                (OrgKind::Isp, _) => (0.0, 0.75),
                (OrgKind::Cloud | OrgKind::Hosting, _) => (0.0, 0.65),
                _ => (0.5, 0.0),
            };
            let x = self.rng.below(1000) as f64 / 1000.0;
            let name: Option<&str> = if x < p_own {
                Some(&self.primary)
            } else if x < p_own + p_generic {
                Some(&self.generic)
            } else {
                None
            };
            if let Some(name) = name {
                if !first {
                    o.push(b',');
                }
                first = false;
                o.extend_from_slice(b"\"reverse_dns\":[");
                push_str(o, name);
                if self.rng.chance(0.04) {
                    let alias = self.rng.pick(names::WEB_LABELS);
                    let domain = &w.orgs[self.name_org].domain;
                    let alias = format!("{alias}-alt.{domain}");
                    if alias != name {
                        o.push(b',');
                        push_str(o, &alias);
                    }
                }
                o.push(b']');
            }
        }
        if self.dns_name {
            if !first {
                o.push(b',');
            }
            first = false;
            o.extend_from_slice(b"\"dns_name\":");
            push_str(o, &self.primary);
        }
        if (self.dns_name && self.rng.chance(0.9)) || (!self.dns_name && self.rng.chance(0.1)) {
            if !first {
                o.push(b',');
            }
            o.extend_from_slice(b"\"domain\":");
            push_str(o, &w.orgs[self.name_org].domain);
        }
        o.push(b'}');
    }

    fn choose_services(&mut self) {
        self.services.clear();
        let spec = self.role.spec();
        for &(token, port, p) in spec.offers {
            if self.rng.chance(p) {
                self.add_service(token, port);
            }
        }
        if !spec.one_of.is_empty() {
            let (token, port) = self.rng.weighted(spec.one_of);
            self.add_service(token, port);
        }
        if self.rng.chance(share::LONG_TAIL) {
            let e = self.rng.pick(&REGISTRY);
            let port = self.rng.pick(e.ports);
            self.add_service(e.value, port);
            if self.rng.chance(0.2) {
                let e = self.rng.pick(&REGISTRY);
                let port = self.rng.pick(e.ports);
                self.add_service(e.value, port);
            }
        }
        if self.services.is_empty() {
            let (token, port) = self.rng.pick(&[("https", 443), ("http", 80), ("ssh", 22)]);
            self.add_service(token, port);
        }
    }

    fn add_service(&mut self, token: &str, port: u16) {
        let Ok(token) = ProtocolToken::parse(token) else {
            return;
        };
        let entry = token.entry();
        let token = entry.value;
        if (self.is_v6() && !entry.ipv6) || self.services.len() >= MAX_SERVICES {
            return;
        }
        let alternates = alternate_ports(token);
        let port = if !alternates.is_empty() && self.rng.chance(share::ALTERNATE_PORT) {
            self.rng.pick(alternates)
        } else {
            port
        };
        let transport = transport(token, port);
        if self
            .services
            .iter()
            .any(|s| s.port == port && s.transport == transport)
        {
            return;
        }
        self.services.push(Svc {
            entry,
            port,
            transport,
        });
    }

    /// The product table of a service on this host.
    fn product_table(&self, token: &str) -> Option<(&'static [(u32, &'static Product)], f64)> {
        use Role::*;
        Some(match (self.role, token) {
            (Windows, "http" | "https") => (products::WINDOWS_WEB, 0.9),
            (Windows, "samba") => (products::WINDOWS, 0.9),
            (Router, "http" | "https") => (&[(1, &products::ROUTEROS)], 0.4),
            (Camera, "http" | "https") => (&[(1, &products::HIKVISION_CAMERA)], 0.5),
            (Ics, "http" | "https") => return None,
            (role, "ssh") if role.embedded() => (products::SSH_EMBEDDED, 0.95),
            (_, "ssh") => (products::SSH, 0.97),
            (_, "http" | "https") => (products::WEB, 0.82),
            (_, t) => (products::for_protocol(t)?, 0.75),
        })
    }

    /// The product and version of a service: the same for every service of the host in the
    /// same family (HTTP and HTTPS share a web server), older for older observations.
    fn product(
        &self,
        token: &str,
        generation: usize,
    ) -> Option<(&'static Product, &'static Version)> {
        let (table, p_known) = self.product_table(token)?;
        let family = table[0]
            .1
            .title
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let mut rng = Rng::new(self.world.seed, hash3(tag::PRODUCT, self.slot, family));
        if !rng.chance(p_known) {
            return None;
        }
        let product = rng.weighted(table);
        let total: u64 = product.versions.iter().map(|v| u64::from(v.weight)).sum();
        let mut x = rng.below(total);
        let mut index = 0;
        for (i, v) in product.versions.iter().enumerate() {
            if x < u64::from(v.weight) {
                index = i;
                break;
            }
            x -= u64::from(v.weight);
        }
        if generation > 0 {
            // An older observation saw an older build, when there is one.
            let older = index + 1 + rng.below(2) as usize;
            if older < product.versions.len() && !product.versions[older].shown.is_empty() {
                index = older;
            }
        }
        Some((product, &product.versions[index]))
    }

    /// Writes the lines of one service: its current observation and maybe an older one.
    fn service(&mut self, svc: Svc) {
        let status = if self.rng.chance(share::FAILED) {
            Status::Failed
        } else if self.rng.chance(share::PARTIAL / (1.0 - share::FAILED)) {
            Status::Partial
        } else {
            Status::Completed
        };
        let p_older = if status == Status::Failed {
            share::OLDER_OF_FAILED
        } else {
            share::OLDER
        };
        let older = self.rng.chance(p_older);
        let older_first = self.rng.chance(0.5);
        let as_of = self.world.as_of.unix();
        let now = as_of - self.rng.below(CURRENT_WINDOW) as i64;
        let then = as_of - (OLDER_BASE + self.rng.below(OLDER_WINDOW)) as i64;
        let older_status = if self.rng.chance(0.9) {
            Status::Completed
        } else {
            Status::Partial
        };
        if older && older_first {
            self.observation(svc, ts(then), older_status, 1);
        }
        self.observation(svc, ts(now), status, 0);
        if older && !older_first {
            self.observation(svc, ts(then), older_status, 1);
        }
    }

    /// Writes one service observation line.
    fn observation(&mut self, svc: Svc, at: Timestamp, status: Status, generation: usize) {
        let token = svc.entry.value;
        let o = &mut self.out;
        o.extend_from_slice(&self.head);
        push_u64(o, u64::from(svc.port));
        o.extend_from_slice(b",\"transport\":\"");
        o.extend_from_slice(svc.transport.as_bytes());
        o.extend_from_slice(b"\",\"protocol\":\"");
        o.extend_from_slice(token.as_bytes());
        o.extend_from_slice(b"\",\"observed_at\":\"");
        at.write_rfc3339(o);
        o.extend_from_slice(b"\",\"status\":\"");
        o.extend_from_slice(status.as_str().as_bytes());
        o.push(b'"');
        self.stats.service_observations += 1;
        match status {
            Status::Completed => self.stats.by_status.completed += 1,
            Status::Partial => self.stats.by_status.partial += 1,
            Status::Failed => self.stats.by_status.failed += 1,
        }
        if generation > 0 {
            self.stats.older_observations += 1;
        }
        if status == Status::Failed {
            let error = self.rng.pick(&[
                "i/o timeout waiting for banner",
                "read: connection reset by peer",
                "EOF before any application data",
                "tls: handshake failure",
                "protocol detection failed: unexpected response",
                "connection closed by remote host",
            ]);
            self.out.extend_from_slice(b",\"error\":");
            push_str(&mut self.out, error);
        } else {
            self.captured(svc, status, generation);
        }
        self.out.push(b',');
        self.out.extend_from_slice(&self.host_json);
        self.out.extend_from_slice(b"}\n");
        self.stats.records += 1;
    }

    /// The captured data of a completed or partial observation.
    fn captured(&mut self, svc: Svc, status: Status, generation: usize) {
        let token = svc.entry.value;
        let partial = status == Status::Partial;
        if partial {
            let error = match svc.entry.evidence_kind {
                EvidenceKind::Http => self.rng.pick(&[
                    "http: unexpected EOF reading body",
                    "http: timeout reading response headers",
                    "http: too many redirects",
                ]),
                EvidenceKind::Ssh => self.rng.pick(&[
                    "ssh: key exchange timed out",
                    "ssh: handshake failed: no common algorithm for host key",
                ]),
                EvidenceKind::Summary => self.rng.pick(&[
                    "read: connection reset by peer after banner",
                    "timeout after partial response",
                ]),
            };
            self.out.extend_from_slice(b",\"error\":");
            push_str(&mut self.out, error);
        }
        let product = self.product(token, generation);
        if let Some((p, v)) = product {
            let o = &mut self.out;
            o.extend_from_slice(b",\"product\":{\"title\":");
            push_str(o, p.title);
            if !v.shown.is_empty() {
                o.extend_from_slice(b",\"version\":");
                push_str(o, v.shown);
            }
            o.extend_from_slice(b",\"cpe\":\"cpe:2.3:");
            for part in [p.part, p.vendor, p.product, v.cpe_version, v.cpe_update] {
                o.extend_from_slice(part.as_bytes());
                o.push(b':');
            }
            o.extend_from_slice(b"*:*:*:*:*:*\"}");
            // Vulnerability enrichment needs a version; it is sometimes unavailable.
            if v.cpe_version != "*" && self.rng.chance(0.9) {
                o.extend_from_slice(b",\"vulnerabilities\":{\"cves\":[");
                for (k, c) in v.cves.iter().enumerate() {
                    if k > 0 {
                        o.push(b',');
                    }
                    o.push(b'"');
                    o.extend_from_slice(c.id.as_bytes());
                    o.push(b'"');
                }
                o.push(b']');
                if let Some(max) = v.cves.iter().map(|c| c.cvss).max() {
                    o.extend_from_slice(b",\"max_cvss\":");
                    push_tenths(o, u64::from(max));
                }
                o.extend_from_slice(b",\"has_exploits\":");
                let exploit = v.cves.iter().any(|c| c.exploit);
                o.extend_from_slice(if exploit { b"true" } else { b"false" });
                o.push(b'}');
                if !v.cves.is_empty() {
                    self.stats.vulnerable_observations += 1;
                }
            }
        }
        // TLS: always on implicit-TLS ports, sometimes after STARTTLS.
        let mut tls = false;
        if let Some((p, kind)) = tls_profile(token, svc.port)
            && p > 0.0
            && self.rng.chance(p)
        {
            self.tls(kind, generation);
            tls = true;
        }
        match svc.entry.evidence_kind {
            EvidenceKind::Http => self.http(svc, partial, product),
            EvidenceKind::Ssh => self.ssh(partial, product),
            EvidenceKind::Summary => self.summary(token, partial, product, tls),
        }
    }

    fn tls(&mut self, kind: CertKind, generation: usize) {
        let (version, suites) = self.rng.weighted(SESSIONS);
        let suite = self.rng.pick(suites);
        let trusted = self.ensure_cert(kind, generation);
        let cert = match kind {
            CertKind::Site => &self.site_cert[generation.min(1)].json,
            CertKind::Device => &self.device_cert.json,
        };
        let o = &mut self.out;
        o.extend_from_slice(b",\"tls\":{\"version\":\"");
        o.extend_from_slice(version.as_bytes());
        o.extend_from_slice(b"\",\"cipher_suite\":\"");
        o.extend_from_slice(suite.as_bytes());
        o.extend_from_slice(b"\",\"browser_trusted\":");
        o.extend_from_slice(if trusted { b"true" } else { b"false" });
        o.extend_from_slice(b",\"certificate\":");
        o.extend_from_slice(cert);
        o.push(b'}');
    }

    /// Renders the host's certificate of a kind and generation if not yet done; returns
    /// whether browsers trust it.
    fn ensure_cert(&mut self, kind: CertKind, generation: usize) -> bool {
        // Devices keep their self-signed certificate for years: one generation only.
        let generation = match kind {
            CertKind::Site => generation.min(1),
            CertKind::Device => 0,
        };
        let slot = match kind {
            CertKind::Site => &self.site_cert[generation.min(1)],
            CertKind::Device => &self.device_cert,
        };
        if slot.ready {
            return slot.trusted;
        }
        let w = self.world;
        let name_org = &w.orgs[self.name_org];
        // Independent of rendering order: its own stream.
        let mut rng = Rng::new(
            w.seed,
            hash3(
                tag::HOST,
                self.slot,
                1 + generation as u64 * 2 + u64::from(kind == CertKind::Device),
            ),
        );
        let as_of = w.as_of.unix();
        let own_name = self.generic.is_empty() || self.tenant;
        let mut json = std::mem::take(match kind {
            CertKind::Site => &mut self.site_cert[generation.min(1)].json,
            CertKind::Device => &mut self.device_cert.json,
        });
        json.clear();
        let mut sans: Vec<String> = Vec::with_capacity(3);
        let (issuer_cn, issuer_org, subject_org, validity_days, public) = match kind {
            CertKind::Site => {
                if own_name && rng.chance(0.15) {
                    sans.push(format!("*.{}", name_org.domain));
                    sans.push(name_org.domain.clone());
                } else {
                    sans.push(self.primary.clone());
                    if own_name && rng.chance(0.5) && self.primary != name_org.domain {
                        sans.push(name_org.domain.clone());
                    }
                }
                let x = rng.below(100);
                let (p_public, p_private) = if own_name { (72, 8) } else { (40, 0) };
                if x < p_public {
                    let ca = rng.weighted(PUBLIC_CAS);
                    let subject = (!ca.domain_validated && own_name).then(|| name_org.name.clone());
                    (
                        ca.common_name.to_string(),
                        Some(ca.organization.to_string()),
                        subject,
                        ca.validity_days,
                        true,
                    )
                } else if x < p_public + p_private {
                    (
                        format!("{} Internal CA", name_org.short),
                        Some(name_org.name.clone()),
                        Some(name_org.name.clone()),
                        730,
                        false,
                    )
                } else {
                    let subject = rng.chance(0.6).then(|| name_org.name.clone());
                    (sans[0].clone(), subject.clone(), subject, 3650, false)
                }
            }
            CertKind::Device => {
                if rng.chance(0.6) {
                    sans.push(self.primary.clone());
                }
                let subject = rng.chance(0.5).then(|| name_org.name.clone());
                let days = 365 * rng.between(1, 10);
                (self.primary.clone(), subject.clone(), subject, days, false)
            }
        };
        let validity = validity_days as i64 * DAY;
        let expired = rng.chance(0.04);
        let age = if expired {
            validity + (1 + rng.below(60)) as i64 * DAY
        } else {
            (1 + rng.below(validity_days.saturating_sub(2).max(1))) as i64 * DAY
        };
        let from = as_of - age - rng.below(86_400) as i64 - generation as i64 * validity;
        let until = from + validity - 1;
        let trusted = public && !expired;
        json.extend_from_slice(b"{");
        if !sans.is_empty() {
            json.extend_from_slice(b"\"subject_alt_names\":[");
            for (k, s) in sans.iter().enumerate() {
                if k > 0 {
                    json.push(b',');
                }
                push_str(&mut json, s);
            }
            json.extend_from_slice(b"],");
        }
        json.extend_from_slice(b"\"common_name\":");
        let cn = sans.first().map_or(self.primary.as_str(), String::as_str);
        push_str(&mut json, cn);
        if let Some(s) = &subject_org {
            json.extend_from_slice(b",\"subject_organization\":");
            push_str(&mut json, s);
        }
        json.extend_from_slice(b",\"issuer_common_name\":");
        push_str(&mut json, &issuer_cn);
        if let Some(s) = &issuer_org {
            json.extend_from_slice(b",\"issuer_organization\":");
            push_str(&mut json, s);
        }
        json.extend_from_slice(b",\"valid_from\":\"");
        ts(from).write_rfc3339(&mut json);
        json.extend_from_slice(b"\",\"valid_until\":\"");
        ts(until).write_rfc3339(&mut json);
        json.extend_from_slice(b"\",\"fingerprint_sha256\":\"");
        for _ in 0..4 {
            push_hex(&mut json, rng.next_u64(), 16);
        }
        json.extend_from_slice(b"\"}");
        let slot = match kind {
            CertKind::Site => &mut self.site_cert[generation.min(1)],
            CertKind::Device => &mut self.device_cert,
        };
        slot.json = json;
        slot.trusted = trusted;
        slot.ready = true;
        trusted
    }

    fn ctx_values(&self) -> (&str, &str, &str) {
        let o = &self.world.orgs[self.name_org];
        (&o.label, &o.handle, &o.domain)
    }

    /// Renders a product banner into `self.banner`.
    fn render_banner(&mut self, tpl: &str, product: Option<(&Product, &Version)>) {
        let mut banner = std::mem::take(&mut self.banner);
        banner.clear();
        let (version, detail) = product.map_or(("", ""), |(_, v)| (v.shown, v.detail));
        let (org, handle, domain) = self.ctx_values();
        let ctx = Ctx {
            version,
            detail,
            name: &self.primary,
            banner: "",
            org,
            handle,
            domain,
            tls: false,
            n: 0,
        };
        expand(&mut banner, tpl, &ctx);
        self.banner = banner;
    }

    fn http(
        &mut self,
        svc: Svc,
        partial: bool,
        product: Option<(&'static Product, &'static Version)>,
    ) {
        let complete = !partial && !self.rng.chance(0.03);
        if !complete {
            self.out
                .extend_from_slice(b",\"http\":{\"complete\":false}");
            return;
        }
        let has_https = self.services.iter().any(|s| s.entry.value == "https");
        let redirect = svc.entry.value == "http" && has_https && self.rng.chance(0.55);
        let code: u64 = if redirect {
            301
        } else {
            self.rng.weighted(&[
                (70, 200),
                (8, 403),
                (8, 404),
                (5, 401),
                (5, 302),
                (2, 500),
                (2, 503),
            ])
        };
        let short = self.world.orgs[self.name_org].short.as_str();
        let own = self.generic.is_empty() || self.tenant;
        self.scratch.clear();
        match code {
            200 => match (self.role, product) {
                (Role::Router | Role::Camera, Some((p, _))) => {
                    self.scratch.push_str(p.default_title)
                }
                (Role::Router, None) => self.scratch.push_str("Login"),
                (Role::Camera, None) => self.scratch.push_str(self.rng.pick(CAMERA_TITLES)),
                (_, Some((p, v)))
                    if !p.default_title.is_empty() && (self.rng.chance(0.25) || !own) =>
                {
                    self.scratch
                        .push_str(&p.default_title.replace("{v}", v.shown));
                }
                _ if own => {
                    let pattern = self.rng.weighted(&[
                        (30, "{}"),
                        (15, "{} | Home"),
                        (10, "Welcome to {}"),
                        (10, "{} – Sign in"),
                        (8, "{} Customer Portal"),
                        (6, "Login"),
                        (5, "Dashboard"),
                        (4, "Index of /"),
                        (1, "{} \"Intranet\""),
                    ]);
                    self.scratch.push_str(&pattern.replace("{}", short));
                }
                _ => self.scratch.push_str(self.rng.pick(PLAIN_TITLES)),
            },
            301 => self.scratch.push_str("301 Moved Permanently"),
            302 => self.scratch.push_str("302 Found"),
            401 => self.scratch.push_str("401 Authorization Required"),
            403 => self.scratch.push_str("403 Forbidden"),
            404 => self.scratch.push_str("404 Not Found"),
            500 => self.scratch.push_str("500 Internal Server Error"),
            _ => self.scratch.push_str("503 Service Unavailable"),
        }
        let server = match product {
            Some((p, v)) => {
                let tpl = if v.shown.is_empty() || self.rng.chance(0.3) {
                    p.banner_bare
                } else {
                    p.banner
                };
                self.render_banner(tpl, product);
                !self.banner.is_empty()
            }
            None => false,
        };
        let o = &mut self.out;
        o.extend_from_slice(b",\"http\":{\"status_code\":");
        push_u64(o, code);
        if !self.scratch.is_empty() {
            o.extend_from_slice(b",\"title\":");
            push_str(o, &self.scratch);
        }
        if server {
            o.extend_from_slice(b",\"server\":");
            push_str(o, &self.banner);
        }
        o.extend_from_slice(b",\"complete\":true}");
    }

    fn ssh(&mut self, partial: bool, product: Option<(&'static Product, &'static Version)>) {
        let detail = match product {
            Some((p, v)) => {
                self.render_banner(p.banner, product);
                v.detail
            }
            None => {
                self.banner.clear();
                self.banner.push_str(self.rng.pick(UNIDENTIFIED_SSH));
                ""
            }
        };
        let o = &mut self.out;
        o.extend_from_slice(b",\"ssh\":{\"protocol_version\":\"2.0\",\"software_version\":");
        push_str(o, &self.banner);
        if !detail.is_empty() {
            o.extend_from_slice(b",\"comments\":");
            push_str(o, detail);
        }
        if !partial {
            o.extend_from_slice(b",\"host_key_algorithm\":\"");
            o.extend_from_slice(self.key_algorithm.as_bytes());
            o.extend_from_slice(b"\",\"host_key_fingerprint\":\"SHA256:");
            let mut key = Rng::new(self.world.seed, hash3(tag::HOST, self.slot, 99));
            let mut bytes = [0u8; 32];
            for chunk in bytes.chunks_mut(8) {
                chunk.copy_from_slice(&key.next_u64().to_le_bytes());
            }
            push_base64_unpadded(o, &bytes);
            o.extend_from_slice(b"\",\"hassh\":\"");
            // The same software build offers the same algorithms: the same HASSH.
            let build = self
                .banner
                .bytes()
                .chain(detail.bytes())
                .fold(0u64, |h, b| hash2(h, u64::from(b)));
            let mut h = Rng::new(build, 0x4a55);
            push_hex(o, h.next_u64(), 16);
            push_hex(o, h.next_u64(), 16);
            o.push(b'"');
        }
        o.push(b'}');
    }

    fn summary(
        &mut self,
        token: &str,
        partial: bool,
        product: Option<(&'static Product, &'static Version)>,
        tls: bool,
    ) {
        let fields = summary_fields(token);
        let banner_tpl = product.map_or("", |(p, _)| p.banner);
        self.render_banner(banner_tpl, product);
        let (version, detail) = product.map_or(("", ""), |(_, v)| (v.shown, v.detail));
        let mut value = std::mem::take(&mut self.scratch);
        let mut wrote = false;
        let limit = if partial { 1 } else { fields.len() };
        for (key, options) in &fields[..limit] {
            let tpl = self.rng.pick(options);
            let n = self.rng.between(1, 64);
            value.clear();
            let (org, handle, domain) = self.ctx_values();
            let ctx = Ctx {
                version,
                detail,
                name: &self.primary,
                banner: &self.banner,
                org,
                handle,
                domain,
                tls,
                n,
            };
            expand(&mut value, tpl, &ctx);
            if value.is_empty() {
                continue;
            }
            value.truncate(floor_char_boundary(&value, 256));
            let o = &mut self.out;
            o.extend_from_slice(if wrote { b"," } else { b",\"summary\":{" });
            wrote = true;
            o.push(b'"');
            o.extend_from_slice(key.as_bytes());
            o.extend_from_slice(b"\":\"");
            push_str_inner(o, &value);
            o.push(b'"');
        }
        if wrote {
            self.out.push(b'}');
        }
        self.scratch = value;
    }

    /// Domain-scan records: some forward names resolve to this host (and siblings), and the
    /// first host of each organisation carries the records of its apex and `www` names.
    fn domain_records(&mut self) {
        let w = self.world;
        if self.dns_name && self.rng.chance(0.5) {
            let mut ranks = [self.rank; 3];
            let mut n = 1;
            let count = w.orgs[self.org].count;
            if count > 1 && self.rng.chance(0.35) {
                for _ in 0..self.rng.between(1, 2) {
                    let r = self.rng.below(count);
                    if !ranks[..n].contains(&r) {
                        ranks[n] = r;
                        n += 1;
                    }
                }
            }
            let name = std::mem::take(&mut self.primary);
            self.domain_record(&name, self.org, &ranks[..n]);
            self.primary = name;
        }
        if self.rank == 0 {
            let org = &w.orgs[self.org];
            let window = org.count.min(64);
            let mut ranks = vec![0u64];
            if let Some(v6) = (1..window).find(|&r| w.is_v6(self.org, r)) {
                ranks.push(v6);
            }
            for r in 1..window.min(4) {
                if !ranks.contains(&r) && self.rng.chance(0.5) {
                    ranks.push(r);
                }
            }
            let apex = org.domain.clone();
            self.domain_record(&apex, self.org, &ranks);
            self.domain_record(
                &format!("www.{apex}"),
                self.org,
                &ranks[..ranks.len().min(2)],
            );
        }
    }

    fn domain_record(&mut self, name: &str, org: usize, ranks: &[u64]) {
        let w = self.world;
        let at = w.as_of.unix() - self.rng.below(DOMAIN_WINDOW) as i64;
        let o = &mut self.out;
        o.extend_from_slice(b"{\"kind\":\"domain\",\"name\":");
        push_str(o, name);
        o.extend_from_slice(b",\"addresses\":[");
        for (k, &r) in ranks.iter().enumerate() {
            if k > 0 {
                o.push(b',');
            }
            o.push(b'"');
            w.address(org, r).push(o);
            o.push(b'"');
        }
        o.extend_from_slice(b"],\"observed_at\":\"");
        ts(at).write_rfc3339(o);
        o.extend_from_slice(b"\"}\n");
        self.stats.domain_records += 1;
        self.stats.records += 1;
    }
}

/// The largest index `<= max` that is a char boundary of `s`.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

impl StatusCounts {
    /// All service observations.
    pub fn total(&self) -> u64 {
        self.completed + self.partial + self.failed
    }
}
