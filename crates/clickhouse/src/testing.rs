//! ClickHouse servers started by tests (feature `testing`): each its own process on free
//! loopback ports with its own data directory and configuration (never a system service), all
//! listed as shards of one `remote_servers` cluster named `periscope`. A server can be stopped
//! and started again on the same ports and data (outage tests). Dropping the [`Cluster`] kills
//! the processes and removes the directories.
//!
//! The binary is `$CLICKHOUSE_SERVER`, else `clickhouse-server` on `PATH` or in `/usr/sbin`
//! (Debian's `clickhouse-server` package). When it is missing the tests are skipped loudly —
//! except under `CI=true`, where a missing server fails them.
//!
//! Opt-in ([`Cluster::start_with`], [`Options`]): https on a port of its own with a certificate
//! signed by a test CA ([`TestCa`], made with `openssl`), and a user with a password.

#![allow(clippy::unwrap_used, clippy::missing_panics_doc)] // Test support: a panic is the failure report.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use periscope_testkit::free_port;

use crate::Client;

/// The cluster name the schema's Distributed tables use.
pub const CLUSTER: &str = "periscope";

/// Running servers, one per shard.
pub struct Cluster {
    servers: Vec<Server>,
}

struct Server {
    binary: PathBuf,
    child: Option<Child>,
    dir: PathBuf,
    http: u16,
    https: Option<u16>,
}

impl Server {
    fn spawn(&mut self) {
        let config_path = self.dir.join("config.xml");
        let child = Command::new(&self.binary)
            .arg(format!("--config-file={}", config_path.display()))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.dir.join("stderr")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.binary.display()));
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CLICKHOUSE_SERVER") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("clickhouse-server"))
        .find(|p| p.is_file())
}

fn config(dir: &Path, http: u16, tcp: u16, interserver: u16, shards: &[u16]) -> String {
    let d = dir.display();
    let shards: String = shards
        .iter()
        .map(|port| {
            format!("<shard><replica><host>127.0.0.1</host><port>{port}</port></replica></shard>")
        })
        .collect();
    format!(
        r#"<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/log</log><errorlog>{d}/err</errorlog></logger>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <interserver_http_port>{interserver}</interserver_http_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709120</mark_cache_size>
  <remote_servers><{CLUSTER}>{shards}</{CLUSTER}></remote_servers>
</yandex>
"#
    )
}

/// The `https_port` and `openSSL` server settings serving `tls`'s certificate, and the closing
/// tag they stand before.
fn tls_config(port: u16, tls: &TlsFiles) -> String {
    let xml = |p: &Path| xml_text(&p.display().to_string());
    format!(
        "  <https_port>{port}</https_port>\n  <openSSL><server>\
         <certificateFile>{}</certificateFile><privateKeyFile>{}</privateKeyFile>\
         <verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile>\
         <cacheSessions>true</cacheSessions><disableProtocols>sslv2,sslv3</disableProtocols>\
         <preferServerCiphers>true</preferServerCiphers></server></openSSL>\n</yandex>",
        xml(&tls.certificate),
        xml(&tls.private_key)
    )
}

/// A user `name` with `password` from loopback, and the closing tag it stands before.
fn user_config(name: &str, password: &str) -> String {
    assert!(
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        "a test user's name is letters, digits and _: {name:?}"
    );
    format!(
        "    <{name}><password>{}</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>\
         <profile>default</profile><quota>default</quota></{name}>\n  </users>",
        xml_text(password)
    )
}

/// `text` escaped for an XML text node.
fn xml_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

const USERS: &str = r#"<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default></default></quotas>
</yandex>
"#;

/// Opt-in settings of the servers a [`Cluster`] starts; the default is what
/// [`Cluster::start`] runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Also serve https, on a port of its own, with this certificate ([`Cluster::https_urls`]).
    pub tls: Option<TlsFiles>,
    /// Also a user with a password: (name, password). The password-less `default` user stays.
    pub user: Option<(String, String)>,
}

/// A server's certificate chain and private key (PEM files).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate (and any intermediates), PEM.
    pub certificate: PathBuf,
    /// Its private key, PEM.
    pub private_key: PathBuf,
}

/// A test certificate authority made with `openssl` in a directory of its own: its
/// certificate (the CA file a client trusts) and a server certificate it signed for
/// `localhost` and `127.0.0.1`.
#[derive(Debug, Clone)]
pub struct TestCa {
    /// The CA's certificate, PEM.
    pub ca_file: PathBuf,
    /// The server certificate it signed, and its key.
    pub server: TlsFiles,
}

