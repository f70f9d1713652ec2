//! `periscope serve` behind Debian's nginx terminating TLS, with the shipped example
//! `packaging/nginx-periscope.conf` (its name, ports, certificate and upstream replaced): over
//! https with a test certificate, the pages answer through the proxy, every response carries
//! HSTS, the cookies are `Secure`, and an API request and a refused sign-in are logged with
//! the browser's address
//! (curl connects from 127.0.0.2, Chromium from 127.0.0.1, nginx from 127.0.0.3, the trusted
//! proxy), even when
//! the browser sends an `X-Forwarded-For` of its own. A client reaching the server directly
//! cannot name its address with that header. nginx runs in the foreground with its own
//! prefix, configuration, pid file and ports, never the system service.
//!
//! Then a new user's journey through nginx in Chromium (`tests/browser/proxy.mjs`,
//! playwright-core from `crates/web/tests/browser`) on a server with demo data: a refused
//! sign-in, registration through the sign-in service (the confirmation link read from the
//! server's mail outbox), the password, sign-in, a search, sign-out — every response with
//! HSTS, every cookie Secure after every step. The refused sign-in's log line and the search's
//! audit record (read back with `periscope admin audit`, as an operator would) hold the
//! browser's address, not the proxy's.
//!
//! The same checks over curl through Debian's Caddy with the shipped `packaging/Caddyfile`
//! (`caddy run` with its own ports, HOME and XDG directories, admin endpoint off, never the
//! system service); Caddy connects from 127.0.0.1, so that is the trusted proxy there.
//!
//! Needs Debian's `nginx`, `caddy`, `openssl`, `curl`, `chromium` and `nodejs`, and
//! `npm ci --prefix crates/web/tests/browser`; a missing one fails under CI (CI=true) and
//! skips, loudly, elsewhere.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{command, scratch, text};
use periscope_testkit::free_port;

const NAME: &str = "periscope.test";

fn have(tool: &str, package: &str) -> bool {
    let found = Command::new("sh")
        .args([
            "-c",
            &format!("command -v {tool} || test -x /usr/sbin/{tool}"),
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{tool} is missing (Debian package `{package}`); CI must have it"
        );
        eprintln!("SKIPPED: {tool} is missing (Debian package `{package}`)");
    }
    found
}

/// Kills the child (nginx or the server) when the test ends, even on a panic.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A self-signed certificate for [`NAME`]: (certificate, key).
fn certificate(dir: &Path) -> (String, String) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", &format!("/CN={NAME}")])
        .args(["-addext", &format!("subjectAltName=DNS:{NAME}")])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(out.status.success(), "openssl: {}", text(&out.stderr));
    (
        cert.to_str().unwrap().to_owned(),
        key.to_str().unwrap().to_owned(),
    )
}

/// The shipped site configuration made to run here, inside a whole nginx.conf.
fn nginx_conf(dir: &Path, https: u16, http: u16, upstream: &str, cert: &str, key: &str) -> String {
    let site = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/nginx-periscope.conf"),
    )
    .unwrap();
    for expected in [
        "listen 443 ssl http2;",
        "listen 80;",
        "proxy_pass http://127.0.0.1:8080;",
        "proxy_set_header X-Forwarded-For $remote_addr;",
        "/etc/ssl/periscope/fullchain.pem",
        "/etc/ssl/periscope/privkey.pem",
    ] {
        assert!(site.contains(expected), "the example lacks {expected}");
    }
    let site = site
        .replace(
            "listen 443 ssl http2;",
            &format!("listen 127.0.0.1:{https} ssl http2;"),
        )
        .replace("listen [::]:443 ssl http2;", "")
        .replace("listen 80;", &format!("listen 127.0.0.1:{http};"))
        .replace("listen [::]:80;", "")
        .replace("periscope.example.com", NAME)
        .replace("/etc/ssl/periscope/fullchain.pem", cert)
        .replace("/etc/ssl/periscope/privkey.pem", key)
        .replace("http://127.0.0.1:8080", &format!("http://{upstream}"))
        // nginx connects from 127.0.0.3, so that the proxy, curl (127.0.0.2) and Chromium
        // (127.0.0.1) each have their own address.
        .replace(
            "proxy_http_version 1.1;",
            "proxy_http_version 1.1;\n        proxy_bind 127.0.0.3;",
        );
    let d = dir.display();
    format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log info;\nevents {{ worker_connections 64; }}\n\
         http {{\n  access_log {d}/access.log;\n  client_body_temp_path {d}/body;\n\
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n{site}\n}}\n"
    )
}

