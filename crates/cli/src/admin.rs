//! `periscope admin`: the administrator's commands over the state database — create accounts
//! and API keys, change access, daily limits and plans, inspect accounts, read problem
//! reports and the audit records of searches.
//!
//! The database is the one the configuration names ([`crate::config`]: `--database-url`, else
//! SQLite in `--data`), opened through [`State::open_configured`] on a current-thread tokio
//! runtime: each command is a few statements, so one thread is plenty.
//!
//! Output: what a command reports about the state (key lists, an account, reports) goes to
//! standard output; confirmations go to standard error. `create-key` prints the new key alone on
//! standard output — the only place a key is ever printed — so a script can capture it with
//! `KEY=$(periscope admin create-key …)`. Errors (an unknown address, a taken address, a bad
//! value) are returned to `main`, which prints them and exits with status 2. User reference:
//! `docs/admin.md`.
//!
//! Text that users typed (report descriptions, organisation names, key names, addresses, the
//! terms version) is printed through [`shown`]: a control character or a bidirectional
//! override never reaches the terminal raw, so a stored text cannot move the cursor, retitle
//! the window, ring the bell or forge a line of the listing.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use periscope_model::Timestamp;
use periscope_state::{
    Access, Account, AccountId, AuditRecord, DailyLimit, Email, KeyId, KeyInfo, NewAccount, Plan,
    State, UtcDay,
};

use crate::config::{ConfigArgs, StateFlags};
use crate::synth::{group, now};

/// Reports listed by `reports` unless `--limit` says otherwise.
const DEFAULT_REPORTS: u32 = 50;

/// Audit records listed by `audit` unless `--limit` says otherwise.
const DEFAULT_AUDIT: u32 = 50;

/// Arguments of `periscope admin`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The state database is PostgreSQL when --database-url, PERISCOPE_DATABASE_URL \
    or database_url in the configuration file names one, else the SQLite file DIR/state.db in \
    the data directory. Exit status: 0 on success, 2 when the command could not be carried out \
    (no such account, a taken address, a bad value, an unreachable database). See \
    docs/admin.md."
)]
pub(crate) struct Args {
    #[command(flatten)]
    config: ConfigArgs<StateFlags>,
    #[command(subcommand)]
    command: Command,
}

/// The admin subcommands.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Create an active account that joins an organisation (created if absent).
    CreateAccount {
        /// The account's email address (unique, compared case-insensitively).
        #[arg(long, value_name = "E", value_parser = parse_email)]
        email: Email,
        /// The organisation's exact name (one line, no control characters).
        #[arg(long, value_name = "O", value_parser = parse_org)]
        org: String,
        /// Searches per UTC day, or 'unlimited' [default: limits.daily_searches, 20].
        #[arg(long, value_name = "N|unlimited", value_parser = parse_limit)]
        limit: Option<DailyLimit>,
    },
    /// Create an API key; prints the key once, alone on standard output.
    CreateKey {
        /// The account's email address.
        #[arg(long, value_name = "E", value_parser = parse_email)]
        email: Email,
        /// A name to recognise the key by (at most 100 characters).
        #[arg(long, value_name = "N")]
        name: Option<String>,
    },
    /// List an account's API keys (never the keys themselves).
    ListKeys {
        /// The account's email address.
        #[arg(long, value_name = "E", value_parser = parse_email)]
        email: Email,
    },
    /// Revoke one of an account's API keys; it stops working at the next request.
    RevokeKey {
        /// The account's email address.
        #[arg(long, value_name = "E", value_parser = parse_email)]
        email: Email,
        /// The key's id, as list-keys shows it.
        #[arg(long, value_name = "ID")]
        key_id: i64,
    },
    /// Allow or stop an account's searches.
    SetAccess {
        /// The account's email address.
        #[arg(long, value_name = "E", value_parser = parse_email)]
        email: Email,
        /// 'active' or 'inactive'.
        #[arg(value_name = "active|inactive", value_parser = parse_access)]
        access: Access,
    },
    /// Set an account's daily search limit.
    SetLimit {
        /// The account's email address.
        #[arg(long, value_name = "E", value_parser = parse_email)]
        email: Email,
        /// Searches per UTC day, or 'unlimited'.
        #[arg(value_name = "N|unlimited", value_parser = parse_limit)]
        limit: DailyLimit,
    },
    /// Set when an account's plan expires.
    SetPlan {
        /// The account's email address.
        #[arg(long, value_name = "E", value_parser = parse_email)]
        email: Email,
        /// An RFC 3339 instant (2027-01-01T00:00:00Z), or 'never'.
        #[arg(long, value_name = "RFC3339|never", value_parser = parse_plan)]
        expires: Plan,
    },
    /// Show an account: access, plan, limit and today's use, organisations, keys.
    ShowAccount {
        /// The account's email address.
        #[arg(long, value_name = "E", value_parser = parse_email)]
        email: Email,
    },
    /// List problem reports, newest first.
    Reports {
        /// How many reports to show at most.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_REPORTS,
              value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
    },
    /// List audit records of searches (one per search, count, facets, exposure or host
    /// detail request, from the API or the browser), newest first.
    Audit {
        /// Only this account's records.
        #[arg(long, value_name = "E", value_parser = parse_email)]
        account: Option<Email>,
        /// How many records to show at most.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_AUDIT,
              value_parser = clap::value_parser!(u32).range(1..))]
        limit: u32,
    },
}

