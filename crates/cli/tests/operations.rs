//! What an operator relies on of a running `periscope serve`: `RUST_LOG` decides what is
//! logged, in text or JSON lines (and a filter that does not parse stops the start with a message naming it);
//! responses are gzip-compressed for a client that asks, and decode to the same body; and
//! `/metrics` carries the build, the process's resident memory and descriptors, the state
//! database's pool, and the durations of ingest batches and index refreshes, with values in
//! plausible ranges.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{command, periscope, scratch, text};

/// A running `periscope serve --demo`: its address and its stderr lines.
struct Server {
    child: Child,
    address: String,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    fn start(data: &str, env: &[(&str, &str)]) -> Server {
        let mut child = command(&[
            "serve",
            "--demo",
            "--demo-hosts",
            "300",
            "--data",
            data,
            "--listen",
            "127.0.0.1:0",
        ])
        .env("PERISCOPE_DNS_SERVERS", "127.0.0.1:9")
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            address: String::new(),
            lines,
            seen: Vec::new(),
        };
        loop {
            let line = server
                .lines
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("no serving line; saw {:?}", server.seen));
            if let Some(rest) = line.strip_prefix("periscope: serving http://") {
                server.address = rest.split_whitespace().next().unwrap().to_owned();
            }
            let done = !server.address.is_empty();
            server.seen.push(line);
            if done {
                return server;
            }
        }
    }

    /// SIGTERM, wait, and every stderr line.
    fn stop(mut self) -> Vec<String> {
        let pid = self.child.id().to_string();
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        assert!(status.success(), "{status}; stderr: {:?}", self.seen);
        self.seen
    }
}

/// A response: status, headers (names lower-case) and the body, de-chunked.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One GET with `headers` over HTTP/1.1.
fn get(address: &str, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut rest = raw[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap()[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    if chunked {
        let mut body = Vec::new();
        loop {
            let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap(), 16).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
            rest.drain(..eol + 2 + size + 2);
        }
        rest = body;
    }
    Response {
        status,
        headers,
        body: rest,
    }
}

/// The value of the sample `name` (a full series name, labels included) in `text`.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn rust_log_decides_what_is_logged() {
    let dir = scratch("ops_rust_log");
    let data = dir.join("data");
    let data = data.to_str().unwrap();

    // Default (info): the start and every request are logged.
    let server = Server::start(data, &[]);
    assert_eq!(get(&server.address, "/healthz", &[]).status, 200);
    let lines = server.stop();
    assert!(lines.iter().any(|l| l.contains("listening")), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("http.route=\"/healthz\"")),
        "{lines:?}"
    );

    // The API's request lines silenced, the rest at info.
    let server = Server::start(data, &[("RUST_LOG", "info,periscope_api=warn")]);
    assert_eq!(get(&server.address, "/healthz", &[]).status, 200);
    let lines = server.stop();
    assert!(lines.iter().any(|l| l.contains("listening")), "{lines:?}");
    assert!(
        !lines.iter().any(|l| l.contains("http.route=")),
        "{lines:?}"
    );

    // Warnings only: no info line at all (the plain `periscope:` announcements stay).
    let server = Server::start(data, &[("RUST_LOG", "warn")]);
    assert_eq!(get(&server.address, "/healthz", &[]).status, 200);
    let lines = server.stop();
    assert!(!lines.iter().any(|l| l.contains(" INFO ")), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.starts_with("periscope: serving")),
        "{lines:?}"
    );

    // JSON lines for journald, filtered the same way: periscope_api at info (its request
    // lines), everything else at warn (no `listening` line).
    let server = Server::start(
        data,
        &[
            ("PERISCOPE_LOG_FORMAT", "json"),
            ("RUST_LOG", "warn,periscope_api=info"),
        ],
    );
    assert_eq!(get(&server.address, "/healthz", &[]).status, 200);
    let lines = server.stop();
    let json: Vec<serde_json::Value> = lines
        .iter()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        json.iter()
            .any(|j| j["http.route"] == "/healthz" && j["level"] == "INFO"),
        "{lines:?}"
    );
    assert!(
        !json.iter().any(|j| j["message"] == "listening"),
        "{lines:?}"
    );

    // A filter that does not parse stops the start, naming the variable.
    let out = command(&["serve", "--data", data, "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "periscope_api=loud")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("RUST_LOG=\"periscope_api=loud\" is not a log filter"),
        "{stderr}"
    );
}

