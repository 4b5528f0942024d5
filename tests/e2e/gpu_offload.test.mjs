// GPU offload through the real binary of a GPU build (label `gpu`: `scripts/test.sh vulkan`,
// where ggml's Vulkan backend runs on Mesa's lavapipe, a CPU Vulkan driver; the same checks
// hold on a real GPU). A fixture model fully and partially offloaded: its log-probabilities
// agree with the host's (num_gpu 0) within LOGPROB_TOLERANCE; /api/ps size_vram equals the
// ledger's device buckets; SPECD_GPU_MEMORY (a device budget) forces a partial offload whose
// size fits that budget, as the fit computed it from the buffer sizes; speculation and a JSON
// schema still answer right on the device; main_gpu past the last device is a 400; with a
// second device (an RPC worker) a model that fits one goes to one, main_gpu picks which, and
// SPECD_TENSOR_SPLIT spreads it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { after, before, describe } from 'node:test';
import { fixture, SPECD_BIN, sleep, startServer, test } from './harness.mjs';

const GPU = process.env.SPECD_GPU || 'vulkan';
const DEVICE = { vulkan: 'Vulkan0', cuda: 'CUDA0', metal: 'MTL0' }[GPU];
// Natural-log units: per token, the chosen token's log-probability (and each of the top 5) on
// the device against the host's. Measured on lavapipe: up to 8.2e-3 apart (f16 matrix products
// on the device against the CPU's); a wrong layer or cache moves them by whole units.
const LOGPROB_TOLERANCE = 0.05;

