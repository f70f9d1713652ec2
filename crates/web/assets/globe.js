// Periscope's Globe view (spec §12): where the hosts of a search are, on an orthographic globe
// drawn on a 2D canvas with d3-geo, over Natural Earth land from world-atlas (topojson-client).
// The section (routes/globe.rs) carries the prefixed query and the route of the exposure
// (`data-query`, `data-endpoint`); the page loads d3-array, d3-geo and topojson-client first.
//
// It starts at Global detail and asks for Regional, then Local detail as the zoom passes
// REGIONAL_ZOOM and LOCAL_ZOOM, keeping every level it loaded (zooming back out never asks
// again). A level that fails or does not answer within `data-timeout-ms` leaves the last map
// drawn and shows the spec's wording in the notice; zooming again retries. Clusters are
// bubbles whose area grows with their hosts (a rendering scale, not one dot per host), drawn
// on the visible hemisphere only and listed in the table below the canvas, labelled by the
// country with most hosts (+N more) or, without a country, by coordinates — never by key.
//
// For an analyst: each answer that shows nothing where the globe looks turns it to the data's
// centroid (the host-weighted mean of the locations as unit vectors, so a Sydney host is in
// front, not behind); the first answer always does. The buttons zoom toward the largest
// cluster in view, the wheel toward the pointer (the point under it stays under it). A cluster
// is labelled over the map when the pointer rests on it or its row has focus, and leads to its
// hosts: the search's Results with `country:XX` added where the query takes another clause
// (`data-add-country`), else the search's own Results (`data-results`).
'use strict';

