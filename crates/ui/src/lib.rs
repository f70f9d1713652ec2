//! What every Periscope page shares, the browser application's (`periscope-web`) and the
//! sign-in service's (`periscope-signin`) alike, so that both answer with one look and one set
//! of protections:
//!
//! - [`layout`]: the base layout of every page — the preview banner of spec §5 ([`BANNER`]),
//!   the demo notice ([`DEMO_NOTICE`], a field of the layout: [`Layout::demo`]), the top bar
//!   slot and the stylesheet — written with maud's `html!` templates, which escape every value;
//! - [`headers`]: the security headers of every answer and the content security policies;
//! - [`assets`]: the one stylesheet (`assets/periscope.css`), served from `/assets/`;
//! - [`cookie`]: reading and writing cookies (`HttpOnly`, `SameSite=Lax`, `Secure` over https);
//! - [`csrf`]: the signed double-submit token and the constant-time comparison of tokens;
//!
//! The templates are maud's (`maud::html!`): compile-time, type-checked, no template files,
//! escaping by default (ARCHITECTURE.md says why). [`Markup`] and [`html!`] are re-exported so
//! the page crates write their views with the same version.

pub mod assets;
pub mod cookie;
pub mod csrf;
pub mod headers;
pub mod layout;

pub use layout::{BANNER, DEMO_NOTICE, Layout, top_bar};
pub use maud::{Markup, PreEscaped, html};
