//! The `periscope` binary: one executable whose subcommands drive the Periscope libraries.
//!
//! This file is glue: it parses the command line with clap and hands each subcommand to its
//! module (`serve`, `admin`, `synth`, `ingest`, `convert`, `validate`, `bench`, `clickhouse`; `config` is the
//! configuration `serve` and `admin` read, `lines` the line reader `ingest` and `validate`
//! share), which does the work through library APIs. Exit codes: 0 success, 1 a
//! check failed (`validate` rejected lines), 2 the command could not run (bad arguments,
//! unreadable or unwritable files, a store error); errors are printed once, here.

mod admin;
mod bench;
mod clickhouse;
mod config;
mod convert;
mod ingest;
mod ingest_socket;
mod lines;
mod serve;
mod signin;
mod synth;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc rather than the system allocator: ingest frees on one thread what it allocated on
/// another, which glibc's allocator handles slowly (a third of ingest's time went there). Its
/// v2 line (the `v2` feature): v3 returns freed pages only a second after they are freed and
/// commits its arenas eagerly, so a server held about 25 MB more at 10M hosts (1,476 against
/// 1,499 MB after its first question) and a first build kept its peak until the next free
/// (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Periscope: self-hosted IP exposure search over your own scan data.
#[derive(Debug, Parser)]
#[command(name = "periscope", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the JSON API (and, with --demo, demo data first).
    Serve(serve::Args),
    /// Generate a deterministic synthetic internet in the observation format.
    Synth(synth::Args),
    /// Read observation files or scanner output (Nmap, Masscan, ZGrab2, Shodan, Censys;
    /// optionally gzip) into the scan store.
    Ingest(ingest::Args),
    /// Convert scanner output to observation JSON Lines, as ingest would read it.
    Convert(convert::Args),
    /// Check observation files line by line, as ingest would read them.
    Validate(validate::Args),
    /// Measure parts of Periscope.
    #[command(subcommand)]
    Bench(bench::Command),
    /// Manage accounts, API keys and plans; read problem reports.
    Admin(admin::Args),
    /// Run the sign-in service (OpenID Connect provider) alone, for a `serve` elsewhere.
    Signin(signin::Args),
    /// Manage a ClickHouse scan index: create its schema, show its state.
    #[command(subcommand)]
    Clickhouse(clickhouse::Command),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(&args),
        Command::Synth(args) => synth::run(&args),
        Command::Ingest(args) => ingest::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Validate(args) => validate::run(&args),
        Command::Bench(command) => bench::run(&command),
        Command::Admin(args) => admin::run(&args),
        Command::Signin(args) => signin::run(&args),
        Command::Clickhouse(command) => clickhouse::run(&command),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("periscope: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