/// An organisation name: no control characters (they would reach every listing's reader).
fn parse_org(s: &str) -> Result<String, String> {
    match s
        .chars()
        .find(|&c| periscope_model::text::is_hidden_control(c))
    {
        Some(c) => Err(format!(
            "the organisation name contains the control character U+{:04X}; write it on one \
             line without control characters",
            u32::from(c)
        )),
        None => Ok(s.to_owned()),
    }
}

/// `text` safe for a terminal: every control character (C0, DEL, C1 — ESC, BEL and CR
/// included) and every bidirectional control is written as a Rust-style escape (`\u{1b}`,
/// `\r`, `\t`), everything else as it is. Untrusted text goes through this before any listing
/// prints it.
pub(crate) fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if periscope_model::text::is_hidden_control(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn parse_email(s: &str) -> Result<Email, String> {
    Email::parse(s).map_err(|e| e.to_string())
}

/// `N` (a whole number of searches) or `unlimited`.
pub(crate) fn parse_limit(s: &str) -> Result<DailyLimit, String> {
    if s.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(DailyLimit::Unlimited);
    }
    s.trim()
        .replace('_', "")
        .parse()
        .map(DailyLimit::Limited)
        .map_err(|_| "expected a whole number of searches per day, or 'unlimited'".to_owned())
}

fn parse_access(s: &str) -> Result<Access, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "active" => Ok(Access::Active),
        "inactive" => Ok(Access::Inactive),
        _ => Err("expected 'active' or 'inactive'".to_owned()),
    }
}

/// `never` or an RFC 3339 instant.
fn parse_plan(s: &str) -> Result<Plan, String> {
    if s.trim().eq_ignore_ascii_case("never") {
        return Ok(Plan::Never);
    }
    Timestamp::parse(s.trim())
        .map(Plan::ExpiresAt)
        .map_err(|e| format!("{e} (or 'never')"))
}

/// Runs an admin command.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let config = args.config.load()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let state = State::open_configured(config.database_url.as_deref(), &config.data).await?;
        let admin = Admin {
            state: &state,
            now: now(),
        };
        let result = admin.run(&args.command, config.limits.daily_searches).await;
        state.close().await;
        result
    })?;
    Ok(ExitCode::SUCCESS)
}

/// One command's context.
struct Admin<'a> {
    state: &'a State,
    now: Timestamp,
}

