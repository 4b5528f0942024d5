// Three specd replicas behind HAProxy, started with deploy/haproxy.cfg as shipped (only its
// addresses moved to free ports): requests for one model always reach the same replica and
// the others never load it, answers stream through, each replica's /api/ps and /metrics show
// its load, and a replica killed under load fails its own requests cleanly while new ones are
// answered by the others. Every wait is bounded. Skipped, saying so, without haproxy
// (scripts/setup.sh installs it).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort, sleep, startServer, test } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const shipped = path.resolve(here, '../../deploy/haproxy.cfg');
const MODELS = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8'];

function findHaproxy() {
  for (const dir of ['/usr/sbin', '/usr/local/sbin', ...(process.env.PATH ?? '').split(':')]) {
    const p = path.join(dir, 'haproxy');
    if (fs.existsSync(p)) return p;
  }
  return null;
}
const haproxy = findHaproxy();

// The shipped file with its frontend on `front` and its three servers on `ports`.
function configFor(front, ports) {
  let text = fs.readFileSync(shipped, 'utf8');
  text = text.replace(/bind 127\.0\.0\.1:11434/, `bind 127.0.0.1:${front}`);
  ports.forEach((p, i) => {
    text = text.replace(new RegExp(`server r${i + 1} 127\\.0\\.0\\.1:\\d+`), `server r${i + 1} 127.0.0.1:${p}`);
  });
  assert.equal((text.match(/server r\d 127\.0\.0\.1:(\d+)/g) ?? []).length, 3, 'three server lines');
  return text;
}

const body = (model, extra = {}) => JSON.stringify({ model, prompt: 'hello there', stream: false,
  options: { temperature: 0, num_predict: 4 }, ...extra });

async function ask(url, model, extra = {}, timeoutMs = 30_000) {
  const r = await fetch(`${url}/api/generate`, { method: 'POST', body: body(model, extra),
    signal: AbortSignal.timeout(timeoutMs) });
  const text = await r.text();
  return { status: r.status, replica: r.headers.get('x-specd-replica'), text };
}

