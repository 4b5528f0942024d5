// Layers on RPC workers on loopback, one `specd worker` and one llama.cpp `rpc-server` from
// the same pinned tree (SPECD_RPC_SERVER; a second `specd worker` when it is not set, as with
// a user's own llama.cpp checkout): a model split over the host and the two answers the same greedy text as one fully local; /api/ps, the
// ledger and /metrics name the workers' devices as ggml does ("RPC0[127.0.0.1:port]") with
// the bytes each holds; num_gpu moves layers back to the host; a worker killed mid-answer
// ends that answer with an error, and the next request loads without it. Remote workers are
// refused unless allowed. Every wait is bounded.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { after, before, describe } from 'node:test';
import { freePort, runCli, SPECD_BIN, sleep, startServer, test } from './harness.mjs';

const workers = [];
const upstream = process.env.SPECD_RPC_SERVER || null;

async function startWorker({ llama = false } = {}) {
  const port = await freePort();
  const [cmd, args] = llama ? [upstream, ['-H', '127.0.0.1', '-p', String(port), '-t', '1']]
                            : [SPECD_BIN, ['worker', '--port', String(port), '--threads', '1']];
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => { log = (log + d).slice(-20_000); });
  child.stderr.on('data', (d) => { log = (log + d).slice(-20_000); });
  const w = { port, child, log: () => log, endpoint: `127.0.0.1:${port}`, device: `RPC0[127.0.0.1:${port}]` };
  workers.push(w);
  const deadline = Date.now() + 15_000;
  for (;;) {
    assert.ok(Date.now() < deadline, `worker on ${port} did not listen:\n${log}`);
    const up = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (up) break;
    await sleep(100);
  }
  // Its connection of the check above is served and closed before the next client's.
  await sleep(200);
  return w;
}

// The NDJSON lines of a streamed answer as they arrive.
async function* lines(response) {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of response.body) {
    buf += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) yield JSON.parse(line);
    }
  }
  if (buf.trim()) yield JSON.parse(buf);
}

const greedy = (extra = {}) => ({ temperature: 0, num_predict: 24, seed: 1, ...extra });

async function generate(url, options) {
  const r = await fetch(`${url}/api/generate`, {
    method: 'POST',
    body: JSON.stringify({ model: 'tiny', prompt: 'The layers are far away', stream: false, options }),
    signal: AbortSignal.timeout(60_000),
  });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return body;
}

// The devices /api/ps lists: the host first, then the others by name.
const hostThen = (...devices) => ['CPU', ...devices.sort()];

async function ps(url) {
  const r = await fetch(`${url}/api/ps`, { signal: AbortSignal.timeout(10_000) });
  const { models } = await r.json();
  assert.equal(models.length, 1, JSON.stringify(models));
  return models[0];
}