#[test]
fn gzip_when_asked_decodes_to_the_same_body() {
    use flate2::read::GzDecoder;
    let dir = scratch("ops_gzip");
    let data = dir.join("data");
    let server = Server::start(data.to_str().unwrap(), &[]);

    let plain = get(&server.address, "/v1/openapi.json", &[]);
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), None);
    let zipped = get(
        &server.address,
        "/v1/openapi.json",
        &[("Accept-Encoding", "gzip")],
    );
    assert_eq!(zipped.status, 200);
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    assert!(
        zipped.body.len() * 3 < plain.body.len(),
        "gzip {} bytes, plain {}",
        zipped.body.len(),
        plain.body.len()
    );
    let mut decoded = Vec::new();
    GzDecoder::new(&zipped.body[..])
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, plain.body);
    let json: serde_json::Value = serde_json::from_slice(&decoded).unwrap();
    assert!(json.get("openapi").is_some());

    // The browser application's pages too.
    let page = get(&server.address, "/", &[("Accept-Encoding", "gzip")]);
    assert_eq!(
        page.header("content-encoding"),
        Some("gzip"),
        "status {}",
        page.status
    );
    server.stop();
}

#[test]
fn metrics_carry_build_process_pool_ingest_and_refresh() {
    let dir = scratch("ops_metrics");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    let server = Server::start(data, &[]);

    // One batch through the ingest socket, then wait for the refresh that makes it searchable.
    let file = dir.join("new.jsonl");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let at = rfc3339(now - 600);
    std::fs::write(
        &file,
        format!(
            "{{\"kind\":\"service\",\"ip\":\"240.255.255.201\",\"port\":8443,\"transport\":\"tcp\",\
             \"protocol\":\"https\",\"observed_at\":\"{at}\",\"status\":\"completed\"}}\n"
        ),
    )
    .unwrap();
    let out = periscope(&["ingest", "--data", data, file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("sending the batches to it"));

    let deadline = Instant::now() + Duration::from_secs(30);
    let metrics = loop {
        let response = get(&server.address, "/metrics", &[]);
        assert_eq!(response.status, 200);
        let body = String::from_utf8(response.body).unwrap();
        if body.contains("periscope_index_refresh_duration_seconds_count{kind=\"delta\"}") {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "no delta refresh recorded:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };

    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        sample(
            &metrics,
            &format!("periscope_build_info{{version=\"{version}\"}}")
        ),
        1.0
    );
    let rss = sample(&metrics, "process_resident_memory_bytes");
    assert!((4e6..8e9).contains(&rss), "resident memory {rss}");
    let fds = sample(&metrics, "process_open_fds");
    let max_fds = sample(&metrics, "process_max_fds");
    // stdio, the listener, the ingest socket, the store, the state database at least.
    assert!(fds >= 6.0 && fds < max_fds, "{fds} open of {max_fds}");
    let pool = sample(&metrics, "periscope_state_pool_connections");
    let idle = sample(&metrics, "periscope_state_pool_idle_connections");
    assert!(
        pool >= 1.0 && idle <= pool && pool <= 16.0,
        "pool {pool}, idle {idle}"
    );
    assert_eq!(
        sample(&metrics, "periscope_ingest_batch_duration_seconds_count"),
        1.0
    );
    let ingest = sample(&metrics, "periscope_ingest_batch_duration_seconds_sum");
    assert!(ingest > 0.0 && ingest < 30.0, "ingest took {ingest} s");
    let deltas = sample(
        &metrics,
        "periscope_index_refresh_duration_seconds_count{kind=\"delta\"}",
    );
    let delta_secs = sample(
        &metrics,
        "periscope_index_refresh_duration_seconds_sum{kind=\"delta\"}",
    );
    assert!(deltas >= 1.0 && delta_secs > 0.0 && delta_secs < 30.0 * deltas);
    server.stop();
}

/// `unix` seconds as the observation format's timestamp.
fn rfc3339(unix: u64) -> String {
    periscope_model::Timestamp::from_unix(i64::try_from(unix).unwrap())
        .unwrap()
        .to_string()
}
