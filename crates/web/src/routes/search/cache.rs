//! The result pages a session has already been shown, so that "Previous page", the browser's
//! Back button and a "Next page" already visited re-show them without a new charged search
//! (cursors are single-use, so a page cannot be fetched twice from the index).
//!
//! In memory, per process: keyed by the session (its CSRF token, a random per-session value
//! that is not the cookie), the prefixed query and the page number; an entry lives as long as a
//! search cursor ([`LIFETIME_SECS`], 10 minutes) and at most [`CAPACITY`] entries are kept (the
//! oldest goes first). After a restart, or once expired, a page says "This result page has
//! expired" with a link to run the search again.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use periscope_index::HostResult;
use periscope_service::DomainResolution;

/// How long a page is kept: the search cursor's lifetime (DECISIONS.md).
pub(crate) const LIFETIME_SECS: i64 = 600;
/// At most this many pages, over all sessions.
pub(crate) const CAPACITY: usize = 400;

/// One page as it was shown.
#[derive(Debug)]
pub(crate) struct CachedPage {
    /// The hosts of the page.
    pub(crate) hosts: Vec<HostResult>,
    /// The cursor of the page after it, as the index gave it.
    pub(crate) next: Option<String>,
    /// What DNS said, for a domain search.
    pub(crate) resolution: Option<DomainResolution>,
}

#[derive(Debug, PartialEq, Eq)]
struct Key {
    session: String,
    query: String,
    page: u32,
}

/// The cache; cheap to share.
#[derive(Debug, Default)]
pub(crate) struct PageCache {
    entries: Mutex<VecDeque<(Key, i64, Arc<CachedPage>)>>,
}

impl PageCache {
    fn entries(&self) -> std::sync::MutexGuard<'_, VecDeque<(Key, i64, Arc<CachedPage>)>> {
        // A panic while holding the lock leaves a consistent queue; keep using it.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The page, when this session was shown it less than [`LIFETIME_SECS`] ago.
    pub(crate) fn get(
        &self,
        session: &str,
        query: &str,
        page: u32,
        now: i64,
    ) -> Option<Arc<CachedPage>> {
        let mut entries = self.entries();
        entries.retain(|(_, at, _)| now - at < LIFETIME_SECS);
        entries
            .iter()
            .find(|(k, _, _)| k.session == session && k.query == query && k.page == page)
            .map(|(_, _, p)| Arc::clone(p))
    }

    /// Remembers a page fetched now, replacing an older copy of it and forgetting the pages
    /// after it: those belong to an earlier run of the search, and the next page must follow
    /// this page's cursor.
    pub(crate) fn put(&self, session: &str, query: &str, page: u32, now: i64, shown: CachedPage) {
        let key = Key {
            session: session.to_owned(),
            query: query.to_owned(),
            page,
        };
        let mut entries = self.entries();
        entries.retain(|(k, at, _)| {
            let later = k.session == key.session && k.query == key.query && k.page >= key.page;
            !later && now - at < LIFETIME_SECS
        });
        while entries.len() >= CAPACITY {
            entries.pop_front();
        }
        entries.push_back((key, now, Arc::new(shown)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(next: &str) -> CachedPage {
        CachedPage {
            hosts: Vec::new(),
            next: Some(next.into()),
            resolution: None,
        }
    }

    #[test]
    fn pages_are_kept_per_session_query_and_number_until_they_expire() {
        let cache = PageCache::default();
        cache.put("s1", "port:22", 1, 1000, page("a"));
        cache.put("s1", "port:22", 2, 1000, page("b"));
        let next = |s, q, n, t| cache.get(s, q, n, t).and_then(|p| p.next.clone());
        assert_eq!(next("s1", "port:22", 1, 1100).as_deref(), Some("a"));
        assert_eq!(next("s1", "port:22", 2, 1100).as_deref(), Some("b"));
        assert_eq!(next("s2", "port:22", 1, 1100), None, "another session");
        assert_eq!(next("s1", "port:80", 1, 1100), None, "another query");
        assert_eq!(
            next("s1", "port:22", 1, 1000 + LIFETIME_SECS),
            None,
            "expired"
        );
        // A new run of page 1 forgets the earlier run's page 2.
        cache.put("s1", "port:22", 1, 1200, page("c"));
        assert_eq!(next("s1", "port:22", 1, 1200).as_deref(), Some("c"));
        assert_eq!(next("s1", "port:22", 2, 1200), None);
    }

    #[test]
    fn the_oldest_page_goes_first_when_full() {
        let cache = PageCache::default();
        for n in 0..=CAPACITY as u32 {
            cache.put("s", "q", n, 1, page("x"));
        }
        assert!(cache.get("s", "q", 0, 1).is_none());
        assert!(cache.get("s", "q", CAPACITY as u32, 1).is_some());
    }
}