describe('RPC workers', () => {
  let local;
  let split;
  let w1;
  let w2;

  before(async () => {
    w1 = await startWorker();
    if (!upstream) console.log('SPECD_RPC_SERVER is not set: two specd workers instead of one and an rpc-server');
    w2 = await startWorker({ llama: Boolean(upstream) });
    local = await startServer();
    // An even split: the tiny model fits one worker, where the fit alone puts all of it
    // (tested at the end).
    split = await startServer({ env: { SPECD_RPC: `${w1.endpoint},${w2.endpoint}`, SPECD_TENSOR_SPLIT: '1,1' } });
  });

  after(async () => {
    await Promise.all([local, split].filter(Boolean).map((s) => s.stop()));
    for (const w of workers) w.child.kill('SIGKILL');
  });

  test('the server names its devices and workers at start', () => {
    assert.match(split.stderr(), /specd: device CPU \(CPU, .+\): [\d.]+ GiB free of [\d.]+ GiB/);
    for (const w of [w1, w2]) assert.match(split.stderr(), new RegExp(`RPC worker ${w.endpoint}: [\\d.]+ GiB free`));
  });

  // Before the split server loads: a worker serves one client at a time.
  test('SPECD_GPU_OVERHEAD: a fit that must leave more free than a worker has keeps every layer on the host', async () => {
    const roomy = await startServer({ env: { SPECD_RPC: w1.endpoint, SPECD_GPU_OVERHEAD: '100000G' } });
    try {
      assert.equal((await generate(roomy.url, greedy())).eval_count, 24);
      const m = await ps(roomy.url);
      assert.equal(m.size_vram, 0);
      assert.deepEqual(m.devices.map((d) => d.name), ['CPU']);
      assert.match(roomy.stderr(), /no layer fits the offload devices' free memory less SPECD_GPU_OVERHEAD; its layers stay on the CPU/);
    } finally {
      await roomy.stop();
    }
    const bad = await runCli(['serve'], { env: { SPECD_HOST: `127.0.0.1:${await freePort()}`, SPECD_GPU_OVERHEAD: 'lots' }, timeoutMs: 10_000 });
    assert.equal(bad.code, 2, bad.stderr);
  });

  test('all layers on two workers: the same greedy text, the split in /api/ps, the ledger and /metrics', async () => {
    const want = await generate(local.url, greedy());
    const got = await generate(split.url, greedy());
    assert.equal(got.response, want.response);
    assert.ok(got.eval_count > 0);

    const m = await ps(split.url);
    const names = m.devices.map((d) => d.name);
    assert.deepEqual(names, hostThen(w1.device, w2.device));
    const cpu = m.devices[0];
    const d1 = m.devices.find((d) => d.name === w1.device);
    const d2 = m.devices.find((d) => d.name === w2.device);
    for (const d of [d1, d2]) assert.ok(d.weights > 0, `${d.name} holds layers: ${JSON.stringify(m.devices)}`);
    // Every layer went, and its KV with it; the token embeddings stay on the host (llama.cpp
    // never offloads the input layer).
    assert.ok(d1.kv_target + d2.kv_target > 0, JSON.stringify(m.devices));
    assert.equal(cpu.kv_target, 0, JSON.stringify(m.devices));
    assert.ok(cpu.weights > 0);
    assert.equal(m.size_vram, d1.total + d2.total);
    assert.equal(cpu.total + d1.total + d2.total, m.memory.total);

    const ledger = await (await fetch(`${split.url}/api/debug/memory`)).json();
    const onWorkers = ledger.reservations.filter((r) => r.device === w1.device || r.device === w2.device);
    assert.ok(onWorkers.some((r) => r.bucket === 'weights' && r.bytes > 0), JSON.stringify(ledger.reservations));
    assert.deepEqual(ledger.devices.map((d) => d.name), hostThen(w1.device, w2.device));

    const metrics = await (await fetch(`${split.url}/metrics`)).text();
    const line = metrics.split('\n').find((l) => l.startsWith(`specd_device_memory_bytes{device="${w1.device}",bucket="weights"}`));
    assert.ok(line && Number(line.split(' ').pop()) === d1.weights, line);

    // The server without workers keeps everything on the host.
    const plain = await ps(local.url);
    assert.equal(plain.size_vram, 0);
    assert.deepEqual(plain.devices.map((d) => d.name), ['CPU']);
  });

  test('num_gpu keeps the other layers on the host, with the same greedy text', async () => {
    const all = await ps(split.url);
    const want = await generate(local.url, greedy());
    const got = await generate(split.url, greedy({ num_gpu: 1 }));
    assert.equal(got.response, want.response);
    const one = await ps(split.url);
    assert.ok(one.size_vram > 0 && one.size_vram < all.size_vram, `${one.size_vram} vs ${all.size_vram}`);
    assert.ok(one.devices[0].weights > all.devices[0].weights);
    // num_gpu 0: nothing offloaded.
    await generate(split.url, greedy({ num_gpu: 0 }));
    assert.equal((await ps(split.url)).size_vram, 0);
    const bad = await fetch(`${split.url}/api/generate`, {
      method: 'POST', body: JSON.stringify({ model: 'tiny', prompt: 'x', options: { num_gpu: 'all' } }) });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error, /num_gpu/);
  });

  test('a worker busy with another server is left out of a load, which does not wait for it', async () => {
    await generate(split.url, greedy()); // split's runner holds both workers' connections
    const other = await startServer({ env: { SPECD_RPC: w1.endpoint } });
    try {
      const t0 = Date.now();
      const r = await generate(other.url, greedy());
      assert.ok(Date.now() - t0 < 30_000);
      assert.equal(r.response, (await generate(local.url, greedy())).response);
      assert.deepEqual((await ps(other.url)).devices.map((d) => d.name), ['CPU']);
      assert.match(other.stderr(), new RegExp(`RPC worker ${w1.endpoint} did not answer within 3000 ms`));
    } finally {
      await other.stop();
    }
    // The first server's model still answers on both workers.
    assert.equal((await generate(split.url, greedy())).response, (await generate(local.url, greedy())).response);
    assert.deepEqual((await ps(split.url)).devices.map((d) => d.name), hostThen(w1.device, w2.device));
  });

  test('a worker killed mid-answer: that answer ends with an error, the next loads without it', async () => {
    await generate(split.url, greedy()); // every layer on the workers again
    const r = await fetch(`${split.url}/api/generate`, {
      method: 'POST',
      body: JSON.stringify({ model: 'tiny', prompt: 'go on and on', options: { temperature: 0, num_predict: 100000 } }),
      signal: AbortSignal.timeout(60_000),
    });
    assert.equal(r.status, 200);
    let chunks = 0;
    let failure = null;
    for await (const line of lines(r)) {
      if (line.error) { failure = line.error; break; }
      assert.notEqual(line.done, true, 'an answer of 100000 tokens ended early');
      if (++chunks === 5) w2.child.kill('SIGKILL');
    }
    assert.ok(failure, 'the stream ended with an error');
    // The runner's last line is ggml's reason, in one line.
    assert.match(failure, /stopped unexpectedly .*llama\.cpp aborted: ggml-rpc\.cpp:\d+: .*RPC/, failure);

    const again = await generate(split.url, greedy());
    assert.equal(again.response, (await generate(local.url, greedy())).response);
    const m = await ps(split.url);
    assert.deepEqual(m.devices.map((d) => d.name), hostThen(w1.device));
    assert.match(split.stderr(), new RegExp(`RPC worker ${w2.endpoint} did not answer`));
  });
});

