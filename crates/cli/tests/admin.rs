//! End-to-end tests of `periscope admin`: the built binary run against a fresh SQLite data
//! directory and a fresh PostgreSQL database per test, its effect checked through
//! `periscope_state::State` — keys it prints authenticate until revoked, settings it changes
//! are what the state reads back, and unknown or taken addresses and bad values fail with exit
//! status 2 and a clear message. Also the configuration file, environment and flags as `admin`
//! sees them.
//!
//! PostgreSQL is reached at `PERISCOPE_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); each test creates its own database there and
//! drops it afterwards, even when the test fails. When the server cannot be reached the
//! PostgreSQL half is skipped with a printed reason — except under `CI=true`, where it fails.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use common::{scratch, text};
use periscope_model::Timestamp;
use periscope_state::{
    Access, Account, AuditEntry, Channel, DailyLimit, Email, NewAccount, Operation, Plan, State,
    is_well_formed_key,
};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor};

const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Runs a future to completion on a runtime of its own.
fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

fn now() -> Timestamp {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Timestamp::from_unix(i64::try_from(secs).unwrap()).unwrap()
}

/// The binary with `args`, isolated from every `PERISCOPE_*` variable of the caller.
fn command(args: &[&str]) -> Command {
    let mut cmd = common::command(args);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PERISCOPE_") {
            cmd.env_remove(name);
        }
    }
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the binary runs")
}

/// A test's state database, and how `periscope admin` is pointed at it.
struct Db {
    target: Target,
}

enum Target {
    /// The data directory holding `state.db`.
    Sqlite(PathBuf),
    /// The test's own PostgreSQL database: its URL, the server's maintenance URL, its name.
    Postgres {
        url: String,
        admin_url: String,
        name: String,
    },
}

impl Db {
    /// The flags that select this database.
    fn flags(&self) -> Vec<&str> {
        match &self.target {
            Target::Sqlite(dir) => vec!["--data", dir.to_str().unwrap()],
            Target::Postgres { url, .. } => vec!["--database-url", url],
        }
    }

    /// `periscope admin FLAGS ARGS`.
    fn command(&self, args: &[&str]) -> Command {
        let mut all = vec!["admin"];
        all.extend(self.flags());
        all.extend(args);
        command(&all)
    }

    /// Runs `periscope admin FLAGS ARGS`.
    fn admin(&self, args: &[&str]) -> Output {
        run(&mut self.command(args))
    }

    /// Runs `periscope admin FLAGS ARGS`, which must succeed; returns its standard output.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.admin(args);
        assert!(
            out.status.success(),
            "admin {args:?} failed ({:?}): {}",
            out.status.code(),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// Runs `body` on a [`State`] over this database.
    fn state<T, F: Future<Output = T>>(&self, body: impl FnOnce(State) -> F) -> T {
        block_on(async {
            let state = match &self.target {
                Target::Sqlite(dir) => State::open_sqlite(dir).await.unwrap(),
                Target::Postgres { url, .. } => State::open(url).await.unwrap(),
            };
            let out = body(state.clone()).await;
            state.close().await;
            out
        })
    }

    /// The account with this address, read through [`State`].
    fn account(&self, email: &str) -> Account {
        let email = Email::parse(email).unwrap();
        self.state(|s| async move { s.account_by_email(&email).await.unwrap() })
            .expect("the account exists")
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        match &self.target {
            Target::Sqlite(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Target::Postgres {
                admin_url, name, ..
            } => block_on(async {
                if let Ok(mut conn) = sqlx::PgConnection::connect(admin_url).await {
                    let _ = conn
                        .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                        .await;
                    let _ = conn.close().await;
                }
            }),
        }
    }
}

fn unique(test: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{test}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn postgres_url() -> String {
    std::env::var("PERISCOPE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.into())
}

/// `url` with its database replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority = base.find("://").unwrap() + 3;
    let base = match base[authority..].find('/') {
        Some(slash) => &base[..authority + slash],
        None => base,
    };
    format!("{base}/{database}{query}")
}

/// A fresh PostgreSQL database, or `None` (outside CI only) when the server cannot be reached.
fn postgres(test: &str) -> Option<Db> {
    let admin_url = postgres_url();
    let name = format!("periscope_admin_{}", unique(test).to_lowercase());
    let created = block_on(async {
        let mut conn = PgConnectOptions::from_str(&admin_url)
            .unwrap()
            .connect()
            .await?;
        conn.execute(format!("CREATE DATABASE {name}").as_str())
            .await?;
        conn.close().await
    });
    match created {
        Ok(()) => Some(Db {
            target: Target::Postgres {
                url: with_database(&admin_url, &name),
                admin_url,
                name,
            },
        }),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("[{test}] PostgreSQL at {admin_url} is unusable, and CI requires it: {e}")
        }
        Err(e) => {
            eprintln!("[{test}] SKIPPED on PostgreSQL: {admin_url} is unusable ({e})");
            None
        }
    }
}

/// Runs `body` on a fresh SQLite data directory, then on a fresh PostgreSQL database.
fn on_each_backend(test: &str, body: impl Fn(&Db)) {
    eprintln!("[{test}] on SQLite");
    let sqlite = Db {
        target: Target::Sqlite(scratch(&format!("admin-{test}")).join("data")),
    };
    body(&sqlite);
    drop(sqlite);
    if let Some(db) = postgres(test) {
        eprintln!("[{test}] on PostgreSQL");
        body(&db);
    }
}

/// Standard error of a run that must fail with status 2.
fn fails(out: &Output) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}\nstderr: {stderr}",
        text(&out.stdout)
    );
    stderr
}

