//! Tests of `build/assets.rs`, the build script's way to the front-end packages' files: reading
//! the lock, checking a tarball against its integrity (a tampered one refused before extraction),
//! extracting only the embedded files, and the offline directory. The tarballs are made here
//! (flate2 and tar); nothing is fetched.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)] // Test code: a panic is the report.

#[path = "../build/assets.rs"]
mod assets;

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use assets::{EMBEDDED, Error, Locked, Package, Source};
use base64::Engine as _;
use sha2::{Digest, Sha512};

/// A fresh directory under the target's temporary directory.
fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("build-assets-{}-{name}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A gzipped tar as npm publishes one: `(path, contents)` entries (paths include the top
/// directory, `package/` in npm's tarballs).
fn tarball(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    for (path, contents) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(contents.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, path, *contents).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

fn integrity(bytes: &[u8]) -> String {
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha512::digest(bytes))
    )
}

/// A lock (npm's lockfileVersion 3) pinning `(name, version, integrity, resolved)`.
fn lock(packages: &[(&str, &str, &str, Option<&str>)]) -> String {
    let mut entries = serde_json::Map::new();
    entries.insert("".into(), serde_json::json!({ "name": "test" }));
    for (name, version, integrity, resolved) in packages {
        let mut entry = serde_json::json!({ "version": version, "integrity": integrity });
        if let Some(url) = resolved {
            entry["resolved"] = (*url).into();
        }
        entries.insert(format!("node_modules/{name}"), entry);
    }
    serde_json::json!({ "lockfileVersion": 3, "packages": entries }).to_string()
}

/// `name@version` as a lock pinning `tarball` has it.
fn locked(name: &'static str, version: &str, tarball: &[u8]) -> Locked {
    let lock = lock(&[(name, version, &integrity(tarball), None)]);
    let package = Package { name, files: &[] };
    assets::parse_lock(&lock, &[package]).unwrap().remove(0)
}

const GEO: Package = Package {
    name: "geo",
    files: &["dist/geo.min.js", "land.json"],
};

fn geo_tarball() -> Vec<u8> {
    tarball(&[
        ("package/package.json", b"{\"name\":\"geo\"}"),
        ("package/dist/geo.min.js", b"!function(){}();"),
        ("package/dist/geo.js", b"function(){}"),
        ("package/land.json", b"{\"type\":\"Topology\"}"),
        ("package/README.md", b"# geo"),
    ])
}

/// The files under `dir`, relative to it, sorted.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                out.push(rel.replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn the_real_lock_pins_every_embedded_package() {
    let lock = include_str!("../assets/package-lock.json");
    let locked = assets::parse_lock(lock, EMBEDDED).unwrap();
    let pinned: Vec<(&str, &str, &str)> = locked
        .iter()
        .map(|p| (p.name.as_str(), p.version.as_str(), p.url.as_str()))
        .collect();
    let registry = "https://registry.npmjs.org";
    assert_eq!(
        pinned,
        [
            (
                "d3-array",
                "3.2.4",
                &*format!("{registry}/d3-array/-/d3-array-3.2.4.tgz")
            ),
            (
                "d3-geo",
                "3.1.1",
                &*format!("{registry}/d3-geo/-/d3-geo-3.1.1.tgz")
            ),
            (
                "topojson-client",
                "3.1.0",
                &*format!("{registry}/topojson-client/-/topojson-client-3.1.0.tgz")
            ),
            (
                "world-atlas",
                "2.0.2",
                &*format!("{registry}/world-atlas/-/world-atlas-2.0.2.tgz")
            ),
        ]
    );
    // The digest is the lock's integrity, decoded.
    assert_eq!(
        integrity_of(&locked[0]),
        "sha512-tdQAmyA18i4J7wprpYq8ClcxZy3SC31QMeByyCFyRt7BVHdREQZ5lpzoe5mFEYZUWe+oq8HBvk9JjpibyEV4Jg=="
    );
}

fn integrity_of(p: &Locked) -> String {
    format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(p.sha512)
    )
}

