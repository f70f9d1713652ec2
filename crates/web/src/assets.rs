//! The browser application's static assets, compiled into the binary and served at
//! `/assets/{name}`: the base stylesheet of `periscope-ui` (`periscope.css`), the
//! application's own scripts (`assets/*.js`, progressive enhancement over
//! server-rendered pages), its stylesheets (`assets/*.css`) and the front-end packages
//! `build.rs` installs from npm into `OUT_DIR` (the Globe's d3-array, d3-geo, topojson-client
//! and world-atlas outlines). Nothing is loaded from anywhere else.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

/// One asset: its name under `/assets/`, its media type and its bytes.
struct Asset {
    name: &'static str,
    media_type: &'static str,
    bytes: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JSON: &str = "application/json";

/// A file of the npm packages `build.rs` installed into `OUT_DIR`.
macro_rules! npm {
    ($path:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/node_modules/", $path))
    };
}

const ASSETS: &[Asset] = &[
    // The one base stylesheet of both services (periscope-ui), in the page's head.
    Asset {
        name: periscope_ui::assets::STYLESHEET,
        media_type: CSS,
        bytes: periscope_ui::assets::STYLESHEET_CSS.as_bytes(),
    },
    Asset {
        name: "app.js",
        media_type: JS,
        bytes: include_bytes!("../assets/app.js"),
    },
    // The Globe (routes/globe.rs): its script and style, and the packages it draws with.
    Asset {
        name: "globe.js",
        media_type: JS,
        bytes: include_bytes!("../assets/globe.js"),
    },
    Asset {
        name: "globe.css",
        media_type: CSS,
        bytes: include_bytes!("../assets/globe.css"),
    },
    Asset {
        name: "d3-array.min.js",
        media_type: JS,
        bytes: npm!("d3-array/dist/d3-array.min.js"),
    },
    Asset {
        name: "d3-geo.min.js",
        media_type: JS,
        bytes: npm!("d3-geo/dist/d3-geo.min.js"),
    },
    Asset {
        name: "topojson-client.min.js",
        media_type: JS,
        bytes: npm!("topojson-client/dist/topojson-client.min.js"),
    },
    Asset {
        name: "land-110m.json",
        media_type: JSON,
        bytes: npm!("world-atlas/land-110m.json"),
    },
    Asset {
        name: "land-50m.json",
        media_type: JSON,
        bytes: npm!("world-atlas/land-50m.json"),
    },
    // The account menu and the pages behind it (on every page: the menu is in the top bar).
    Asset {
        name: "account.js",
        media_type: JS,
        bytes: include_bytes!("../assets/account.js"),
    },
    Asset {
        name: "account.css",
        media_type: CSS,
        bytes: include_bytes!("../assets/account.css"),
    },
    // The search page (routes/search): the Selected host panel, Add filter, Suggested Filters.
    Asset {
        name: "search.js",
        media_type: JS,
        bytes: include_bytes!("../assets/search.js"),
    },
    Asset {
        name: "search.css",
        media_type: CSS,
        bytes: include_bytes!("../assets/search.css"),
    },
];

/// The path of an asset with the build's version, so that a new binary is never answered
/// from a browser's cache of the old one.
pub(crate) fn href(name: &str) -> String {
    periscope_ui::assets::href("", name)
}

/// The elements that load `names`, in order: a stylesheet link for `*.css`, a deferred
/// `<script>` for anything else.
pub(crate) fn tags(names: &[&str]) -> Markup {
    html! {
        @for n in names {
            @if n.ends_with(".css") {
                link rel="stylesheet" href=(href(n));
            } @else {
                script src=(href(n)) defer {}
            }
        }
    }
}

/// `GET /assets/{name}`.
pub(crate) async fn asset(Path(name): Path<String>) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return (StatusCode::NOT_FOUND, "no such asset").into_response();
    };
    periscope_ui::assets::asset_response(asset.bytes, asset.media_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_named_once_and_not_empty() {
        for (i, a) in ASSETS.iter().enumerate() {
            assert!(!a.bytes.is_empty(), "{} is empty", a.name);
            assert!(
                ASSETS[i + 1..].iter().all(|b| b.name != a.name),
                "{} twice",
                a.name
            );
        }
    }

    #[test]
    fn hrefs_carry_the_version() {
        assert_eq!(
            href("app.js"),
            format!("/assets/app.js?v={}", env!("CARGO_PKG_VERSION"))
        );
    }
}
