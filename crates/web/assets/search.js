// The search results page, enhanced (everything here also works without script, by links and
// forms): the Selected host panel (GET /app/host), "More services" without a reload, the
// total (GET /app/count) and Suggested Filters (GET /app/facets) loaded independently, and the
// Add filter dialog, which checks the value before anything is sent.
'use strict';

(function () {
  const P = window.Periscope;

  // A fresh search from the bar has no page number in its URL; give it one, so that the
  // browser's Back button returns to the page already shown (from the server's cache, free).
  const results = document.querySelector('section.results[data-page-url]');
  if (results && !new URL(window.location.href).searchParams.has('page')) {
    window.history.replaceState(null, '', results.dataset.pageUrl);
  }

  async function load(target, url, into, failure) {
    try {
      const { status, html } = await P.busy(target, P.fragment(url));
      into.innerHTML = status >= 500 && failure ? failure : html;
    } catch (e) {
      if (!(e instanceof P.SessionEnded) && failure) into.innerHTML = failure;
    }
  }

  const number = (n) => Number(n).toLocaleString('en');

  // The total ("About N hosts"), then where the page is among them ("Hosts 26–50 of 19,349").
  // A page with a next page holds no total of its own; the count's is worded as it came: "of
  // about N" for an estimate, and "of more than M" when an estimate is below the hosts the
  // pages already hold.
  function rangeOf(value) {
    const n = Number(value.dataset.value);
    const approximate = value.dataset.relation === 'approximate';
    document.querySelectorAll('.page-range[data-first]:not([data-total])').forEach((span) => {
      const first = Number(span.dataset.first);
      const last = Number(span.dataset.last);
      const of = n > last ? `${approximate ? 'about ' : ''}${number(n)}` : `more than ${number(last)}`;
      const hosts = first === last ? `Host ${number(first)}` : `Hosts ${number(first)}–${number(last)}`;
      span.textContent = `${hosts} of ${of}`;
    });
  }

  const total = document.querySelector('.total[data-fragment]');
  if (total) {
    load(total, total.dataset.fragment, total,
      '<span class="total-unavailable">Total unavailable</span>').then(() => {
      const value = total.querySelector('.total-value[data-value]');
      if (value) rangeOf(value);
    });
  }

  // Suggested Filters.
  const facets = document.querySelector('section.facets[data-fragment]');
  if (facets) {
    load(facets, facets.dataset.fragment, facets.querySelector('.facets-body'),
      '<p class="facets-status" role="status">Suggested Filters unavailable</p>');
  }

  // The Selected host panel.
  const panel = document.querySelector('aside.host-panel');
  const layout = document.querySelector('.results-layout');
  let opener = null;

  function closePanel() {
    if (!panel || panel.hidden) return;
    panel.hidden = true;
    layout.classList.remove('with-panel');
    document.querySelectorAll('tr.host-row.selected').forEach((r) => r.classList.remove('selected'));
    if (opener) opener.focus();
  }

  /// On a narrow screen the panel is a sheet over the foot of the screen, opened where the user
  /// is: the chosen row is turned above the sheet if the sheet would hide it.
  function keepInView(row) {
    if (getComputedStyle(panel).position !== 'fixed') return;
    const sheet = panel.getBoundingClientRect();
    const box = row.getBoundingClientRect();
    const room = sheet.top - 8;
    if (box.bottom > room) window.scrollBy(0, box.bottom - room);
    else if (box.top < 0) window.scrollBy(0, box.top);
  }

  async function openPanel(link) {
    opener = link;
    const ip = link.dataset.ip;
    document.querySelectorAll('tr.host-row.selected').forEach((r) => r.classList.remove('selected'));
    link.closest('tr').classList.add('selected');
    panel.hidden = false;
    layout.classList.add('with-panel');
    const body = panel.querySelector('.panel-body');
    body.innerHTML = '';
    panel.querySelector('.panel-title').textContent = `Selected host ${ip}`;
    panel.querySelector('.panel-title').setAttribute('tabindex', '-1');
    panel.querySelector('.panel-title').focus({ preventScroll: true });
    keepInView(link.closest('tr'));
    await load(panel, '/app/host?ip=' + encodeURIComponent(ip), body,
      '<section class="condition" role="alert"><h2>Search is temporarily unavailable</h2>' +
      '<p>Try again shortly; nothing was charged.</p></section>');
    if (opener === link && !panel.hidden) {
      const heading = body.querySelector('.host-ip');
      if (heading) heading.focus({ preventScroll: true });
    }
  }

  if (panel && layout) {
    layout.addEventListener('click', (event) => {
      const link = event.target.closest('a.host-link');
      if (link) {
        event.preventDefault();
        openPanel(link);
        return;
      }
      const row = event.target.closest('tr.host-row');
      if (row && !event.target.closest('a, button')) {
        openPanel(row.querySelector('a.host-link'));
      }
    });
    panel.querySelector('.close-panel').addEventListener('click', closePanel);
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && !document.querySelector('dialog[open]:modal')) closePanel();
    });
  }

  // "More services": the next page of a host's services, appended in place.
  document.addEventListener('click', async (event) => {
    const more = event.target.closest('a.more-services[data-fragment]');
    if (!more) return;
    event.preventDefault();
    const host = more.closest('section.host');
    const holder = more.closest('p.more');
    try {
      const { status, html } = await P.busy(more, P.fragment(more.dataset.fragment));
      if (status !== 200) {
        holder.innerHTML = html;
        return;
      }
      const part = document.createElement('div');
      part.innerHTML = html;
      const rows = host.querySelector('tbody.service-rows');
      part.querySelectorAll('tbody.service-rows > tr').forEach((tr) => rows.appendChild(tr));
      const next = part.querySelector('p.more');
      if (next) {
        holder.replaceWith(next);
        next.querySelector('a').focus();
      } else {
        holder.remove();
        const last = rows.lastElementChild;
        if (last) { last.setAttribute('tabindex', '-1'); last.focus(); }
      }
    } catch (e) {
      if (!(e instanceof P.SessionEnded)) holder.textContent = 'More services could not be loaded.';
    }
  });

  // Add filter.
  const MESSAGES = {
    port: 'Invalid port: enter a number from 1 to 65535.',
    protocol: 'Unsupported protocol: choose a protocol from the list.',
    product: 'Invalid product: enter words of a product name, without quotes or wildcards.',
    'certificate.name': 'Invalid certificate name: enter one exact DNS name such as www.example.com, without a wildcard.',
    organization: 'Invalid organization: enter words of an organization name, without quotes or wildcards.',
    country: 'Invalid country: enter an uppercase two-letter ISO code such as DE.',
    cpe: 'Invalid CPE: enter one complete CPE 2.3 URI (cpe:2.3:part:vendor:product:… with 13 parts).',
    cve: 'Invalid CVE: use the exact form CVE-2021-44228.',
    cvss: 'Invalid CVSS: enter a minimum and a maximum from 0.0 to 10.0, the minimum not above the maximum.',
    exploit: 'Invalid exploit value: choose yes or no.',
  };
  const PHRASE = (v) => v.length > 0 && v.length <= 200 && !/["*\u0000-\u001f\u007f]/.test(v);
  const SCORE = /^(10(\.0)?|[0-9](\.[0-9])?)$/;
  const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;
  const unquote = (v) => v.trim().replace(/^"(.*)"$/, '$1');

  function check(form) {
    const field = form.elements.field.value;
    const used = (form.dataset.used || '').split(' ').filter(Boolean);
    const value = form.elements.value.value.trim();
    let ok;
    switch (field) {
      case 'port': ok = /^[0-9]{1,5}$/.test(value) && +value >= 1 && +value <= 65535; break;
      case 'protocol': {
        const p = form.elements.protocol;
        ok = Array.from(p.options).some((o) => o.value === p.value);
        break;
      }
      case 'product':
      case 'organization': ok = PHRASE(unquote(value)); break;
      case 'certificate.name': {
        const labels = value.split('.');
        ok = value.length <= 253 && labels.length >= 2 && labels.every((l) => LABEL.test(l));
        break;
      }
      case 'country': ok = /^[A-Z]{2}$/.test(value); break;
      case 'cpe': {
        const cpe = unquote(value);
        ok = cpe.startsWith('cpe:2.3:') && cpe.split(/(?<!\\):/).length === 13 && !/\s/.test(cpe);
        break;
      }
      case 'cve': ok = /^CVE-[0-9]{4}-[0-9]{4,9}$/.test(value); break;
      case 'cvss': {
        const min = form.elements.cvss_min.value.trim();
        const max = form.elements.cvss_max.value.trim();
        ok = SCORE.test(min) && SCORE.test(max) && parseFloat(min) <= parseFloat(max);
        break;
      }
      case 'exploit': ok = ['yes', 'no'].includes(form.elements.exploit.value); break;
      default: return 'Choose a field: pick what to filter on.';
    }
    if (!ok) return MESSAGES[field];
    if (used.includes(field)) {
      return `Field already used: this search already filters on ${field}. Remove that filter first to use another value.`;
    }
    return null;
  }

  function showInputs(form) {
    const field = form.elements.field.value;
    form.querySelectorAll('[data-fields]').forEach((group) => {
      group.hidden = !group.dataset.fields.split(' ').includes(field);
    });
  }

  document.querySelectorAll('.add-filter').forEach((box) => {
    const dialog = box.querySelector('dialog.filter-dialog');
    const button = box.querySelector('.open-filter');
    const form = box.querySelector('form.filter-form');
    if (!dialog || typeof dialog.showModal !== 'function') return;
    const refused = form && form.querySelector('.filter-error').textContent.trim() !== '';
    dialog.removeAttribute('open');
    button.hidden = false;
    button.addEventListener('click', () => {
      dialog.showModal();
      const first = dialog.querySelector('select, button');
      if (first) first.focus();
    });
    dialog.addEventListener('close', () => button.focus());
    dialog.querySelectorAll('.close-filter').forEach((c) => {
      c.hidden = false;
      c.addEventListener('click', () => dialog.close());
    });
    if (!form) return;
    showInputs(form);
    form.elements.field.addEventListener('change', () => {
      showInputs(form);
      form.querySelector('.filter-error').textContent = '';
    });
    form.addEventListener('submit', (event) => {
      const message = check(form);
      if (message) {
        event.preventDefault();
        const error = form.querySelector('.filter-error');
        error.textContent = message;
        const field = form.elements.field.value;
        const input = field === 'cvss' ? form.elements.cvss_min
          : field === 'protocol' ? form.elements.protocol
            : field === 'exploit' ? form.elements.exploit : form.elements.value;
        input.setAttribute('aria-invalid', 'true');
        input.focus();
      }
    });
    if (refused) dialog.showModal();
  });
})();
