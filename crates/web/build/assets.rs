//! The front-end packages' files without Node.js: `build.rs` reads the packages that
//! `src/assets.rs` embeds from `assets/package-lock.json` (version, tarball URL, `sha512`
//! integrity), gets each tarball from a directory (offline builds) or from the registry through
//! the fetch function it is handed, checks the tarball against the lock's integrity before
//! reading a byte of it, and writes only the embedded files to
//! `OUT_DIR/node_modules/<package>/<file>`, where npm would have put them. The lock stays the
//! one source of versions and hashes; npm maintains it and is not needed to build.
//!
//! Included by `build.rs` and by `tests/build_assets.rs` (`#[path]`), which is why it has no
//! dependency beyond the build script's own and does no network I/O itself.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::{Digest, Sha512};

/// The registry a lock without `resolved` URLs (npm's `omit-lockfile-registry-resolved`) was
/// made against.
pub const REGISTRY: &str = "https://registry.npmjs.org";

/// A package whose files are embedded, and those files (relative to the package's root).
#[derive(Debug, Clone, Copy)]
pub struct Package {
    pub name: &'static str,
    pub files: &'static [&'static str],
}

/// What `src/assets.rs` embeds: `OUT_DIR/node_modules/<name>/<file>` for each file.
pub const EMBEDDED: &[Package] = &[
    Package {
        name: "d3-array",
        files: &["dist/d3-array.min.js"],
    },
    Package {
        name: "d3-geo",
        files: &["dist/d3-geo.min.js"],
    },
    Package {
        name: "topojson-client",
        files: &["dist/topojson-client.min.js"],
    },
    Package {
        name: "world-atlas",
        files: &["land-110m.json", "land-50m.json"],
    },
];

/// A package as the lock pins it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked {
    pub name: String,
    pub version: String,
    /// The lock's `resolved` URL, or the registry's tarball URL for this version.
    pub url: String,
    /// The SHA-512 digest of the tarball, from the lock's `integrity`.
    pub sha512: [u8; 64],
}

impl Locked {
    /// The tarball's file name as `npm pack NAME@VERSION` writes it (`@scope/name` gives
    /// `scope-name-VERSION.tgz`): the name looked for in an offline directory.
    pub fn tarball_name(&self) -> String {
        let name = self.name.trim_start_matches('@').replace('/', "-");
        format!("{name}-{}.tgz", self.version)
    }
}

/// Where the tarballs come from.
pub enum Source<'a> {
    /// A directory of `npm pack` tarballs; nothing is fetched.
    Directory(&'a Path),
    /// The tarball URLs, through this function (its error is said as it is).
    Fetch(&'a dyn Fn(&str) -> Result<Vec<u8>, String>),
}

/// Why the packages' files could not be written.
#[derive(Debug)]
pub enum Error {
    /// The lock cannot be read, or does not pin a package that is embedded.
    Lock(String),
    /// The offline directory has no readable tarball for a package.
    Offline {
        package: String,
        path: PathBuf,
        error: String,
    },
    /// The tarball could not be fetched.
    Fetch {
        package: String,
        url: String,
        error: String,
    },
    /// The tarball is not the one the lock pins. Both are `sha512-<base64>`.
    Integrity {
        package: String,
        expected: String,
        actual: String,
    },
    /// The tarball cannot be read as a gzipped tar, or lacks a file that is embedded.
    Extract { package: String, error: String },
    /// A file could not be written.
    Write { path: PathBuf, error: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Lock(why) => write!(f, "assets/package-lock.json: {why}"),
            Error::Offline {
                package,
                path,
                error,
            } => write!(
                f,
                "{package}: cannot read {} (PERISCOPE_WEB_TARBALLS): {error}",
                path.display()
            ),
            Error::Fetch {
                package,
                url,
                error,
            } => write!(f, "{package}: cannot fetch {url}: {error}"),
            Error::Integrity {
                package,
                expected,
                actual,
            } => write!(
                f,
                "{package}: the tarball is not the one the lock pins: expected {expected}, got {actual}"
            ),
            Error::Extract { package, error } => write!(f, "{package}: {error}"),
            Error::Write { path, error } => write!(f, "cannot write {}: {error}", path.display()),
        }
    }
}

/// The packages of `wanted` as the lock (npm's `lockfileVersion` 2 or 3) pins them, in order.
pub fn parse_lock(lock: &str, wanted: &[Package]) -> Result<Vec<Locked>, Error> {
    let lock: serde_json::Value =
        serde_json::from_str(lock).map_err(|e| Error::Lock(format!("not JSON: {e}")))?;
    let packages = lock
        .get("packages")
        .and_then(|p| p.as_object())
        .ok_or_else(|| {
            Error::Lock("no \"packages\" (a lockfileVersion 2 or 3 is needed)".into())
        })?;
    wanted
        .iter()
        .map(|package| {
            let key = format!("node_modules/{}", package.name);
            let entry = packages.get(&key).ok_or_else(|| {
                Error::Lock(format!(
                    "no {key}: run `npm install --package-lock-only --ignore-scripts` in crates/web/assets"
                ))
            })?;
            let field = |name: &str| {
                entry
                    .get(name)
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| Error::Lock(format!("{key} has no \"{name}\"")))
            };
            let version = field("version")?.to_owned();
            let sha512 = sha512_of(field("integrity")?)
                .map_err(|why| Error::Lock(format!("{key}: integrity {why}")))?;
            let url = match entry.get("resolved").and_then(|v| v.as_str()) {
                Some(url) => url.to_owned(),
                None => registry_url(package.name, &version),
            };
            Ok(Locked {
                name: package.name.to_owned(),
                version,
                url,
                sha512,
            })
        })
        .collect()
}

