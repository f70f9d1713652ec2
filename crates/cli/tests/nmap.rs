//! Real Nmap (Debian's `/usr/bin/nmap`) against services this test starts on loopback, its
//! XML imported and searched through the real API.
//!
//! The test generates a CA and a leaf certificate with `openssl` (SANs, subject O=, issuer),
//! serves HTTPS with it from a small rustls server, plain HTTP from a std server, and SSH from
//! Debian's `/usr/sbin/sshd` on a free port with a generated host key and its own config. Nmap
//! scans the three ports with `-sV` and the scripts `ssl-cert`, `http-title`,
//! `http-server-header` and `ssh-hostkey`. The XML goes into a running `periscope serve`
//! through `periscope ingest` (the server's socket), and searches by `port:`, `protocol:`,
//! `certificate.name:` and `organization:` (certificate subject) find 127.0.0.1; host detail
//! shows TLS and SSH evidence equal to what the test generated. `convert` of the same XML
//! passes `validate`, and ingesting the converted lines gives the same store as the XML.
//!
//! Needs `nmap`, `openssh-server` (sshd), `openssh-client` (ssh-keygen) and `openssl`: with
//! `CI=true` a missing one fails the test; otherwise it is skipped with a loud message.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;
mod demo;

use demo::{post, search, serve};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{periscope, scratch, text};
use periscope_index::durable::DurableStore;
use periscope_testkit::free_port;
use serde_json::Value;

const TOOLS: [&str; 4] = [
    "/usr/bin/nmap",
    "/usr/sbin/sshd",
    "/usr/bin/ssh-keygen",
    "/usr/bin/openssl",
];

/// True when every tool is there; with `CI=true` a missing one panics.
fn tools_present() -> bool {
    let missing: Vec<&str> = TOOLS
        .iter()
        .copied()
        .filter(|t| !Path::new(t).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    let message = format!(
        "the real-Nmap test needs {missing:?} (Debian packages nmap, openssh-server, \
         openssh-client, openssl)"
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{message}; CI must run it"
    );
    eprintln!("\n{0}\n!!! SKIPPED: {message}\n{0}\n", "!".repeat(78));
    false
}

fn run(program: &str, args: &[&str], dir: &Path) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// What the test generated and expects to see again.
struct Expected {
    fingerprint: String,
    valid_from: String,
    valid_until: String,
    ssh_fingerprint: String,
}

const SANS: [&str; 2] = ["www.loopback-test.example", "api.loopback-test.example"];
const ORGANIZATION: &str = "Northwind Loopback Ltd";
const ISSUER_CN: &str = "Periscope Loopback CA";
const TLS_TITLE: &str = "Loopback TLS page";
// Server headers Nmap's probes know, so it names the product (nginx) and the service (http).
const TLS_SERVER: &str = "nginx/1.24.0";
const PLAIN_TITLE: &str = "Plain loopback page";
const PLAIN_SERVER: &str = "nginx";

/// A CA, a leaf certificate signed by it, and an SSH host key, in `dir`.
fn generate(dir: &Path) -> Expected {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut args = vec!["req", "-x509"];
    args.extend(ec);
    args.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "30",
        "-subj",
        "/O=Periscope Loopback Trust/CN=Periscope Loopback CA",
    ]);
    run("openssl", &args, dir);
    let mut args = vec!["req"];
    args.extend(ec);
    let subject = format!("/O={ORGANIZATION}/CN={}", SANS[0]);
    args.extend(["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", &subject]);
    run("openssl", &args, dir);
    std::fs::write(
        dir.join("ext.cnf"),
        format!(
            "subjectAltName=DNS:{},DNS:{},IP:127.0.0.1\n",
            SANS[0], SANS[1]
        ),
    )
    .unwrap();
    run(
        "openssl",
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "leaf.pem",
            "-days",
            "20",
            "-extfile",
            "ext.cnf",
        ],
        dir,
    );
    let facts = run(
        "openssl",
        &[
            "x509",
            "-in",
            "leaf.pem",
            "-noout",
            "-dates",
            "-dateopt",
            "iso_8601",
            "-fingerprint",
            "-sha256",
        ],
        dir,
    );
    let field = |prefix: &str| {
        facts
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap()
            .trim()
            .to_owned()
    };
    let iso = |s: String| s.replacen(' ', "T", 1);
    run(
        "ssh-keygen",
        &["-q", "-t", "ed25519", "-N", "", "-f", "host_key"],
        dir,
    );
    let listed = run("ssh-keygen", &["-l", "-f", "host_key.pub"], dir);
    Expected {
        fingerprint: field("sha256 Fingerprint=").replace(':', "").to_lowercase(),
        valid_from: iso(field("notBefore=")),
        valid_until: iso(field("notAfter=")),
        ssh_fingerprint: listed.split_whitespace().nth(1).unwrap().to_owned(),
    }
}

