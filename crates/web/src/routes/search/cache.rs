//! The result pages a session has already been shown, so that "Previous page", the browser's
//! Back button and a "Next page" already visited re-show them without a new charged search
//! (cursors are single-use, so a page cannot be fetched twice from the index).
//!
//! Kept in the state database (`web_pages`, [`periscope_state::State::shown_page`]), so every
//! instance behind a load balancer re-shows a page another instance showed: keyed by the
//! session (its CSRF token, a random per-session value that is not the cookie), the prefixed
//! query and the page number; a page lives as long as a search cursor
//! ([`periscope_state::SHOWN_PAGE_LIFETIME_SECS`], 10 minutes) and a session keeps at most
//! [`periscope_state::SHOWN_PAGES_PER_SESSION`] (the oldest goes first). What is stored is the
//! host list as rendered by [`super::results`], a function of the key and the page alone. Once
//! expired, a page says "This result page has expired" with a link to run the search again.

use periscope_index::HostResult;
use periscope_service::DomainResolution;
use periscope_state::StateError;

use crate::Web;
use crate::session::Signed;

/// One page as the index answered it, before it is rendered.
#[derive(Debug)]
pub(crate) struct CachedPage {
    /// The hosts of the page.
    pub(crate) hosts: Vec<HostResult>,
    /// The cursor of the page after it, as the index gave it.
    pub(crate) next: Option<String>,
    /// What DNS said, for a domain search.
    pub(crate) resolution: Option<DomainResolution>,
}

/// The rendered page `page` of `query` this session was shown less than 10 minutes ago.
pub(crate) async fn shown(
    web: &Web,
    signed: &Signed,
    query: &str,
    page: u32,
) -> Result<Option<String>, StateError> {
    let inner = &web.inner;
    inner
        .state
        .shown_page(&signed.session.csrf, query, page, inner.now())
        .await
}

/// Remembers the rendered page `page` of `query` as shown now, forgetting the pages after it
/// (they belong to an earlier run of the search). A failure is logged: the page was charged
/// and is shown; going back to it later says it has expired.
pub(crate) async fn remember(web: &Web, signed: &Signed, query: &str, page: u32, body: &str) {
    let inner = &web.inner;
    let remembered = inner
        .state
        .remember_shown_page(
            signed.account.id,
            &signed.session.csrf,
            query,
            page,
            body,
            inner.now(),
        )
        .await;
    if let Err(e) = remembered {
        tracing::warn!(error = %e, account.id = %signed.account.id,
            "cannot remember a result page shown; going back to it will say it has expired");
    }
}
