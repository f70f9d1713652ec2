//! The handlers, laid out like the URLs: `pages` (`/`, `/signed-out`), `search` (the search bar
//! of `/`, and its `/host`, `/filter` and `/app/…` fragments), `globe` (the Globe view and
//! `/app/exposure`), `signin` (`/signin`, `/oidc/callback`), `signout`, `account`, `public`
//! (`/terms`, `/quickstart`, `/release-notes`), `report` (`/report-a-problem`), `keys`
//! (`/api-access`).

pub(crate) mod account;
pub(crate) mod globe;
pub(crate) mod keys;
pub(crate) mod pages;
pub(crate) mod public;
pub(crate) mod report;
pub(crate) mod search;
pub(crate) mod signin;
pub(crate) mod signout;
