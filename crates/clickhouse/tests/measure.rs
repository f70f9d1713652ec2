//! A measurement, not a check: synthetic hosts (`periscope-synth`) written to a ClickHouse
//! server the test starts, then the median latency of each kind of call, beside the
//! reference engine over the same observations. Run with
//! `cargo test -p periscope-clickhouse --release --test measure -- --ignored --nocapture`
//! (`PERISCOPE_MEASURE_HOSTS` sets the number of hosts, 100,000 by default).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use periscope_clickhouse::testing::{CLUSTER, Cluster};
use periscope_clickhouse::{ClickHouseIndex, Client, Recording, schema};
use periscope_index::api::{ScanIndex, SearchRequest};
use periscope_index::{IndexConfig, ReferenceIndex};
use periscope_model::observation::{Observation, ObservationReader};
use periscope_model::{Port, Timestamp};
use periscope_query::{Clause, FilterQuery, Query, Resolution};

fn p50(run: impl FnMut()) -> Duration {
    median(11, run)
}

fn median(n: usize, mut run: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            run();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

#[test]
#[ignore = "a measurement: run with --release --ignored --nocapture"]
fn measure_synthetic_hosts() {
    let Some(cluster) = Cluster::start(1, std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))) else {
        return;
    };
    let hosts: u64 = std::env::var("PERISCOPE_MEASURE_HOSTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let as_of = Timestamp::parse("2026-11-20T14:00:00Z").unwrap();
    let cfg = periscope_synth::SynthConfig {
        hosts,
        seed: 7,
        as_of,
    };
    let mut text = Vec::new();
    periscope_synth::write_dataset(&cfg, &mut text).unwrap();
    let mut reader = ObservationReader::new(as_of);
    let observations: Vec<Observation> = std::str::from_utf8(&text)
        .unwrap()
        .lines()
        .filter_map(|l| reader.read_line(l).unwrap())
        .collect();
    let mut reference = ReferenceIndex::new(IndexConfig::default());
    for obs in &observations {
        reference.apply(obs);
    }
    let nodes = cluster.clients();
    schema::init(&nodes, "measure", CLUSTER).unwrap();
    let engine = ClickHouseIndex::new(
        &cluster.urls()[0],
        "measure",
        IndexConfig::default(),
        Duration::from_secs(600),
    )
    .unwrap();
    let t = Instant::now();
    for batch in observations.chunks(50_000) {
        engine.insert(batch).unwrap();
    }
    let took = t.elapsed();
    let disk = nodes[0]
        .execute(
            "SELECT sum(bytes) FROM system.parts WHERE database = 'measure' AND active \
             FORMAT TabSeparated",
        )
        .unwrap();
    eprintln!(
        "{hosts} hosts, {} observations written in {took:.1?} ({:.0} observations/s); \
         {} bytes on disk ({} B/host)",
        observations.len(),
        observations.len() as f64 / took.as_secs_f64(),
        disk.trim(),
        disk.trim().parse::<u64>().unwrap_or(0) / hosts
    );

    let now = as_of;
    let port22 = Query::Filter(FilterQuery::new([Clause::Port(Port::new(22).unwrap())]).unwrap());
    let middle: IpAddr = reference.records().nth(hosts as usize / 2).unwrap().ip;
    let filter22 = port22.as_filter().unwrap().clone();
    breakdown(&cluster.urls()[0], &nodes[0], &reference, now, middle);
    by_hand(&engine, &nodes[0], now, middle);
    let engines: [(&str, &dyn ScanIndex); 2] = [("clickhouse", &engine), ("reference", &reference)];
    for (name, index) in engines {
        let search = p50(|| {
            let req = SearchRequest {
                query: &port22,
                after: None,
                limit: 100,
                resolved: &[],
                now,
            };
            index.search(&req).unwrap();
        });
        let count = p50(|| {
            index.count(&port22, now).unwrap();
        });
        let facets = p50(|| {
            index.facets(&filter22, now).unwrap();
        });
        let exposure = p50(|| {
            index.exposure(&port22, Resolution::Global, now).unwrap();
        });
        let detail = p50(|| {
            index.host_detail(middle, None, 20, now).unwrap();
        });
        eprintln!(
            "{name:>10}: port:22 search page of 100 {search:.1?}, count {count:.1?}, facets \
             {facets:.1?}, exposure {exposure:.1?}; host detail {detail:.1?}"
        );
    }
}

