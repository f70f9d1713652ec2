//! Prometheus metrics of the HTTP surface, rendered by hand in the text exposition format:
//! requests by route and status, a latency histogram by route, searches charged, searches
//! running, and the size of the index answering now.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::IndexGauge;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Debug, Default)]
struct Counters {
    requests: BTreeMap<(&'static str, u16), u64>,
    latency: BTreeMap<&'static str, Histogram>,
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
}

impl Metrics {
    /// Records one answered request.
    pub fn observe(&self, route: &'static str, status: u16, elapsed: Duration) {
        let mut c = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        *c.requests.entry((route, status)).or_default() += 1;
        let h = c.latency.entry(route).or_default();
        let secs = elapsed.as_secs_f64();
        for (bound, n) in BUCKETS.iter().zip(h.counts.iter_mut()) {
            if secs <= *bound {
                *n += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
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
            for (bound, n) in BUCKETS.iter().zip(h.counts.iter()) {
                let _ = writeln!(
                    out,
                    "periscope_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "periscope_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "periscope_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "periscope_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.count
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
        out
    }
}

#[cfg(test)]
mod tests {
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
    }
}