const pairModel = { name: 'pair', from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`] };
const MODELS = [{ name: 'tiny' }, pairModel, { name: 'hostonly', from: 'tiny.gguf', lines: ['PARAMETER num_gpu 0'] }];
const PROMPT = 'The device holds the layers';
const greedy = (extra = {}) => ({ temperature: 0, seed: 1, num_predict: 24, ...extra });

async function generate(url, body) {
  const r = await fetch(`${url}/api/generate`, {
    method: 'POST', signal: AbortSignal.timeout(120_000),
    body: JSON.stringify({ model: 'tiny', prompt: PROMPT, stream: false, ...body }),
  });
  const json = await r.json();
  return { status: r.status, ...json };
}

async function ok(url, body) {
  const r = await generate(url, body);
  assert.equal(r.status, 200, JSON.stringify(r));
  return r;
}

async function psModel(url, name) {
  const { models } = await (await fetch(`${url}/api/ps`, { signal: AbortSignal.timeout(10_000) })).json();
  const m = models.find((x) => x.name.startsWith(name));
  assert.ok(m, JSON.stringify(models));
  return m;
}

const byName = (m, name) => m.devices.find((d) => d.name === name);

// The device's and the host's answers token by token: equal tokens with log-probabilities within
// the tolerance, up to a step where the host's two best were a near-tie (greedy text may differ
// only there, DESIGN.md).
function assertAgree(host, dev, label) {
  assert.ok(host.logprobs.length > 0);
  let most = 0;
  for (let i = 0; i < Math.min(host.logprobs.length, dev.logprobs.length); ++i) {
    const a = host.logprobs[i];
    const b = dev.logprobs[i];
    if (a.token !== b.token) {
      const [t0, t1] = a.top_logprobs;
      assert.ok(t0.logprob - t1.logprob < 2 * LOGPROB_TOLERANCE,
        `${label}: token ${i} differs (${JSON.stringify(a.token)} vs ${JSON.stringify(b.token)}) without a near-tie`);
      return;
    }
    assert.ok(Math.abs(a.logprob - b.logprob) <= LOGPROB_TOLERANCE,
      `${label}: token ${i} logprob ${a.logprob} on the host, ${b.logprob} on ${DEVICE}`);
    most = Math.max(most, Math.abs(a.logprob - b.logprob));
    for (const t of b.top_logprobs) {
      const same = a.top_logprobs.find((x) => x.token === t.token);
      if (same) assert.ok(Math.abs(same.logprob - t.logprob) <= LOGPROB_TOLERANCE, `${label}: top ${JSON.stringify(t)}`);
    }
  }
  assert.equal(dev.response, host.response, label);
  console.log(`${label}: ${host.logprobs.length} tokens, largest logprob difference ${most.toExponential(2)}`);
}

async function startWorker() {
  const port = await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
  const child = spawn(SPECD_BIN, ['worker', '--port', String(port), '--threads', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => { log = (log + d).slice(-20_000); });
  child.stderr.on('data', (d) => { log = (log + d).slice(-20_000); });
  child.on('exit', (code, signal) => { log += `\n[worker exited: code ${code}, signal ${signal}]`; });
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
  await sleep(200); // the check's connection is served and closed before the server's
  return { child, endpoint: `127.0.0.1:${port}`, device: `RPC0[127.0.0.1:${port}]`, log: () => log };
}

describe(`GPU offload (${GPU})`, () => {
  let srv;
  before(async () => {
    srv = await startServer({ models: MODELS, env: { SPECD_NUM_PARALLEL: '1' } });
  });
  after(async () => srv?.stop());

  test('the server names the GPU at start', () => {
    assert.match(srv.stderr(), new RegExp(`specd: device ${DEVICE} \\((GPU|integrated GPU), .+\\): [\\d.]+ GiB free of [\\d.]+ GiB`));
  });

  test('all layers on the device: the host\'s log-probabilities, size_vram equal to the ledger\'s device buckets', async () => {
    const host = await ok(srv.url, { options: greedy({ num_gpu: 0 }), logprobs: true, top_logprobs: 5 });
    assert.equal((await psModel(srv.url, 'tiny')).size_vram, 0);

    const dev = await ok(srv.url, { options: greedy(), logprobs: true, top_logprobs: 5 });
    assertAgree(host, dev, 'all layers');
    const m = await psModel(srv.url, 'tiny');
    assert.deepEqual(m.devices.map((d) => d.name), ['CPU', DEVICE]);
    const gpu = byName(m, DEVICE);
    const cpu = byName(m, 'CPU');
    assert.ok(gpu.weights > 0 && gpu.kv_target > 0, JSON.stringify(m.devices));
    assert.equal(cpu.kv_target, 0, 'every layer\'s KV is on the device');
    assert.ok(m.size_vram > 0);
    assert.equal(m.size_vram, gpu.total);
    assert.equal(cpu.total + gpu.total, m.memory.total);

    const ledger = await (await fetch(`${srv.url}/api/debug/memory`)).json();
    const onDevice = ledger.reservations.filter((r) => r.device === DEVICE).reduce((s, r) => s + r.bytes, 0);
    assert.equal(onDevice, m.size_vram, JSON.stringify(ledger.reservations));
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    const line = metrics.split('\n').find((l) => l.startsWith(`specd_device_memory_bytes{device="${DEVICE}",bucket="weights"}`));
    assert.ok(line && Number(line.split(' ').pop()) === gpu.weights, line);

    // use_mmap (Ollama's option) reloads; the offloaded layers are copied to the device either way.
    const unmapped = await ok(srv.url, { options: greedy({ use_mmap: false }) });
    assert.equal(unmapped.response, dev.response);
    assert.equal(byName(await psModel(srv.url, 'tiny'), DEVICE).weights, gpu.weights);
  });

  test('some layers on the device (num_gpu): the host\'s log-probabilities, fewer bytes off the host', async () => {
    const host = await ok(srv.url, { options: greedy({ num_gpu: 0 }), logprobs: true, top_logprobs: 5 });
    await ok(srv.url, { options: greedy() });
    const all = await psModel(srv.url, 'tiny');
    const dev = await ok(srv.url, { options: greedy({ num_gpu: 2 }), logprobs: true, top_logprobs: 5 });
    assertAgree(host, dev, 'num_gpu 2');
    const some = await psModel(srv.url, 'tiny');
    assert.ok(some.size_vram > 0 && some.size_vram < all.size_vram, `${some.size_vram} vs ${all.size_vram}`);
    assert.ok(byName(some, 'CPU').kv_target > 0, 'the host keeps the other layers\' KV');
  });

  test('speculation and a JSON schema answer right on the device', async () => {
    const on = await ok(srv.url, { model: 'pair', options: greedy({ num_predict: 48, draft_depth: 4 }) });
    const off = await ok(srv.url, { model: 'pair', options: greedy({ num_predict: 48, draft_num_predict: 0 }) });
    assert.equal(on.response, off.response);
    assert.ok(on.speculation.accepted > 0, JSON.stringify(on.speculation));
    // The draft went with the target to the device, its KV with it (as llama-server places it).
    const pair = await psModel(srv.url, 'pair');
    assert.ok(byName(pair, DEVICE).weights > 0 && byName(pair, DEVICE).kv_draft > 0, JSON.stringify(pair.devices));
    assert.equal(byName(pair, 'CPU').kv_draft, 0, JSON.stringify(pair.devices));
    assert.equal(pair.size_vram, byName(pair, DEVICE).total);
    // num_gpu 0: target and draft on the host, the same text.
    const host = await ok(srv.url, { model: 'pair', options: greedy({ num_predict: 48, draft_depth: 4, num_gpu: 0 }) });
    assert.equal((await psModel(srv.url, 'pair')).size_vram, 0);
    assert.ok(host.speculation.accepted > 0);

    const schema = { type: 'object', properties: { color: { enum: ['red', 'green', 'blue'] }, ok: { type: 'boolean' } },
      required: ['color', 'ok'], additionalProperties: false };
    const r = await ok(srv.url, { model: 'pair', format: schema, options: greedy({ num_predict: 64 }) });
    assert.equal(r.done_reason, 'stop', r.response);
    const parsed = JSON.parse(r.response);
    assert.ok(['red', 'green', 'blue'].includes(parsed.color) && typeof parsed.ok === 'boolean', r.response);
  });

  test('PARAMETER num_gpu 0 keeps a model on the host; a request\'s num_gpu overrides it', async () => {
    await ok(srv.url, { model: 'hostonly', options: greedy() });
    assert.equal((await psModel(srv.url, 'hostonly')).size_vram, 0);
    await ok(srv.url, { model: 'hostonly', options: greedy({ num_gpu: -1 }) });
    assert.ok((await psModel(srv.url, 'hostonly')).size_vram > 0);
  });

  test('main_gpu past the last device is a 400 naming the devices', async () => {
    const r = await generate(srv.url, { options: greedy({ main_gpu: 1 }) });
    assert.equal(r.status, 400, JSON.stringify(r));
    assert.match(r.error, new RegExp(`main_gpu 1 is not an offload device \\(there are 1: 0: ${DEVICE}\\)`));
    assert.equal((await ok(srv.url, { options: greedy({ main_gpu: 0 }) })).eval_count, 24);
  });
});

describe('a device budget (SPECD_GPU_MEMORY) forces a partial offload', () => {
  // deep.gguf: 8 layers that outweigh its embeddings and output, and a small batch, whose
  // compute buffer (the batch's logits over a 32k vocabulary) would otherwise outweigh them.
  const DEEP = [{ name: 'deep', from: 'deep.gguf' }];
  const small = (extra = {}) => greedy({ num_batch: 64, ...extra });
  const deep = (url, body) => ok(url, { model: 'deep', ...body });
  test('the device holds what fits the budget, the host the rest, with the host\'s log-probabilities', async () => {
    const full = await startServer({ models: DEEP, env: { SPECD_GPU_OVERHEAD: '0' } });
    let whole;
    let host;
    let layers;
    try {
      const show = await (await fetch(`${full.url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'deep' }) })).json();
      layers = Object.entries(show.model_info).find(([k]) => k.endsWith('.block_count'))[1];
      host = await deep(full.url, { options: small({ num_gpu: 0 }), logprobs: true, top_logprobs: 5 });
      await deep(full.url, { options: small() });
      whole = byName(await psModel(full.url, 'deep'), DEVICE);
    } finally {
      await full.stop();
    }
    // Room for about half of the layers beside the device's compute buffer.
    const budget = Math.floor(whole.total - (whole.weights + whole.kv_target) / 2);
    console.log(`whole model on ${DEVICE}: ${JSON.stringify(whole)}; budget ${budget}`);
    const srv = await startServer({ models: DEEP, env: { SPECD_GPU_OVERHEAD: '0', SPECD_GPU_MEMORY: String(budget) } });
    try {
      const dev = await deep(srv.url, { options: small(), logprobs: true, top_logprobs: 5 });
      assertAgree(host, dev, 'budget');
      const m = await psModel(srv.url, 'deep');
      const gpu = byName(m, DEVICE);
      assert.ok(gpu && gpu.weights > 0, JSON.stringify(m.devices));
      // The fit's projection from the buffer sizes: what it placed fits the budget, and it used
      // the room (two layers' weights and KV more would not have fitted; the layers hold nearly
      // all of the device's bytes).
      assert.ok(gpu.total <= budget, `${gpu.total} on the device, budget ${budget}`);
      assert.ok(gpu.weights < whole.weights && byName(m, 'CPU').kv_target > 0, JSON.stringify(m.devices));
      const perLayer = (whole.weights + whole.kv_target) / layers;
      assert.ok(gpu.total > budget - 2 * perLayer, `${gpu.total} on the device leaves more than two layers' room of ${budget}`);
      assert.equal(m.size_vram, gpu.total);
      console.log(`budget ${budget}: ${JSON.stringify(gpu)} on ${DEVICE}, ${JSON.stringify(byName(m, 'CPU'))} on the host`);
    } finally {
      await srv.stop();
    }
  });

  test('an idle model leaves the device to a model that then fits whole; a busy one stays', async () => {
    const models = [{ name: 'deep', from: 'deep.gguf' }, { name: 'deep2', from: 'deep.gguf' }];
    // One sequence each: the scheduler sizes a load by the estimate for the sequences it asks
    // for (SPECD_NUM_PARALLEL, else one), as it does for the host's budget.
    const env = { SPECD_GPU_OVERHEAD: '0', SPECD_NUM_PARALLEL: '1' };
    const probe = await startServer({ models, env });
    let whole;
    try {
      await ok(probe.url, { model: 'deep', options: small() });
      whole = byName(await psModel(probe.url, 'deep'), DEVICE).total;
    } finally {
      await probe.stop();
    }
    // Room for one whole model and a half.
    const srv = await startServer({ models, env: { ...env, SPECD_GPU_MEMORY: String(Math.floor(whole * 1.5)) } });
    try {
      await ok(srv.url, { model: 'deep', options: small() });
      await ok(srv.url, { model: 'deep2', options: small() });
      const { models: loaded } = await (await fetch(`${srv.url}/api/ps`)).json();
      assert.deepEqual(loaded.map((m) => m.name), ['deep2:latest'], 'the idle model went');
      assert.equal(byName(loaded[0], DEVICE).total, whole, 'the new one is whole on the device');
      assert.equal(byName(loaded[0], 'CPU').kv_target, 0);

      // deep2 busy with an endless streamed answer: deep loads beside it with what is left.
      const stop = new AbortController();
      const long = await fetch(`${srv.url}/api/generate`, { method: 'POST', signal: stop.signal,
        body: JSON.stringify({ model: 'deep2', prompt: PROMPT, options: small({ num_predict: 100000 }) }) });
      assert.equal(long.status, 200);
      const reader = long.body.getReader();
      await reader.read(); // the first piece: deep2 is generating
      await ok(srv.url, { model: 'deep', options: small({ num_predict: 4 }) });
      const both = (await (await fetch(`${srv.url}/api/ps`)).json()).models;
      assert.deepEqual(both.map((m) => m.name).sort(), ['deep2:latest', 'deep:latest']);
      const d = byName(both.find((m) => m.name === 'deep:latest'), DEVICE);
      assert.ok(!d || d.total < whole, `deep got what deep2 left: ${JSON.stringify(d)}`);
      const total = both.reduce((sum, m) => sum + (byName(m, DEVICE)?.total ?? 0), 0);
      assert.ok(total <= Math.floor(whole * 1.5), `${total} on the device, budget ${Math.floor(whole * 1.5)}`);
      stop.abort();
      await reader.closed.catch(() => {});
    } finally {
      await srv.stop();
    }
  });
});

