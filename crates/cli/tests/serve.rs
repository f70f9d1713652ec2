//! `periscope serve` end to end, as the README's newcomer uses it: `--demo` on an empty data
//! directory ingests demo data and prints a key; the key answers; `periscope admin` creates
//! another account and key beside the running server; SIGTERM shuts down cleanly; no log line
//! carries a key; a second start on the same directory just serves (index file loaded, no new
//! data, no new key). `periscope ingest` beside the running server sends its batches through
//! the ingest socket, and the server answers with the new host within seconds; once the
//! server is gone, ingest writes the store itself. `periscope signin` runs the sign-in
//! service alone, and a server pointed at it signs in there.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{command, periscope, scratch, text};

/// A running server: its address, the key it printed (if any) and every stderr line so far.
struct Server {
    child: Child,
    address: String,
    key: Option<String>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    /// Starts the server; with `demo_key`, waits for the demo announcement too.
    fn start(data: &str, demo_key: bool) -> Server {
        Self::start_with(data, demo_key, "127.0.0.1:0", &[])
    }

    /// [`Self::start`] on `listen`, with more environment variables.
    fn start_with(data: &str, demo_key: bool, listen: &str, env: &[(&str, &str)]) -> Server {
        let mut child = command(&[
            "serve",
            "--demo",
            "--demo-hosts",
            "300",
            "--data",
            data,
            "--listen",
            listen,
        ])
        .env("PERISCOPE_DNS_SERVERS", "127.0.0.1:9")
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
            key: None,
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
            let trimmed = line.trim();
            if trimmed.starts_with("psk_") {
                server.key = Some(trimmed.to_owned());
            }
            let done = if demo_key {
                line.starts_with("The demo data is synthetic")
            } else {
                !server.address.is_empty()
            };
            server.seen.push(line);
            if done {
                return server;
            }
        }
    }

    /// Sends SIGTERM and waits for the exit; returns every stderr line.
    fn stop(mut self) -> Vec<String> {
        let pid = self.child.id().to_string();
        assert!(periscope_kill(&pid));
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        self.seen
    }
}

fn periscope_kill(pid: &str) -> bool {
    std::process::Command::new("kill")
        .args(["-TERM", pid])
        .status()
        .unwrap()
        .success()
}