impl Admin<'_> {
    async fn run(&self, command: &Command, default_limit: DailyLimit) -> Result<()> {
        match command {
            Command::CreateAccount { email, org, limit } => {
                let mut new = NewAccount::new(email.clone(), org.as_str());
                new.daily_limit = limit.unwrap_or(default_limit);
                let account = self.state.create_account(&new, self.now).await?;
                let orgs = self.state.organisations_of(account.id).await?;
                let org = orgs.first().map_or(org.as_str(), |o| o.name.as_str());
                eprintln!(
                    "created account {} (id {}) in organisation {org:?}: active, {}, plan never \
                     expires",
                    account.email,
                    account.id,
                    limit_text(account.daily_limit)
                );
            }
            Command::CreateKey { email, name } => {
                let account = self.account(email).await?;
                let (key, info) = self
                    .state
                    .create_key(account.id, name.as_deref(), self.now)
                    .await?;
                println!("{}", key.expose());
                eprintln!(
                    "created API key {}{} for {}; the key is printed once, on standard output, \
                     and cannot be shown again",
                    info.id,
                    info.name
                        .as_deref()
                        .map(|n| format!(" ({n:?})"))
                        .unwrap_or_default(),
                    account.email
                );
            }
            Command::ListKeys { email } => {
                let account = self.account(email).await?;
                let keys = self.state.keys_of(account.id).await?;
                if keys.is_empty() {
                    eprintln!("{} has no API keys", account.email);
                } else {
                    print!("{}", key_table(&keys));
                }
            }
            Command::RevokeKey { email, key_id } => {
                let account = self.account(email).await?;
                let id = KeyId::from_i64(*key_id);
                if self.state.revoke_key(account.id, id, self.now).await? {
                    eprintln!("revoked API key {id} of {}", account.email);
                } else {
                    let keys = self.state.keys_of(account.id).await?;
                    match keys.iter().find(|k| k.id == id).and_then(|k| k.revoked_at) {
                        Some(at) => eprintln!(
                            "API key {id} of {} was revoked already, at {at}",
                            account.email
                        ),
                        None => bail!("{} has no API key with id {id}", account.email),
                    }
                }
            }
            Command::SetAccess { email, access } => {
                let account = self.account(email).await?;
                self.state.set_access(account.id, *access).await?;
                eprintln!("{} is now {}", account.email, access_text(*access));
            }
            Command::SetLimit { email, limit } => {
                let account = self.account(email).await?;
                self.state.set_daily_limit(account.id, *limit).await?;
                eprintln!("{} now has {}", account.email, limit_text(*limit));
            }
            Command::SetPlan { email, expires } => {
                let account = self.account(email).await?;
                self.state.set_plan(account.id, *expires).await?;
                eprintln!(
                    "the plan of {} {}",
                    account.email,
                    plan_text(*expires, self.now)
                );
            }
            Command::ShowAccount { email } => {
                let account = self.account(email).await?;
                print!("{}", self.describe(&account).await?);
            }
            Command::Reports { limit } => {
                let reports = self.state.reports(*limit).await?;
                if reports.is_empty() {
                    eprintln!("no problem reports");
                }
                let mut out = String::new();
                for report in reports {
                    let _ = writeln!(
                        out,
                        "{}  {}  (report {}, account {})",
                        report.created_at,
                        shown(report.email.as_str()),
                        report.id.as_i64(),
                        report.account
                    );
                    // Each line indented; a CR or any other control character is escaped,
                    // so no text can pass for the line above.
                    for line in report.description.split('\n') {
                        let _ = writeln!(out, "    {}", shown(line));
                    }
                    out.push('\n');
                }
                print!("{out}");
            }
            Command::Audit { account, limit } => {
                let account = match account {
                    Some(email) => Some(self.account(email).await?),
                    None => None,
                };
                let records = self
                    .state
                    .audit_records(account.as_ref().map(|a| a.id), *limit)
                    .await?;
                if records.is_empty() {
                    match &account {
                        Some(a) => eprintln!("no audit records of {}", a.email),
                        None => eprintln!("no audit records"),
                    }
                } else {
                    print!("{}", self.audit_table(&records).await?);
                }
            }
        }
        Ok(())
    }

    /// `audit`'s table: one line per record, the query (user text) last and escaped.
    async fn audit_table(&self, records: &[AuditRecord]) -> Result<String> {
        let mut emails: HashMap<AccountId, String> = HashMap::new();
        let mut rows = Vec::with_capacity(records.len());
        for record in records {
            let entry = &record.entry;
            if let Entry::Vacant(slot) = emails.entry(entry.account) {
                slot.insert(match self.state.account(entry.account).await? {
                    Some(account) => shown(account.email.as_str()),
                    None => format!("account {}", entry.account),
                });
            }
            rows.push(vec![
                entry.at.to_string(),
                emails[&entry.account].clone(),
                entry.channel.as_str().to_owned(),
                entry.key.map_or("-".to_owned(), |k| k.to_string()),
                entry.operation.as_str().to_owned(),
                entry.client.map_or("-".to_owned(), |ip| ip.to_string()),
                record.outcome.as_deref().map_or("-".to_owned(), shown),
                shown(&entry.request_id),
                entry.subject.as_deref().map_or("-".to_owned(), shown),
            ]);
        }
        let header = [
            "TIME",
            "ACCOUNT",
            "CHANNEL",
            "KEY",
            "OPERATION",
            "CLIENT",
            "OUTCOME",
            "REQUEST",
            "QUERY",
        ];
        Ok(table(&header, &rows))
    }

    /// The account with this address, or the error every command gives for an unknown one.
    async fn account(&self, email: &Email) -> Result<Account> {
        self.state
            .account_by_email(email)
            .await?
            .ok_or_else(|| anyhow!("no account with email {email}"))
    }

    /// `show-account`'s text.
    async fn describe(&self, account: &Account) -> Result<String> {
        let organisations = self.state.organisations_of(account.id).await?;
        let keys = self.state.keys_of(account.id).await?;
        let today = UtcDay::of(self.now);
        let mut out = String::new();
        let mut row = |label: &str, value: &str| {
            let _ = writeln!(out, "{label:<15}{value}");
        };
        row("email", &shown(account.email.as_str()));
        row("id", &account.id.to_string());
        row("access", access_text(account.access));
        let mut limit = limit_text(account.daily_limit);
        if let DailyLimit::Limited(_) = account.daily_limit {
            let used = self.state.used(account.id, today).await?;
            let _ = write!(limit, " ({} used today)", group(u64::from(used)));
        }
        row("daily limit", &limit);
        row("plan", &plan_text(account.plan, self.now));
        row("created", &account.created_at.to_string());
        row(
            "terms",
            &account
                .terms
                .as_ref()
                .map_or("not accepted".to_owned(), |t| {
                    format!("{} accepted at {}", shown(&t.version), t.accepted_at)
                }),
        );
        row(
            "marketing",
            if account.marketing_consent {
                "consented"
            } else {
                "no consent"
            },
        );
        let names: Vec<String> = organisations.iter().map(|o| shown(&o.name)).collect();
        let organisations = match names.len() {
            0 => "none (searches answer organization_required)".to_owned(),
            1 => names[0].clone(),
            _ => format!(
                "{} (searches answer organization_required)",
                names.join(", ")
            ),
        };
        row("organisations", &organisations);
        let active = keys.iter().filter(|k| k.revoked_at.is_none()).count();
        row("api keys", &format!("{} ({active} active)", keys.len()));
        if !keys.is_empty() {
            out.push('\n');
            out.push_str(&key_table(&keys));
        }
        Ok(out)
    }
}