/// Answers one HTTP exchange on `stream`: a page for GET and HEAD, 400 for anything else,
/// nothing when the client sends nothing (Nmap's NULL probe).
fn answer(stream: &mut (impl Read + Write), server: &str, title: &str) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    // Reads until the end of the headers, or only the first chunk when it is not HTTP (Nmap's
    // other probes are answered at once).
    while !request.windows(4).any(|w| w == b"\r\n\r\n")
        && request.len() < 16 * 1024
        && (request.is_empty() || request.starts_with(b"GET ") || request.starts_with(b"HEAD "))
    {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    if request.is_empty() {
        return;
    }
    let response = if request.starts_with(b"GET ") || request.starts_with(b"HEAD ") {
        let body = format!("<html><head><title>{title}</title></head><body>hello</body></html>");
        format!(
            "HTTP/1.1 200 OK\r\nServer: {server}\r\nContent-Type: text/html\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    } else {
        format!(
            "HTTP/1.1 400 Bad Request\r\nServer: {server}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        )
    };
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.flush();
}

/// Serves HTTP on a free loopback port from threads, each connection on its own; with
/// `tls`, inside TLS. Returns the port.
fn http_server(
    tls: Option<Arc<rustls::ServerConfig>>,
    server: &'static str,
    title: &'static str,
) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let tls = tls.clone();
            std::thread::spawn(move || {
                stream
                    .set_read_timeout(Some(Duration::from_secs(8)))
                    .unwrap();
                match tls {
                    Some(config) => {
                        let Ok(conn) = rustls::ServerConnection::new(config) else {
                            return;
                        };
                        let mut tls = rustls::StreamOwned::new(conn, stream);
                        answer(&mut tls, server, title);
                        tls.conn.send_close_notify();
                        let _ = tls.flush();
                    }
                    None => {
                        let mut stream = stream;
                        answer(&mut stream, server, title);
                    }
                }
            });
        }
    });
    port
}

fn tls_config(dir: &Path) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.join("leaf.pem"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    chain.extend(
        CertificateDer::pem_file_iter(dir.join("ca.pem"))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap(),
    );
    let key = PrivateKeyDer::from_pem_file(dir.join("leaf.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    Arc::new(config)
}

/// Debian's sshd on a free loopback port with the generated host key and its own config.
struct Sshd(Child);

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sshd(dir: &Path) -> (Sshd, u16) {
    // As root, sshd insists on its privilege-separation directory (Debian's service creates it).
    if !Path::new("/run/sshd").exists() {
        let _ = std::fs::create_dir_all("/run/sshd");
    }
    let port = free_port();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nUsePAM no\n\
             StrictModes no\n",
            dir.join("host_key").display(),
            dir.join("sshd.pid").display()
        ),
    )
    .unwrap();
    let child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "sshd did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (Sshd(child), port)
}

fn service(host: &Value, port: u16) -> &Value {
    host["services"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["port"] == port)
        .unwrap_or_else(|| panic!("no service on port {port}: {host}"))
}

fn evidence<'a>(service: &'a Value, kind: &str) -> &'a Value {
    service["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} evidence: {service}"))
}

fn store_contents(data: &Path) -> String {
    let store = DurableStore::open(&data.join("scan.store")).unwrap();
    let hosts: Vec<_> = store.hosts().unwrap().map(|h| h.unwrap()).collect();
    format!("{hosts:?}")
}

