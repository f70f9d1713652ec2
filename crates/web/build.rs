//! Builds the browser application's front-end packages into the binary: copies
//! `assets/package.json` and `assets/package-lock.json` into `OUT_DIR` and runs
//! `npm ci --ignore-scripts --no-audit --no-fund` there, so that `src/assets.rs` can embed the
//! UMD builds (`d3-array`, `d3-geo`, `topojson-client`) and the Natural Earth outlines
//! (`world-atlas`) with `include_bytes!`. npm runs again only when the lock changed; without
//! Node.js and npm the build stops and says what to install. Nothing is fetched at run time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

/// The files `src/assets.rs` embeds, relative to `OUT_DIR`. (`NPM` names another npm.)
const EMBEDDED: &[&str] = &[
    "node_modules/d3-array/dist/d3-array.min.js",
    "node_modules/d3-geo/dist/d3-geo.min.js",
    "node_modules/topojson-client/dist/topojson-client.min.js",
    "node_modules/world-atlas/land-110m.json",
    "node_modules/world-atlas/land-50m.json",
];

fn fail(why: impl std::fmt::Display) -> ! {
    panic!(
        "\n\nperiscope-web: the browser assets cannot be built: {why}\n\
         The build needs Node.js and npm (Debian/Ubuntu: `apt-get install nodejs npm`) and \
         access to the npm registry (or its cache) for the packages pinned in \
         crates/web/assets/package-lock.json.\n\n"
    )
}

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_else(|| fail("OUT_DIR is not set")));
    let assets = manifest.join("assets");
    for name in ["package.json", "package-lock.json"] {
        println!("cargo:rerun-if-changed=assets/{name}");
    }
    println!("cargo:rerun-if-env-changed=NPM");
    let lock = read(&assets.join("package-lock.json"));
    // The lock of the last successful `npm ci`, written only after it succeeded.
    let stamp = out.join("built-package-lock.json");
    let built = read_or_empty(&stamp);
    let complete = EMBEDDED.iter().all(|f| out.join(f).is_file());
    if built == lock && complete {
        return;
    }
    for name in ["package.json", "package-lock.json"] {
        fs::copy(assets.join(name), out.join(name))
            .unwrap_or_else(|e| fail(format!("cannot copy assets/{name} into OUT_DIR: {e}")));
    }
    let npm = env::var_os("NPM").unwrap_or_else(|| "npm".into());
    let status = Command::new(&npm)
        .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
        .current_dir(&out)
        .status()
        .unwrap_or_else(|e| fail(format!("cannot run {}: {e}", npm.to_string_lossy())));
    if !status.success() {
        fail(format!("`npm ci` in {} failed ({status})", out.display()));
    }
    for f in EMBEDDED {
        if !out.join(f).is_file() {
            fail(format!("`npm ci` did not produce {f}"));
        }
    }
    fs::write(&stamp, &lock)
        .unwrap_or_else(|e| fail(format!("cannot write {}: {e}", stamp.display())));
}

fn read(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| fail(format!("cannot read {}: {e}", path.display())))
}

fn read_or_empty(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_default()
}
