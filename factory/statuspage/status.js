// The status page of switchboard's Registry.Handler. It polls the same
// handler's JSON (?format=json) every second and redraws the page from it
// with DOM calls and textContent only: no markup is ever built from data,
// and the JSON holds no secret (Status redacts them when it is taken).
// Every URL is relative to the page's own, so the handler works wherever
// it is mounted.
'use strict';
(function () {
  const POLL_MS = 1000;
  const WINDOW_MS = 5 * 60 * 1000; // the sparklines' span
  const history = new Map(); // client name → [{t, calls, failures}], oldest first
  const openDetails = new Set(); // keys of the <details> the reader opened

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function svgEl(tag, attrs) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return '–';
    if (seconds < 1) return Math.round(seconds * 1000) + 'ms';
    if (seconds < 60) return (Math.round(seconds * 10) / 10) + 's';
    const m = Math.floor(seconds / 60), s = Math.round(seconds % 60);
    if (m < 60) return m + 'm ' + s + 's';
    return Math.floor(m / 60) + 'h ' + (m % 60) + 'm';
  }

  function when(iso) {
    const t = new Date(iso);
    if (isNaN(t.getTime()) || t.getTime() <= 0) return '–';
    const ago = Math.max(0, (Date.now() - t.getTime()) / 1000);
    return t.toLocaleString() + ' (' + duration(ago) + ' ago)';
  }

  function num(x, digits) {
    if (x === null || x === undefined) return '–';
    return Number(x).toFixed(digits);
  }

  // origin names where a key got its value; a file by its base name (the
  // cell's title has the full path).
  function origin(o) {
    if (!o) return 'set in code';
    let s = o.layer;
    if (o.name) s += ' ' + (o.layer === 'file' ? o.name.split('/').pop() : o.name);
    if (o.line) s += ':' + o.line;
    if (o.path && o.path.startsWith('defaults.')) s += ' (' + o.path + ')';
    return s;
  }

  // keepOpen makes a <details> remember, across redraws, that it is open.
  function keepOpen(details, key) {
    details.open = openDetails.has(key);
    details.addEventListener('toggle', function () {
      if (details.open) openDetails.add(key); else openDetails.delete(key);
    });
    return details;
  }

  // breakerBadge describes a breaker: closed, open with the time to its
  // next probe, half-open, or adaptive throttling with its probability.
  function breakerBadge(b) {
    const badge = el('span', 'badge breaker');
    if (!b) {
      badge.dataset.state = 'off';
      badge.textContent = 'breaker off';
      return badge;
    }
    badge.dataset.state = b.state;
    let text = 'breaker ' + b.state.replace('_', '-');
    if (b.state === 'open' && b.probe_in_seconds !== undefined) {
      text += ' · probe in ' + duration(b.probe_in_seconds);
    }
    if (b.state === 'closed' && b.reject_probability !== undefined && b.reject_probability !== null) {
      if (b.reject_probability > 0) {
        badge.dataset.state = 'throttling';
        text = 'throttling p=' + num(b.reject_probability, 2);
      } else {
        text += ' · adaptive';
      }
    }
    badge.textContent = text;
    return badge;
  }

  // sample records a client's cumulative counts at time t and drops what
  // falls out of the window (keeping one sample before it as a base).
  function sample(c, t) {
    let h = history.get(c.name);
    if (!h) { h = []; history.set(c.name, h); }
    const last = h[h.length - 1];
    if (last && (c.calls < last.calls || c.failures < last.failures)) h.length = 0; // a new registry
    h.push({ t: t, calls: c.calls, failures: c.failures });
    while (h.length > 2 && h[1].t < t - WINDOW_MS) h.shift();
    return h;
  }

  // series turns the samples into per-interval call rates (calls/s) and
  // failure percentages.
  function series(h) {
    const rate = [], fail = [];
    for (let i = 1; i < h.length; i++) {
      const dt = (h[i].t - h[i - 1].t) / 1000;
      const dc = h[i].calls - h[i - 1].calls, df = h[i].failures - h[i - 1].failures;
      rate.push(dt > 0 ? dc / dt : 0);
      fail.push(dc > 0 ? 100 * df / dc : 0);
    }
    return { rate: rate, fail: fail };
  }

  function sparkline(cls, caption, values, unit, fixedMax) {
    const fig = el('figure', 'spark ' + cls);
    const W = 150, H = 32;
    const s = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none', role: 'img' });
    const max = fixedMax || Math.max(1, ...values);
    const n = Math.max(values.length, 2);
    const pts = values.map(function (v, i) {
      const x = values.length === 1 ? W : (i * W) / (n - 1);
      const y = H - 1 - (v / max) * (H - 2);
      return x.toFixed(1) + ',' + y.toFixed(1);
    });
    if (pts.length === 1) pts.unshift('0,' + pts[0].split(',')[1]);
    if (pts.length > 0) s.appendChild(svgEl('polyline', { points: pts.join(' ') }));
    const last = values.length ? values[values.length - 1] : 0;
    const peak = values.length ? Math.max(...values) : 0;
    fig.appendChild(el('figcaption', null, caption + ' · now ' + num(last, 1) + unit + ' · 5 min peak ' + num(peak, 1) + unit));
    fig.appendChild(s);
    return fig;
  }

  function fact(dl, term, value, cls) {
    dl.appendChild(el('dt', null, term));
    dl.appendChild(el('dd', cls || null, value));
  }

  function configDetails(c) {
    const d = keepOpen(el('details', 'config'), 'config:' + c.name);
    const keys = c.non_default || [];
    d.appendChild(el('summary', null, 'config: ' + keys.length + (keys.length === 1 ? ' key differs' : ' keys differ') + ' from the defaults'));
    if (keys.length) {
      const t = el('table');
      const head = el('tr');
      for (const h of ['key', 'value', 'default', 'from']) head.appendChild(el('th', null, h));
      t.appendChild(el('thead')).appendChild(head);
      const body = t.appendChild(el('tbody'));
      for (const k of keys) {
        const tr = el('tr');
        tr.appendChild(el('td', null, k.key));
        tr.appendChild(el('td', null, k.value));
        tr.appendChild(el('td', 'muted', k.default));
        const from = tr.appendChild(el('td', 'muted', origin(k.origin)));
        if (k.origin && k.origin.name) from.title = k.origin.name;
        body.appendChild(tr);
      }
      d.appendChild(t);
    }
    const full = keepOpen(el('details'), 'full:' + c.name);
    full.appendChild(el('summary', null, 'full effective config'));
    full.appendChild(el('pre', null, JSON.stringify(c.config || {}, null, 2)));
    d.appendChild(full);
    return d;
  }

  function clientTile(c, now) {
    const tile = el('article', 'tile client');
    tile.dataset.client = c.name;
    const head = tile.appendChild(el('header'));
    head.appendChild(el('h3', null, c.name));
    head.appendChild(breakerBadge(c.breaker));
    if (c.fault) head.appendChild(el('span', 'badge fault', 'fault injection ON'));
    if (!c.defined) head.appendChild(el('span', 'badge plain', 'not in config: follows defaults'));

    if (c.breaker && c.breaker.hosts) {
      const hosts = Object.keys(c.breaker.hosts).sort();
      const p = tile.appendChild(el('p', 'muted hosts'));
      p.textContent = hosts.map(function (h) {
        let s = h + ' ' + c.breaker.hosts[h].replace('_', '-');
        const pin = c.breaker.hosts_probe_in_seconds && c.breaker.hosts_probe_in_seconds[h];
        if (pin !== undefined && pin !== null) s += ' (probe in ' + duration(pin) + ')';
        return s;
      }).join(', ');
    }

    const dl = tile.appendChild(el('dl', 'facts'));
    fact(dl, 'bulkhead', c.bulkhead_limit > 0 ? bulkheadText(c) : 'off');
    let limit = c.limiter_tokens !== undefined ? num(c.limiter_tokens, 1) + ' tokens' : 'off';
    if (c.quota_mode) limit += ' · fleet quota: ' + c.quota_mode;
    fact(dl, 'rate limit', limit);
    fact(dl, 'retry budget', c.budget_balance !== null ? num(c.budget_balance, 1) + ' retries' : 'off');
    fact(dl, 'hedge delay', c.hedge_delay_seconds !== undefined ? duration(c.hedge_delay_seconds) : 'off');
    fact(dl, 'calls', c.calls + ' · ' + c.failures + ' failed · ' + c.rejections + ' rejected');
    if (c.coalesce_joined > 0 || (c.config && c.config.coalesce && c.config.coalesce.enabled)) {
      fact(dl, 'coalesced', c.coalesce_joined + ' joined a call in flight');
    }
    if (c.groups) {
      fact(dl, 'shared', Object.keys(c.groups).sort().map(function (k) { return k + ' → ' + c.groups[k]; }).join(', '));
    }
    if (c.routes) fact(dl, 'routes', c.routes.join(', '));
    fact(dl, 'generation', c.generation);

    const sr = series(sample(c, now));
    const sparks = tile.appendChild(el('div', 'sparks'));
    sparks.appendChild(sparkline('rate', 'calls/s', sr.rate, '/s'));
    sparks.appendChild(sparkline('fail', 'failures', sr.fail, '%', 100));
    tile.appendChild(configDetails(c));
    return tile;
  }

  // groupTiles makes one tile per shared component (block and group),
  // showing its state (a member's: a shared component's is the group's)
  // and its members.
  function groupTiles(clients) {
    const groups = new Map();
    for (const c of clients) {
      for (const [block, group] of Object.entries(c.groups || {})) {
        const key = block + '\u0000' + group;
        if (!groups.has(key)) groups.set(key, { block: block, group: group, members: [], c: c });
        groups.get(key).members.push(c.name);
      }
    }
    const tiles = [];
    for (const key of Array.from(groups.keys()).sort()) {
      const g = groups.get(key);
      const tile = el('article', 'tile group');
      tile.dataset.group = g.block + ':' + g.group;
      const head = tile.appendChild(el('header'));
      head.appendChild(el('h3', null, g.group));
      head.appendChild(el('span', 'badge plain', g.block.replace('_', ' ')));
      if (g.block === 'circuit_breaker') head.appendChild(breakerBadge(g.c.breaker));
      const dl = tile.appendChild(el('dl', 'facts'));
      if (g.block === 'bulkhead') fact(dl, 'bulkhead', bulkheadText(g.c));
      if (g.block === 'rate_limit') fact(dl, 'rate limit', c2tokens(g.c));
      fact(dl, 'members', g.members.join(', '));
      tiles.push(tile);
    }
    return tiles;
  }

  // bulkheadText: slots in use of the limit; an adaptive bulkhead's limit
  // is the learned one, and says so.
  function bulkheadText(c) {
    const s = c.bulkhead_in_use + ' / ' + c.bulkhead_limit + ' in use';
    return c.bulkhead_mode === 'adaptive' ? s + ' (adaptive limit)' : s;
  }

  function c2tokens(c) {
    return c.limiter_tokens !== undefined ? num(c.limiter_tokens, 1) + ' tokens' : 'off';
  }

  function reloadRow(r) {
    const tr = el('tr', 'reload');
    tr.dataset.result = r.result;
    tr.appendChild(el('td', null, when(r.time)));
    tr.appendChild(el('td', null, r.generation));
    if (r.error) tr.appendChild(el('td', 'err', 'rejected: ' + r.error));
    else tr.appendChild(el('td', 'ok', 'applied'));
    tr.appendChild(el('td', null, r.changed.length ? r.changed.join(', ') : '–'));
    return tr;
  }

  function render(doc, now) {
    document.getElementById('generation').textContent = String(doc.generation);
    document.getElementById('applied').textContent = when(doc.last_reload);
    const le = document.getElementById('last-error');
    le.hidden = !doc.last_error;
    le.textContent = doc.last_error ? 'last reload rejected (the generation above keeps serving): ' + doc.last_error : '';

    const sources = doc.sources || [];
    document.getElementById('sources-section').hidden = sources.length === 0;
    document.getElementById('sources').replaceChildren(...sources.map(function (s) {
      const li = el('li', 'source');
      li.dataset.source = s.name;
      li.appendChild(el('strong', null, s.name));
      li.appendChild(document.createTextNode(' '));
      li.appendChild(s.stale ? el('span', 'stale', 'STALE: its last good snapshot serves') : el('span', 'muted', 'fresh'));
      if (s.last_error) li.appendChild(el('span', 'error', ' ' + s.last_error));
      return li;
    }));

    const clients = doc.clients || [];
    document.getElementById('clients').replaceChildren(...clients.map(function (c) { return clientTile(c, now); }));
    const groups = groupTiles(clients);
    document.getElementById('groups-section').hidden = groups.length === 0;
    document.getElementById('groups').replaceChildren(...groups);
    document.querySelector('#reloads tbody').replaceChildren(...(doc.reloads || []).map(reloadRow));
    document.body.dataset.generation = String(doc.generation);
    document.body.dataset.updated = String(now); // changes at every poll drawn
  }

  function setConn(text) {
    const c = document.getElementById('conn');
    c.hidden = !text;
    c.textContent = text;
  }

  async function poll() {
    try {
      const resp = await fetch('?format=json', { cache: 'no-store', headers: { Accept: 'application/json' } });
      if (!resp.ok) throw new Error('HTTP ' + resp.status);
      render(await resp.json(), Date.now());
      setConn('');
    } catch (e) {
      setConn('status unavailable, retrying: ' + e.message);
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  poll();
})();
