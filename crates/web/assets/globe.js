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

  function start(section) {
    const canvas = section.querySelector('canvas');
    const totals = section.querySelector('.globe-totals');
    const notice = section.querySelector('.globe-error');
    const bounded = section.querySelector('.globe-bounded');
    const loadingText = section.querySelector('.globe-loading-text');
    const tbody = section.querySelector('.globe-clusters tbody');
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

    function draw() {
      frame = 0;
      const pixels = size();
      const radius = (pixels / 2 - 4) * zoom;
      projection.scale(radius).translate([pixels / 2, pixels / 2]).rotate(rotation);
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
        for (const l of locations) {
          const [x, y] = projection([l.longitude, l.latitude]);
          const r = Math.max(2.5, biggest * Math.sqrt(l.unique_hosts / most));
          context.beginPath();
          context.arc(x, y, r, 0, 2 * Math.PI);
          context.fill();
          context.stroke();
        }
      }
      if (level !== shown) {
        shown = level;
        describe(answer, level);
      }
      list(locations);
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
      totals.textContent = `${about}${number(hosts.value)} hosts, ${number(answer.service_count)} services`
        + ` (${LEVEL_NAMES[level]} detail)`;
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
        for (const text of [label(l), number(l.unique_hosts), number(l.service_count)]) {
          const td = document.createElement('td');
          td.textContent = text;
          tr.append(td);
        }
        return tr;
      }));
    }

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

    function rotate(dx, dy) {
      rotation = [rotation[0] + dx, Math.max(-90, Math.min(90, rotation[1] + dy))];
      redraw();
    }

    zoomIn.addEventListener('click', () => setZoom(zoom * STEP));
    zoomOut.addEventListener('click', () => setZoom(zoom / STEP));
    canvas.addEventListener('wheel', (event) => {
      event.preventDefault();
      setZoom(zoom * Math.exp(-event.deltaY * 0.002));
    }, { passive: false });
    canvas.addEventListener('keydown', (event) => {
      const step = 10 / zoom;
      const keys = {
        ArrowLeft: () => rotate(step, 0),
        ArrowRight: () => rotate(-step, 0),
        ArrowUp: () => rotate(0, -step),
        ArrowDown: () => rotate(0, step),
        '+': () => setZoom(zoom * STEP),
        '=': () => setZoom(zoom * STEP),
        '-': () => setZoom(zoom / STEP),
        _: () => setZoom(zoom / STEP),
      };
      const act = keys[event.key];
      if (act) {
        event.preventDefault();
        act();
      }
    });

    // Drag to turn; two pointers pinch to zoom.
    const pointers = new Map();
    let pinch = 0;
    canvas.addEventListener('pointerdown', (event) => {
      canvas.setPointerCapture(event.pointerId);
      pointers.set(event.pointerId, [event.clientX, event.clientY]);
      pinch = 0;
    });
    canvas.addEventListener('pointermove', (event) => {
      const last = pointers.get(event.pointerId);
      if (!last) return;
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
    canvas.addEventListener('pointerup', release);
    canvas.addEventListener('pointercancel', release);
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

  return { label, coordinates, countryName, levelFor };
})();