impl TestCa {
    /// Makes the CA and the server certificate in `dir` (created), or `None` (after saying
    /// so) when `openssl` is missing and this is not CI.
    pub fn create(dir: &Path) -> Option<Self> {
        if Command::new("openssl").arg("version").output().is_err() {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!(
                    "openssl is not installed: CI must run the TLS tests (apt-get install openssl)"
                );
            }
            eprintln!(
                "\n\n*** SKIPPED: openssl is not installed (apt-get install openssl); TLS to \
                 ClickHouse was NOT tested ***\n\n"
            );
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=Periscope test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ]);
        Some(Self {
            ca_file: dir.join("ca.pem"),
            server: TlsFiles {
                certificate: dir.join("server.pem"),
                private_key: dir.join("server.key"),
            },
        })
    }
}

impl Cluster {
    /// Starts `shards` servers forming one cluster, each with its directory under `root`
    /// (say, `env!("CARGO_TARGET_TMPDIR")`), or `None` (after saying so) when no server binary
    /// is installed and this is not CI.
    pub fn start(shards: usize, root: &Path) -> Option<Self> {
        Self::start_with(shards, root, &Options::default())
    }

    /// [`Cluster::start`] with the opt-in `options`.
    pub fn start_with(shards: usize, root: &Path, options: &Options) -> Option<Self> {
        let Some(binary) = binary() else {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!(
                    "clickhouse-server is not installed: CI must run the ClickHouse engine's \
                     tests (apt-get install clickhouse-server, or set CLICKHOUSE_SERVER)"
                );
            }
            eprintln!(
                "\n\n*** SKIPPED: clickhouse-server is not installed (apt-get install \
                 clickhouse-server, or set CLICKHOUSE_SERVER); the ClickHouse engine was NOT \
                 tested ***\n\n"
            );
            return None;
        };
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let ports: Vec<(u16, u16, u16)> = (0..shards)
            .map(|_| (free_port(), free_port(), free_port()))
            .collect();
        let tcp_ports: Vec<u16> = ports.iter().map(|p| p.1).collect();
        let mut servers = Vec::new();
        for (http, tcp, interserver) in ports {
            let dir = root.join(format!(
                "clickhouse-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let config_path = dir.join("config.xml");
            let mut text = config(&dir, http, tcp, interserver, &tcp_ports);
            let https = options.tls.as_ref().map(|tls| {
                let port = free_port();
                text = text.replace("</yandex>", &tls_config(port, tls));
                port
            });
            std::fs::write(&config_path, text).unwrap();
            let mut users = USERS.to_owned();
            if let Some((name, password)) = &options.user {
                users = users.replace("  </users>", &user_config(name, password));
            }
            std::fs::write(dir.join("users.xml"), users).unwrap();
            let mut server = Server {
                binary: binary.clone(),
                child: None,
                dir,
                http,
                https,
            };
            server.spawn();
            servers.push(server);
        }
        let cluster = Self { servers };
        for server in &cluster.servers {
            cluster.wait_ready(server);
        }
        Some(cluster)
    }

    /// Stops shard `index`'s server (as an outage would); its data stays.
    pub fn stop(&mut self, index: usize) {
        self.servers[index].kill();
    }

    /// Starts shard `index`'s server again on the same ports and data, and waits until it
    /// answers.
    pub fn restart(&mut self, index: usize) {
        self.servers[index].kill();
        self.servers[index].spawn();
        self.wait_ready(&self.servers[index]);
    }

    fn wait_ready(&self, server: &Server) {
        let client = Client::new(&Self::url_of(server), Duration::from_secs(2)).unwrap();
        let started = Instant::now();
        loop {
            if client.execute("SELECT 1").is_ok_and(|a| a.trim() == "1") {
                return;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let err = std::fs::read_to_string(server.dir.join("err")).unwrap_or_default();
                let stderr = std::fs::read_to_string(server.dir.join("stderr")).unwrap_or_default();
                panic!("ClickHouse did not start within 60 s:\n{err}\n{stderr}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn url_of(server: &Server) -> String {
        format!("http://127.0.0.1:{}", server.http)
    }

    /// The HTTP endpoints, one per shard.
    pub fn urls(&self) -> Vec<String> {
        self.servers.iter().map(Self::url_of).collect()
    }

    /// The https endpoints (`https://localhost:PORT`, the name [`TestCa`]'s certificate
    /// carries), one per shard; only with [`Options::tls`].
    pub fn https_urls(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|s| {
                let port = s.https.expect("the cluster was started with Options::tls");
                format!("https://localhost:{port}")
            })
            .collect()
    }

    /// A client of every node.
    pub fn clients(&self) -> Vec<Client> {
        self.urls()
            .iter()
            .map(|u| Client::new(u, Duration::from_secs(30)).unwrap())
            .collect()
    }
}