#[test]
fn real_nmap_scan_is_imported_and_searchable() {
    if !tools_present() {
        return;
    }
    let dir = scratch("nmap_real");
    let expected = generate(&dir);
    let tls_port = http_server(Some(tls_config(&dir)), TLS_SERVER, TLS_TITLE);
    let plain_port = http_server(None, PLAIN_SERVER, PLAIN_TITLE);
    let (_sshd, ssh_port) = sshd(&dir);

    let xml = dir.join("scan.xml");
    let ports = format!("{tls_port},{plain_port},{ssh_port}");
    let started = Instant::now();
    let out = Command::new("/usr/bin/nmap")
        .args(["-sV", "-Pn", "-n", "-p", &ports, "--script"])
        .arg("ssl-cert,http-title,http-server-header,ssh-hostkey")
        .arg("-oX")
        .arg(&xml)
        .arg("127.0.0.1")
        .output()
        .unwrap();
    assert!(out.status.success(), "nmap: {}", text(&out.stderr));
    eprintln!("nmap took {:.1} s", started.elapsed().as_secs_f64());
    let scan = std::fs::read_to_string(&xml).unwrap();
    assert!(
        scan.contains(r#"tunnel="ssl""#) && scan.contains(r#"name="http""#),
        "nmap did not identify ssl/http: {scan}"
    );

    // convert: the observation lines, which validate accepts.
    let jsonl = dir.join("scan.jsonl");
    let out = periscope(&[
        "convert",
        xml.to_str().unwrap(),
        "-o",
        jsonl.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(lines.lines().count(), 3, "{lines}{}", text(&out.stderr));
    let out = periscope(&["validate", jsonl.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stdout));

    // The XML and the converted lines give the same store.
    let (a, b) = (dir.join("from_xml"), dir.join("from_jsonl"));
    for (data, file) in [(&a, &xml), (&b, &jsonl)] {
        let out = periscope(&[
            "ingest",
            "--data",
            data.to_str().unwrap(),
            file.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    assert_eq!(store_contents(&a), store_contents(&b));

    // Into a running server through its socket, then searched.
    let data = dir.join("served");
    let server = serve(data.to_str().unwrap());
    let out = periscope(&[
        "ingest",
        "--data",
        data.to_str().unwrap(),
        xml.to_str().unwrap(),
    ]);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert!(report.contains("applied:           3\n"), "{report}");
    assert!(report.contains("scanner records:   1 "), "{report}");
    let host = {
        let started = Instant::now();
        loop {
            let (status, body) = post(
                &server,
                "/v1/hosts/detail",
                &serde_json::json!({"ip": "127.0.0.1"}),
            );
            if status == 200 {
                break body["host"].clone();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "never searchable: {body}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let local = "127.0.0.1".to_owned();
    for query in [
        format!("port:{tls_port}"),
        format!("port:{ssh_port} protocol:ssh"),
        format!("port:{plain_port} protocol:http"),
        "protocol:https".to_owned(),
        format!("certificate.name:{}", SANS[1]),
        format!("organization:\"{ORGANIZATION}\""),
    ] {
        let found = search(&server, &query);
        assert!(found.contains(&local), "{query}: {found:?}");
    }
    assert!(!search(&server, &format!("port:{tls_port} protocol:ssh")).contains(&local));

    let https = service(&host, tls_port);
    assert_eq!(https["protocol"], "https");
    let names: Vec<&str> = https["certificate_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for san in SANS {
        assert!(names.contains(&san), "{names:?}");
    }
    let http = evidence(https, "http");
    assert_eq!(http["title"], TLS_TITLE);
    assert_eq!(http["server"], TLS_SERVER);
    assert_eq!(
        http["tls"]["fingerprint_sha256"],
        expected.fingerprint.as_str()
    );
    assert_eq!(http["tls"]["issuer_common_name"], ISSUER_CN);
    assert_eq!(http["tls"]["valid_from"], expected.valid_from.as_str());
    assert_eq!(http["tls"]["valid_until"], expected.valid_until.as_str());

    assert_eq!(https["product"], "nginx");
    assert_eq!(https["version"], "1.24.0");

    let ssh = service(&host, ssh_port);
    assert_eq!(ssh["protocol"], "ssh");
    assert_eq!(ssh["product"], "OpenSSH");
    let ssh = evidence(ssh, "ssh");
    assert_eq!(ssh["host_key_algorithm"], "ssh-ed25519");
    assert_eq!(
        ssh["host_key_fingerprint"],
        expected.ssh_fingerprint.as_str()
    );
    assert_eq!(ssh["protocol_version"], "2.0");

    let plain = service(&host, plain_port);
    assert_eq!(plain["protocol"], "http");
    let http = evidence(plain, "http");
    assert_eq!(http["title"], PLAIN_TITLE);
    // Nmap's http-server-header only reports a header its version probe did not already
    // name; here the probe named the product.
    assert_eq!(plain["product"], PLAIN_SERVER);
}
