//! Prometheus metrics of the server, rendered by hand in the text exposition format:
//! requests by route and status, a latency histogram by route, searches charged, searches
//! running, the size of the index answering now, the durations of ingest batches and index
//! refreshes, the state database's connection pool, the build, and the process (resident
//! memory, open and allowed descriptors, read from `/proc/self` at scrape time).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::IndexGauge;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Upper bounds of the ingest-batch and index-refresh histograms, in seconds (a delta
/// refresh takes milliseconds to seconds, a full rebuild minutes).
const SLOW_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, bounds: &[f64], secs: f64) {
        self.counts.resize(bounds.len(), 0);
        for (bound, n) in bounds.iter().zip(self.counts.iter_mut()) {
            if secs <= *bound {
                *n += 1;
            }
        }
        self.count += 1;
        self.sum += secs;
    }

    /// The series of this histogram; `labels` is empty or ends with a comma.
    fn render(&self, out: &mut String, name: &str, labels: &str, bounds: &[f64]) {
        for (i, bound) in bounds.iter().enumerate() {
            let n = self.counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}_bucket{{{labels}le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"+Inf\"}} {}", self.count);
        let bare = labels.trim_end_matches(',');
        let braces = |l: &str| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{{{l}}}")
            }
        };
        let _ = writeln!(out, "{name}_sum{} {}", braces(bare), self.sum);
        let _ = writeln!(out, "{name}_count{} {}", braces(bare), self.count);
    }
}

#[derive(Debug, Default)]
struct Counters {
    requests: BTreeMap<(&'static str, u16), u64>,
    latency: BTreeMap<&'static str, Histogram>,
    ingest: Histogram,
    refresh: BTreeMap<&'static str, Histogram>,
}

/// What the process uses now, read from `/proc/self` (Linux).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Process {
    /// Resident memory, in bytes (`VmRSS`).
    pub resident_bytes: u64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The soft limit on descriptors.
    pub max_fds: u64,
}

impl Process {
    /// Reads the process's figures; `None` where `/proc/self` cannot be read.
    pub fn read() -> Option<Self> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let rss_kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
        let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
        let max_fds = limits
            .lines()
            .find_map(|l| l.strip_prefix("Max open files"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|soft| soft.parse().ok())
            .unwrap_or(0);
        Some(Self {
            resident_bytes: rss_kb * 1024,
            // The directory read itself held one descriptor.
            open_fds: open_fds.saturating_sub(1),
            max_fds,
        })
    }
}

/// The state database's connection pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pool {
    /// Connections open (in use or idle).
    pub open: u32,
    /// Connections idle.
    pub idle: u32,
}

/// The request counters.
#[derive(Debug, Default)]
pub struct Metrics {
    counters: Mutex<Counters>,
}

/// Values read elsewhere at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    /// Searches charged since start.
    pub searches_charged: u64,
    /// Operations running now.
    pub searches_running: u32,
    /// The index answering now.
    pub index: IndexGauge,
    /// The state database's pool.
    pub pool: Pool,
    /// The process (`None`: not readable here).
    pub process: Option<Process>,
}

impl Metrics {
    /// Records one answered request.
    pub fn observe(&self, route: &'static str, status: u16, elapsed: Duration) {
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        *c.requests.entry((route, status)).or_default() += 1;
        c.latency
            .entry(route)
            .or_default()
            .observe(&BUCKETS, elapsed.as_secs_f64());
    }

    /// Records one ingest batch applied through the ingest socket.
    pub fn observe_ingest(&self, elapsed: Duration) {
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        c.ingest.observe(&SLOW_BUCKETS, elapsed.as_secs_f64());
    }

    /// Records one index refresh that swapped in a new view; `kind` is `delta` or `full`.
    pub fn observe_refresh(&self, kind: &'static str, elapsed: Duration) {
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        c.refresh
            .entry(kind)
            .or_default()
            .observe(&SLOW_BUCKETS, elapsed.as_secs_f64());
    }

