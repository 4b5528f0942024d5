// The dashboard's routes without a browser: its page and assets are built into the binary and
// open like the health checks; the data it polls (/api/dashboard) follows the API's rules
// (Host check, origin policy, API key); and the snapshot's live counters move while a
// generation runs, not only at its end. The page itself is driven in Chromium by
// dashboard.test.mjs.
import assert from 'node:assert/strict';
import { describe } from 'node:test';

import { fixture, postRaw, sleep, startServer, test } from './harness.mjs';
import { rawExchange } from './raw_http.mjs';

const specModel = { name: 'spec', from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`] };

describe('dashboard routes', () => {
  test('the page and its assets are served from the binary; unknown names are 404', async () => {
    const srv = await startServer({ models: [specModel] });
    try {
      for (const path of ['/ui', '/ui/', '/ui/index.html']) {
        const r = await fetch(srv.url + path);
        assert.equal(r.status, 200, path);
        assert.match(r.headers.get('content-type'), /^text\/html/);
        const html = await r.text();
        assert.match(html, /<script src="\/ui\/app\.js"><\/script>/);
        assert.match(html, /data-key-required="false"/);
        assert.match(r.headers.get('content-security-policy'), /default-src 'none'/);
      }
      const assets = { 'app.js': /javascript/, 'app.css': /css/, 'uPlot.iife.min.js': /javascript/, 'uPlot.min.css': /css/ };
      for (const [name, type] of Object.entries(assets)) {
        const r = await fetch(`${srv.url}/ui/${name}`);
        assert.equal(r.status, 200, name);
        assert.match(r.headers.get('content-type'), type, name);
        assert.ok((await r.text()).length > 100, name);
      }
      // uPlot is the npm package's own build, not a stand-in.
      assert.match(await (await fetch(`${srv.url}/ui/uPlot.iife.min.js`)).text(), /uPlot/);
      for (const name of ['nothing.js', 'app.js/x', 'index.htm']) {
        const r = await fetch(`${srv.url}/ui/${name}`);
        assert.equal(r.status, 404, name);
      }
      // "/" still answers what Ollama's clients check for.
      assert.equal(await (await fetch(srv.url + '/')).text(), 'Ollama is running');
    } finally {
      await srv.stop();
    }
  });

  test('the snapshot counts a generation while it runs, and its memory and scheduler', async () => {
    const srv = await startServer({ models: [specModel] });
    try {
      const empty = await (await fetch(`${srv.url}/api/dashboard`)).json();
      assert.deepEqual(empty.models, []);
      assert.equal(typeof empty.time_ms, 'number');
      assert.ok(empty.memory.resident_bytes > 0);
      assert.equal(empty.memory.reservations, undefined);
      assert.equal(empty.memory.devices[0].name, 'CPU');
      for (const k of ['running', 'queued', 'requests', 'errors', 'rejected', 'loads', 'evictions']) {
        assert.equal(typeof empty.scheduler[k], 'number', k);
      }

      // A long generation (context shift past num_ctx): snapshots taken while it streams must
      // show its tokens growing before it ends. Greedy, because a sampled random-weight model
      // can draw its end token early (CI once stopped at 297 tokens).
      const response = fetch(`${srv.url}/api/generate`, {
        method: 'POST',
        body: JSON.stringify({ model: 'spec', prompt: 'Once upon a time', options: { num_predict: 4000, num_ctx: 512, temperature: 0 } }),
      });
      const seen = [];
      let finished = false;
      const done = response.then((r) => r.text()).then((text) => {
        finished = true;
        return text;
      });
      while (!finished) {
        const snap = await (await fetch(`${srv.url}/api/dashboard`)).json();
        const m = snap.models.find((x) => x.name === 'spec:latest');
        if (m && !finished) seen.push({ generated: m.live.generated, running: m.running });
        await sleep(100);
      }
      const lines = (await done).trim().split('\n').map((l) => JSON.parse(l));
      const evalCount = lines.at(-1).eval_count;
      assert.ok(evalCount > 1000, `eval_count ${evalCount}`);
      const during = seen.filter((s) => s.running === 1 && s.generated > 0);
      assert.ok(during.length >= 2, `snapshots while running: ${JSON.stringify(seen)}`);
      assert.ok(during.at(-1).generated > during[0].generated, `live counters moved: ${JSON.stringify(during)}`);

      const after = await (await fetch(`${srv.url}/api/dashboard`)).json();
      const m = after.models.find((x) => x.name === 'spec:latest');
      assert.equal(m.running, 0);
      assert.equal(m.live.generated, evalCount);
      assert.ok(m.live.drafted > 0 && m.live.accepted > 0, JSON.stringify(m.live));
      assert.ok(m.live.accepted <= m.live.drafted);
      assert.equal(m.live.depth.reduce((a, b) => a + b, 0), m.live.rounds);
      assert.ok(m.memory.weights > 0 && m.memory.kv_target > 0 && m.memory.kv_draft > 0, JSON.stringify(m.memory));
      assert.equal(after.scheduler.loads, 1);
      assert.equal(after.scheduler.requests, 1);
      assert.ok(m.threads.draft > 0);

      // Grammar-forced tokens are counted too: at a fixed depth every round verifies the
      // forced text it finds (whether the target spells it the grammar's way is the fixture's
      // business).
      const r = await postRaw(`${srv.url}/api/generate`, {
        model: 'spec', prompt: 'JSON:', stream: false, options: { draft_depth: 2 },
        format: { type: 'object', properties: { flag: { type: 'boolean' } }, required: ['flag'], additionalProperties: false },
      });
      assert.equal(r.status, 200, r.text);
      const forced = (await (await fetch(`${srv.url}/api/dashboard`)).json()).models[0].live;
      assert.ok(forced.forced > m.live.forced, JSON.stringify(forced));
      assert.ok(forced.forced_accepted <= forced.forced);
    } finally {
      await srv.stop();
    }
  });

  test('the data follows the API rules; the page does not need the key and never holds it', async () => {
    const srv = await startServer({ env: { SPECD_API_KEY: 'dash-k3y' } });
    try {
      assert.equal((await fetch(`${srv.url}/api/dashboard`)).status, 401);
      const ok = await fetch(`${srv.url}/api/dashboard`, { headers: { Authorization: 'Bearer dash-k3y' } });
      assert.equal(ok.status, 200);
      const page = await fetch(`${srv.url}/ui`);
      assert.equal(page.status, 200);
      const html = await page.text();
      assert.match(html, /data-key-required="true"/);
      assert.ok(!html.includes('dash-k3y'));
      assert.equal((await fetch(`${srv.url}/ui/app.js`)).status, 200);

      // A page on another site cannot read the data, nor reach the page under a foreign name.
      const cross = await fetch(`${srv.url}/api/dashboard`, {
        headers: { Authorization: 'Bearer dash-k3y', Origin: 'http://evil.example' },
      });
      assert.equal(cross.status, 403);
      const rebound = await rawExchange(srv.port, 'GET /ui HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n');
      assert.equal(rebound.status, 403);
    } finally {
      await srv.stop();
    }
  });
});