/// Keys as an aligned table with a header; never the key material (it is not stored).
fn key_table(keys: &[KeyInfo]) -> String {
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            vec![
                k.id.to_string(),
                k.name.as_deref().map_or_else(|| "-".to_owned(), shown),
                k.created_at.to_string(),
                k.last_used_at.map_or("never".to_owned(), |t| t.to_string()),
                k.revoked_at
                    .map_or("active".to_owned(), |t| format!("revoked {t}")),
            ]
        })
        .collect();
    table(&["ID", "NAME", "CREATED", "LAST USED", "STATUS"], &rows)
}

/// `rows` under `header`, each column as wide as its widest cell, two spaces apart; the last
/// column is not padded.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|&h| h.to_owned()).collect();
    let mut widths = vec![0; header.len()];
    for row in std::iter::once(&header).chain(rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, (cell, &w)) in row.iter().zip(&widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<w$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn access_text(access: Access) -> &'static str {
    match access {
        Access::Active => "active",
        Access::Inactive => "inactive",
    }
}

fn limit_text(limit: DailyLimit) -> String {
    match limit {
        DailyLimit::Limited(n) => format!("{} searches a day", group(u64::from(n))),
        DailyLimit::Unlimited => "unlimited searches".to_owned(),
    }
}

fn plan_text(plan: Plan, now: Timestamp) -> String {
    match plan {
        Plan::Never => "never expires".to_owned(),
        Plan::ExpiresAt(at) if plan.is_current(now) => format!("expires at {at}"),
        Plan::ExpiresAt(at) => format!("expired at {at}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

    use super::*;

    #[test]
    fn shown_escapes_what_drives_a_terminal() {
        for (text, expect) in [
            ("Example Ltd, Zürich", "Example Ltd, Zürich"),
            ("\u{1b}]0;title\u{7}", "\\u{1b}]0;title\\u{7}"),
            ("a\rforged", "a\\rforged"),
            ("tab\there", "tab\\there"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("\u{7f}", "\\u{7f}"),
            ("abc\u{202e}fed", "abc\\u{202e}fed"),
            ("\u{2066}x\u{2069}", "\\u{2066}x\\u{2069}"),
            ("line\u{2028}sep", "line\\u{2028}sep"),
        ] {
            assert_eq!(shown(text), expect, "{text:?}");
        }
        assert!(parse_org("Example Ltd").is_ok());
        assert!(parse_org("Evil\u{1b}[31m").unwrap_err().contains("U+001B"));
        assert!(parse_org("a\u{202e}b").unwrap_err().contains("U+202E"));
    }

    #[test]
    fn values() {
        assert_eq!(parse_limit("20"), Ok(DailyLimit::Limited(20)));
        assert_eq!(parse_limit("1_000"), Ok(DailyLimit::Limited(1_000)));
        assert_eq!(parse_limit("Unlimited"), Ok(DailyLimit::Unlimited));
        assert!(parse_limit("-1").is_err());
        assert!(parse_limit("lots").is_err());
        assert_eq!(parse_access("inactive"), Ok(Access::Inactive));
        assert!(parse_access("paused").is_err());
        assert_eq!(parse_plan("never"), Ok(Plan::Never));
        let at = Timestamp::parse("2027-01-01T00:00:00Z").unwrap();
        assert_eq!(parse_plan("2027-01-01T00:00:00Z"), Ok(Plan::ExpiresAt(at)));
        assert!(parse_plan("2027-01-01").unwrap_err().contains("RFC 3339"));
    }
}