/// One curl exchange over https through nginx from 127.0.0.2: (status, headers, body).
fn curl(https: u16, cacert: &str, jar: &Path, path: &str, extra: &[&str]) -> (u16, String, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "30", "--interface", "127.0.0.2"])
        .args(["--resolve", &format!("{NAME}:{https}:127.0.0.1")])
        .args([
            "--cacert",
            cacert,
            "-D",
            "-",
            "-o",
            "-",
            "-w",
            "\n%{http_code}",
        ])
        .arg("-c")
        .arg(jar)
        .arg("-b")
        .arg(jar)
        .args(extra)
        .arg(format!("https://{NAME}:{https}{path}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "curl {path}: {}", text(&out.stderr));
    let all = text(&out.stdout);
    let (rest, status) = all.rsplit_once('\n').unwrap();
    let (headers, body) = rest.split_once("\r\n\r\n").unwrap_or((rest, ""));
    (
        status.trim().parse().unwrap(),
        headers.to_owned(),
        body.to_owned(),
    )
}

fn set_cookies(headers: &str) -> Vec<String> {
    headers
        .lines()
        .filter_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("set-cookie")
                .then(|| value.trim().to_owned())
        })
        .collect()
}

#[test]
fn through_nginx_with_tls_hsts_secure_cookies_and_the_browsers_address() {
    if !(have("nginx", "nginx") && have("openssl", "openssl") && have("curl", "curl")) {
        return;
    }
    let dir = scratch("proxy_nginx");
    let data = dir.join("data");
    let (cert, key) = certificate(&dir);
    let https = free_port();
    let public_url = format!("https://{NAME}:{https}");

    // A bad proxy list is refused at start, naming the key.
    let out = command(&["serve", "--data", data.to_str().unwrap()])
        .env("PERISCOPE_HTTP_TRUSTED_PROXIES", "127.0.0.1/40")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("trusted_proxies"),
        "{}",
        text(&out.stderr)
    );

    let (server, lines, mut seen, upstream) =
        start_server(&data, &public_url, "127.0.0.3/32", true);

    let http = free_port();
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, nginx_conf(&dir, https, http, &upstream, &cert, &key)).unwrap();
    let nginx = Command::new("/usr/sbin/nginx")
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _nginx = Reaped(nginx);
    let jar = dir.join("cookies.txt");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", https)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nginx did not start: {}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Plain http is sent to https.
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{redirect_url}",
        ])
        .arg(format!("http://127.0.0.1:{http}/"))
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), format!("301 https://127.0.0.1/"));

    checks_through_proxy(https, &cert, &jar, &upstream, &lines, &mut seen);

    chromium_through_nginx(&public_url, &data, &lines, &mut seen);
    drop(server);
}

/// The newcomer of the Chromium journey.
const NEWCOMER: &str = "newcomer@proxy.example";
/// What the newcomer searches for.
const QUERY: &str = "port:443";