    /// The exposition text.
    pub fn render(&self, gauges: Gauges) -> String {
        let c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::new();
        out.push_str(
            "# HELP periscope_http_requests_total HTTP requests answered, by route and status.\n",
        );
        out.push_str("# TYPE periscope_http_requests_total counter\n");
        for ((route, status), n) in &c.requests {
            let _ = writeln!(
                out,
                "periscope_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        out.push_str("# HELP periscope_http_request_duration_seconds Time to answer, by route.\n");
        out.push_str("# TYPE periscope_http_request_duration_seconds histogram\n");
        for (route, h) in &c.latency {
            h.render(
                &mut out,
                "periscope_http_request_duration_seconds",
                &format!("route=\"{route}\","),
                &BUCKETS,
            );
        }
        out.push_str(
            "# HELP periscope_ingest_batch_duration_seconds Time to apply one batch sent to the ingest socket.\n",
        );
        out.push_str("# TYPE periscope_ingest_batch_duration_seconds histogram\n");
        c.ingest.render(
            &mut out,
            "periscope_ingest_batch_duration_seconds",
            "",
            &SLOW_BUCKETS,
        );
        out.push_str(
            "# HELP periscope_index_refresh_duration_seconds Time of an index refresh that swapped in a new view, by kind (delta, full).\n",
        );
        out.push_str("# TYPE periscope_index_refresh_duration_seconds histogram\n");
        for (kind, h) in &c.refresh {
            h.render(
                &mut out,
                "periscope_index_refresh_duration_seconds",
                &format!("kind=\"{kind}\","),
                &SLOW_BUCKETS,
            );
        }
        let gauge = |out: &mut String, name: &str, kind: &str, help: &str, value: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        };
        gauge(
            &mut out,
            "periscope_searches_charged_total",
            "counter",
            "Searches charged to an allowance since start.",
            gauges.searches_charged,
        );
        gauge(
            &mut out,
            "periscope_searches_running",
            "gauge",
            "Operations of the search capability running now.",
            u64::from(gauges.searches_running),
        );
        gauge(
            &mut out,
            "periscope_index_hosts",
            "gauge",
            "Hosts in the index snapshot answering now.",
            gauges.index.hosts,
        );
        gauge(
            &mut out,
            "periscope_index_services",
            "gauge",
            "Current services in the index snapshot answering now.",
            gauges.index.services,
        );
        gauge(
            &mut out,
            "periscope_index_generation",
            "gauge",
            "Store generation the answering snapshot was built from.",
            gauges.index.generation,
        );
        gauge(
            &mut out,
            "periscope_state_pool_connections",
            "gauge",
            "Connections the state database's pool holds open (in use or idle).",
            u64::from(gauges.pool.open),
        );
        gauge(
            &mut out,
            "periscope_state_pool_idle_connections",
            "gauge",
            "Idle connections in the state database's pool.",
            u64::from(gauges.pool.idle),
        );
        let _ = writeln!(
            out,
            "# HELP periscope_build_info The running build.\n# TYPE periscope_build_info gauge\n\
             periscope_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        if let Some(p) = gauges.process {
            gauge(
                &mut out,
                "process_resident_memory_bytes",
                "gauge",
                "Resident memory size in bytes.",
                p.resident_bytes,
            );
            gauge(
                &mut out,
                "process_open_fds",
                "gauge",
                "Number of open file descriptors.",
                p.open_fds,
            );
            gauge(
                &mut out,
                "process_max_fds",
                "gauge",
                "Maximum number of open file descriptors.",
                p.max_fds,
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.
    use super::*;

    #[test]
    fn counts_by_route_and_status_and_buckets_latency() {
        let m = Metrics::default();
        m.observe("/v1/search", 200, Duration::from_millis(3));
        m.observe("/v1/search", 200, Duration::from_millis(30));
        m.observe("/v1/search", 429, Duration::from_micros(100));
        let text = m.render(Gauges {
            searches_charged: 2,
            searches_running: 0,
            index: IndexGauge {
                hosts: 7,
                services: 9,
                generation: 3,
            },
            pool: Pool { open: 4, idle: 3 },
            process: Process::read(),
        });
        assert!(
            text.contains("periscope_http_requests_total{route=\"/v1/search\",status=\"200\"} 2\n")
        );
        assert!(
            text.contains("periscope_http_requests_total{route=\"/v1/search\",status=\"429\"} 1\n")
        );
        assert!(text.contains(
            "periscope_http_request_duration_seconds_bucket{route=\"/v1/search\",le=\"0.005\"} 2\n"
        ));
        assert!(text.contains(
            "periscope_http_request_duration_seconds_bucket{route=\"/v1/search\",le=\"0.025\"} 2\n"
        ));
        assert!(text.contains(
            "periscope_http_request_duration_seconds_bucket{route=\"/v1/search\",le=\"0.05\"} 3\n"
        ));
        assert!(
            text.contains(
                "periscope_http_request_duration_seconds_count{route=\"/v1/search\"} 3\n"
            )
        );
        assert!(text.contains("periscope_searches_charged_total 2\n"));
        assert!(text.contains("periscope_index_hosts 7\n"));
        assert!(text.contains("periscope_state_pool_connections 4\n"));
        assert!(text.contains("periscope_state_pool_idle_connections 3\n"));
        assert!(text.contains("process_resident_memory_bytes "));
    }

    #[test]
    fn ingest_and_refresh_durations_are_histograms() {
        let m = Metrics::default();
        m.observe_ingest(Duration::from_millis(20));
        m.observe_refresh("delta", Duration::from_millis(3));
        m.observe_refresh("full", Duration::from_secs(40));
        let text = m.render(Gauges::default());
        assert!(text.contains("periscope_ingest_batch_duration_seconds_bucket{le=\"0.01\"} 0\n"));
        assert!(text.contains("periscope_ingest_batch_duration_seconds_bucket{le=\"0.05\"} 1\n"));
        assert!(text.contains("periscope_ingest_batch_duration_seconds_count 1\n"));
        assert!(text.contains(
            "periscope_index_refresh_duration_seconds_bucket{kind=\"delta\",le=\"0.005\"} 1\n"
        ));
        assert!(text.contains(
            "periscope_index_refresh_duration_seconds_bucket{kind=\"full\",le=\"30\"} 0\n"
        ));
        assert!(text.contains("periscope_index_refresh_duration_seconds_count{kind=\"full\"} 1\n"));
        assert!(text.contains("periscope_build_info{version=\""));
    }

    #[test]
    fn the_process_reads_plausibly() {
        let p = Process::read().unwrap();
        assert!(p.resident_bytes > 1 << 20, "{p:?}");
        assert!(p.open_fds >= 3 && p.open_fds < p.max_fds, "{p:?}");
    }
}