/// The registry's tarball URL (`@scope/name` has `@scope/name/-/name-VERSION.tgz`).
fn registry_url(name: &str, version: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    format!("{REGISTRY}/{name}/-/{base}-{version}.tgz")
}

/// The SHA-512 digest of a Subresource Integrity string (`sha512-<base64>`, possibly among
/// other hashes separated by spaces).
fn sha512_of(integrity: &str) -> Result<[u8; 64], String> {
    let base64 = integrity
        .split_whitespace()
        .find_map(|hash| hash.strip_prefix("sha512-"))
        .ok_or_else(|| format!("{integrity:?} has no sha512"))?;
    let bytes = BASE64
        .decode(base64)
        .map_err(|e| format!("{integrity:?}: {e}"))?;
    bytes
        .try_into()
        .map_err(|_| format!("{integrity:?} is not 64 bytes"))
}

/// `sha512-<base64>`, as the lock writes a digest.
fn sri(digest: &[u8]) -> String {
    format!("sha512-{}", BASE64.encode(digest))
}

/// The tarball of `package`, from `source`, not yet checked.
pub fn obtain(package: &Locked, source: &Source<'_>) -> Result<Vec<u8>, Error> {
    match source {
        Source::Directory(dir) => {
            let path = dir.join(package.tarball_name());
            std::fs::read(&path).map_err(|e| Error::Offline {
                package: package.name.clone(),
                path,
                error: e.to_string(),
            })
        }
        Source::Fetch(fetch) => fetch(&package.url).map_err(|error| Error::Fetch {
            package: package.name.clone(),
            url: package.url.clone(),
            error,
        }),
    }
}

/// Whether `tarball` is the one the lock pins for `package`.
pub fn verify(package: &Locked, tarball: &[u8]) -> Result<(), Error> {
    let actual = Sha512::digest(tarball);
    if actual[..] == package.sha512[..] {
        Ok(())
    } else {
        Err(Error::Integrity {
            package: format!("{}@{}", package.name, package.version),
            expected: sri(&package.sha512),
            actual: sri(&actual),
        })
    }
}

/// Writes `files` (relative to the package's root) of a checked `tarball` into `dest`, and
/// nothing else. npm tarballs hold the package under one top directory (usually `package/`),
/// which is dropped, as npm does.
pub fn extract(package: &Locked, tarball: &[u8], files: &[&str], dest: &Path) -> Result<(), Error> {
    let extract_error = |error: String| Error::Extract {
        package: format!("{}@{}", package.name, package.version),
        error,
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tarball));
    let mut written = vec![false; files.len()];
    let entries = archive
        .entries()
        .map_err(|e| extract_error(format!("not a gzipped tar: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| extract_error(format!("unreadable tarball: {e}")))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry
            .path()
            .map_err(|e| extract_error(format!("unreadable path in tarball: {e}")))?;
        // The path below the top directory, with `/` separators (tar paths always have them).
        let path = path.to_string_lossy().replace('\\', "/");
        let Some((_, inner)) = path.split_once('/') else {
            continue;
        };
        let Some(i) = files.iter().position(|f| *f == inner) else {
            continue;
        };
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| extract_error(format!("cannot read {inner}: {e}")))?;
        let target = dest.join(files[i]);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::Write {
                path: parent.to_owned(),
                error: e.to_string(),
            })?;
        }
        std::fs::write(&target, &bytes).map_err(|e| Error::Write {
            path: target.clone(),
            error: e.to_string(),
        })?;
        written[i] = true;
    }
    match files.iter().zip(&written).find(|(_, done)| !**done) {
        Some((missing, _)) => Err(extract_error(format!("the tarball has no {missing}"))),
        None => Ok(()),
    }
}

/// Every file of `wanted`, from the packages the lock pins, checked, into
/// `out/node_modules/<package>/`.
pub fn install(
    lock: &str,
    wanted: &[Package],
    source: &Source<'_>,
    out: &Path,
) -> Result<(), Error> {
    let locked = parse_lock(lock, wanted)?;
    for (package, locked) in wanted.iter().zip(&locked) {
        let tarball = obtain(locked, source)?;
        verify(locked, &tarball)?;
        let dest = out.join("node_modules").join(package.name);
        extract(locked, &tarball, package.files, &dest)?;
    }
    Ok(())
}
