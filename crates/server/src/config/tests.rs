//! The configuration tests: defaults, each source (file, environment, flag) and its error
//! messages, and the reference (`docs/configuration.md`) against the keys of the structs (`reference()`).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::collections::HashMap;

use super::*;
use periscope_testkit::Scratch;

/// A fake environment.
fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| vars.get(name).cloned()
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// A configuration file in a directory of its own (removed when dropped).
struct TestFile {
    _dir: Scratch,
    path: PathBuf,
}

impl std::ops::Deref for TestFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

/// A configuration file with `text`, in a directory of its own.
fn file(test: &str, text: &str) -> TestFile {
    let dir = Scratch::new(&format!("config-{test}"));
    let path = dir.join("periscope.toml");
    std::fs::write(&path, text).unwrap();
    TestFile { _dir: dir, path }
}

/// The flags of every key that has one, as a command taking them all would.
#[derive(Debug, Clone, Default)]
struct AllFlags;

impl Flags for AllFlags {
    const KEYS: &'static [&'static str] = &[
        "listen",
        "data",
        "database_url",
        "enrich.geoip_city",
        "enrich.geoip_asn",
        "enrich.asn_table",
        "index.url",
    ];
}

/// The configuration arguments of a command taking every flag, given `words`.
fn flags(words: &[&str]) -> Result<ConfigArgs<AllFlags>, clap::Error> {
    use clap::Args as _;
    let command = ConfigArgs::<AllFlags>::augment_args(Command::new("test"));
    let matches =
        command.try_get_matches_from(std::iter::once("test").chain(words.iter().copied()))?;
    ConfigArgs::from_arg_matches(&matches)
}

/// Every key: (section, name, dotted key, variable, flag).
fn keys() -> Vec<(Option<String>, String, KeyReference)> {
    reference()
        .into_iter()
        .map(|r| match r.key.split_once('.') {
            Some((section, name)) => (Some(section.to_owned()), name.to_owned(), r.clone()),
            None => (None, r.key.clone(), r),
        })
        .collect()
}

/// The message of a failing load.
fn error(path: Option<&Path>, vars: &[(&str, &str)]) -> String {
    Config::load(path, env(vars)).unwrap_err().to_string()
}

#[test]
fn defaults() {
    let c = Config::load(None, no_env).unwrap();
    assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(c.data, PathBuf::from("./data"));
    assert_eq!(c.database_url, None);
    assert_eq!(c.log_format, LogFormat::Text);
    let l = &c.limits;
    assert_eq!(l.daily_searches, DailyLimit::Limited(20));
    assert_eq!(
        (l.searches_per_account, l.searches_total),
        (2, 32),
        "concurrency"
    );
    assert_eq!(l.search_timeout, Duration::from_millis(10_000));
    assert_eq!(l.cursor_lifetime, Duration::from_secs(600));
    assert_eq!((l.rate_per_sec, l.rate_burst), (10, 20));
    assert_eq!(l.max_search_hosts, 10_000);
    assert_eq!(l.retention_days, 30);
    assert!(c.dns.servers.is_empty());
    assert_eq!(c.dns.timeout, Duration::from_millis(2_000));
    assert_eq!(c.index_config(), IndexConfig::default());
    assert_eq!(c.database_acquire_timeout, Duration::from_millis(2_000));
    assert_eq!(c.http.header_timeout, Duration::from_secs(10));
    assert_eq!(c.http.idle_timeout, Duration::from_secs(60));
    assert_eq!(c.http.body_timeout, Duration::from_secs(30));
    assert_eq!(c.http.max_connections, 10_000);
}

