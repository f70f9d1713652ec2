//! The handlers, laid out like the URLs: `pages` (`/`, the account menu's placeholders,
//! `/signed-out`), `search` (the search bar of `/`, and its `/host`, `/filter` and `/app/…` fragments), `signin` (`/signin`, `/oidc/callback`), `signout`, `account`.

pub(crate) mod account;
pub(crate) mod globe;
pub(crate) mod pages;
pub(crate) mod search;
pub(crate) mod signin;
pub(crate) mod signout;
