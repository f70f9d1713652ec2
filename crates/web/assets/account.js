// Periscope: the account menu and the pages behind it. The pages work without it; with it,
// the top bar's "Sign in" returns to the page it was on, the reset time of the ring is shown in
// the viewer's time zone, Escape closes the menu, the problem report counts its characters as
// they are typed, forms being sent say so, and a new API key can be copied.
'use strict';

(function () {
  // The reset time: the server renders it in UTC (<time datetime="…Z" data-local-time>);
  // here it becomes the viewer's local time, with the time zone named.
  function localTimes() {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const format = new Intl.DateTimeFormat(undefined, {
      hour: '2-digit', minute: '2-digit', hourCycle: 'h23',
    });
    for (const el of document.querySelectorAll('time[data-local-time]')) {
      const when = new Date(el.getAttribute('datetime'));
      if (Number.isNaN(when.getTime())) continue;
      el.textContent = `${format.format(when)} (${zone})`;
      el.title = when.toISOString();
    }
  }

  // The account menu is a <details>: Enter and Space open it natively; Escape closes it and
  // returns the focus to its summary, and a click elsewhere closes it.
  function menu() {
    const details = document.querySelector('details.menu');
    if (!details) return;
    const summary = details.querySelector('summary');
    details.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && details.open) {
        details.open = false;
        summary.focus();
      }
    });
    document.addEventListener('click', (event) => {
      if (details.open && !details.contains(event.target)) details.open = false;
    });
  }

  // "N of 4,000 characters" under the problem report, counted as the server counts them
  // (characters, not bytes or UTF-16 units; a line break is one).
  function counter() {
    const area = document.querySelector('textarea[data-counter]');
    if (!area) return;
    const out = document.getElementById(area.getAttribute('data-counter'));
    const max = Number(area.getAttribute('data-max'));
    const number = new Intl.NumberFormat('en');
    const update = () => {
      const n = [...area.value.replace(/\r\n/g, '\n')].length;
      out.textContent = `${number.format(n)} of ${number.format(max)} characters`;
      out.classList.toggle('over', n > max);
    };
    area.addEventListener('input', update);
    update();
  }

  // The copy button of a new API key (hidden without script: the key is selectable text).
  function copy() {
    for (const button of document.querySelectorAll('button[data-copy]')) {
      const source = document.getElementById(button.getAttribute('data-copy'));
      const status = document.getElementById(button.getAttribute('data-status'));
      if (!source || !status || !navigator.clipboard) continue;
      button.hidden = false;
      button.addEventListener('click', async () => {
        try {
          await navigator.clipboard.writeText(source.textContent.trim());
          status.textContent = 'Copied';
        } catch (e) {
          status.textContent = 'Copying failed: select the key and copy it by hand.';
        }
      });
    }
  }

  // A form being sent says so and cannot be sent twice (one key per click).
  function busyForms() {
    for (const form of document.querySelectorAll('form[data-busy]')) {
      const button = form.querySelector('button[type=submit]');
      const label = button && button.textContent;
      form.addEventListener('submit', () => {
        form.setAttribute('aria-busy', 'true');
        if (button) {
          button.disabled = true;
          button.textContent = form.getAttribute('data-busy');
        }
      });
      // Back to this page from the browser's cache: the form can be sent again.
      window.addEventListener('pageshow', (event) => {
        if (!event.persisted || !button) return;
        form.removeAttribute('aria-busy');
        button.disabled = false;
        button.textContent = label;
      });
    }
  }

  // The top bar's "Sign in" (without a session) returns to this page after signing in.
  function signInHere() {
    const link = document.querySelector('header.top a.signin');
    if (!link) return;
    const here = window.location.pathname + window.location.search;
    link.href = `/signin?return_to=${encodeURIComponent(here)}`;
  }

  function start() {
    signInHere();
    localTimes();
    menu();
    counter();
    copy();
    busyForms();
  }
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