#[test]
fn the_lock_is_read_as_it_says() {
    let good = integrity(b"x");
    // (lock, Ok(url) or Err(part of the message))
    let cases: Vec<(String, Result<&str, &str>)> = vec![
        (
            lock(&[("geo", "1.2.3", &good, None)]),
            Ok("https://registry.npmjs.org/geo/-/geo-1.2.3.tgz"),
        ),
        (
            lock(&[("geo", "1.2.3", &good, Some("https://mirror.test/geo.tgz"))]),
            Ok("https://mirror.test/geo.tgz"),
        ),
        // Several hashes: the sha512 one is used.
        (
            lock(&[("geo", "1.2.3", &format!("sha1-AAAA {good}"), None)]),
            Ok("https://registry.npmjs.org/geo/-/geo-1.2.3.tgz"),
        ),
        (
            lock(&[("other", "1.0.0", &good, None)]),
            Err("no node_modules/geo: run `npm install"),
        ),
        (
            lock(&[("geo", "1.2.3", "sha1-AAAA", None)]),
            Err("has no sha512"),
        ),
        (
            lock(&[("geo", "1.2.3", "sha512-AAAA", None)]),
            Err("is not 64 bytes"),
        ),
        (
            lock(&[("geo", "1.2.3", "sha512-!!", None)]),
            Err("integrity"),
        ),
        (
            "{\"lockfileVersion\": 1, \"dependencies\": {}}".into(),
            Err("no \"packages\""),
        ),
        ("not json".into(), Err("not JSON")),
    ];
    for (lock, expected) in cases {
        let got = assets::parse_lock(&lock, &[GEO]);
        match (got, expected) {
            (Ok(locked), Ok(url)) => {
                assert_eq!(locked[0].url, url, "{lock}");
                assert_eq!(locked[0].sha512[..], Sha512::digest(b"x")[..], "{lock}");
            }
            (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{lock}: {e}"),
            (got, expected) => panic!("{lock}: got {got:?}, expected {expected:?}"),
        }
    }
}

#[test]
fn a_scoped_package_is_fetched_and_packed_as_npm_names_it() {
    let lock = lock(&[("@scope/geo", "2.0.0", &integrity(b"x"), None)]);
    let package = Package {
        name: "@scope/geo",
        files: &[],
    };
    let locked = assets::parse_lock(&lock, &[package]).unwrap().remove(0);
    assert_eq!(
        locked.url,
        "https://registry.npmjs.org/@scope/geo/-/geo-2.0.0.tgz"
    );
    assert_eq!(locked.tarball_name(), "scope-geo-2.0.0.tgz");
}

#[test]
fn the_pinned_tarball_passes_and_a_tampered_one_is_refused_before_extraction() {
    let tarball = geo_tarball();
    let locked = locked("geo", "1.2.3", &tarball);
    assets::verify(&locked, &tarball).unwrap();

    // One byte changed.
    let mut tampered = tarball.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    let e = assets::verify(&locked, &tampered).unwrap_err();
    let Error::Integrity {
        package,
        expected,
        actual,
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(package, "geo@1.2.3");
    assert_eq!(*expected, integrity(&tarball));
    assert_eq!(*actual, integrity(&tampered));
    let message = e.to_string();
    assert!(message.contains("geo@1.2.3"), "{message}");
    assert!(message.contains(&integrity(&tarball)), "{message}");
    assert!(message.contains(&integrity(&tampered)), "{message}");

    // Through install, a tarball with other contents writes nothing.
    let other = tarball_with_land(b"{\"evil\":true}");
    let out = scratch("tampered");
    let lock = lock(&[("geo", "1.2.3", &integrity(&tarball), None)]);
    let fetch = |_: &str| Ok(other.clone());
    let e = assets::install(&lock, &[GEO], &Source::Fetch(&fetch), &out).unwrap_err();
    assert!(matches!(e, Error::Integrity { .. }), "{e}");
    assert_eq!(files_under(&out), Vec::<String>::new());
}

fn tarball_with_land(land: &[u8]) -> Vec<u8> {
    tarball(&[
        ("package/dist/geo.min.js", b"!function(){}();"),
        ("package/land.json", land),
    ])
}

#[test]
fn only_the_wanted_files_are_extracted_byte_for_byte() {
    let tarball = geo_tarball();
    let locked = locked("geo", "1.2.3", &tarball);
    let dest = scratch("extract");
    assets::extract(&locked, &tarball, GEO.files, &dest).unwrap();
    assert_eq!(files_under(&dest), ["dist/geo.min.js", "land.json"]);
    assert_eq!(
        std::fs::read(dest.join("dist/geo.min.js")).unwrap(),
        b"!function(){}();"
    );
    assert_eq!(
        std::fs::read(dest.join("land.json")).unwrap(),
        b"{\"type\":\"Topology\"}"
    );
}

#[test]
fn a_top_directory_other_than_package_is_dropped_as_npm_does() {
    let tarball = tarball(&[("node/land.json", b"[]")]);
    let locked = locked("geo", "1.2.3", &tarball);
    let dest = scratch("top");
    assets::extract(&locked, &tarball, &["land.json"], &dest).unwrap();
    assert_eq!(files_under(&dest), ["land.json"]);
}

#[test]
fn a_tarball_without_a_wanted_file_or_not_a_tarball_is_an_error() {
    let tarball = tarball(&[("package/land.json", b"[]")]);
    let locked = locked("geo", "1.2.3", &tarball);
    let e = assets::extract(&locked, &tarball, GEO.files, &scratch("missing")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "geo@1.2.3: the tarball has no dist/geo.min.js"
    );

    let e = assets::extract(&locked, b"plain text", GEO.files, &scratch("junk")).unwrap_err();
    assert!(matches!(e, Error::Extract { .. }), "{e}");
}

#[test]
fn install_fetches_each_pinned_url_and_writes_under_node_modules() {
    let tarball = geo_tarball();
    let lock = lock(&[("geo", "1.2.3", &integrity(&tarball), None)]);
    let out = scratch("fetch");
    let asked = RefCell::new(Vec::new());
    let fetch = |url: &str| {
        asked.borrow_mut().push(url.to_owned());
        Ok(tarball.clone())
    };
    assets::install(&lock, &[GEO], &Source::Fetch(&fetch), &out).unwrap();
    assert_eq!(
        *asked.borrow(),
        ["https://registry.npmjs.org/geo/-/geo-1.2.3.tgz"]
    );
    assert_eq!(
        files_under(&out),
        [
            "node_modules/geo/dist/geo.min.js",
            "node_modules/geo/land.json"
        ]
    );

    let failing = |_: &str| Err("connection refused".to_owned());
    let e = assets::install(&lock, &[GEO], &Source::Fetch(&failing), &scratch("down")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "geo: cannot fetch https://registry.npmjs.org/geo/-/geo-1.2.3.tgz: connection refused"
    );
}

#[test]
fn an_offline_directory_of_npm_pack_tarballs_is_used_and_nothing_fetched() {
    let tarball = geo_tarball();
    let lock = lock(&[("geo", "1.2.3", &integrity(&tarball), None)]);
    let dir = scratch("tarballs");
    let out = scratch("offline");

    // Not there yet: the error names the file looked for.
    let e = assets::install(&lock, &[GEO], &Source::Directory(&dir), &out).unwrap_err();
    let Error::Offline { package, path, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(package, "geo");
    assert_eq!(*path, dir.join("geo-1.2.3.tgz"));

    std::fs::write(dir.join("geo-1.2.3.tgz"), &tarball).unwrap();
    assets::install(&lock, &[GEO], &Source::Directory(&dir), &out).unwrap();
    assert_eq!(
        files_under(&out),
        [
            "node_modules/geo/dist/geo.min.js",
            "node_modules/geo/land.json"
        ]
    );

    // A tampered file in the directory is refused like a fetched one.
    std::fs::write(dir.join("geo-1.2.3.tgz"), tarball_with_land(b"[]")).unwrap();
    let e = assets::install(
        &lock,
        &[GEO],
        &Source::Directory(&dir),
        &scratch("offline2"),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Integrity { .. }), "{e}");
}