#[test]
fn file_values() {
    let path = file(
        "values",
        r#"
listen = "[::1]:9000"
data = "/var/lib/periscope"
database_url = "postgres://periscope@db/periscope"
log_format = "json"

[limits]
daily_searches = "unlimited"
searches_per_account = 4
searches_total = 64
search_timeout_ms = 5_000
cursor_lifetime_secs = 120
rate_per_sec = 5
rate_burst = 0x0a
max_search_hosts = 50000
retention_days = 7

[dns]
servers = ["192.0.2.53", "[2001:db8::53]:5353", "198.51.100.1:53"]
timeout_ms = 500
"#,
    );
    let c = Config::load(Some(&path), no_env).unwrap();
    assert_eq!(c.listen.to_string(), "[::1]:9000");
    assert_eq!(c.data, PathBuf::from("/var/lib/periscope"));
    assert_eq!(
        c.database_url.as_deref(),
        Some("postgres://periscope@db/periscope")
    );
    assert_eq!(c.log_format, LogFormat::Json);
    let l = &c.limits;
    assert_eq!(l.daily_searches, DailyLimit::Unlimited);
    assert_eq!((l.searches_per_account, l.searches_total), (4, 64));
    assert_eq!(l.search_timeout, Duration::from_secs(5));
    assert_eq!(l.cursor_lifetime, Duration::from_secs(120));
    assert_eq!((l.rate_per_sec, l.rate_burst), (5, 10));
    assert_eq!(l.max_search_hosts, 50_000);
    assert_eq!(l.retention_days, 7);
    let servers: Vec<String> = c.dns.servers.iter().map(ToString::to_string).collect();
    assert_eq!(
        servers,
        ["192.0.2.53:53", "[2001:db8::53]:5353", "198.51.100.1:53"]
    );
    assert_eq!(c.dns.timeout, Duration::from_millis(500));
    assert_eq!(c.index_config().retention_secs, 7 * 86_400);
}

#[test]
fn dotted_keys_and_inline_tables_are_sections_too() {
    let path = file(
        "dotted",
        "limits.daily_searches = 3\ndns = { timeout_ms = 10 }\n",
    );
    let c = Config::load(Some(&path), no_env).unwrap();
    assert_eq!(c.limits.daily_searches, DailyLimit::Limited(3));
    assert_eq!(c.dns.timeout, Duration::from_millis(10));
}

#[test]
fn http_and_database_timeouts() {
    let path = file(
        "http",
        "database_acquire_timeout_ms = 500\n[http]\nheader_timeout_ms = 1_500\n\
         idle_timeout_secs = 5\nbody_timeout_ms = 700\nmax_connections = 64\n",
    );
    let c = Config::load(
        Some(&path),
        env(&[("PERISCOPE_HTTP_MAX_CONNECTIONS", "32")]),
    )
    .unwrap();
    assert_eq!(c.database_acquire_timeout, Duration::from_millis(500));
    assert_eq!(c.http.header_timeout, Duration::from_millis(1_500));
    assert_eq!(c.http.idle_timeout, Duration::from_secs(5));
    assert_eq!(c.http.body_timeout, Duration::from_millis(700));
    assert_eq!(c.http.max_connections, 32);
    let e = error(None, &[("PERISCOPE_HTTP_HEADER_TIMEOUT_MS", "0")]);
    assert!(e.contains("`http.header_timeout_ms`"), "{e}");
    let e = error(None, &[("PERISCOPE_DATABASE_ACQUIRE_TIMEOUT_MS", "soon")]);
    assert!(e.contains("`database_acquire_timeout_ms`"), "{e}");
}

#[test]
fn environment_overrides_the_file() {
    let path = file(
        "env",
        "data = \"/from/file\"\nlisten = \"0.0.0.0:80\"\n[limits]\ndaily_searches = 5\n",
    );
    let c = Config::load(
        Some(&path),
        env(&[
            ("PERISCOPE_DATA", "/from/env"),
            ("PERISCOPE_DATABASE_URL", "postgres://u@h/d"),
            ("PERISCOPE_LIMITS_DAILY_SEARCHES", "7"),
            ("PERISCOPE_LIMITS_MAX_SEARCH_HOSTS", "1_000"),
            ("PERISCOPE_DNS_SERVERS", "192.0.2.1, 192.0.2.2:5353"),
            ("PERISCOPE_LOG_FORMAT", "json"),
            // Empty counts as unset: the file's value stays.
            ("PERISCOPE_LISTEN", ""),
            // Not a key: ignored.
            ("PERISCOPE_TEST_POSTGRES_URL", "postgres://x"),
        ]),
    )
    .unwrap();
    assert_eq!(c.data, PathBuf::from("/from/env"));
    assert_eq!(c.listen.to_string(), "0.0.0.0:80");
    assert_eq!(c.database_url.as_deref(), Some("postgres://u@h/d"));
    assert_eq!(c.limits.daily_searches, DailyLimit::Limited(7));
    assert_eq!(c.limits.max_search_hosts, 1_000);
    assert_eq!(c.dns.servers.len(), 2);
    assert_eq!(c.log_format, LogFormat::Json);
}