/// One HTTP/1.1 exchange: (status, body).
fn http(address: &str, method: &str, path: &str, key: Option<&str>, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let auth = key.map_or(String::new(), |k| format!("Authorization: Bearer {k}\r\n"));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

#[test]
fn serve_demo_answers_admin_keys_work_and_shutdown_is_clean() {
    let dir = scratch("serve_demo");
    let data = dir.join("data");
    let data = data.to_str().unwrap();

    let server = Server::start(data, true);
    assert!(
        server
            .seen
            .iter()
            .any(|l| l.contains("generating a synthetic demo dataset"))
    );
    let key = server.key.clone().expect("the demo key is printed");
    let (status, body) = http(&server.address, "GET", "/healthz", None, "");
    assert_eq!(status, 200, "{body}");
    let (status, body) = http(
        &server.address,
        "POST",
        "/v1/search",
        Some(&key),
        r#"{"query":"port:22","limit":2}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""used":1"#), "{body}");

    // An administrator adds an account beside the running server.
    let out = periscope(&[
        "admin",
        "--data",
        data,
        "create-account",
        "--email",
        "ops@example.com",
        "--org",
        "Ops",
        "--limit",
        "unlimited",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = periscope(&[
        "admin",
        "--data",
        data,
        "create-key",
        "--email",
        "ops@example.com",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ops_key = text(&out.stdout).trim().to_owned();
    let (status, body) = http(
        &server.address,
        "POST",
        "/v1/search",
        Some(&ops_key),
        r#"{"query":"port:443","limit":1}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("allowance"), "unlimited: {body}");
    let (status, body) = http(
        &server.address,
        "POST",
        "/v1/search",
        Some("psk_wrong"),
        r#"{"query":"port:443"}"#,
    );
    assert_eq!(status, 401, "{body}");

    let lines = server.stop();
    assert!(
        lines.iter().any(|l| l.contains("shutting down")),
        "{lines:?}"
    );
    // Log lines (everything but the announcement block) never carry a key.
    for line in lines
        .iter()
        .filter(|l| l.contains(" INFO ") || l.contains(" WARN ") || l.contains(" ERROR "))
    {
        assert!(
            !line.contains("psk_") && !line.contains("Bearer"),
            "a key in a log line: {line}"
        );
    }

    // A second start on the same directory serves what is there.
    let again = Server::start(data, false);
    assert!(again.key.is_none(), "no second demo key");
    assert!(!again.seen.iter().any(|l| l.contains("generating")));
    assert!(
        again
            .seen
            .iter()
            .any(|l| l.contains("loaded from its index file")),
        "{:?}",
        again.seen
    );
    let (status, body) = http(
        &again.address,
        "POST",
        "/v1/search/count",
        Some(&key),
        r#"{"query":"port:22"}"#,
    );
    assert_eq!(status, 200, "{body}");
    again.stop();
}

/// The time `secs_ago` seconds ago as RFC 3339.
fn ago(secs_ago: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let at = i64::try_from(now - secs_ago).unwrap();
    periscope_model::Timestamp::from_unix(at)
        .unwrap()
        .to_string()
}

#[test]
fn ingest_beside_a_running_server_is_searchable_within_seconds() {
    let dir = scratch("serve_ingest");
    let data_dir = dir.join("data");
    let data = data_dir.to_str().unwrap();
    let server = Server::start(data, true);
    let key = server.key.clone().expect("the demo key is printed");
    let ip = "240.255.255.200";
    let detail = format!(r#"{{"ip":"{ip}"}}"#);
    let (status, body) = http(
        &server.address,
        "POST",
        "/v1/hosts/detail",
        Some(&key),
        &detail,
    );
    assert_eq!(status, 404, "the demo does not hold {ip}: {body}");

    let file = dir.join("new.jsonl");
    let lines = format!(
        "{{\"kind\":\"service\",\"ip\":\"{ip}\",\"port\":8443,\"transport\":\"tcp\",\
         \"protocol\":\"https\",\"observed_at\":\"{}\",\"status\":\"completed\"}}\n\
         {{\"kind\":\"service\",\"ip\":\"{ip}\",\"port\":70000}}\n",
        ago(600)
    );
    std::fs::write(&file, lines).unwrap();
    let sent = std::time::Instant::now();
    let out = periscope(&["ingest", "--data", data, file.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("sending the batches to it"),
        "{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("through:"), "{stdout}");
    // The server's store merges its runs; this process did not wait for any.
    assert!(!stdout.contains("waiting for merges"), "{stdout}");
    assert!(stdout.contains("applied:           1\n"), "{stdout}");
    assert!(stdout.contains("1 rejected"), "{stdout}");
    assert!(stdout.contains(":line 2: port:"), "{stdout}");

    // Searchable after the next refresh, without a restart.
    let found = loop {
        let (status, body) = http(
            &server.address,
            "POST",
            "/v1/hosts/detail",
            Some(&key),
            &detail,
        );
        if status == 200 {
            break body;
        }
        assert_eq!(status, 404, "{body}");
        assert!(
            sent.elapsed() < Duration::from_secs(60),
            "not searchable after a minute"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(found.contains(r#""port":8443"#), "{found}");
    eprintln!(
        "searchable {:.1} s after the ingest started",
        sent.elapsed().as_secs_f64()
    );

    let lines = server.stop();
    assert!(
        lines.iter().any(|l| l.contains("ingest connection closed")),
        "{lines:?}"
    );
    assert!(
        !data_dir.join("ingest.sock").exists(),
        "the socket is removed at shutdown"
    );

    // No server: ingest opens the store itself (the observation is already current).
    let out = periscope(&["ingest", "--data", data, file.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(!stdout.contains("through:"), "{stdout}");
    assert!(stdout.contains("(waiting for merges 0.0 s)"), "{stdout}");
    assert!(stdout.contains("superseded:        1\n"), "{stdout}");
}

/// One GET, the whole response (status line, headers and body) as text.
fn raw_get(address: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn serve_demo_mounts_the_sign_in_service_and_the_web_application() {
    let dir = scratch("serve_web");
    let data = dir.join("data");
    let data_str = data.to_str().unwrap();
    let server = Server::start(data_str, false);
    let address = server.address.clone();

    // The embedded sign-in service under /auth, its issuer derived from the actual address.
    let (status, body) = http(
        &address,
        "GET",
        "/auth/.well-known/openid-configuration",
        None,
        "",
    );
    assert_eq!(status, 200, "{body}");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["issuer"], format!("http://{address}/auth"));
    assert_eq!(
        doc["end_session_endpoint"],
        format!("http://{address}/auth/logout")
    );

    // The web application at /: without a session, "Sign in to search" with the banner.
    let (status, body) = http(&address, "GET", "/", None, "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Sign in to search"), "{body}");
    assert!(body.contains(periscope_ui::BANNER), "{body}");
    // Its sign-in goes to the embedded provider with the automatically configured client.
    let response = raw_get(&address, "/signin");
    assert!(response.starts_with("HTTP/1.1 303"), "{response}");
    assert!(
        response.contains(&format!(
            "location: http://{address}/auth/authorize?response_type=code&client_id=periscope-web"
        )),
        "{response}"
    );
    // The registration page of the provider, with the banner too.
    let (status, body) = http(&address, "GET", "/auth/register", None, "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Preview: Periscope"), "{body}");
    // `--demo`: every page says the data is synthetic, the API's JSON is untouched.
    for path in ["/", "/auth/register", "/quickstart"] {
        let (status, body) = http(&address, "GET", path, None, "");
        assert_eq!(status, 200, "{path}: {body}");
        let banner = body.find("class=\"banner\"").unwrap_or(usize::MAX);
        let notice = body.find("class=\"banner demo\"");
        assert!(
            notice.is_some_and(|n| n > banner) && body.contains("shown here is synthetic"),
            "{path}: {body}"
        );
    }
    let (_, openapi) = http(&address, "GET", "/v1/openapi.json", None, "");
    assert!(!openapi.contains("shown here is synthetic"));
    // The API is still beside them.
    assert_eq!(http(&address, "GET", "/healthz", None, "").0, 200);

    // The client secret is generated once, readable by the owner only.
    use std::os::unix::fs::PermissionsExt;
    let secret = data.join("web-client-secret");
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let first = std::fs::read_to_string(&secret).unwrap();
    let lines = server.stop();
    assert!(
        !lines.iter().any(|l| l.contains(first.trim())),
        "the client secret reached the log"
    );
    let again = Server::start(data_str, false);
    let _ = again.stop();
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        first,
        "kept across restarts"
    );
}

#[test]
fn the_sign_in_service_runs_alone_for_a_server_elsewhere() {
    let dir = scratch("signin_alone");
    // The application's address, chosen first: the provider registers its callback.
    let app = format!("127.0.0.1:{}", periscope_testkit::free_port());
    let provider_data = dir.join("provider");
    let mut provider = command(&[
        "signin",
        "--data",
        provider_data.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--app-url",
        &format!("http://{app}"),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stderr = BufReader::new(provider.stderr.take().unwrap());
    let issuer = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the provider exited"
        );
        if let Some(rest) = line.strip_prefix("periscope: sign-in service ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || for _ in stderr.lines() {});
    let provider_address = issuer.strip_prefix("http://").unwrap().to_owned();
    let (status, body) = http(
        &provider_address,
        "GET",
        "/.well-known/openid-configuration",
        None,
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&format!(r#""issuer":"{issuer}""#)), "{body}");

    let secret = std::fs::read_to_string(provider_data.join("web-client-secret")).unwrap();
    let data = dir.join("app");
    let server = Server::start_with(
        data.to_str().unwrap(),
        false,
        &app,
        &[
            ("PERISCOPE_WEB_ISSUER", issuer.as_str()),
            ("PERISCOPE_WEB_CLIENT_ID", "periscope-web"),
            ("PERISCOPE_WEB_CLIENT_SECRET", secret.trim()),
            // Mail settings for the embedded service, which is not mounted: said in the log.
            ("PERISCOPE_SIGNIN_SMTP_HOST", "smtp.example.com"),
        ],
    );
    // No embedded provider; the application's sign-in goes to the one running alone …
    assert_eq!(
        http(
            &app,
            "GET",
            "/auth/.well-known/openid-configuration",
            None,
            ""
        )
        .0,
        404
    );
    let response = raw_get(&app, "/signin");
    assert!(response.starts_with("HTTP/1.1 303"), "{response}");
    let location = response
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap()
        .trim()
        .to_owned();
    let expected = format!("{issuer}/authorize?response_type=code&client_id=periscope-web");
    assert!(location.starts_with(&expected), "{location}");
    // … which knows this client and its callback: it asks for the credentials.
    let path = location.strip_prefix(&issuer).unwrap();
    let answer = raw_get(&provider_address, path);
    assert!(answer.starts_with("HTTP/1.1 303"), "{answer}");
    assert!(answer.contains("location: /signin?return_to="), "{answer}");

    let log = server.stop();
    assert!(
        log.iter()
            .any(|l| l.contains("[signin] mail settings are not used: web.issuer")),
        "{log:?}"
    );
    assert!(periscope_kill(&provider.id().to_string()));
    assert!(provider.wait().unwrap().success());
}