describe('RPC settings', () => {
  test('a worker elsewhere is refused unless allowed, and thread runners cannot use workers', async () => {
    const port = await freePort();
    const env = { SPECD_HOST: `127.0.0.1:${port}` };
    const remote = await runCli(['serve', '--rpc', '10.1.2.3:50052'], { env, timeoutMs: 10_000 });
    assert.equal(remote.code, 2, remote.stderr);
    assert.match(remote.stderr, /SPECD_RPC_ALLOW_REMOTE=1/);
    const thread = await runCli(['serve'], { env: { ...env, SPECD_RPC: '127.0.0.1:50052', SPECD_RUNNERS: 'thread' }, timeoutMs: 10_000 });
    assert.equal(thread.code, 2, thread.stderr);
    assert.match(thread.stderr, /SPECD_RUNNERS=process/);
    const malformed = await runCli(['serve', '--rpc', '127.0.0.1'], { env, timeoutMs: 10_000 });
    assert.equal(malformed.code, 2);
    assert.match(malformed.stderr, /host:port/);
  });

  test('a tensor split or a device budget that is not one stops the server at start', async () => {
    const env = { SPECD_HOST: `127.0.0.1:${await freePort()}` };
    for (const split of ['0,0', '1,,1', 'half']) {
      const r = await runCli(['serve'], { env: { ...env, SPECD_TENSOR_SPLIT: split }, timeoutMs: 10_000 });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /SPECD_TENSOR_SPLIT/);
    }
    const r = await runCli(['serve'], { env: { ...env, SPECD_GPU_MEMORY: 'lots' }, timeoutMs: 10_000 });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /SPECD_GPU_MEMORY/);
  });

  test('help names --rpc and the worker', async () => {
    const serve = await runCli(['serve', '--help']);
    assert.match(serve.stdout, /--rpc/);
    const worker = await runCli(['worker', '--help']);
    assert.equal(worker.code, 0);
    assert.match(worker.stdout, /--port/);
    assert.match(worker.stdout, /127\.0\.0\.1/);
  });
});