// One worker per server: a ggml RPC worker serving a Vulkan device (lavapipe here) can corrupt
// its heap when a client connects after another has left ("malloc(): unsorted double linked list
// corrupted"; llama.cpp's own rpc-server from the same tree too), docs/gpu.md.
describe('two devices: the GPU and an RPC worker', () => {
  let worker;
  const workers = [];
  before(async () => { worker = await startWorker(); workers.push(worker); });
  after(() => workers.forEach((w) => w.child.kill('SIGKILL')));


  test('a model that fits one device goes to one; main_gpu picks it; SPECD_TENSOR_SPLIT spreads it', async () => {
    try {
      await oneThenSpread();
    } catch (e) {
      console.log(`worker's log:\n${worker.log().split('\n').filter((l) => !/client connection/.test(l)).join('\n')}`);
      throw e;
    }
  });

  async function oneThenSpread() {
    const one = await startServer({ env: { SPECD_RPC: worker.endpoint } });
    try {
      const want = (await ok(one.url, { options: greedy({ num_gpu: 0 }) })).response;
      assert.equal((await ok(one.url, { options: greedy() })).response, want);
      let m = await psModel(one.url, 'tiny');
      const holding = m.devices.filter((d) => d.name !== 'CPU' && d.weights > 0).map((d) => d.name);
      assert.equal(holding.length, 1, JSON.stringify(m.devices));
      assert.ok([DEVICE, worker.device].includes(holding[0]));

      assert.equal((await ok(one.url, { options: greedy({ main_gpu: 1 }) })).response, want);
      m = await psModel(one.url, 'tiny');
      assert.deepEqual(m.devices.filter((d) => d.weights > 0 && d.name !== 'CPU').map((d) => d.name), [worker.device]);
    } finally {
      await one.stop();
    }
    worker = await startWorker();
    workers.push(worker);
    const spread = await startServer({ env: { SPECD_RPC: worker.endpoint, SPECD_TENSOR_SPLIT: '1,1' } });
    try {
      await ok(spread.url, { options: greedy() });
      const m = await psModel(spread.url, 'tiny');
      for (const name of [DEVICE, worker.device]) assert.ok(byName(m, name)?.weights > 0, `${name}: ${JSON.stringify(m.devices)}`);
    } finally {
      await spread.stop();
    }
  }
});