/// The Chromium part (`tests/browser/proxy.mjs`): a new user's journey through nginx —
/// register, confirm through the e-mail's link (from the server's outbox in `data`), sign in,
/// search, sign out — with HSTS on every response and every cookie Secure; the refused
/// sign-in logged, and the search audited, with the browser's address (127.0.0.1), not the
/// proxy's (127.0.0.3). The audit record is read back as an operator would, with
/// `periscope admin audit`.
fn chromium_through_nginx(
    public_url: &str,
    data: &Path,
    lines: &mpsc::Receiver<String>,
    seen: &mut Vec<String>,
) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let playwright = manifest.join("../web/tests/browser");
    let ready = playwright
        .join("node_modules/playwright-core/package.json")
        .exists()
        && Path::new(
            &std::env::var("PERISCOPE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()),
        )
        .exists()
        && have("node", "nodejs");
    if !ready {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the Chromium part needs /usr/bin/chromium (Debian `chromium`), node (`nodejs`) and \
             `npm ci --prefix crates/web/tests/browser`"
        );
        eprintln!("SKIPPED: the Chromium part (no chromium, node or playwright-core)");
        return;
    }
    let mut node = Command::new("node")
        .arg(manifest.join("tests/browser/proxy.mjs"))
        .env("PERISCOPE_BASE", public_url)
        .env("PERISCOPE_EMAIL", NEWCOMER)
        .env("PERISCOPE_PASSWORD", "a long proxy passphrase 7")
        .env("PERISCOPE_QUERY", QUERY)
        .env("PERISCOPE_PLAYWRIGHT", &playwright)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = node.stdin.take().unwrap();
    let stdout = node.stdout.take().unwrap();
    let stderr = node.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut all);
        all
    });
    let mut node = Reaped(node);
    // The script's one question: `ASK link <email>`, the confirmation link of the e-mail sent
    // to that address, answered from the server's outbox.
    let mut said = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(to) = line.strip_prefix("ASK link ") {
            let link = link_from_outbox(&data.join("outbox"), to).unwrap_or_default();
            writeln!(stdin, "{link}").unwrap();
        }
        said.push_str(&line);
        said.push('\n');
    }
    let status = node.0.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(
        status.success() && said.ends_with("DONE\n"),
        "proxy.mjs: {said}\n{stderr}"
    );
    eprint!("{said}");

    // The refused sign-in, logged with the browser's address.
    let refused = wait_for(lines, seen, "sign-in refused");
    assert!(refused.contains("client.ip=127.0.0.1"), "{refused}");

    // The search, audited with the browser's address: read back with `periscope admin audit`.
    let out = command(&[
        "admin",
        "audit",
        "--data",
        data.to_str().unwrap(),
        "--account",
        NEWCOMER,
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    let records: Vec<Vec<&str>> = listed
        .lines()
        .skip(1)
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert!(
        records
            .iter()
            .any(|r| r[2..7] == ["web", "-", "search", "127.0.0.1", "ok"] && r[8] == QUERY),
        "no audited browser search of {QUERY} from 127.0.0.1:\n{listed}"
    );
    // Every record of the journey (the page may also count or suggest filters) names the
    // browser, never the proxy.
    for record in &records {
        assert_eq!(record[1], NEWCOMER, "{listed}");
        assert_eq!(record.len(), 9, "{listed}");
        assert_eq!(
            record[5], "127.0.0.1",
            "not the browser's address:\n{listed}"
        );
    }
}

/// The confirmation link of the newest e-mail to `email` in the outbox `dir`.
fn link_from_outbox(dir: &Path, email: &str) -> Option<String> {
    let mut messages: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(dir)
        .ok()?
        .map(|e| {
            let path = e.unwrap().path();
            let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
            (modified, std::fs::read_to_string(path).unwrap())
        })
        .filter(|(_, m)| m.to_lowercase().contains(&format!("to: {email}")))
        .collect();
    messages.sort_by_key(|(modified, _)| *modified);
    let (_, message) = messages.pop()?;
    let start = message.find("https://")?;
    let link = message[start..].split_whitespace().next()?.to_owned();
    link.contains("/auth/confirm?token=").then_some(link)
}

/// The value of the hidden form field `name` in `html`.
fn body_field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} field in {html}"))
        + marker.len();
    html[start..].split('"').next().unwrap().to_owned()
}