#[test]
fn every_key_has_its_environment_variable() {
    let names: Vec<String> = reference().into_iter().map(|k| k.env).collect();
    assert_eq!(
        names,
        [
            "PERISCOPE_LISTEN",
            "PERISCOPE_DATA",
            "PERISCOPE_DATABASE_URL",
            "PERISCOPE_DATABASE_ACQUIRE_TIMEOUT_MS",
            "PERISCOPE_LOG_FORMAT",
            "PERISCOPE_PUBLIC_URL",
            "PERISCOPE_LIMITS_DAILY_SEARCHES",
            "PERISCOPE_LIMITS_SEARCHES_PER_ACCOUNT",
            "PERISCOPE_LIMITS_SEARCHES_TOTAL",
            "PERISCOPE_LIMITS_SEARCH_TIMEOUT_MS",
            "PERISCOPE_LIMITS_CURSOR_LIFETIME_SECS",
            "PERISCOPE_LIMITS_RATE_PER_SEC",
            "PERISCOPE_LIMITS_RATE_BURST",
            "PERISCOPE_LIMITS_MAX_SEARCH_HOSTS",
            "PERISCOPE_LIMITS_RETENTION_DAYS",
            "PERISCOPE_DNS_SERVERS",
            "PERISCOPE_DNS_TIMEOUT_MS",
            "PERISCOPE_HTTP_HEADER_TIMEOUT_MS",
            "PERISCOPE_HTTP_IDLE_TIMEOUT_SECS",
            "PERISCOPE_HTTP_BODY_TIMEOUT_MS",
            "PERISCOPE_HTTP_MAX_CONNECTIONS",
            "PERISCOPE_HTTP_TRUSTED_PROXIES",
            "PERISCOPE_SIGNIN_SMTP_HOST",
            "PERISCOPE_SIGNIN_SMTP_PORT",
            "PERISCOPE_SIGNIN_SMTP_TLS",
            "PERISCOPE_SIGNIN_SMTP_USERNAME",
            "PERISCOPE_SIGNIN_SMTP_PASSWORD_FILE",
            "PERISCOPE_SIGNIN_SMTP_CA_FILE",
            "PERISCOPE_SIGNIN_MAIL_FROM",
            "PERISCOPE_SIGNIN_TERMS_VERSION",
            "PERISCOPE_SIGNIN_CLIENT_IP_HEADER",
            "PERISCOPE_SIGNIN_DATABASE_ACQUIRE_TIMEOUT_MS",
            "PERISCOPE_WEB_ISSUER",
            "PERISCOPE_WEB_CLIENT_ID",
            "PERISCOPE_WEB_CLIENT_SECRET",
            "PERISCOPE_WEB_CA_FILE",
            "PERISCOPE_WEB_ORGANIZATION_CLAIM",
            "PERISCOPE_WEB_DEFAULT_ORGANIZATION",
            "PERISCOPE_WEB_ALLOWED_EMAIL_DOMAINS",
            "PERISCOPE_ENRICH_GEOIP_CITY",
            "PERISCOPE_ENRICH_GEOIP_ASN",
            "PERISCOPE_ENRICH_ASN_TABLE",
            "PERISCOPE_INDEX_URL",
            "PERISCOPE_INDEX_CA_FILE",
            "PERISCOPE_INDEX_PASSWORD_FILE",
            "PERISCOPE_INDEX_TIMEOUT_MS",
            "PERISCOPE_INDEX_MEMORY_LIMIT_MB",
        ]
    );
    let database_url = reference().into_iter().find(|k| k.key == "database_url");
    assert_eq!(
        Some(periscope_state::DATABASE_URL_ENV),
        database_url.as_ref().map(|k| k.env.as_str())
    );
    // The reference lists every key and its variable.
    // Read from the running test's crate directory (a shared build directory may have
    // compiled this binary in another checkout).
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from);
    let doc = std::fs::read_to_string(crate_dir.join("../../docs/configuration.md")).unwrap();
    for (_, name, key) in keys() {
        assert!(doc.contains(&format!("`{name}`")), "{}", key.key);
        assert!(doc.contains(&key.env), "{}", key.env);
    }
}

