//! The ClickHouse client over https and with credentials, against a real ClickHouse started by
//! the test (`testing::Cluster` with `Options`): https on a port of its own with a certificate
//! signed by a test CA made with `openssl`, and a user with a password in its `users.xml`.
//!
//! Statements succeed over https when the client trusts the CA file, as the password-less
//! `default` user and as the user with its password; a server whose certificate the client
//! does not trust (no CA file: the platform's roots do not hold the test CA) is refused with an
//! error naming the server; a wrong or missing password is an error naming the server and the
//! user; a CA file that is missing, or is not PEM, or is set for a plain `http` URL is a
//! clear error at set-up. Skipped loudly (failing under `CI=true`) without `clickhouse-server`
//! or `openssl`.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::path::Path;
use std::time::Duration;

use periscope_clickhouse::ClientError;
use periscope_clickhouse::client::{Client, ClientOptions};
use periscope_clickhouse::testing::{Cluster, Options, TestCa};

const USER: &str = "analyst";
const PASSWORD: &str = "correct horse & <battery>";

fn options(ca_file: Option<&Path>, user: Option<&str>, password: Option<&str>) -> ClientOptions {
    let mut options = ClientOptions::new(Duration::from_secs(30));
    options.ca_file = ca_file.map(Path::to_path_buf);
    options.user = user.map(str::to_owned);
    options.password = password.map(str::to_owned);
    options
}

#[test]
fn https_with_a_private_ca_and_a_password() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let Some(ca) = TestCa::create(&root.join("ca")) else {
        return;
    };
    let Some(cluster) = Cluster::start_with(
        1,
        &root,
        &Options {
            tls: Some(ca.server.clone()),
            user: Some((USER.to_owned(), PASSWORD.to_owned())),
        },
    ) else {
        return;
    };
    let url = cluster.https_urls()[0].clone();
    assert!(url.starts_with("https://localhost:"), "{url}");

    // Trusting the CA file: statements run over https, as `default` and as the user.
    let client = Client::with_options(&url, &options(Some(&ca.ca_file), None, None)).unwrap();
    assert_eq!(client.execute("SELECT 1").unwrap().trim(), "1");
    let user = Client::with_options(
        &url,
        &options(Some(&ca.ca_file), Some(USER), Some(PASSWORD)),
    )
    .unwrap();
    user.execute("CREATE TABLE t (n UInt32) ENGINE = Memory")
        .unwrap();
    user.insert("INSERT INTO t FORMAT TabSeparated", "7\n35\n".to_owned())
        .unwrap();
    assert_eq!(user.execute("SELECT sum(n) FROM t").unwrap().trim(), "42");
    // The server saw TLS: the same statement on the plain port is a different connection, and
    // the https port does not speak plain http.
    let plain = Client::new(&url.replace("https://", "http://"), Duration::from_secs(10)).unwrap();
    assert!(plain.execute("SELECT 1").is_err());

    // Not trusting it (no CA file): refused, naming the server and where trust comes from.
    let untrusted = Client::with_options(&url, &options(None, None, None)).unwrap();
    let error = untrusted.execute("SELECT 1").unwrap_err();
    assert!(
        matches!(&error, ClientError::Untrusted { url: named, .. } if *named == url),
        "{error:?}"
    );
    let message = error.to_string();
    eprintln!("untrusted: {message}");
    assert!(
        message.contains(&url) && message.contains("not trusted") && message.contains("ca_file"),
        "{message}"
    );
    // A CA that did not sign the server's certificate is no better.
    let Some(other) = TestCa::create(&root.join("other-ca")) else {
        return;
    };
    let error = Client::with_options(&url, &options(Some(&other.ca_file), None, None))
        .unwrap()
        .execute("SELECT 1")
        .unwrap_err();
    assert!(matches!(error, ClientError::Untrusted { .. }), "{error:?}");

    // A wrong password, and none: refused, naming the server and the user.
    for password in [Some("tr0ub4dor-guess"), None] {
        let client =
            Client::with_options(&url, &options(Some(&ca.ca_file), Some(USER), password)).unwrap();
        let error = client.execute("SELECT 1").unwrap_err();
        let ClientError::Denied {
            url: named,
            user,
            message,
            ..
        } = &error
        else {
            panic!("{password:?}: not Denied: {error:?}");
        };
        assert_eq!((named.as_str(), user.as_str()), (url.as_str(), USER));
        assert!(message.to_lowercase().contains("password"), "{message}");
        let text = error.to_string();
        eprintln!("denied: {text}");
        assert!(
            text.contains(&url) && text.contains("credentials of user analyst"),
            "{text}"
        );
        assert!(
            !text.contains("tr0ub4dor"),
            "the password is not shown: {text}"
        );
    }
    // The same over plain http (credentials do not need TLS).
    let http = cluster.urls()[0].clone();
    let error = Client::with_options(&http, &options(None, Some(USER), Some("nope")))
        .unwrap()
        .execute("SELECT 1")
        .unwrap_err();
    assert!(matches!(error, ClientError::Denied { .. }), "{error:?}");
    let ok = Client::with_options(&http, &options(None, Some(USER), Some(PASSWORD))).unwrap();
    assert_eq!(ok.execute("SELECT 1").unwrap().trim(), "1");

    // Set-up errors: a missing or non-PEM CA file, a CA file for plain http, a bad URL.
    let missing = root.join("no-such-ca.pem");
    let error = Client::with_options(&url, &options(Some(&missing), None, None)).unwrap_err();
    assert!(
        matches!(&error, ClientError::Config { reason, .. } if reason.contains("cannot be read")
            && reason.contains("no-such-ca.pem")),
        "{error:?}"
    );
    let junk = root.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let error = Client::with_options(&url, &options(Some(&junk), None, None)).unwrap_err();
    assert!(
        matches!(&error, ClientError::Config { reason, .. } if reason.contains("holds no certificate")),
        "{error:?}"
    );
    let error = Client::with_options(&http, &options(Some(&ca.ca_file), None, None)).unwrap_err();
    assert!(
        matches!(&error, ClientError::Config { reason, .. } if reason.contains("not https")),
        "{error:?}"
    );
    let error = Client::with_options("localhost:8123", &options(None, None, None)).unwrap_err();
    assert!(error.to_string().contains("http:// or https://"), "{error}");
    let error =
        Client::with_options(&url, &options(None, Some(USER), Some("two\nlines"))).unwrap_err();
    assert!(error.to_string().contains("password"), "{error}");

    drop(cluster);
    let _ = std::fs::remove_dir_all(&root);
}
