// Periscope's browser application: the shared progressive enhancement of the server-rendered
// pages. Every page works without it; with it, parts of a page load without a full reload.
//
// `Periscope.fragment(url)` fetches an HTML fragment from the application (same origin, with
// the session cookie). A fragment route answers 401 with `X-Periscope-Session: ended` when the
// session is gone; the page is then reloaded, so the server shows "Your session expired" (or
// "Sign in to search") with a sign-in that returns to this page.
'use strict';

window.Periscope = (function () {
  class SessionEnded extends Error {}

  async function fetchChecked(url, options) {
    const response = await fetch(url, Object.assign({ credentials: 'same-origin' }, options));
    if (response.status === 401 && response.headers.get('X-Periscope-Session') === 'ended') {
      window.location.reload();
      throw new SessionEnded('the session ended');
    }
    return response;
  }

  /// The fragment's HTML and status, or a thrown error when the network failed.
  async function fragment(url, options) {
    const response = await fetchChecked(url, options);
    return { status: response.status, html: await response.text() };
  }

  /// The JSON body and status of an application route.
  async function json(url, options) {
    const response = await fetchChecked(url, options);
    return { status: response.status, body: await response.json() };
  }

  /// Marks `element` busy (aria-busy and a visible indicator) while `promise` runs.
  async function busy(element, promise) {
    element.setAttribute('aria-busy', 'true');
    element.classList.add('loading');
    try {
      return await promise;
    } finally {
      element.removeAttribute('aria-busy');
      element.classList.remove('loading');
    }
  }

  return { fragment, json, busy, SessionEnded };
})();
