//! Builds the browser application's front-end packages into the binary without Node.js: for
//! each package `src/assets.rs` embeds (`d3-array`, `d3-geo`, `topojson-client` UMD builds and
//! the `world-atlas` Natural Earth outlines), reads its version and `sha512` integrity from
//! `assets/package-lock.json`, gets its tarball from the npm registry over https (or, offline,
//! from the directory `PERISCOPE_WEB_TARBALLS` names), checks it against the lock and extracts
//! only the embedded files into `OUT_DIR/node_modules/`, where `include_bytes!` finds them. This
//! runs again only when the lock changed. Nothing is fetched at run time. The work is in
//! `build/assets.rs`, tested by `tests/build_assets.rs`.

#[path = "build/assets.rs"]
mod assets;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::{env, fs};

/// The environment variable naming a directory of `npm pack` tarballs for offline builds.
const TARBALLS: &str = "PERISCOPE_WEB_TARBALLS";

/// The largest tarball read from the registry (world-atlas, the largest, is 2.2 MB).
const MAX_TARBALL: u64 = 64 << 20;

fn fail(why: impl std::fmt::Display) -> ! {
    panic!("\n\nperiscope-web: the browser assets cannot be built: {why}\n\n")
}

/// How to build without the registry, naming each tarball the lock pins.
fn offline_hint(lock: &str) -> String {
    let Ok(locked) = assets::parse_lock(lock, assets::EMBEDDED) else {
        return String::new();
    };
    let packs: Vec<String> = locked
        .iter()
        .map(|p| format!("{}@{}", p.name, p.version))
        .collect();
    let files: Vec<String> = locked
        .iter()
        .map(|p| format!("  {} from {}", p.tarball_name(), p.url))
        .collect();
    format!(
        "Without access to the npm registry, put the tarballs the lock pins in a directory \
         (`npm pack {}` there on any machine with npm, or download them:\n{}\n) and build with \
         {TARBALLS}=/that/directory. Each is checked against crates/web/assets/package-lock.json.",
        packs.join(" "),
        files.join("\n")
    )
}

/// The trusted roots: the platform's (`rustls-native-certs`: the system store, or
/// `SSL_CERT_FILE`/`SSL_CERT_DIR`, so a TLS-inspecting proxy's CA installed there works), or
/// Mozilla's (webpki-roots) on a machine that has none.
fn roots() -> ureq::tls::RootCerts {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        return ureq::tls::RootCerts::WebPki;
    }
    found
        .certs
        .iter()
        .map(|der| ureq::tls::Certificate::from_der(der).to_owned())
        .collect::<Vec<_>>()
        .into()
}

fn fetch(url: &str) -> Result<Vec<u8>, String> {
    let tls = ureq::tls::TlsConfig::builder().root_certs(roots()).build();
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().tls_config(tls).build());
    let response = agent.get(url).call().map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    response
        .into_body()
        .into_reader()
        .take(MAX_TARBALL)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    Ok(bytes)
}

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_else(|| fail("OUT_DIR is not set")));
    println!("cargo:rerun-if-changed=assets/package-lock.json");
    println!("cargo:rerun-if-env-changed={TARBALLS}");
    let lock_path = manifest.join("assets/package-lock.json");
    let lock = fs::read_to_string(&lock_path)
        .unwrap_or_else(|e| fail(format!("cannot read {}: {e}", lock_path.display())));
    // The lock of the last successful install, written only after it succeeded.
    let stamp = out.join("built-package-lock.json");
    let complete = assets::EMBEDDED.iter().all(|p| {
        p.files
            .iter()
            .all(|f| out.join("node_modules").join(p.name).join(f).is_file())
    });
    if fs::read_to_string(&stamp).is_ok_and(|built| built == lock) && complete {
        return;
    }
    let dir = env::var_os(TARBALLS).map(PathBuf::from);
    let source = match &dir {
        Some(dir) => assets::Source::Directory(dir),
        None => assets::Source::Fetch(&fetch),
    };
    if let Err(e) = assets::install(&lock, assets::EMBEDDED, &source, &out) {
        let hint = match e {
            assets::Error::Integrity { .. } => format!(
                "The lock's hash is checked before anything is extracted. If the lock was changed \
                 on purpose, run `npm install --package-lock-only --ignore-scripts` in \
                 crates/web/assets; otherwise the tarball is not the published one.\n{}",
                offline_hint(&lock)
            ),
            _ => offline_hint(&lock),
        };
        fail(format!("{e}\n{hint}"));
    }
    write(&stamp, &lock);
}

fn write(path: &Path, contents: &str) {
    fs::write(path, contents)
        .unwrap_or_else(|e| fail(format!("cannot write {}: {e}", path.display())));
}