describe('replicas behind HAProxy', { skip: haproxy ? false : 'haproxy is not installed (scripts/setup.sh installs it)' }, () => {
  const replicas = [];
  let proxy = null;
  let proxyLog = '';
  let url = '';
  let dir = '';

  before(async () => {
    for (let i = 0; i < 3; ++i) replicas.push(await startServer({ models: MODELS.map((name) => ({ name })) }));
    const front = await freePort();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-haproxy-'));
    const cfg = path.join(dir, 'haproxy.cfg');
    fs.writeFileSync(cfg, configFor(front, replicas.map((r) => r.port)));
    proxy = spawn(haproxy, ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
    proxy.stdout.on('data', (d) => { proxyLog = (proxyLog + d).slice(-20_000); });
    proxy.stderr.on('data', (d) => { proxyLog = (proxyLog + d).slice(-20_000); });
    url = `http://127.0.0.1:${front}`;
    // Up when every replica has answered through it (round robin spreads GET /api/version).
    const seen = new Set();
    const deadline = Date.now() + 20_000;
    while (seen.size < 3) {
      assert.ok(Date.now() < deadline, `haproxy did not reach all three replicas:\n${proxyLog}`);
      try {
        const r = await fetch(`${url}/api/version`, { signal: AbortSignal.timeout(2000) });
        if (r.ok) seen.add(r.headers.get('x-specd-replica'));
      } catch { /* not up yet */ }
      await sleep(100);
    }
  });

  after(async () => {
    if (proxy) {
      proxy.kill('SIGTERM');
      await new Promise((res) => { if (proxy.exitCode !== null) res(); else proxy.on('exit', res); });
    }
    for (const r of replicas) await r.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the shipped configuration passes haproxy -c', () => {
    const out = execFileSync(haproxy, ['-c', '-f', shipped], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.match(out, /Configuration file is valid/);
  });

  test('requests for one model always reach the same replica; the others never load it', async () => {
    const home = new Map();
    for (let round = 0; round < 3; ++round) {
      for (const m of MODELS) {
        const r = await ask(url, m);
        assert.equal(r.status, 200, r.text);
        assert.ok(r.replica, 'X-Specd-Replica is set');
        if (round === 0) home.set(m, r.replica);
        else assert.equal(r.replica, home.get(m), `${m} moved`);
      }
    }
    // OpenAI's /v1 sends the model in its body too: the same replica.
    const v1 = await fetch(`${url}/v1/chat/completions`, { method: 'POST', signal: AbortSignal.timeout(30_000),
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], model: 'm1', max_tokens: 4 }) });
    assert.equal(v1.status, 200, await v1.text());
    assert.equal(v1.headers.get('x-specd-replica'), home.get('m1'));
    // A body larger than HAProxy's buffer (a long system prompt, as images would be) whose
    // "model" comes first, as Ollama's clients send it: the model's replica still.
    const big = await ask(url, 'm2', { system: 'Be brief. '.repeat(8 << 10) });
    assert.equal(big.status, 200, big.text);
    assert.equal(big.replica, home.get('m2'));
    // Eight models over three replicas: more than one replica is used, and each replica has
    // loaded exactly the models routed to it.
    assert.ok(new Set(home.values()).size > 1, JSON.stringify([...home]));
    for (const [i, r] of replicas.entries()) {
      const ps = await (await fetch(`${r.url}/api/ps`)).json();
      const loaded = ps.models.map((x) => x.name.replace(/:latest$/, '')).sort();
      const routed = MODELS.filter((m) => home.get(m) === `r${i + 1}`).sort();
      assert.deepEqual(loaded, routed, `replica r${i + 1}`);
    }
  });

  test('a streamed answer passes through piece by piece', async () => {
    const r = await fetch(`${url}/api/generate`, { method: 'POST', signal: AbortSignal.timeout(30_000),
      body: body('m3', { stream: true, options: { temperature: 0, num_predict: 200 } }) });
    assert.equal(r.status, 200);
    let reads = 0;
    let text = '';
    for await (const chunk of r.body) {
      reads += 1;
      text += Buffer.from(chunk).toString();
    }
    const lines = text.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines.at(-1).done, true);
    assert.equal(lines.at(-1).eval_count, 200);
    assert.ok(reads > 1, `${reads} reads`);
    const whole = await ask(url, 'm3', { options: { temperature: 0, num_predict: 200 } });
    assert.equal(lines.map((l) => l.response).join(''), JSON.parse(whole.text).response);
  });

  test('each replica shows its load in /api/ps and /metrics', async () => {
    const r = await fetch(`${url}/api/generate`, { method: 'POST', signal: AbortSignal.timeout(60_000),
      body: body('m4', { stream: true, options: { temperature: 0, num_predict: 100_000 } }) });
    const reader = r.body.getReader();
    await reader.read(); // generating now
    const replica = replicas[Number(r.headers.get('x-specd-replica').slice(1)) - 1];
    // The runner refreshes what /api/ps shows a few times a second.
    let m4 = null;
    for (let i = 0; i < 40 && m4?.running !== 1; ++i) {
      if (i > 0) await sleep(100);
      m4 = (await (await fetch(`${replica.url}/api/ps`)).json()).models.find((x) => x.name.startsWith('m4'));
    }
    assert.equal(m4.running, 1, JSON.stringify(m4));
    assert.equal(m4.queued, 0);
    const metrics = await (await fetch(`${replica.url}/metrics`)).text();
    assert.match(metrics, /^specd_model_running\{model="m4:latest"\} 1$/m);
    assert.match(metrics, /^specd_running_sequences 1$/m);
    assert.match(metrics, /^specd_queued_requests 0$/m);
    await reader.cancel();
  });

  test('a replica killed under load: its requests end with an error, new ones are answered elsewhere', async () => {
    const first = await ask(url, 'm5');
    const victim = replicas[Number(first.replica.slice(1)) - 1];
    // Three long streamed answers on the victim, each read until it has started.
    const streams = [];
    for (let i = 0; i < 3; ++i) {
      const r = await fetch(`${url}/api/generate`, { method: 'POST', signal: AbortSignal.timeout(30_000),
        body: body('m5', { stream: true, prompt: `story ${i}`, options: { temperature: 0, num_predict: 100_000 } }) });
      assert.equal(r.headers.get('x-specd-replica'), first.replica);
      const reader = r.body.getReader();
      assert.equal((await reader.read()).done, false);
      streams.push(reader);
    }
    victim.child.kill('SIGKILL');
    // Each in-flight answer ends (an error or an early end), none with a done line.
    for (const reader of streams) {
      let text = '';
      let failed = false;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          text += Buffer.from(value).toString();
        }
      } catch {
        failed = true;
      }
      assert.ok(failed || !text.includes('"done":true'), 'an answer cut by the kill is not reported complete');
    }
    // New requests for the same model: answered by another replica, within a bounded wait
    // (a refused connection is redispatched at once; the health check takes it out in ~4 s).
    let answered = null;
    for (let i = 0; i < 40 && !answered; ++i) {
      const r = await ask(url, 'm5', {}, 10_000).catch((e) => ({ status: 0, text: String(e) }));
      if (r.status === 200) answered = r;
      else await sleep(250);
    }
    assert.ok(answered, 'a request for the killed replica\'s model was answered');
    assert.notEqual(answered.replica, first.replica);
    // The other models keep their replicas, except those that lived on the victim.
    for (const m of MODELS) {
      const r = await ask(url, m);
      assert.equal(r.status, 200, `${m}: ${r.text}`);
      assert.notEqual(r.replica, first.replica);
    }
  });
});