/// A call of any engine, by name.
type Call = Box<dyn Fn(&dyn ScanIndex)>;

/// A call of the engine, and the statements a person would write for its answer.
type HandCase<'a> = (&'static str, Box<dyn Fn() + 'a>, Vec<String>);

fn first(node: &Client, statement: &str) -> String {
    node.execute(&format!("{statement} FORMAT TabSeparated"))
        .unwrap()
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Where each call's time goes: the statements it sends (through a recording client), each
/// statement's median time replayed alone, and the server's own duration and rows read from
/// `system.query_log` — beside the call's median wall time.
fn breakdown(url: &str, node: &Client, reference: &ReferenceIndex, now: Timestamp, middle: IpAddr) {
    let (client, recording): (Client, Recording) = Client::new(url, Duration::from_secs(600))
        .unwrap()
        .recording();
    let engine = ClickHouseIndex::with_client(client, "measure", IndexConfig::default()).unwrap();
    let domain = first(
        node,
        "SELECT name FROM measure.domain_scans ORDER BY name LIMIT 1",
    );
    let asn = first(
        node,
        "SELECT asns[1] FROM measure.facts WHERE fact = 1 AND length(asns) > 0 LIMIT 1",
    );
    let product = first(
        node,
        "SELECT product_words[1] FROM measure.services WHERE length(product_words) > 0 LIMIT 1",
    );
    let parse = |t: &str| periscope_query::parse(t).unwrap();
    let texts = [
        "port:22".to_owned(),
        format!("product:\"{product}\""),
        "country:US".to_owned(),
        format!("asn:{asn}"),
        format!("domain:{domain}"),
        format!("{middle}"),
        match middle {
            IpAddr::V4(a) => {
                let [x, y, z, _] = a.octets();
                format!("cidr:{x}.{y}.{z}.0/24")
            }
            IpAddr::V6(_) => "cidr:10.0.0.0/24".to_owned(),
        },
    ];
    let http = reqwest::blocking::Client::new();
    let raw = |statement: &str| {
        let t = Instant::now();
        let r = http
            .post(format!("{url}/?log_queries=1"))
            .body(statement.to_owned())
            .send()
            .unwrap();
        assert!(
            r.status().is_success(),
            "{statement}: {}",
            r.text().unwrap()
        );
        r.text().unwrap();
        t.elapsed()
    };
    let mut calls: Vec<(String, Call)> = Vec::new();
    for text in &texts {
        let q = parse(text);
        let q2 = q.clone();
        calls.push((
            format!("search {text}"),
            Box::new(move |index: &dyn ScanIndex| {
                let req = SearchRequest {
                    query: &q2,
                    after: None,
                    limit: 100,
                    resolved: &[],
                    now,
                };
                index.search(&req).unwrap();
            }),
        ));
        if text == "port:22" {
            let q3 = q.clone();
            calls.push((
                "search port:22 page after the middle host".to_owned(),
                Box::new(move |index: &dyn ScanIndex| {
                    let req = SearchRequest {
                        query: &q3,
                        after: Some(middle),
                        limit: 100,
                        resolved: &[],
                        now,
                    };
                    index.search(&req).unwrap();
                }),
            ));
            let q4 = q.clone();
            calls.push((
                "count port:22".to_owned(),
                Box::new(move |index: &dyn ScanIndex| {
                    index.count(&q4, now).unwrap();
                }),
            ));
            let f = q.as_filter().unwrap().clone();
            calls.push((
                "facets port:22".to_owned(),
                Box::new(move |index: &dyn ScanIndex| {
                    index.facets(&f, now).unwrap();
                }),
            ));
            let q5 = q.clone();
            calls.push((
                "exposure port:22 global".to_owned(),
                Box::new(move |index: &dyn ScanIndex| {
                    index.exposure(&q5, Resolution::Global, now).unwrap();
                }),
            ));
        }
    }
    calls.push((
        "host detail".to_owned(),
        Box::new(move |index: &dyn ScanIndex| {
            index.host_detail(middle, None, 20, now).unwrap();
        }),
    ));
    for (name, call) in &calls {
        recording.lock().unwrap().clear();
        call(&engine);
        let statements: Vec<String> = recording
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.statement.clone())
            .collect();
        let wall = median(5, || call(&engine));
        let embedded = median(5, || call(reference));
        eprintln!(
            "\n{name}: {} statements, call median {wall:.1?} (embedded {embedded:.1?})",
            statements.len()
        );
        let mut sum = Duration::ZERO;
        for statement in &statements {
            let alone = median(5, || {
                raw(statement);
            });
            sum += alone;
            node.execute("SYSTEM FLUSH LOGS").unwrap();
            let log = first(
                node,
                &format!(
                    "SELECT query_duration_ms, read_rows, read_bytes FROM system.query_log \
                     WHERE type = 2 AND query = {} ORDER BY event_time DESC LIMIT 1",
                    quote(statement)
                ),
            );
            let short: String = statement.chars().take(150).collect();
            eprintln!("  {alone:>9.1?} alone; server ms, rows, bytes: {log:<28} {short}");
        }
        eprintln!("  sum of statements alone {sum:.1?}");
    }
}

