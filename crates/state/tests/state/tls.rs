//! PostgreSQL over TLS: a server this test starts itself (initdb and pg_ctl from
//! `/usr/lib/postgresql/15/bin`, or `PERISCOPE_TEST_PG_BIN`), on a private port and data
//! directory, with `ssl = on`, a certificate from a CA the test generates, and plain-text
//! connections refused by `pg_hba.conf`. The state database opens, migrates and works with
//! `sslmode=verify-full`; a CA that did not issue the server's certificate is refused.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr as _;

use periscope_state::{Email, NewAccount, State};
use sqlx::ConnectOptions as _;

use crate::harness::{TempDir, noon};

/// The PostgreSQL binaries: `PERISCOPE_TEST_PG_BIN`, else Debian's PostgreSQL 15.
fn pg_bin() -> Option<PathBuf> {
    let dir = std::env::var_os("PERISCOPE_TEST_PG_BIN").map_or_else(
        || PathBuf::from("/usr/lib/postgresql/15/bin"),
        PathBuf::from,
    );
    if dir.join("initdb").exists() && dir.join("pg_ctl").exists() {
        return Some(dir);
    }
    let why = format!(
        "no initdb and pg_ctl in {} (Debian package postgresql-15, or set PERISCOPE_TEST_PG_BIN)",
        dir.display()
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("the PostgreSQL TLS test needs its own server under CI=true: {why}");
    }
    eprintln!("SKIPPED: the PostgreSQL TLS test: {why}");
    None
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program`, run as the `postgres` user when this test runs as root (initdb refuses root).
fn command(as_postgres: bool, program: &Path) -> Command {
    if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// Runs `program` with `args` (see [`command`]); panics with its output when it fails.
fn run(as_postgres: bool, program: &Path, args: &[&str]) {
    let out = command(as_postgres, program)
        .args(args)
        .output()
        .expect("the PostgreSQL tool runs");
    assert!(
        out.status.success(),
        "{} {args:?}: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The CA and the server certificate for 127.0.0.1 and localhost, as PEM text.
struct Pki {
    ca: String,
    cert: String,
    key: String,
}

fn pki(name: &str) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("Periscope test CA {name}"));
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress([127, 0, 0, 1].into()));
    let cert = params.signed_by(&key, &issuer).unwrap();
    Pki {
        ca: ca.pem(),
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

/// A PostgreSQL server of this test's own, stopped when dropped.
struct TlsPostgres {
    dir: TempDir,
    bin: PathBuf,
    as_postgres: bool,
    port: u16,
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = command(self.as_postgres, &self.bin.join("pg_ctl"))
            .args(["-D", data.to_str().unwrap(), "-m", "immediate", "stop"])
            .output();
    }
}

impl TlsPostgres {
    fn start(bin: PathBuf, pki: &Pki) -> TlsPostgres {
        let as_postgres = is_root();
        let dir = TempDir::new("pg_tls");
        let data = dir.path().join("data");
        let port = periscope_testkit::free_port();
        if as_postgres {
            let out = Command::new("chown")
                .args(["postgres:", dir.path().to_str().unwrap()])
                .output()
                .unwrap();
            assert!(out.status.success(), "chown: {out:?}");
        }
        run(
            as_postgres,
            &bin.join("initdb"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let write = |name: &str, text: &str, mode: u32| {
            use std::os::unix::fs::PermissionsExt as _;
            let path = data.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            if as_postgres {
                Command::new("chown")
                    .args(["postgres:", path.to_str().unwrap()])
                    .output()
                    .unwrap();
            }
        };
        write("server.crt", &pki.cert, 0o644);
        write("server.key", &pki.key, 0o600);
        let conf = std::fs::read_to_string(data.join("postgresql.conf")).unwrap();
        write(
            "postgresql.conf",
            &format!(
                "{conf}\nport = {port}\nlisten_addresses = '127.0.0.1'\n\
                 unix_socket_directories = '{}'\nssl = on\n\
                 ssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\nfsync = off\n",
                dir.path().display()
            ),
            0o600,
        );
        // TLS or nothing: a plain-text connection is rejected by the server itself.
        write(
            "pg_hba.conf",
            "hostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
            0o600,
        );
        run(
            as_postgres,
            &bin.join("pg_ctl"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                dir.path().join("server.log").to_str().unwrap(),
                "-w",
                "-t",
                "30",
                "start",
            ],
        );
        TlsPostgres {
            dir,
            bin,
            as_postgres,
            port,
        }
    }

    fn url(&self, query: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?{query}",
            self.port
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_database_over_tls_with_verify_full() {
    let Some(bin) = pg_bin() else {
        return;
    };
    let server_pki = pki("server");
    let server = TlsPostgres::start(bin, &server_pki);
    let certs = TempDir::new("pg_tls_ca");
    let ca = certs.path().join("ca.pem");
    std::fs::write(&ca, &server_pki.ca).unwrap();
    let other = certs.path().join("other-ca.pem");
    std::fs::write(&other, pki("other").ca).unwrap();

    // verify-full with the CA that issued the server's certificate: the state database opens,
    // migrates and works, and the connection is TLS.
    let url = server.url(&format!("sslmode=verify-full&sslrootcert={}", ca.display()));
    let state = State::open(&url).await.unwrap();
    let email = Email::parse("tls@example.com").unwrap();
    state
        .create_account(&NewAccount::new(email.clone(), "TLS Ltd"), noon())
        .await
        .unwrap();
    assert!(state.account_by_email(&email).await.unwrap().is_some());
    state.close().await;
    let again = State::open(&url).await.unwrap();
    assert!(again.account_by_email(&email).await.unwrap().is_some());
    again.close().await;
    let mut conn = sqlx::postgres::PgConnectOptions::from_str(&url)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let (ssl,): (bool,) =
        sqlx::query_as("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert!(ssl, "the connection is not TLS");

    // A CA that did not issue the certificate: refused, the reason says so.
    let wrong = server.url(&format!(
        "sslmode=verify-full&sslrootcert={}",
        other.display()
    ));
    let error = match State::open(&wrong).await {
        Ok(_) => panic!("an untrusted certificate was accepted"),
        Err(e) => e,
    };
    let text = format!("{error}: {:?}", std::error::Error::source(&error));
    assert!(text.to_lowercase().contains("certificate"), "{text}");

    // Plain text: the server refuses it (so the TLS above was not optional).
    let plain = server.url("sslmode=disable");
    assert!(
        State::open(&plain).await.is_err(),
        "plain text was accepted"
    );
}
