// The dashboard (/ui) in a real browser: Debian's Chromium, headless, driven by playwright-core
// (no browser download). The page loads with no console errors, shows the loaded model, and
// its charts move while generations run; with an API key set it asks for the key and then
// works, never putting it in a URL. A screenshot is kept as a test artifact.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe } from 'node:test';

import { fixture, sleep, startServer, test } from './harness.mjs';

const CHROMIUM = process.env.SPECD_CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = process.env.SPECD_ARTIFACTS || path.join(os.tmpdir(), 'specd-test-artifacts');
const skip = fs.existsSync(CHROMIUM)
  ? false
  : `Chromium is not installed at ${CHROMIUM} (Debian's package chromium; scripts/test.sh installs it)`;

const specModel = { name: 'spec', from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`] };

async function launch() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

// Generations one after another until stop() (each long enough to span several polls).
function keepGenerating(url, headers = {}) {
  let running = true;
  const loop = (async () => {
    while (running) {
      const r = await fetch(`${url}/api/generate`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'spec', prompt: 'Once upon a time', stream: false, options: { num_predict: 600 } }),
      });
      assert.equal(r.status, 200, await r.text());
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}

// Errors the page logged or threw.
function watchErrors(page) {
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
  return errors;
}

describe('dashboard in Chromium', { skip }, () => {
  test('loads without errors, shows the model, and its charts move while it generates', async () => {
    const srv = await startServer({ models: [specModel] });
    const browser = await launch();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1300 } });
      const errors = watchErrors(page);
      await page.goto(`${srv.url}/ui?interval=250`);
      await page.waitForFunction(() => window.specdDashboard?.samples >= 2);
      assert.equal(await page.isVisible('#no-models'), true);

      const stop = keepGenerating(srv.url);
      let moving;
      try {
        await page.waitForSelector('[data-model="spec:latest"]', { timeout: 30_000 });
        // Rates need two snapshots of the model; then the tokens/s series keeps growing.
        await page.waitForFunction(() => window.specdDashboard.models['spec:latest']?.tokensPerSecond > 0, null, { timeout: 30_000 });
        const first = await page.evaluate(() => ({ ...window.specdDashboard.models['spec:latest'] }));
        await page.waitForFunction((n) => window.specdDashboard.models['spec:latest'].points >= n + 4, first.points, { timeout: 30_000 });
        moving = await page.evaluate(() => ({ ...window.specdDashboard.models['spec:latest'] }));
        assert.ok(moving.generated > first.generated, `${JSON.stringify(first)} -> ${JSON.stringify(moving)}`);
        await page.waitForFunction(() => window.specdDashboard.models['spec:latest'].acceptance > 0, null, { timeout: 30_000 });
      } finally {
        await stop();
      }

      // Every chart is a uPlot canvas; the model's card names it and shows its counters.
      const canvases = await page.locator('canvas').count();
      assert.ok(canvases >= 9, `canvases: ${canvases}`);
      const card = await page.locator('[data-model="spec:latest"]').innerText();
      assert.match(card, /spec/);
      assert.match(card, /tokens\/s/);
      assert.match(card, /acceptance/);
      assert.equal(await page.isVisible('#no-models'), false);
      assert.match(await page.locator('#memory-tiles').innerText(), /resident \(RSS\)/);
      assert.match(await page.locator('#scheduler-tiles').innerText(), /model loads\s+1/);

      fs.mkdirSync(ARTIFACTS, { recursive: true });
      const shot = path.join(ARTIFACTS, 'dashboard.png');
      await page.screenshot({ path: shot, fullPage: true });
      assert.ok(fs.statSync(shot).size > 10_000);
      process.stderr.write(`dashboard screenshot: ${shot}\n`);

      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await srv.stop();
    }
  });

  test('with an API key set it asks for the key, keeps it out of URLs, and then works', async () => {
    const key = 'dash-k3y-123';
    const srv = await startServer({ models: [specModel], env: { SPECD_API_KEY: key } });
    const browser = await launch();
    try {
      const page = await browser.newPage();
      const errors = watchErrors(page);
      const urls = [];
      page.on('request', (r) => urls.push(r.url()));
      await page.goto(`${srv.url}/ui?interval=250`);
      await page.waitForSelector('#key-form:not([hidden])');
      await sleep(600); // no poll is made without the key
      assert.equal(await page.evaluate(() => window.specdDashboard.samples), 0);

      await page.fill('#key', key);
      await page.click('#key-form button');
      await page.waitForFunction(() => window.specdDashboard.samples >= 2);
      assert.equal(await page.isVisible('#key-form'), false);

      const stop = keepGenerating(srv.url, { Authorization: `Bearer ${key}` });
      try {
        await page.waitForFunction(() => window.specdDashboard.models['spec:latest']?.tokensPerSecond > 0, null, { timeout: 30_000 });
      } finally {
        await stop();
      }
      assert.ok(urls.every((u) => !u.includes(key)), urls.join('\n'));
      assert.equal(await page.evaluate(() => sessionStorage.getItem('specd-api-key')), key);
      assert.ok(!(await page.content()).includes(key));
      assert.deepEqual(errors, []);

      // A wrong key is refused and asked for again.
      const page2 = await browser.newPage();
      await page2.goto(`${srv.url}/ui?interval=250`);
      await page2.fill('#key', 'wrong');
      await page2.click('#key-form button');
      await page2.waitForSelector('#key-form:not([hidden])');
      await page2.waitForFunction(() => /not accepted/.test(document.getElementById('status').textContent));
    } finally {
      await browser.close();
      await srv.stop();
    }
  });
});