/// The next stderr line containing `needle`.
fn wait_for(lines: &mpsc::Receiver<String>, seen: &mut Vec<String>, needle: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no line with {needle:?}: {seen:?}"));
        if line.contains(needle) {
            return line;
        }
        seen.push(line);
    }
}

/// `periscope serve` on a free loopback port, trusting `trusted` as its proxy (with `demo`,
/// on 300 demo hosts, so that searches find something): the child, its stderr lines, the
/// lines read so far, and its address.
fn start_server(
    data: &Path,
    public_url: &str,
    trusted: &str,
    demo: bool,
) -> (Reaped, mpsc::Receiver<String>, Vec<String>, String) {
    let mut args = vec![
        "serve",
        "--data",
        data.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ];
    if demo {
        args.extend(["--demo", "--demo-hosts", "300"]);
    }
    let mut server = command(&args)
        .env("PERISCOPE_DNS_SERVERS", "127.0.0.1:9")
        .env("PERISCOPE_PUBLIC_URL", public_url)
        .env("PERISCOPE_HTTP_TRUSTED_PROXIES", trusted)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = server.stderr.take().unwrap();
    let server = Reaped(server);
    let (tx, lines) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let upstream = loop {
        let line = lines
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("no serving line: {seen:?}"));
        if let Some(rest) = line.strip_prefix("periscope: serving http://") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
        seen.push(line);
    };

    (server, lines, seen, upstream)
}

/// Through the proxy on `https` from curl at 127.0.0.2: HSTS and Secure cookies on the
/// sign-in page and the application, an API request and a refused sign-in (which forges
/// `X-Forwarded-For`) logged with 127.0.0.2; and directly at `upstream` from 127.0.0.4, the
/// forged header names nobody.
fn checks_through_proxy(
    https: u16,
    cert: &str,
    jar: &Path,
    upstream: &str,
    lines: &mpsc::Receiver<String>,
    seen: &mut Vec<String>,
) {
    // The sign-in page over https: HSTS, and its CSRF cookie Secure.
    let (status, headers, body) = curl(https, cert, jar, "/auth/signin", &[]);
    assert_eq!(status, 200, "{headers}\n{body}");
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("strict-transport-security: max-age=31536000"),
        "{headers}"
    );
    let cookies = set_cookies(&headers);
    let csrf_cookie = cookies
        .iter()
        .find(|c| c.starts_with("periscope_signin_csrf="))
        .unwrap_or_else(|| panic!("no CSRF cookie: {headers}"))
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    for cookie in &cookies {
        assert!(cookie.contains("; Secure"), "not Secure: {cookie}");
    }
    // The browser application's first page sets its own cookie, Secure too.
    let (status, headers, _) = curl(https, cert, jar, "/", &[]);
    assert!(status < 500, "{headers}");
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("strict-transport-security")
    );
    for cookie in set_cookies(&headers) {
        assert!(cookie.contains("; Secure"), "not Secure: {cookie}");
    }

    // An API request through the proxy is logged with the browser's address.
    let (status, _, _) = curl(https, cert, jar, "/healthz", &[]);
    assert_eq!(status, 200);
    let logged = wait_for(lines, seen, "http.route=\"/healthz\"");
    assert!(logged.contains("client.ip=127.0.0.2"), "{logged}");

    // A refused sign-in from the browser at 127.0.0.2, which also claims another address.
    let csrf = body_field(&body, "csrf");
    let form = format!("csrf={csrf}&email=nobody%40example.com&password=wrong-password");
    let (status, headers, _) = curl(
        https,
        cert,
        jar,
        "/auth/signin",
        &["-H", "X-Forwarded-For: 203.0.113.9", "--data", &form],
    );
    assert_eq!(status, 401, "{headers}");
    let refused = wait_for(lines, seen, "sign-in refused");
    assert!(refused.contains("client.ip=127.0.0.2"), "{refused}");

    // Directly, not through the proxy, from 127.0.0.4: the header names nobody. (The
    // cookie is Secure, so it is handed over by hand on plain http.)
    let out = Command::new("curl")
        .args([
            "-sS",
            "--interface",
            "127.0.0.4",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .args(["-H", &format!("Cookie: {csrf_cookie}")])
        .args(["-H", "X-Forwarded-For: 203.0.113.9", "--data", &form])
        .arg(format!("http://{upstream}/auth/signin"))
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "401", "{}", text(&out.stderr));
    let refused = wait_for(lines, seen, "sign-in refused");
    assert!(refused.contains("client.ip=127.0.0.4"), "{refused}");
}

