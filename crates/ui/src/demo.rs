//! The demo's notice (DECISIONS.md "Demo data": every page of the demo says the data is
//! synthetic). `periscope serve --demo` layers [`mark`] over its whole router — the
//! application's pages and the sign-in service's alike — and every request it answers runs in
//! a demo scope; the base layout ([`crate::Layout`]) renders [`DEMO_NOTICE`] under the banner
//! of every page made in that scope. The notice is part of the template, not spliced into
//! finished pages; the API's JSON is left alone because it has no layout.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// The notice, under the banner.
pub const DEMO_NOTICE: &str = "Demo data: every host, network and name shown here is synthetic \
     (addresses in 240.0.0.0/4 and 3fff::/20, names under .example). No real organisation's \
     exposure is shown.";

tokio::task_local! {
    /// Set for the requests of a demo server.
    static DEMO: ();
}

/// Whether the page being made belongs to a demo server's answer.
pub fn active() -> bool {
    DEMO.try_with(|()| ()).is_ok()
}

/// Runs the request in the demo scope: for `axum::middleware::from_fn` over a router.
pub async fn mark(request: Request, next: Next) -> Response {
    DEMO.scope((), next.run(request)).await
}

/// Runs `f` as a demo server's handler would (for tests of pages).
pub fn within<T>(f: impl FnOnce() -> T) -> T {
    DEMO.sync_scope((), f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scope_is_seen_inside_only() {
        assert!(!active());
        assert!(within(active));
        assert!(!active());
    }
}