#[test]
fn signin_relay_settings_and_the_password_from_the_environment_only() {
    let path = file(
        "relay",
        "[signin]\nsmtp_host = \"smtp.example\"\nsmtp_tls = \"starttls\"\n\
         smtp_username = \"periscope\"\nsmtp_ca_file = \"/etc/periscope/ca.pem\"\n",
    );
    let c = Config::load(
        Some(&path),
        env(&[
            ("PERISCOPE_SIGNIN_SMTP_PASSWORD", "from-the-environment"),
            ("PERISCOPE_SIGNIN_SMTP_PASSWORD_FILE", "/run/secrets/smtp"),
        ]),
    )
    .unwrap();
    assert_eq!(c.signin.smtp_tls, periscope_signin::SmtpTls::Starttls);
    assert_eq!(c.signin.smtp_username.as_deref(), Some("periscope"));
    assert_eq!(
        c.signin.smtp_password,
        Some(Secret("from-the-environment".into()))
    );
    assert!(!format!("{c:?}").contains("from-the-environment"));
    assert_eq!(
        c.signin.smtp_password_file.as_deref(),
        Some(Path::new("/run/secrets/smtp"))
    );
    assert_eq!(
        c.signin.smtp_ca_file.as_deref(),
        Some(Path::new("/etc/periscope/ca.pem"))
    );
    assert_eq!(
        Config::load(None, env(&[])).unwrap().signin.smtp_tls,
        periscope_signin::SmtpTls::Opportunistic
    );
    // The password itself is no key of the file.
    let path = file("relay-password", "[signin]\nsmtp_password = \"hunter22\"\n");
    let e = Config::load(Some(&path), env(&[])).unwrap_err().to_string();
    assert!(e.contains("signin.smtp_password"), "{e}");
    let e = Config::load(None, env(&[("PERISCOPE_SIGNIN_SMTP_TLS", "ssl")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("none, opportunistic, starttls, tls"), "{e}");
}

#[test]
fn signin_proxy_header_and_acquire_timeout() {
    let none = ConfigArgs::<AllFlags>::default();
    let c = none
        .load_with(env(&[
            ("PERISCOPE_SIGNIN_CLIENT_IP_HEADER", "X-Forwarded-For"),
            ("PERISCOPE_SIGNIN_DATABASE_ACQUIRE_TIMEOUT_MS", "500"),
        ]))
        .unwrap();
    assert_eq!(
        c.signin.client_ip_header.as_deref(),
        Some("X-Forwarded-For")
    );
    assert_eq!(c.signin.database_acquire_timeout_ms, Some(500));
    for (key, bad) in [
        ("PERISCOPE_SIGNIN_CLIENT_IP_HEADER", "not a header"),
        ("PERISCOPE_SIGNIN_DATABASE_ACQUIRE_TIMEOUT_MS", "0"),
        ("PERISCOPE_SIGNIN_DATABASE_ACQUIRE_TIMEOUT_MS", "60001"),
    ] {
        let e = none.load_with(env(&[(key, bad)])).unwrap_err().to_string();
        assert!(e.contains(key), "{e}");
    }
}

#[test]
fn flags_override_the_environment() {
    let path = file(
        "flags",
        "data = \"/from/file\"\nlisten = \"127.0.0.2:82\"\n[limits]\nrate_burst = 7\n",
    );
    let path_arg = path.to_str().unwrap();
    let environment = env(&[
        ("PERISCOPE_DATA", "/from/env"),
        ("PERISCOPE_DATABASE_URL", "postgres://env@h/d"),
    ]);
    let args = flags(&[
        "--config",
        path_arg,
        "--data",
        "/from/flag",
        "--database-url",
        "postgres://flag@h/d",
        "--index",
        "clickhouse://ch1/scans",
    ])
    .unwrap();
    assert!(args.given("data") && args.given("index.url") && !args.given("listen"));
    let c = args.load_with(&environment).unwrap();
    assert_eq!(c.data, PathBuf::from("/from/flag"));
    assert_eq!(c.database_url.as_deref(), Some("postgres://flag@h/d"));
    assert_eq!(c.index.url.unwrap().database, "scans");
    // What no flag sets stays as the file and the environment have it.
    assert_eq!(c.listen.to_string(), "127.0.0.2:82");
    assert_eq!(c.limits.rate_burst, 7);
    let unflagged = flags(&["--config", path_arg]).unwrap();
    assert_eq!(
        unflagged.load_with(&environment).unwrap(),
        Config::load(Some(&path), &environment).unwrap()
    );

    let c = flags(&["--listen", "10.0.0.1:81"])
        .unwrap()
        .load_with(no_env)
        .unwrap();
    assert_eq!(c.listen.to_string(), "10.0.0.1:81");
    let e = flags(&["--listen", "localhost"]).unwrap_err();
    assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
    assert!(
        e.to_string().contains(
            "invalid value 'localhost' for '--listen <ADDR>': `listen` expects an IP address \
             and port such as 127.0.0.1:8080 or [::1]:8080"
        ),
        "{e}"
    );
}

#[test]
fn unknown_keys_are_errors_naming_key_and_file() {
    let path = file(
        "unknown",
        "listen = \"127.0.0.1:1\"\n\n[limits]\ndaily_search = 5\n",
    );
    let e = error(Some(&path), &[]);
    assert!(
        e.starts_with(&format!(
            "unknown configuration key `limits.daily_search` in the configuration file {} \
             (line 4); known keys: limits.daily_searches, ",
            path.display()
        )),
        "{e}"
    );
    let path = file("unknown-top", "lisen = \"127.0.0.1:1\"\n");
    let e = error(Some(&path), &[]);
    assert!(e.contains("key `lisen` in the configuration file"), "{e}");
    assert!(
        e.contains("(line 1)") && e.contains("[limits], [dns]"),
        "{e}"
    );
    let path = file("unknown-section", "[limit]\ndaily_searches = 5\n");
    let e = error(Some(&path), &[]);
    assert!(e.contains("key `limit` in"), "{e}");
}

#[test]
fn bad_values_name_key_source_and_expectation() {
    let path = file("bad", "[limits]\nsearches_total = \"32\"\n");
    assert_eq!(
        error(Some(&path), &[]),
        format!(
            "bad value for `limits.searches_total` in the configuration file {} (line 2): \
             expected a whole number from 1 to 4294967295, found the string \"32\"",
            path.display()
        )
    );
    assert_eq!(
        error(None, &[("PERISCOPE_LIMITS_DAILY_SEARCHES", "lots")]),
        "bad value for `limits.daily_searches` in the environment variable \
         PERISCOPE_LIMITS_DAILY_SEARCHES: expected a whole number from 0 to 4294967295, \
         or \"unlimited\", found \"lots\""
    );
    // Check each key refuses values of the wrong kind or range.
    let cases: &[(&str, &str)] = &[
        ("PERISCOPE_LISTEN", "127.0.0.1"),
        ("PERISCOPE_DATA", "  "),
        ("PERISCOPE_LOG_FORMAT", "xml"),
        ("PERISCOPE_LIMITS_DAILY_SEARCHES", "-1"),
        ("PERISCOPE_LIMITS_SEARCHES_PER_ACCOUNT", "0"),
        ("PERISCOPE_LIMITS_SEARCHES_TOTAL", "4294967296"),
        ("PERISCOPE_LIMITS_SEARCH_TIMEOUT_MS", "1.5"),
        ("PERISCOPE_LIMITS_CURSOR_LIFETIME_SECS", "10s"),
        ("PERISCOPE_LIMITS_RATE_PER_SEC", "_1"),
        ("PERISCOPE_LIMITS_RATE_BURST", ""),
        ("PERISCOPE_LIMITS_MAX_SEARCH_HOSTS", "0"),
        ("PERISCOPE_LIMITS_RETENTION_DAYS", "36501"),
        ("PERISCOPE_DNS_SERVERS", "192.0.2.1,resolver.example"),
        ("PERISCOPE_DNS_TIMEOUT_MS", "0"),
    ];
    for (name, value) in cases {
        let result = Config::load(None, env(&[(name, value)]));
        if value.is_empty() {
            assert!(result.is_ok(), "{name}: empty is unset");
            continue;
        }
        let e = result.unwrap_err().to_string();
        assert!(
            e.contains(&format!("in the environment variable {name}: expected")),
            "{name}={value}: {e}"
        );
    }
    let path = file("bad-kind", "limits = 5\n");
    let e = error(Some(&path), &[]);
    assert!(
        e.contains("`limits`") && e.contains("expected a table ([limits]), found the integer 5"),
        "{e}"
    );
    let path = file("bad-list", "[dns]\nservers = [\"192.0.2.1\", 53]\n");
    let e = error(Some(&path), &[]);
    assert!(
        e.contains("`dns.servers`") && e.contains("(line 2)") && e.ends_with("an array"),
        "{e}"
    );
}

#[test]
fn index_section_from_file_and_environment() {
    let c = Config::load(None, no_env).unwrap();
    assert_eq!(c.index.url, None);
    assert_eq!(c.index.timeout, Duration::from_secs(10));
    assert_eq!(c.index.memory_limit, Some(4 << 30));
    assert_eq!(c.index.password().unwrap(), None);
    let path = file(
        "index",
        "[index]\nurl = \"clickhouse://reader@ch1:8123/scans?cluster=edge\"\n\
         ca_file = \"/etc/periscope/ch-ca.pem\"\ntimeout_ms = 2500\nmemory_limit_mb = 512\n",
    );
    let c = Config::load(Some(&path), env(&[(INDEX_PASSWORD_ENV, "s3cret")])).unwrap();
    let url = c.index.url.as_ref().unwrap();
    assert_eq!(
        (
            url.endpoint.as_str(),
            url.database.as_str(),
            url.cluster.as_str()
        ),
        ("http://ch1:8123", "scans", "edge")
    );
    assert_eq!(
        c.index.ca_file.as_deref(),
        Some(Path::new("/etc/periscope/ch-ca.pem"))
    );
    assert_eq!(c.index.timeout, Duration::from_millis(2500));
    assert_eq!(c.index.memory_limit, Some(512 << 20));
    assert_eq!(c.index.password().unwrap().as_deref(), Some("s3cret"));
    let c = Config::load(None, env(&[("PERISCOPE_INDEX_MEMORY_LIMIT_MB", "0")])).unwrap();
    assert_eq!(c.index.memory_limit, None);
    let e = error(None, &[("PERISCOPE_INDEX_MEMORY_LIMIT_MB", "-1")]);
    assert!(
        e.contains("`index.memory_limit_mb` in the environment variable")
            && e.contains("a whole number of MiB"),
        "{e}"
    );
    assert!(!format!("{c:?}").contains("s3cret"));
    let e = error(None, &[("PERISCOPE_INDEX_URL", "http://ch1:8123/scans")]);
    assert!(
        e.contains("`index.url` in the environment variable PERISCOPE_INDEX_URL")
            && e.contains("clickhouse://"),
        "{e}"
    );
    let secret = file("index-password", "\n");
    let mut c = Config::load(None, no_env).unwrap();
    c.index.password_file = Some(secret.to_path_buf());
    let e = c.index.password().unwrap_err().to_string();
    assert!(e.contains("is empty"), "{e}");
    c.index.password = Some(Secret("x".into()));
    let e = c.index.password().unwrap_err().to_string();
    assert!(e.contains("given twice"), "{e}");
}

#[test]
fn enrich_files_from_file_environment_and_flags() {
    assert!(
        Config::load(None, no_env)
            .unwrap()
            .enrich
            .files()
            .is_empty()
    );
    let path = file(
        "enrich",
        "[enrich]\ngeoip_city = \"/geo/city.mmdb\"\ngeoip_asn = \"/geo/asn.mmdb\"\n\
         asn_table = \"/geo/ip2asn.tsv.gz\"\n",
    );
    let c = Config::load(Some(&path), no_env).unwrap();
    assert_eq!(
        c.enrich.files(),
        EnrichConfig {
            geoip_city: Some("/geo/city.mmdb".into()),
            geoip_asn: Some("/geo/asn.mmdb".into()),
            asn_table: Some("/geo/ip2asn.tsv.gz".into()),
        }
    );
    let environment = env(&[
        ("PERISCOPE_ENRICH_GEOIP_CITY", "/env/city.mmdb"),
        ("PERISCOPE_ENRICH_ASN_TABLE", "/env/ip2asn.tsv"),
    ]);
    let c = Config::load(Some(&path), &environment).unwrap();
    assert_eq!(c.enrich.geoip_city, Some("/env/city.mmdb".into()));
    assert_eq!(c.enrich.geoip_asn, Some("/geo/asn.mmdb".into()));
    assert_eq!(c.enrich.asn_table, Some("/env/ip2asn.tsv".into()));
    let c = flags(&[
        "--config",
        path.to_str().unwrap(),
        "--geoip-asn",
        "/flag/asn.mmdb",
    ])
    .unwrap()
    .load_with(&environment)
    .unwrap();
    assert_eq!(c.enrich.geoip_city, Some("/env/city.mmdb".into()));
    assert_eq!(c.enrich.geoip_asn, Some("/flag/asn.mmdb".into()));

    let e = error(None, &[("PERISCOPE_ENRICH_GEOIP_ASN", "  ")]);
    assert_eq!(
        e,
        "bad value for `enrich.geoip_asn` in the environment variable \
         PERISCOPE_ENRICH_GEOIP_ASN: expected the path of a MaxMind DB file with autonomous \
         systems (GeoLite2 ASN…), found \"  \""
    );
    let path = file("enrich-bad", "[enrich]\n\ngeoip_city = 5\n");
    let e = error(Some(&path), &[]);
    assert!(
        e.contains("`enrich.geoip_city`")
            && e.contains("(line 3)")
            && e.ends_with("found the integer 5"),
        "{e}"
    );
    let path = file("enrich-unknown", "[enrich]\ngeoip_country = \"/x.mmdb\"\n");
    let e = error(Some(&path), &[]);
    assert!(
        e.contains("key `enrich.geoip_country`")
            && e.ends_with("known keys: enrich.geoip_city, enrich.geoip_asn, enrich.asn_table"),
        "{e}"
    );
}

#[test]
fn unreadable_and_malformed_files() {
    let missing = std::env::temp_dir().join("periscope-config-missing/none.toml");
    let e = error(Some(&missing), &[]);
    assert!(e.starts_with("cannot read the configuration file "), "{e}");
    let path = file("syntax", "listen = \n");
    let e = error(Some(&path), &[]);
    assert!(
        e.contains("is not valid TOML") && e.contains("line 1"),
        "{e}"
    );
}

/// The keys for which `"  "` (nothing but blanks) is a value: the lists, which it leaves empty.
const BLANK_IS_EMPTY_LIST: [&str; 3] = [
    "dns.servers",
    "http.trusted_proxies",
    "web.allowed_email_domains",
];

/// The expectation in a message `bad value for `KEY` in ORIGIN: expected E, found F`, after
/// checking the key and the origin.
fn expectation(message: &str, key: &str, origin: &str, found: &str) -> String {
    let head = format!("bad value for `{key}` in {origin}: expected ");
    let tail = format!(", found {found}");
    assert!(
        message.starts_with(&head) && message.ends_with(&tail),
        "{message}"
    );
    message[head.len()..message.len() - tail.len()].to_owned()
}

/// What `key` expects, as the error for `key = true` in a file says, after checking that the
/// error names the key, the file and the line, and the boolean; the file is named after `test`.
fn expected_in_file(test: &str, key: &str) -> String {
    let (text, line) = match key.split_once('.') {
        Some((section, name)) => (format!("[{section}]\n{name} = true\n"), 2),
        None => (format!("{key} = true\n"), 1),
    };
    let path = file(&format!("{test}-{key}"), &text);
    let origin = format!("the configuration file {} (line {line})", path.display());
    expectation(&error(Some(&path), &[]), key, &origin, "the boolean true")
}

#[test]
fn every_key_names_its_file_line_and_expectation() {
    for key in reference() {
        let expected = expected_in_file("every", &key.key);
        assert!(expected.len() > 10, "{}: {expected}", key.key);
    }
}

#[test]
fn every_key_names_its_environment_variable_and_expectation() {
    let mut accepted = Vec::new();
    for key in reference() {
        let in_file = expected_in_file("every-env", &key.key);
        match Config::load(None, env(&[(&key.env, "  ")])) {
            Ok(_) => accepted.push(key.key),
            Err(e) => {
                let origin = format!("the environment variable {}", key.env);
                let in_env = expectation(&e.to_string(), &key.key, &origin, "\"  \"");
                assert_eq!(in_env, in_file, "{}", key.key);
            }
        }
    }
    assert_eq!(accepted, BLANK_IS_EMPTY_LIST);
}

#[test]
fn every_flag_names_itself_and_the_expectation() {
    let flagged: Vec<(String, String)> = reference()
        .into_iter()
        .filter_map(|k| Some((k.key, k.flag?)))
        .collect();
    let names: Vec<&str> = flagged.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(names, AllFlags::KEYS);
    for (key, flag) in &flagged {
        let in_file = expected_in_file("every-flag", key);
        let e = flags(&[flag, "  "]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{flag}");
        let message = e.to_string();
        assert!(
            message.contains(&format!("invalid value '  ' for '{flag} <"))
                && message.contains(&format!("`{key}` expects {in_file}")),
            "{message}"
        );
    }
}

#[test]
fn an_empty_file_and_no_flags_are_the_defaults() {
    let path = file("empty", "");
    let c = flags(&["--config", path.to_str().unwrap()])
        .unwrap()
        .load_with(no_env)
        .unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(c.limits, Limits::default());
    assert_eq!(c.enrich.files(), EnrichConfig::default());
    assert_eq!(c.signin.smtp_tls, periscope_signin::SmtpTls::default());
    assert_eq!(c.index.password, None);
    assert_eq!(c.signin.smtp_password, None);
}

/// The reference's fenced block after `heading`.
fn reference_block(doc: &str, heading: &str, fence: &str) -> String {
    let after = &doc[doc.find(heading).unwrap()..];
    let start = after.find(fence).unwrap() + fence.len();
    let end = start + after[start..].find("```").unwrap();
    after[start..end].to_owned()
}

fn reference_doc() -> String {
    // Read from the running test's crate directory (a shared build directory may have
    // compiled this binary in another checkout).
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from);
    std::fs::read_to_string(crate_dir.join("../../docs/configuration.md")).unwrap()
}

#[test]
fn the_reference_complete_file_is_every_key_at_its_default() {
    let doc = reference_doc();
    let block = reference_block(&doc, "## A complete file", "```toml\n");
    for (_, name, key) in keys() {
        assert!(
            block.contains(&format!("{name} = ")),
            "{} is missing from the complete file",
            key.key
        );
    }
    let path = file("reference", &block);
    let mut c = Config::load(Some(&path), no_env).unwrap();
    // These are `None` by default, meaning the sign-in service's or web application's own
    // default, which the file writes out.
    let s = &mut c.signin;
    assert_eq!(s.smtp_port.take(), Some(25));
    assert_eq!(
        s.terms_version.take().as_deref(),
        Some(periscope_signin::DEFAULT_TERMS_VERSION)
    );
    assert_eq!(s.database_acquire_timeout_ms.take(), Some(2_000));
    assert_eq!(
        s.mail_from.take().as_deref(),
        Some("Periscope <no-reply@localhost>")
    );
    assert_eq!(c.web.organization_claim.take().as_deref(), Some("org_name"));
    assert_eq!(c, Config::default());
}

#[test]
fn the_reference_names_each_flag_on_its_key_row() {
    let doc = reference_doc();
    for (_, name, key) in keys() {
        let Some(flag) = &key.flag else { continue };
        let row = doc
            .lines()
            .find(|line| line.starts_with(&format!("| `{name}` |")))
            .unwrap();
        assert!(row.contains(&key.env), "{row}");
        assert!(row.contains(&format!("`{flag}`")), "{row}");
    }
}

#[test]
fn the_reference_is_every_field_of_the_structs() {
    let names: Vec<String> = reference().into_iter().map(|r| r.key).collect();
    assert_eq!(names.len(), 47);
    assert_eq!(
        names[..6],
        [
            "listen",
            "data",
            "database_url",
            "database_acquire_timeout_ms",
            "log_format",
            "public_url"
        ]
    );
    // The sections' fields follow in the order of the struct, each section's in its order.
    let sections: Vec<&str> = names
        .iter()
        .filter_map(|k| Some(k.split_once('.')?.0))
        .collect();
    let mut order = sections.clone();
    order.dedup();
    assert_eq!(
        order,
        ["limits", "dns", "http", "signin", "web", "enrich", "index"]
    );
    // The secrets are no keys.
    assert!(
        !names
            .iter()
            .any(|k| k.ends_with("smtp_password") || k == "index.password")
    );
}

#[test]
fn a_bad_value_is_reported_where_a_later_source_overrides_it() {
    let path = file("overridden", "[limits]\nrate_burst = \"many\"\n");
    let e = error(Some(&path), &[("PERISCOPE_LIMITS_RATE_BURST", "5")]);
    assert_eq!(
        e,
        format!(
            "bad value for `limits.rate_burst` in the configuration file {} (line 2): expected \
             a whole number from 1 to 4294967295, found the string \"many\"",
            path.display()
        )
    );
    let e = flags(&["--data", "/from/flag"])
        .unwrap()
        .load_with(env(&[("PERISCOPE_DATA", "  ")]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`data` in the environment variable PERISCOPE_DATA"),
        "{e}"
    );
    // Where both are good, the later source wins.
    let path = file("overridden-good", "[limits]\nrate_burst = 3\n");
    let c = Config::load(Some(&path), env(&[("PERISCOPE_LIMITS_RATE_BURST", "5")])).unwrap();
    assert_eq!(c.limits.rate_burst, 5);
}
