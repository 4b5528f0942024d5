// specd's dashboard: polls GET /api/dashboard and charts it with uPlot. The snapshot's
// counters are cumulative; rates are the differences between two snapshots over the
// server's own clock. With an API key set on the server the page asks for it once and keeps
// it in this tab's session storage; it goes in an Authorization header, never in a URL.
'use strict';

(() => {
  const KEY_STORE = 'specd-api-key';
  const KEEP = 300; // samples per series
  const params = new URLSearchParams(location.search);
  const interval = Math.min(10000, Math.max(200, Number(params.get('interval')) || 1000));
  const keyRequired = document.body.dataset.keyRequired === 'true';
  const COLORS = ['#2f6fdf', '#e0692d', '#2a9d58', '#b8367a', '#7a5cc7', '#c59b12', '#1c9aa8', '#6d737c'];
  const BUCKETS = ['weights', 'kv_target', 'kv_draft', 'compute', 'prompt_cache', 'images', 'grammar', 'request'];

  // What the page shows, for people and for the browser test.
  const state = { samples: 0, error: null, models: {}, memory: null, scheduler: null };
  window.specdDashboard = state;

  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  function setStatus(text, isError) {
    $('status').textContent = text;
    $('status').classList.toggle('error', !!isError);
    state.error = isError ? text : null;
  }

  function formatBytes(n) {
    if (!Number.isFinite(n)) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let u = 0;
    while (n >= 1024 && u < units.length - 1) {
      n /= 1024;
      ++u;
    }
    return `${n.toFixed(u === 0 ? 0 : 1)} ${units[u]}`;
  }

  function formatNumber(n, digits = 0) {
    return Number.isFinite(n) ? n.toFixed(digits) : '–';
  }

  // A set of labelled values shown as tiles.
  function tiles(container) {
    const cells = new Map();
    return (values) => {
      for (const [label, value] of values) {
        let cell = cells.get(label);
        if (!cell) {
          cell = el('div', 'tile');
          cell.append(el('div', 'label', label), el('div', 'value'));
          container.append(cell);
          cells.set(label, cell);
        }
        cell.lastChild.textContent = value;
      }
    };
  }

  // A time series chart: add(t, [v...]) appends one sample per series (null leaves a gap).
  function timeChart(container, title, labels, { bytes = false, range } = {}) {
    const box = el('div', 'chart');
    box.append(el('div', 'chart-title', title));
    container.append(box);
    const data = [[], ...labels.map(() => [])];
    const axisValues = bytes ? (u, ticks) => ticks.map(formatBytes) : undefined;
    const plot = new uPlot({
      width: 440,
      height: 180,
      scales: { x: { time: true }, y: range ? { range } : {} },
      axes: [{}, { size: bytes ? 84 : 50, values: axisValues }],
      series: [{}, ...labels.map((label, i) => ({ label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: false }))],
      legend: { live: false },
    }, data, box);
    return {
      add(t, values) {
        data[0].push(t);
        values.forEach((v, i) => data[i + 1].push(v === undefined ? null : v));
        if (data[0].length > KEEP) data.forEach((s) => s.shift());
        plot.setData(data);
      },
      points: () => data[0].length,
    };
  }

  // Bars of the rounds at each draft depth, so far.
  function histogramChart(container, title) {
    const box = el('div', 'chart');
    box.append(el('div', 'chart-title', title));
    container.append(box);
    const plot = new uPlot({
      width: 440,
      height: 180,
      scales: { x: { time: false, range: (u, min, max) => [min - 0.5, max + 0.5] } },
      axes: [{ label: 'draft tokens in the round' }, { size: 60 }],
      series: [{}, { label: 'rounds', fill: '#2f6fdf66', stroke: '#2f6fdf', paths: uPlot.paths.bars({ size: [0.7, 60] }) }],
      legend: { live: false },
    }, [[0], [0]], box);
    return {
      set(depth) {
        const xs = depth.map((_, k) => k);
        plot.setData([xs.length ? xs : [0], depth.length ? depth : [0]]);
      },
    };
  }

  // One loaded model: its counters' rates and its memory over time.
  function modelCard(name) {
    const card = el('div', 'model');
    card.dataset.model = name;
    card.append(el('h3', null, name));
    const tileBox = el('div', 'tiles');
    const charts = el('div', 'charts');
    card.append(tileBox, charts);
    $('models').append(card);
    return {
      card,
      tiles: tiles(tileBox),
      speed: timeChart(charts, 'tokens/s', ['generated']),
      spec: timeChart(charts, 'speculation: acceptance and mean draft depth', ['acceptance', 'mean depth']),
      forced: timeChart(charts, 'grammar-forced share of generated tokens', ['forced'], { range: [0, 1] }),
      depth: histogramChart(charts, 'rounds by draft depth'),
      memory: timeChart(charts, 'memory', BUCKETS.filter((b) => b !== 'prompt_cache'), { bytes: true }),
      prev: null,
    };
  }

  const cards = new Map();
  let prevSnapshot = null;
  let schedulerTiles, schedulerChart, memoryTiles, bucketChart, processChart, cacheChart;

  function setupSections() {
    schedulerTiles = tiles($('scheduler-tiles'));
    schedulerChart = timeChart($('scheduler-charts'), 'sequences', ['running', 'queued']);
    memoryTiles = tiles($('memory-tiles'));
    bucketChart = timeChart($('memory-charts'), 'ledger buckets (all models)', BUCKETS, { bytes: true });
    processChart = timeChart($('memory-charts'), 'process and devices', ['resident (RSS)', 'ledger total', 'CPU'], { bytes: true });
    cacheChart = timeChart($('memory-charts'), 'prompt cache: hit rate in the interval', ['hit rate'], { range: [0, 1] });
  }

  // d(key) between two counter sets; null after a reset (a model reloaded).
  function delta(now, before, key) {
    if (!before) return null;
    const d = now[key] - before[key];
    return d >= 0 ? d : null;
  }

  function updateModel(m, t, dt) {
    let c = cards.get(m.name);
    if (!c) {
      c = modelCard(m.name);
      cards.set(m.name, c);
    }
    c.seen = true;
    const live = m.live;
    const gen = delta(live, c.prev, 'generated');
    const drafted = delta(live, c.prev, 'drafted');
    const accepted = delta(live, c.prev, 'accepted');
    const rounds = delta(live, c.prev, 'rounds');
    const forcedAccepted = delta(live, c.prev, 'forced_accepted');
    const tps = gen !== null && dt > 0 ? gen / dt : null;
    const acceptance = drafted ? accepted / drafted : null;
    const meanDepth = rounds ? drafted / rounds : null;
    const forcedShare = gen ? Math.min(1, forcedAccepted / gen) : null;
    c.prev = live;

    c.speed.add(t, [tps]);
    c.spec.add(t, [acceptance, meanDepth]);
    c.forced.add(t, [forcedShare]);
    c.depth.set(live.depth);
    c.memory.add(t, BUCKETS.filter((b) => b !== 'prompt_cache').map((b) => m.memory[b]));
    c.tiles([
      ['tokens/s', formatNumber(tps, 1)],
      ['running', String(m.running)],
      ['queued', String(m.queued)],
      ['parallel', String(m.parallel)],
      ['threads', `${m.threads.decode}/${m.threads.batch}${m.threads.draft ? ` draft ${m.threads.draft}` : ''}`],
      ['generated', String(live.generated)],
      ['acceptance', live.drafted ? formatNumber(live.accepted / live.drafted, 2) : '–'],
      ['memory', formatBytes(m.memory.total)],
    ]);
    state.models[m.name] = {
      tokensPerSecond: tps,
      acceptance,
      meanDepth,
      generated: live.generated,
      points: c.speed.points(),
    };
  }

  function update(snap) {
    const t = snap.time_ms / 1000;
    const dt = prevSnapshot ? (snap.time_ms - prevSnapshot.time_ms) / 1000 : 0;
    $('version').textContent = `version ${snap.version}`;

    const s = snap.scheduler;
    schedulerTiles([
      ['running', String(s.running)],
      ['queued', String(s.queued)],
      ['requests', String(s.requests)],
      ['errors', String(s.errors)],
      ['rejected (queue full)', String(s.rejected)],
      ['model loads', String(s.loads)],
      ['evictions', String(s.evictions)],
    ]);
    schedulerChart.add(t, [s.running, s.queued]);

    for (const c of cards.values()) c.seen = false;
    for (const m of snap.models) updateModel(m, t, dt);
    for (const [name, c] of cards) {
      if (!c.seen) { // unloaded
        c.card.remove();
        cards.delete(name);
        delete state.models[name];
      }
    }
    $('no-models').hidden = snap.models.length > 0;

    const mem = snap.memory;
    const cache = mem.prompt_cache;
    const lookups = prevSnapshot ? (cache.hits + cache.misses) - (prevSnapshot.memory.prompt_cache.hits + prevSnapshot.memory.prompt_cache.misses) : 0;
    const hits = prevSnapshot ? cache.hits - prevSnapshot.memory.prompt_cache.hits : 0;
    memoryTiles([
      ['resident (RSS)', formatBytes(mem.resident_bytes)],
      ['ledger total', formatBytes(mem.buckets.total)],
      ...mem.devices.map((d) => [`device ${d.name}`, formatBytes(d.bytes)]),
      ['prompt cache', `${formatBytes(cache.bytes)} of ${formatBytes(cache.budget_bytes)}`],
      ['cache entries', String(cache.entries)],
      ['cache hit rate', cache.hits + cache.misses ? formatNumber(cache.hits / (cache.hits + cache.misses), 2) : '–'],
      ['cache evictions', String(cache.evictions)],
    ]);
    bucketChart.add(t, BUCKETS.map((b) => mem.buckets[b]));
    processChart.add(t, [mem.resident_bytes, mem.buckets.total, mem.devices.find((d) => d.name === 'CPU')?.bytes]);
    cacheChart.add(t, [lookups > 0 ? hits / lookups : null]);

    state.memory = { resident: mem.resident_bytes, ledger: mem.buckets.total, cacheBytes: cache.bytes };
    state.scheduler = s;
    state.samples += 1;
    prevSnapshot = snap;
  }

  function headers() {
    const key = sessionStorage.getItem(KEY_STORE);
    return key ? { Authorization: `Bearer ${key}` } : {};
  }

  let timer = null;
  async function poll() {
    timer = null;
    try {
      const res = await fetch('/api/dashboard', { headers: headers(), cache: 'no-store' });
      if (res.status === 401) {
        sessionStorage.removeItem(KEY_STORE);
        askForKey('The key was not accepted; try again.');
        return;
      }
      if (!res.ok) {
        setStatus(`the server answered ${res.status}`, true);
      } else {
        update(await res.json());
        setStatus(`updated ${new Date().toLocaleTimeString()}`);
      }
    } catch (e) {
      setStatus(`cannot reach the server (${e.message})`, true);
    }
    timer = setTimeout(poll, interval);
  }

  function askForKey(why) {
    $('key-form').hidden = false;
    setStatus(why, true);
    $('key').focus();
  }

  $('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const key = $('key').value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY_STORE, key);
    $('key').value = '';
    $('key-form').hidden = true;
    setStatus('connecting…');
    if (timer === null) poll();
  });

  setupSections();
  // A server with a key set says so in the page (never the key): ask before the first poll
  // rather than meet a 401.
  if (keyRequired && !sessionStorage.getItem(KEY_STORE)) askForKey('This server needs an API key.');
  else poll();
})();