/// The shipped `packaging/Caddyfile` made to run here: its own ports on 127.0.0.1, the test
/// certificate, the server's address.
fn caddyfile(https: u16, http: u16, upstream: &str, cert: &str, key: &str) -> String {
    let site = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/Caddyfile"),
    )
    .unwrap();
    for expected in [
        "admin off",
        "periscope.example.com {",
        "tls /etc/ssl/periscope/fullchain.pem /etc/ssl/periscope/privkey.pem",
        "reverse_proxy 127.0.0.1:8080",
    ] {
        assert!(site.contains(expected), "the Caddyfile lacks {expected}");
    }
    site.replace(
        "admin off",
        &format!("admin off\n\thttp_port {http}\n\thttps_port {https}\n\tdefault_bind 127.0.0.1"),
    )
    .replace("periscope.example.com {", &format!("{NAME} {{"))
    .replace("/etc/ssl/periscope/fullchain.pem", cert)
    .replace("/etc/ssl/periscope/privkey.pem", key)
    .replace("127.0.0.1:8080", upstream)
}

#[test]
fn through_caddy_with_tls_hsts_secure_cookies_and_the_browsers_address() {
    if !(have("caddy", "caddy") && have("openssl", "openssl") && have("curl", "curl")) {
        return;
    }
    let dir = scratch("proxy_caddy");
    let (cert, key) = certificate(&dir);
    let https = free_port();
    let public_url = format!("https://{NAME}:{https}");
    // Caddy connects to the server from 127.0.0.1; curl is at 127.0.0.2.
    let (server, lines, mut seen, upstream) =
        start_server(&dir.join("data"), &public_url, "127.0.0.1/32", false);

    let http = free_port();
    let conf = dir.join("Caddyfile");
    std::fs::write(&conf, caddyfile(https, http, &upstream, &cert, &key)).unwrap();
    let home = dir.join("caddy-home");
    std::fs::create_dir_all(&home).unwrap();
    let log = std::fs::File::create(dir.join("caddy.log")).unwrap();
    let caddy = Command::new("caddy")
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(&conf)
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut caddy = Reaped(caddy);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", https)).is_err() {
        let log = std::fs::read_to_string(dir.join("caddy.log")).unwrap_or_default();
        assert!(
            Instant::now() < deadline && caddy.0.try_wait().unwrap().is_none(),
            "caddy did not start: {log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Plain http is sent to https (on the standard port: the example has no port of its own).
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{redirect_url}",
        ])
        .args(["--resolve", &format!("{NAME}:{http}:127.0.0.1")])
        .arg(format!("http://{NAME}:{http}/"))
        .output()
        .unwrap();
    assert_eq!(
        text(&out.stdout),
        format!("308 https://{NAME}/"),
        "{}",
        text(&out.stderr)
    );

    let jar = dir.join("cookies.txt");
    checks_through_proxy(https, &cert, &jar, &upstream, &lines, &mut seen);

    // /metrics is not served through the proxy.
    let (status, _, _) = curl(https, &cert, &jar, "/metrics", &[]);
    assert_eq!(status, 404);
    drop(caddy);
    drop(server);
}