#[test]
fn created_keys_authenticate_until_revoked() {
    on_each_backend("keys", |db| {
        db.ok(&[
            "create-account",
            "--email",
            "Ann@Example.com",
            "--org",
            "Example Ltd",
        ]);
        let out = db.admin(&["create-key", "--email", "ann@example.com", "--name", "ci"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let stderr = text(&out.stderr);
        // The key alone on its line, nowhere else.
        let key = stdout.strip_suffix('\n').unwrap();
        assert!(!key.contains('\n'), "{stdout:?}");
        assert!(is_well_formed_key(key), "{key:?}");
        assert!(!stderr.contains(key), "{stderr}");
        assert!(stderr.contains("printed once"), "{stderr}");

        let owner = db
            .state(|s| async move { s.authenticate(key, now()).await.unwrap() })
            .expect("the printed key authenticates");
        assert_eq!(owner.account.email.as_str(), "Ann@Example.com");
        let id = owner.key.to_string();

        let listed = db.ok(&["list-keys", "--email", "ann@example.com"]);
        assert!(listed.starts_with("ID "), "{listed}");
        assert!(
            listed.contains(&id) && listed.contains("ci") && listed.contains("active"),
            "{listed}"
        );
        assert!(!listed.contains("psk_"), "{listed}");

        let out = db.admin(&["revoke-key", "--email", "ann@example.com", "--key-id", &id]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("revoked"),
            "{}",
            text(&out.stderr)
        );
        let gone = db.state(|s| async move { s.authenticate(key, now()).await.unwrap() });
        assert!(gone.is_none(), "a revoked key must not authenticate");
        assert!(
            db.ok(&["list-keys", "--email", "ann@example.com"])
                .contains("revoked "),
            "list-keys shows the revocation"
        );

        // Revoking again is harmless; a key the account does not have is an error.
        let again = db.admin(&["revoke-key", "--email", "ann@example.com", "--key-id", &id]);
        assert!(again.status.success(), "{}", text(&again.stderr));
        assert!(text(&again.stderr).contains("revoked already"));
        let other =
            fails(&db.admin(&["revoke-key", "--email", "ann@example.com", "--key-id", "42"]));
        assert!(other.contains("has no API key with id 42"), "{other}");

        // A key without a name; a second key is listed too.
        let second = db.ok(&["create-key", "--email", "ann@example.com"]);
        assert!(is_well_formed_key(second.trim_end()), "{second:?}");
        assert_ne!(second.trim_end(), key);
        let keys = db.state(|s| async move {
            let ann = s
                .account_by_email(&Email::parse("ann@example.com").unwrap())
                .await;
            s.keys_of(ann.unwrap().unwrap().id).await.unwrap()
        });
        assert_eq!(keys.len(), 2);
    });
}

#[test]
fn settings_change_what_the_state_reads() {
    on_each_backend("settings", |db| {
        db.ok(&[
            "create-account",
            "--email",
            "bob@example.com",
            "--org",
            "Example Ltd",
            "--limit",
            "3",
        ]);
        let bob = db.account("bob@example.com");
        assert_eq!(bob.access, Access::Active);
        assert_eq!(bob.daily_limit, DailyLimit::Limited(3));
        assert_eq!(bob.plan, Plan::Never);
        let orgs = db.state(|s| async move { s.organisations_of(bob.id).await.unwrap() });
        assert_eq!(orgs.len(), 1);
        assert_eq!(orgs[0].name, "Example Ltd");

        db.ok(&["set-access", "--email", "bob@example.com", "inactive"]);
        assert_eq!(db.account("bob@example.com").access, Access::Inactive);
        db.ok(&["set-access", "--email", "bob@example.com", "active"]);
        assert_eq!(db.account("bob@example.com").access, Access::Active);

        db.ok(&["set-limit", "--email", "bob@example.com", "unlimited"]);
        assert_eq!(
            db.account("bob@example.com").daily_limit,
            DailyLimit::Unlimited
        );
        db.ok(&["set-limit", "--email", "BOB@example.com", "250"]);
        assert_eq!(
            db.account("bob@example.com").daily_limit,
            DailyLimit::Limited(250)
        );

        db.ok(&[
            "set-plan",
            "--email",
            "bob@example.com",
            "--expires",
            "2027-01-01T00:00:00Z",
        ]);
        let expiry = Timestamp::parse("2027-01-01T00:00:00Z").unwrap();
        assert_eq!(db.account("bob@example.com").plan, Plan::ExpiresAt(expiry));

        let shown = db.ok(&["show-account", "--email", "bob@example.com"]);
        for expected in [
            "bob@example.com",
            "active",
            "250 searches a day (0 used today)",
            "2027-01-01T00:00:00Z",
            "Example Ltd",
            "0 (0 active)",
        ] {
            assert!(shown.contains(expected), "{expected:?} in\n{shown}");
        }

        db.ok(&[
            "set-plan",
            "--email",
            "bob@example.com",
            "--expires",
            "never",
        ]);
        assert_eq!(db.account("bob@example.com").plan, Plan::Never);

        // The configured default applies when --limit is not given.
        db.ok(&[
            "create-account",
            "--email",
            "cy@example.com",
            "--org",
            "Other",
        ]);
        assert_eq!(
            db.account("cy@example.com").daily_limit,
            DailyLimit::Limited(20)
        );
    });
}

#[test]
fn a_taken_address_is_refused() {
    on_each_backend("duplicate", |db| {
        db.ok(&[
            "create-account",
            "--email",
            "ann@example.com",
            "--org",
            "Example Ltd",
        ]);
        let stderr = fails(&db.admin(&[
            "create-account",
            "--email",
            "ANN@example.com",
            "--org",
            "Elsewhere",
        ]));
        assert!(
            stderr.contains("an account with the email address ANN@example.com exists already"),
            "{stderr}"
        );
        let accounts = db.state(|s| async move { s.accounts().await.unwrap() });
        assert_eq!(accounts.len(), 1);
    });
}

#[test]
fn an_unknown_address_exits_2() {
    on_each_backend("unknown", |db| {
        let e = "nobody@example.com";
        for args in [
            &["create-key", "--email", e][..],
            &["list-keys", "--email", e],
            &["revoke-key", "--email", e, "--key-id", "1"],
            &["set-access", "--email", e, "inactive"],
            &["set-limit", "--email", e, "5"],
            &["set-plan", "--email", e, "--expires", "never"],
            &["show-account", "--email", e],
        ] {
            let stderr = fails(&db.admin(args));
            assert!(
                stderr.contains("no account with email nobody@example.com"),
                "{args:?}: {stderr}"
            );
        }
    });
}

#[test]
fn reports_lists_submitted_reports_newest_first() {
    on_each_backend("reports", |db| {
        assert_eq!(db.ok(&["reports"]), "");
        db.ok(&[
            "create-account",
            "--email",
            "ann@example.com",
            "--org",
            "Example Ltd",
        ]);
        let ann = db.account("ann@example.com").id;
        db.state(|s| async move {
            let first = Timestamp::from_unix(now().unix() - 60).unwrap();
            s.submit_report(ann, "The map is empty\nafter a search", first)
                .await
                .unwrap();
            s.submit_report(ann, "Second problem", now()).await.unwrap();
        });
        let listed = db.ok(&["reports"]);
        assert!(listed.contains("ann@example.com"), "{listed}");
        let (first, second) = (
            listed.find("Second problem").unwrap(),
            listed
                .find("    The map is empty\n    after a search")
                .unwrap(),
        );
        assert!(first < second, "newest first:\n{listed}");
        let one = db.ok(&["reports", "--limit", "1"]);
        assert!(
            one.contains("Second problem") && !one.contains("map"),
            "{one}"
        );
    });
}

/// `audit` lists the audit records newest first — time, account, channel, key, operation,
/// client address, outcome, request id and query — of every account or of one, at most
/// `--limit`; the query (user text) escaped.
#[test]
fn audit_lists_search_records_newest_first() {
    on_each_backend("audit", |db| {
        let empty = db.admin(&["audit"]);
        assert!(empty.status.success(), "{}", text(&empty.stderr));
        assert_eq!(text(&empty.stdout), "");
        assert!(text(&empty.stderr).contains("no audit records"));
        for email in ["ann@example.com", "bob@example.com"] {
            db.ok(&["create-account", "--email", email, "--org", "Example Ltd"]);
        }
        let (ann, bob) = (
            db.account("ann@example.com").id,
            db.account("bob@example.com").id,
        );
        let key = db.state(|s| async move {
            let key = s.create_key(bob, Some("ci"), now()).await.unwrap().1.id;
            let at = |ago: i64| Timestamp::from_unix(now().unix() - ago).unwrap();
            let entry =
                |request: &str, ago, account, channel, operation, subject: &str| AuditEntry {
                    request_id: request.to_owned(),
                    at: at(ago),
                    account,
                    key: (channel == Channel::Api).then_some(key),
                    channel,
                    operation,
                    subject: Some(subject.to_owned()),
                    client: None,
                };
            let mut first = entry(
                "req-1",
                180,
                ann,
                Channel::Web,
                Operation::Search,
                "port:443",
            );
            first.client = Some("203.0.113.7".parse().unwrap());
            let id = s.write_audit(&first).await.unwrap();
            s.write_audit_outcome(id, "ok").await.unwrap();
            let mut second = entry(
                "req-2",
                120,
                bob,
                Channel::Api,
                Operation::Count,
                "asn:64500 \u{1b}]0;pwned\u{7}\rforged",
            );
            second.client = Some("2001:db8::1".parse().unwrap());
            let id = s.write_audit(&second).await.unwrap();
            s.write_audit_outcome(id, "rate_limited").await.unwrap();
            let third = entry(
                "req-3",
                60,
                ann,
                Channel::Web,
                Operation::HostDetail,
                "192.0.2.1",
            );
            s.write_audit(&third).await.unwrap();
            key
        });

        let out = db.admin(&["audit"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(
            drives_a_terminal(&out.stdout),
            None,
            "{:?}",
            text(&out.stdout)
        );
        let listed = text(&out.stdout);
        let lines: Vec<Vec<&str>> = listed
            .lines()
            .map(|l| {
                l.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect()
            })
            .collect();
        assert_eq!(
            lines[0],
            [
                "TIME",
                "ACCOUNT",
                "CHANNEL",
                "KEY",
                "OPERATION",
                "CLIENT",
                "OUTCOME",
                "REQUEST",
                "QUERY"
            ],
            "{listed}"
        );
        assert_eq!(lines.len(), 4, "{listed}");
        assert_eq!(
            lines[1][1..],
            [
                "ann@example.com",
                "web",
                "-",
                "host_detail",
                "-",
                "-",
                "req-3",
                "192.0.2.1"
            ],
            "{listed}"
        );
        let key = key.to_string();
        assert_eq!(
            lines[2][1..],
            [
                "bob@example.com",
                "api",
                key.as_str(),
                "count",
                "2001:db8::1",
                "rate_limited",
                "req-2",
                "asn:64500 \\u{1b}]0;pwned\\u{7}\\rforged"
            ],
            "{listed}"
        );
        assert_eq!(
            lines[3][1..],
            [
                "ann@example.com",
                "web",
                "-",
                "search",
                "203.0.113.7",
                "ok",
                "req-1",
                "port:443"
            ],
            "{listed}"
        );
        assert!(
            Timestamp::parse(lines[3][0]).unwrap().unix()
                <= Timestamp::parse(lines[1][0]).unwrap().unix() - 100,
            "{listed}"
        );

        let ann_only = db.ok(&["audit", "--account", "ann@example.com"]);
        assert_eq!(ann_only.lines().count(), 3, "{ann_only}");
        assert!(!ann_only.contains("bob@"), "{ann_only}");
        let newest = db.ok(&["audit", "--limit", "1"]);
        assert_eq!(newest.lines().count(), 2, "{newest}");
        assert!(newest.contains("req-3"), "{newest}");
        let one = db.ok(&["audit", "--account", "bob@example.com", "--limit", "1"]);
        assert!(one.contains("req-2") && one.lines().count() == 2, "{one}");

        let out = db.admin(&["audit", "--account", "nobody@example.com"]);
        assert!(
            fails(&out).contains("no account with email nobody@example.com"),
            "{}",
            text(&out.stderr)
        );
        let out = db.admin(&["audit", "--limit", "0"]);
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains("--limit"),
            "{}",
            text(&out.stderr)
        );
    });
}

/// Whether `out` holds a byte or character that drives a terminal: a C0 control other than
/// the line feed, DEL, a C1 control, or a bidirectional override.
fn drives_a_terminal(out: &[u8]) -> Option<char> {
    String::from_utf8_lossy(out).chars().find(|&c| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    })
}

/// Text a hostile user stored (a report, an organisation name, as the edges accepted them
/// before they refused control characters) is listed escaped: no ESC, BEL, CR or bidirectional
/// override reaches the administrator's terminal, and a forged listing line stays indented
/// inside its report.
#[test]
fn listings_print_stored_text_escaped() {
    on_each_backend("escaped", |db| {
        let email = Email::parse("eve@example.com").unwrap();
        db.state(|s| async move {
            let org = "Evil\u{1b}]0;pwned\u{7}Corp\u{202e}";
            let eve = s
                .create_account(&NewAccount::new(email, org), now())
                .await
                .unwrap();
            s.submit_report(
                eve.id,
                "The map is empty\n\u{1b}[2J\u{1b}[H2026-01-01T00:00:00Z  boss@example.com  \
                 (report 1, account 1)\rforged\u{7}\u{9b}31m",
                now(),
            )
            .await
            .unwrap();
        });
        let reports = db.admin(&["reports"]);
        assert!(reports.status.success(), "{}", text(&reports.stderr));
        let listed = text(&reports.stdout);
        assert_eq!(
            drives_a_terminal(&reports.stdout),
            None,
            "raw control characters in:\n{listed:?}"
        );
        assert!(
            listed.contains(
                "    \\u{1b}[2J\\u{1b}[H2026-01-01T00:00:00Z  boss@example.com  (report 1, \
                 account 1)\\rforged\\u{7}\\u{9b}31m\n"
            ),
            "{listed}"
        );
        let account = db.admin(&["show-account", "--email", "eve@example.com"]);
        assert!(account.status.success(), "{}", text(&account.stderr));
        assert_eq!(drives_a_terminal(&account.stdout), None);
        let shown = text(&account.stdout);
        assert!(
            shown.contains("Evil\\u{1b}]0;pwned\\u{7}Corp\\u{202e}"),
            "{shown}"
        );
        // And the administrator's own input is held to the same rule.
        let out = db.admin(&[
            "create-account",
            "--email",
            "mallory@example.com",
            "--org",
            "Bad\u{1b}[31mOrg",
        ]);
        assert!(fails(&out).contains("U+001B"), "{}", text(&out.stderr));
    });
}

#[test]
fn bad_values_are_refused() {
    let dir = scratch("admin-bad-values").join("data");
    let data = dir.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["create-account", "--email", "not-an-address", "--org", "X"],
            "expected name@domain",
        ),
        (
            &[
                "create-account",
                "--email",
                "a@example.com",
                "--org",
                "X",
                "--limit",
                "3.5",
            ],
            "'unlimited'",
        ),
        (
            &["create-account", "--email", "a@example.com", "--org", " "],
            "organisation name",
        ),
        (
            &["set-limit", "--email", "a@example.com", "lots"],
            "'unlimited'",
        ),
        (
            &["set-access", "--email", "a@example.com", "paused"],
            "'active' or 'inactive'",
        ),
        (
            &[
                "set-plan",
                "--email",
                "a@example.com",
                "--expires",
                "2027-01-01",
            ],
            "RFC 3339",
        ),
        (
            &["revoke-key", "--email", "a@example.com", "--key-id", "x"],
            "--key-id",
        ),
        (&["reports", "--limit", "0"], "--limit"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["admin", "--data", data];
        all.extend(*args);
        let stderr = fails(&run(&mut command(&all)));
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    let out = run(&mut command(&[
        "admin",
        "--data",
        data,
        "create-key",
        "--email",
        "a@example.com",
        "--name",
        &"n".repeat(101),
    ]));
    // The account check comes first.
    assert!(fails(&out).contains("no account with email"));
}

#[test]
fn global_flags_stand_before_or_after_the_subcommand() {
    let dir = scratch("admin-global-flags").join("data");
    let data = dir.to_str().unwrap();
    let out = run(&mut command(&[
        "admin",
        "create-account",
        "--email",
        "a@example.com",
        "--org",
        "X",
        "--data",
        data,
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.join("state.db").exists());
    let out = run(&mut command(&[
        "admin",
        "--data",
        data,
        "show-account",
        "--email",
        "a@example.com",
    ]));
    assert!(
        text(&out.stdout).contains("a@example.com"),
        "{}",
        text(&out.stderr)
    );
}

/// A configuration file in `dir` with `text`.
fn config_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("periscope.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_configuration_file_environment_and_flags_choose_the_database() {
    let root = scratch("admin-config");
    let (file_dir, env_dir, flag_dir) = (root.join("file"), root.join("env"), root.join("flag"));
    let config = config_file(
        &root,
        &format!(
            "data = {:?}\n[limits]\ndaily_searches = 5\n",
            file_dir.to_str().unwrap()
        ),
    );
    let config = config.to_str().unwrap();
    let create = |email: &str| {
        vec![
            "admin".to_owned(),
            "--config".to_owned(),
            config.to_owned(),
            "create-account".to_owned(),
            "--email".to_owned(),
            email.to_owned(),
            "--org".to_owned(),
            "X".to_owned(),
        ]
    };
    let args = create("file@example.com");
    let out = run(&mut command(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));

    let args = create("env@example.com");
    let out = run(
        command(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .env("PERISCOPE_DATA", &env_dir)
            .env("PERISCOPE_LIMITS_DAILY_SEARCHES", "unlimited"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));

    let mut args = create("flag@example.com");
    args.extend(["--data".to_owned(), flag_dir.to_str().unwrap().to_owned()]);
    let out = run(
        command(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .env("PERISCOPE_DATA", &env_dir),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));

    let accounts = |dir: PathBuf| {
        block_on(async move {
            let state = State::open_sqlite(&dir).await.unwrap();
            let accounts = state.accounts().await.unwrap();
            state.close().await;
            accounts
                .into_iter()
                .map(|a| (a.email.to_string(), a.daily_limit))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        accounts(file_dir),
        [("file@example.com".to_owned(), DailyLimit::Limited(5))]
    );
    assert_eq!(
        accounts(env_dir),
        [("env@example.com".to_owned(), DailyLimit::Unlimited)]
    );
    assert_eq!(
        accounts(flag_dir),
        [("flag@example.com".to_owned(), DailyLimit::Limited(5))]
    );
}

#[test]
fn a_bad_configuration_stops_the_command() {
    let root = scratch("admin-bad-config");
    let config = config_file(&root, "[limits]\ndaily_search = 5\n");
    let stderr = fails(&run(&mut command(&[
        "admin",
        "--config",
        config.to_str().unwrap(),
        "reports",
    ])));
    assert!(
        stderr.contains("unknown configuration key `limits.daily_search`")
            && stderr.contains(config.to_str().unwrap()),
        "{stderr}"
    );
    let stderr = fails(&run(command(&[
        "admin",
        "--data",
        root.to_str().unwrap(),
        "reports",
    ])
    .env("PERISCOPE_LIMITS_DAILY_SEARCHES", "many")));
    assert!(
        stderr.contains("`limits.daily_searches`")
            && stderr.contains("environment variable PERISCOPE_LIMITS_DAILY_SEARCHES"),
        "{stderr}"
    );
    let stderr = fails(&run(&mut command(&[
        "admin",
        "--config",
        root.join("missing.toml").to_str().unwrap(),
        "reports",
    ])));
    assert!(
        stderr.contains("cannot read the configuration file"),
        "{stderr}"
    );
}

#[test]
fn postgres_is_chosen_by_the_environment_too() {
    let Some(db) = postgres("env_url") else {
        return;
    };
    let Target::Postgres { url, .. } = &db.target else {
        unreachable!()
    };
    let out = run(command(&[
        "admin",
        "create-account",
        "--email",
        "pg@example.com",
        "--org",
        "X",
    ])
    .env("PERISCOPE_DATABASE_URL", url)
    // Without the URL this directory would hold a SQLite database.
    .env("PERISCOPE_DATA", scratch("admin-env-url")));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!scratch_has_state("admin-env-url"));
    assert_eq!(
        db.account("pg@example.com").email.as_str(),
        "pg@example.com"
    );
}

fn scratch_has_state(test: &str) -> bool {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(test)
        .join("state.db")
        .exists()
}