fn quote(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Each call beside the same question written by hand in SQL on the same tables (the
/// statements a person would write for the same answer: the page's hosts with their current
/// services, facts and listing domain scans; the count; one host's rows), timed alternately,
/// medians of 11, and the ratio.
fn by_hand(engine: &ClickHouseIndex, node: &Client, now: Timestamp, middle: IpAddr) {
    let cutoff = now.unix() - IndexConfig::default().retention_secs;
    let key = format!(
        "toFixedString(unhex('{:032x}'), 16)",
        periscope_model::ip_order_key(middle)
    );
    // The page's hosts with their current services, facts and listing domain scans, for the
    // statement `hosts` selecting the page's (up to 101) addresses.
    let records = |hosts: &str| {
        vec![
            format!(
                "SELECT hex(addr), argMax(record, (observed_at, rank)) FROM measure.services \
                 WHERE addr IN ({hosts}) AND observed_at >= {cutoff} GROUP BY addr, port, protocol"
            ),
            format!(
                "SELECT hex(addr), argMax(record, (observed_at, rank)) FROM measure.facts \
                 WHERE addr IN ({hosts}) GROUP BY addr, fact"
            ),
            format!(
                "SELECT argMax(record, (observed_at, rank)) FROM measure.domain_scans WHERE name IN \
                 (SELECT name FROM measure.domain_scans ARRAY JOIN addrs AS a WHERE a IN ({hosts})) \
                 GROUP BY name"
            ),
        ]
    };
    let page = |after: &str| {
        records(&format!(
            "SELECT addr FROM measure.services WHERE port = 22 AND observed_at >= {cutoff}{after} \
             GROUP BY addr ORDER BY addr LIMIT 101"
        ))
    };
    let product = first(
        node,
        "SELECT product_words[1] FROM measure.services WHERE length(product_words) > 0 LIMIT 1",
    );
    let asn = first(
        node,
        "SELECT asns[1] FROM measure.facts WHERE fact = 1 AND length(asns) > 0 LIMIT 1",
    );
    // The straightforward statements: every current service's value by argMax, the
    // condition on it, the first 101 hosts.
    let product_hosts = format!(
        "SELECT addr FROM (SELECT addr, argMax(product_words, (observed_at, rank)) AS w \
         FROM measure.services WHERE observed_at >= {cutoff} GROUP BY addr, port, protocol \
         HAVING has(w, '{product}')) GROUP BY addr ORDER BY addr LIMIT 101"
    );
    let by_fact = |fact: u8, condition: &str| {
        format!(
            "SELECT addr FROM measure.services WHERE observed_at >= {cutoff} AND addr IN \
             (SELECT addr FROM measure.facts WHERE fact = {fact} GROUP BY addr HAVING {condition}) \
             GROUP BY addr"
        )
    };
    let us = by_fact(2, "argMax(country, (observed_at, rank)) = 'US'");
    let mut country_page = vec![format!("SELECT count() FROM ({us})")];
    country_page.extend(records(&format!("{us} ORDER BY addr LIMIT 101")));
    let asn_hosts = format!(
        "{} ORDER BY addr LIMIT 101",
        by_fact(1, &format!("has(argMax(asns, (observed_at, rank)), {asn})"))
    );
    let product_query = periscope_query::parse(&format!("product:\"{product}\"")).unwrap();
    let country_query = periscope_query::parse("country:US").unwrap();
    let asn_query = periscope_query::parse(&format!("asn:{asn}")).unwrap();
    let search = |query: &Query| {
        let req = SearchRequest {
            query,
            after: None,
            limit: 100,
            resolved: &[],
            now,
        };
        engine.search(&req).unwrap();
    };
    let port22 = Query::Filter(FilterQuery::new([Clause::Port(Port::new(22).unwrap())]).unwrap());
    let run = |statements: &[String]| {
        for s in statements {
            node.execute(&format!("{s} FORMAT TabSeparated")).unwrap();
        }
    };
    let cases: Vec<HandCase<'_>> = vec![
        (
            "search port:22, first page of 100",
            Box::new(|| {
                let req = SearchRequest {
                    query: &port22,
                    after: None,
                    limit: 100,
                    resolved: &[],
                    now,
                };
                engine.search(&req).unwrap();
            }),
            page(""),
        ),
        (
            "search port:22, page after the middle host",
            Box::new(|| {
                let req = SearchRequest {
                    query: &port22,
                    after: Some(middle),
                    limit: 100,
                    resolved: &[],
                    now,
                };
                engine.search(&req).unwrap();
            }),
            page(&format!(" AND addr > {key}")),
        ),
        (
            "count port:22",
            Box::new(|| {
                engine.count(&port22, now).unwrap();
            }),
            vec![format!(
                "SELECT uniqExact(addr) FROM measure.services WHERE port = 22 AND observed_at >= {cutoff}"
            )],
        ),
        (
            "host detail",
            Box::new(|| {
                engine.host_detail(middle, None, 20, now).unwrap();
            }),
            vec![
                format!(
                    "SELECT argMax(record, (observed_at, rank)) FROM measure.services WHERE addr = {key} \
                     AND observed_at >= {cutoff} GROUP BY port, protocol"
                ),
                format!(
                    "SELECT argMax(record, (observed_at, rank)) FROM measure.facts WHERE addr = {key} \
                     GROUP BY fact"
                ),
                format!(
                    "SELECT argMax(record, (observed_at, rank)) FROM measure.domain_scans WHERE name IN \
                     (SELECT name FROM measure.domain_scans WHERE has(addrs, {key})) GROUP BY name"
                ),
            ],
        ),
        (
            "search product:…, first page of 100",
            Box::new(|| search(&product_query)),
            records(&product_hosts),
        ),
        (
            "search country:US (counted first)",
            Box::new(|| search(&country_query)),
            country_page,
        ),
        (
            "search asn:…, first page of 100",
            Box::new(|| search(&asn_query)),
            records(&asn_hosts),
        ),
    ];
    eprintln!(
        "\n{:<45} {:>10} {:>10} {:>6}",
        "call (medians of 11, alternating)", "engine", "by hand", "ratio"
    );
    for (name, call, statements) in &cases {
        let mut mine = Vec::new();
        let mut hand = Vec::new();
        for _ in 0..11 {
            let t = Instant::now();
            call();
            mine.push(t.elapsed());
            let t = Instant::now();
            run(statements);
            hand.push(t.elapsed());
        }
        mine.sort();
        hand.sort();
        let (m, h) = (mine[5], hand[5]);
        eprintln!(
            "{name:<45} {:>10.1?} {:>10.1?} {:>6.2}",
            m,
            h,
            m.as_secs_f64() / h.as_secs_f64()
        );
    }
}