window.PeriscopeGlobe = (function () {
  const LEVELS = ['global', 'regional', 'local'];
  const LEVEL_NAMES = { global: 'Global', regional: 'Regional', local: 'Local' };
  const REGIONAL_ZOOM = 3;
  const LOCAL_ZOOM = 8;
  const MIN_ZOOM = 1;
  const MAX_ZOOM = 32;
  const STEP = 2;
  const LISTED = 50;

  const regionNames = (function () {
    try {
      return new Intl.DisplayNames(['en'], { type: 'region' });
    } catch (_) {
      return null;
    }
  })();

  /// The country's English name, or its code when the browser has none.
  function countryName(code) {
    if (regionNames) {
      try {
        const name = regionNames.of(code);
        if (name && name !== code) return name;
      } catch (_) {
        // not a region code the browser knows
      }
    }
    return code;
  }

  /// "51.5° N, 0.1° W".
  function coordinates(latitude, longitude) {
    const ns = latitude < 0 ? 'S' : 'N';
    const ew = longitude < 0 ? 'W' : 'E';
    return `${Math.abs(latitude).toFixed(1)}° ${ns}, ${Math.abs(longitude).toFixed(1)}° ${ew}`;
  }

  /// The label of one exposure location: the dominant country and how many more, or the
  /// coordinates of a cluster without a country. Never its key.
  function label(location) {
    if (location.country_code) {
      const name = countryName(location.country_code);
      const more = (location.country_count || 1) - 1;
      return more > 0 ? `${name} +${more} more` : name;
    }
    return coordinates(location.latitude, location.longitude);
  }

  /// The level of detail a zoom asks for.
  function levelFor(zoom) {
    if (zoom >= LOCAL_ZOOM) return 'local';
    if (zoom >= REGIONAL_ZOOM) return 'regional';
    return 'global';
  }

  const number = (n) => Number(n).toLocaleString('en');

  /// "1 host", "19,349 hosts": the count grouped, the noun agreeing with it.
  function count(n, one, many) {
    return `${number(n)} ${Number(n) === 1 ? one : many}`;
  }

  /// Degrees on a 1/256 grid, so that turning by whole degrees and back is exact.
  const snap = (degrees) => Math.round(degrees * 256) / 256;

  const RAD = Math.PI / 180;

  /// The host-weighted centroid of `locations` on the unit sphere, as [longitude, latitude], or
  /// null when they cancel out (hosts spread evenly round the globe) or there are none.
  function centroid(locations) {
    let x = 0;
    let y = 0;
    let z = 0;
    let total = 0;
    for (const l of locations) {
      const w = Number(l.unique_hosts) || 0;
      const lat = l.latitude * RAD;
      const lon = l.longitude * RAD;
      x += w * Math.cos(lat) * Math.cos(lon);
      y += w * Math.cos(lat) * Math.sin(lon);
      z += w * Math.sin(lat);
      total += w;
    }
    const length = Math.hypot(x, y, z);
    if (!total || length < total * 1e-6) return null;
    return [Math.atan2(y, x) / RAD, Math.asin(z / length) / RAD];
  }

  function start(section) {
    const canvas = section.querySelector('canvas');
    const totals = section.querySelector('.globe-totals');
    const notice = section.querySelector('.globe-error');
    const bounded = section.querySelector('.globe-bounded');
    const loadingText = section.querySelector('.globe-loading-text');
    const tbody = section.querySelector('.globe-clusters tbody');
    const tip = section.querySelector('.globe-tip');
    const stage = section.querySelector('.globe-stage');
    const zoomIn = section.querySelector('[data-zoom=in]');
    const zoomOut = section.querySelector('[data-zoom=out]');
    const context = canvas.getContext('2d');
    const query = section.dataset.query;
    const endpoint = section.dataset.endpoint;

    // What is loaded: one exposure answer per level; the fetches in flight.
    const cache = new Map();
    const inFlight = new Map();
    let zoom = 1;
    let rotation = [-10, -30];
    let turned = false; // whether an answer has turned the globe yet
    let drawn = []; // the bubbles drawn: { l, x, y, r } in canvas pixels
    let marked = null; // the key of the cluster labelled over the map
    let markedBy = null; // 'pointer' or 'focus'

    let land = null;
    let landFine = null;
    let shown = null; // the level drawn
    let frame = 0;

    const projection = d3.geoOrthographic().clipAngle(90).precision(0.5);
    const path = d3.geoPath(projection, context);
    const graticule = d3.geoGraticule10();

    function size() {
      const ratio = window.devicePixelRatio || 1;
      const width = Math.max(200, Math.round(canvas.clientWidth || 640));
      const pixels = Math.round(width * ratio);
      if (canvas.width !== pixels || canvas.height !== pixels) {
        canvas.width = pixels;
        canvas.height = pixels;
      }
      return pixels;
    }

    /// The level drawn: the finest loaded level no finer than the zoom asks for.
    function drawnLevel() {
      const wanted = LEVELS.indexOf(levelFor(zoom));
      for (let i = wanted; i >= 0; i--) {
        if (cache.has(LEVELS[i])) return LEVELS[i];
      }
      return null;
    }

    function visible(location) {
      const center = [-rotation[0], -rotation[1]];
      return d3.geoDistance([location.longitude, location.latitude], center) < Math.PI / 2 - 1e-6;
    }

    /// Sets the projection for the current zoom and rotation on a canvas of `pixels`.
    function project(pixels) {
      const radius = (pixels / 2 - 4) * zoom;
      projection.scale(radius).translate([pixels / 2, pixels / 2]).rotate(rotation);
      section.dataset.center = `${snap(-rotation[0])},${snap(-rotation[1])}`;
    }

    function draw() {
      frame = 0;
      const pixels = size();
      project(pixels);
      context.clearRect(0, 0, pixels, pixels);
      context.beginPath();
      path({ type: 'Sphere' });
      context.fillStyle = '#dbe8f6';
      context.fill();
      context.beginPath();
      path(graticule);
      context.strokeStyle = 'rgba(27,31,36,0.12)';
      context.lineWidth = 1;
      context.stroke();
      const outline = zoom >= REGIONAL_ZOOM && landFine ? landFine : land;
      if (outline) {
        context.beginPath();
        path(outline);
        context.fillStyle = '#c8d3c0';
        context.fill();
        context.strokeStyle = '#8a9a80';
        context.stroke();
      }
      context.beginPath();
      path({ type: 'Sphere' });
      context.strokeStyle = '#5b6675';
      context.stroke();

      const level = drawnLevel();
      const answer = level ? cache.get(level) : null;
      const onCanvas = (l) => {
        const [x, y] = projection([l.longitude, l.latitude]);
        return x >= 0 && y >= 0 && x <= pixels && y <= pixels;
      };
      const locations = answer ? answer.locations.filter((l) => visible(l) && onCanvas(l)) : [];
      if (answer) {
        // Area grows with hosts: the radius with their square root (a rendering scale).
        const most = Math.max(1, ...answer.locations.map((l) => l.unique_hosts));
        const biggest = Math.max(6, pixels / 22);
        context.fillStyle = 'rgba(197,34,31,0.55)';
        context.strokeStyle = 'rgba(120,16,14,0.9)';
        drawn = [];
        for (const l of locations) {
          const [x, y] = projection([l.longitude, l.latitude]);
          const r = Math.max(2.5, biggest * Math.sqrt(l.unique_hosts / most));
          drawn.push({ l, x, y, r });
          context.beginPath();
          context.arc(x, y, r, 0, 2 * Math.PI);
          context.fill();
          context.stroke();
        }
        const mark = drawn.find((b) => b.l.key === marked);
        if (mark) {
          // The cluster labelled over the map: a dark ring round its bubble.
          context.beginPath();
          context.arc(mark.x, mark.y, mark.r + 3, 0, 2 * Math.PI);
          context.lineWidth = 3;
          context.strokeStyle = '#1b1f24';
          context.stroke();
          context.lineWidth = 1;
          context.fillStyle = 'rgba(197,34,31,0.55)';
          context.strokeStyle = 'rgba(120,16,14,0.9)';
        }
      } else {
        drawn = [];
      }
      if (level !== shown) {
        shown = level;
        describe(answer, level);
      }
      list(locations);
      labelOver();
    }

    /// Where a cluster's hosts are: the search with its country added where the query takes
    /// one more clause, else the search's own Results.
    function hostsOf(l) {
      if (l.country_code && section.dataset.addCountry !== undefined) {
        return `/?${new URLSearchParams({ q: `${query} country:${l.country_code}` })}`;
      }
      return section.dataset.results;
    }

    /// What a cluster's link says it does, for its accessible name and title.
    function leadsTo(l) {
      if (l.country_code && section.dataset.addCountry !== undefined) {
        return `Show the hosts in ${countryName(l.country_code)}: runs ${query} country:${l.country_code}`;
      }
      return `Show the hosts of this search: runs ${query}`;
    }

    /// The label over the map of the cluster marked (by the pointer or a focused row), placed
    /// beside its bubble inside the stage; hidden when it is not drawn.
    function labelOver() {
      const bubble = marked ? drawn.find((b) => b.l.key === marked) : null;
      if (!bubble) {
        tip.hidden = true;
        return;
      }
      const l = bubble.l;
      const title = document.createElement('strong');
      title.textContent = label(l);
      const counts = document.createElement('span');
      counts.textContent = `${count(l.unique_hosts, 'host', 'hosts')}, `
        + `${count(l.service_count, 'service', 'services')}`;
      tip.replaceChildren(title, counts);
      tip.dataset.key = l.key;
      tip.hidden = false;
      const scale = canvas.clientWidth / canvas.width;
      const x = bubble.x * scale;
      const y = bubble.y * scale;
      const r = bubble.r * scale;
      const width = tip.offsetWidth;
      const height = tip.offsetHeight;
      const room = canvas.clientWidth;
      const left = Math.min(Math.max(4, x - width / 2), Math.max(4, room - width - 4));
      const above = y - r - height - 6;
      tip.style.left = `${left}px`;
      const below = Math.min(y + r + 6, canvas.clientHeight - height - 4);
      tip.style.top = `${above >= 4 ? above : Math.max(4, below)}px`;
    }

    function mark(key, by) {
      if (marked === key && markedBy === by) return;
      marked = key;
      markedBy = key ? by : null;
      for (const tr of tbody.querySelectorAll('tr.cluster')) {
        tr.classList.toggle('marked', tr.dataset.key === key);
      }
      redraw();
    }

    /// The bubble at canvas pixel [x, y]: the smallest one that holds it (so a small bubble on
    /// a big one can be reached), with a few pixels' grace.
    function bubbleAt(x, y) {
      const grace = 3 * (window.devicePixelRatio || 1);
      let best = null;
      for (const b of drawn) {
        if (Math.hypot(b.x - x, b.y - y) <= b.r + grace && (!best || b.r < best.r)) best = b;
      }
      return best;
    }

    /// Canvas pixels of a pointer event.
    function pixelsOf(event) {
      const box = canvas.getBoundingClientRect();
      const ratio = canvas.width / box.width;
      return [(event.clientX - box.left) * ratio, (event.clientY - box.top) * ratio];
    }

    function redraw() {
      if (!frame) frame = window.requestAnimationFrame(draw);
    }

    function describe(answer, level) {
      for (const li of section.querySelectorAll('.globe-levels li')) {
        if (li.dataset.level === level) li.setAttribute('aria-current', 'true');
        else li.removeAttribute('aria-current');
      }
      section.dataset.shown = level || '';
      if (!answer) return;
      const hosts = answer.unique_hosts;
      const about = hosts.relation === 'approximate' ? 'about ' : '';
      totals.textContent = `${about}${count(hosts.value, 'host', 'hosts')}, `
        + `${count(answer.service_count, 'service', 'services')} (${LEVEL_NAMES[level]} detail)`;
      bounded.hidden = answer.locations_relation !== 'bounded';
    }

    let listed = '';
    function list(locations) {
      const rows = locations
        .slice()
        .sort((a, b) => b.unique_hosts - a.unique_hosts)
        .slice(0, LISTED);
      const signature = rows.map((l) => l.key).join(' ');
      if (signature === listed) return;
      listed = signature;
      tbody.replaceChildren(...rows.map((l) => {
        const tr = document.createElement('tr');
        tr.className = 'cluster';
        tr.dataset.key = l.key;
        if (l.key === marked) tr.classList.add('marked');
        const name = document.createElement('td');
        const a = document.createElement('a');
        a.href = hostsOf(l);
        a.textContent = label(l);
        a.title = leadsTo(l);
        name.append(a);
        tr.append(name);
        for (const text of [number(l.unique_hosts), number(l.service_count)]) {
          const td = document.createElement('td');
          td.textContent = text;
          tr.append(td);
        }
        return tr;
      }));
    }

    // A row with focus (its link) or under the pointer labels its bubble over the map; a click
    // anywhere on the row follows its link.
    tbody.addEventListener('focusin', (event) => {
      const tr = event.target.closest('tr.cluster');
      if (tr) mark(tr.dataset.key, 'focus');
    });
    tbody.addEventListener('focusout', (event) => {
      if (!tbody.contains(event.relatedTarget) && markedBy === 'focus') mark(null, null);
    });
    tbody.addEventListener('mouseover', (event) => {
      const tr = event.target.closest('tr.cluster');
      if (tr && markedBy !== 'focus') mark(tr.dataset.key, 'pointer');
    });
    tbody.addEventListener('mouseleave', () => {
      if (markedBy === 'pointer') mark(null, null);
    });
    tbody.addEventListener('click', (event) => {
      const tr = event.target.closest('tr.cluster');
      if (tr && !event.target.closest('a')) tr.querySelector('a').click();
    });

    function showError(title, message) {
      notice.replaceChildren();
      const strong = document.createElement('strong');
      strong.textContent = title;
      const p = document.createElement('p');
      p.textContent = `${message} The map shows the last detail that loaded; zoom again to retry.`;
      notice.append(strong, p);
      notice.classList.add('shown');
    }

    function clearError() {
      notice.replaceChildren();
      notice.classList.remove('shown');
    }

    /// After an answer: turn to the data's centroid when it is the first answer, or when the
    /// view shows none of its clusters; and if the centroid's hemisphere still shows none at
    /// this zoom, to its largest cluster.
    function aimAt(answer) {
      const pixels = size();
      project(pixels);
      const onCanvas = (l) => {
        if (!visible(l)) return false;
        const [x, y] = projection([l.longitude, l.latitude]);
        return x >= 0 && y >= 0 && x <= pixels && y <= pixels;
      };
      if (turned && answer.locations.some(onCanvas)) return;
      turned = true;
      const centre = centroid(answer.locations);
      if (centre) {
        rotation = [snap(-centre[0]), snap(-centre[1])];
        project(pixels);
      }
      if (!answer.locations.some(onCanvas)) {
        const largest = answer.locations.reduce((a, b) => (b.unique_hosts > a.unique_hosts ? b : a),
          answer.locations[0]);
        if (largest) rotation = [snap(-largest.longitude), snap(-largest.latitude)];
      }
    }

    /// Asks for `level` unless it is loaded or on its way.
    function load(level) {
      if (cache.has(level) || inFlight.has(level)) return;
      const url = `${endpoint}?${new URLSearchParams({ q: query, resolution: level })}`;
      const controller = new AbortController();
      const timeoutMs = Number(section.dataset.timeoutMs) || 10000;
      let timedOut = false;
      const timer = window.setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeoutMs);
      loadingText.textContent = `Loading ${LEVEL_NAMES[level]} detail…`;
      const request = (async () => {
        try {
          const { status, body } = await Periscope.json(url, { signal: controller.signal });
          if (status === 200 && body && Array.isArray(body.locations)) {
            cache.set(level, body);
            clearError();
            if (level === drawnLevel()) aimAt(body);
            return;
          }
          showError(
            (body && body.title) || 'Search is temporarily unavailable',
            (body && body.message) || 'Try again shortly; nothing was charged.');
        } catch (e) {
          if (e instanceof Periscope.SessionEnded) return;
          if (timedOut) {
            showError('Search timed out',
              `${LEVEL_NAMES[level]} detail did not load within ${Math.round(timeoutMs / 1000 * 10) / 10} s.`);
          } else {
            showError('Search is temporarily unavailable', 'Try again shortly; nothing was charged.');
          }
        } finally {
          window.clearTimeout(timer);
          inFlight.delete(level);
          busy();
          redraw();
        }
      })();
      inFlight.set(level, request);
      busy();
    }

    /// The loading indicator, while any level is on its way.
    function busy() {
      const loading = inFlight.size > 0;
      section.classList.toggle('loading', loading);
      if (loading) section.setAttribute('aria-busy', 'true');
      else section.removeAttribute('aria-busy');
    }

    function setZoom(next) {
      zoom = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, next));
      zoomIn.disabled = zoom >= MAX_ZOOM;
      zoomOut.disabled = zoom <= MIN_ZOOM;
      section.dataset.zoom = String(zoom);
      load(levelFor(zoom));
      redraw();
    }

    /// Zooms to `next`, turning the globe so that the place `point` ([longitude, latitude])
    /// ends at canvas pixel `target`: as close as the orthographic projection allows (a few
    /// steps of moving the view by the place's offset from where it lands).
    function zoomAt(next, point, target) {
      setZoom(next);
      const pixels = size();
      for (let i = 0; i < 12; i++) {
        project(pixels);
        const landed = projection.invert(target);
        if (!landed || !Number.isFinite(landed[0]) || !Number.isFinite(landed[1])) break;
        let dx = landed[0] - point[0];
        if (dx > 180) dx -= 360;
        if (dx < -180) dx += 360;
        const dy = landed[1] - point[1];
        if (Math.abs(dx) < 1e-4 && Math.abs(dy) < 1e-4) break;
        rotation = [rotation[0] + dx, Math.max(-90, Math.min(90, rotation[1] + dy))];
      }
      rotation = [snap(rotation[0]), snap(rotation[1])];
      redraw();
    }

    /// The buttons' zoom: toward the largest cluster in view (it moves halfway to the centre
    /// as the globe zooms in), or about the centre when none is drawn or when zooming out.
    function zoomStep(factor) {
      const next = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, zoom * factor));
      const largest = drawn.reduce((a, b) => (!a || b.l.unique_hosts > a.l.unique_hosts ? b : a), null);
      if (factor > 1 && largest && next !== zoom) {
        const c = canvas.width / 2;
        zoomAt(next, [largest.l.longitude, largest.l.latitude],
          [c + (largest.x - c) / 2, c + (largest.y - c) / 2]);
      } else {
        setZoom(next);
      }
    }

    function rotate(dx, dy) {
      rotation = [rotation[0] + dx, Math.max(-90, Math.min(90, rotation[1] + dy))];
      redraw();
    }

    zoomIn.addEventListener('click', () => zoomStep(STEP));
    zoomOut.addEventListener('click', () => zoomStep(1 / STEP));
    canvas.addEventListener('wheel', (event) => {
      event.preventDefault();
      const next = zoom * Math.exp(-event.deltaY * 0.002);
      const at = pixelsOf(event);
      project(size());
      const point = projection.invert(at);
      const inside = point && Number.isFinite(point[0]) && visible({ longitude: point[0], latitude: point[1] })
        && Math.hypot(at[0] - canvas.width / 2, at[1] - canvas.height / 2) < projection.scale();
      if (inside) zoomAt(next, point, at);
      else setZoom(next);
    }, { passive: false });
    canvas.addEventListener('keydown', (event) => {
      const step = 10 / zoom;
      const keys = {
        ArrowLeft: () => rotate(step, 0),
        ArrowRight: () => rotate(-step, 0),
        ArrowUp: () => rotate(0, -step),
        ArrowDown: () => rotate(0, step),
        '+': () => zoomStep(STEP),
        '=': () => zoomStep(STEP),
        '-': () => zoomStep(1 / STEP),
        _: () => zoomStep(1 / STEP),
      };
      const act = keys[event.key];
      if (act) {
        event.preventDefault();
        act();
      }
    });

    // Drag to turn; two pointers pinch to zoom.
    // A pointer resting on a bubble labels it over the map; a click (not a drag) on a bubble
    // leads to its hosts.
    const pointers = new Map();
    let pinch = 0;
    let pressed = null; // where the pointer went down, and whether it has moved since
    canvas.addEventListener('pointerdown', (event) => {
      canvas.setPointerCapture(event.pointerId);
      pointers.set(event.pointerId, [event.clientX, event.clientY]);
      pressed = { x: event.clientX, y: event.clientY, moved: false };
      pinch = 0;
    });
    canvas.addEventListener('pointerleave', () => {
      if (markedBy === 'pointer') mark(null, null);
    });
    canvas.addEventListener('pointermove', (event) => {
      const last = pointers.get(event.pointerId);
      if (!last) {
        if (event.pointerType === 'mouse' || event.pointerType === 'pen') {
          const bubble = bubbleAt(...pixelsOf(event));
          canvas.style.cursor = bubble ? 'pointer' : '';
          if (bubble) mark(bubble.l.key, 'pointer');
          else if (markedBy === 'pointer') mark(null, null);
        }
        return;
      }
      if (pressed && Math.hypot(event.clientX - pressed.x, event.clientY - pressed.y) > 4) pressed.moved = true;
      const now = [event.clientX, event.clientY];
      pointers.set(event.pointerId, now);
      if (pointers.size === 2) {
        const [a, b] = [...pointers.values()];
        const distance = Math.hypot(a[0] - b[0], a[1] - b[1]);
        if (pinch > 0) setZoom(zoom * distance / pinch);
        pinch = distance;
        return;
      }
      const degrees = 180 / Math.PI / (projection.scale() / (window.devicePixelRatio || 1));
      rotate((now[0] - last[0]) * degrees, -(now[1] - last[1]) * degrees);
    });
    const release = (event) => {
      pointers.delete(event.pointerId);
      pinch = 0;
    };
    canvas.addEventListener('pointerup', (event) => {
      const click = pressed && !pressed.moved && pointers.size === 1;
      release(event);
      pressed = null;
      if (!click) return;
      const bubble = bubbleAt(...pixelsOf(event));
      if (bubble) window.location.assign(hostsOf(bubble.l));
    });
    canvas.addEventListener('pointercancel', (event) => {
      release(event);
      pressed = null;
    });
    window.addEventListener('resize', redraw);

    async function outlines(url) {
      const response = await fetch(url, { credentials: 'same-origin' });
      if (!response.ok) throw new Error(`${url}: ${response.status}`);
      const topology = await response.json();
      return topojson.feature(topology, topology.objects.land);
    }
    outlines(section.dataset.land)
      .then((feature) => {
        land = feature;
        redraw();
        return outlines(section.dataset.landFine);
      })
      .then((feature) => {
        landFine = feature;
        redraw();
      })
      .catch(() => showError('The land outlines could not be loaded',
        'The clusters are drawn without them.'));

    setZoom(1);
  }

  for (const section of document.querySelectorAll('section.globe')) start(section);

  return { label, coordinates, countryName, levelFor, centroid, count };
})();
