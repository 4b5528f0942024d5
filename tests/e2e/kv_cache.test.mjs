// The KV cache's type (SPECD_KV_CACHE_TYPE, as OLLAMA_KV_CACHE_TYPE) and flash attention
// (SPECD_FLASH_ATTENTION): a q8_0 or q4_0 cache holds 34/64 or 18/64 of f16's bytes in the
// ledger, answers run to their end (a context shift included), speculation verifies against
// the quantized cache with the same greedy text as without drafting, a model whose heads the
// quantized blocks do not divide keeps f16 and says so, and settings llama.cpp cannot honour
// stop the server at start with a usage error. The pair has heads of 64 values; tiny of 16.
import assert from 'node:assert/strict';
import { after, before, describe } from 'node:test';
import { fixture, freePort, runCli, startServer, test } from './harness.mjs';

const MODELS = [{ name: 'tiny' },
  { name: 'pair', from: 'pair-wide-heads-target.gguf', lines: [`DRAFT ${fixture('pair-wide-heads-draft.gguf')}`] }];

async function generate(s, model, options) {
  const r = await fetch(`${s.url}/api/generate`, {
    method: 'POST', signal: AbortSignal.timeout(120_000),
    body: JSON.stringify({ model, prompt: 'Count the cached keys', stream: false, options: { temperature: 0, seed: 3, ...options } }),
  });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return body;
}

async function kvBytes(s, model) {
  const { models } = await (await fetch(`${s.url}/api/ps`)).json();
  return models.find((m) => m.name.startsWith(model)).memory.kv_target;
}

describe('KV cache type', () => {
  const servers = {};
  before(async () => {
    for (const type of ['f16', 'q8_0', 'q4_0']) {
      servers[type] = await startServer({ models: MODELS, env: type === 'f16' ? {} : { SPECD_KV_CACHE_TYPE: type } });
    }
  });
  after(async () => Promise.all(Object.values(servers).map((s) => s.stop())));

  test('a quantized cache holds its share of f16\'s bytes', async () => {
    const bytes = {};
    for (const [type, s] of Object.entries(servers)) {
      const r = await generate(s, 'pair', { num_predict: 8, draft_num_predict: 0 });
      assert.equal(r.eval_count, 8);
      bytes[type] = await kvBytes(s, 'pair');
      const { models } = await (await fetch(`${s.url}/api/ps`)).json();
      assert.equal(models.find((m) => m.name.startsWith('pair')).kv_cache_type, type);
    }
    assert.ok(bytes.f16 > 0);
    assert.ok(Math.abs(bytes.q8_0 / bytes.f16 - 34 / 64) < 0.01, JSON.stringify(bytes));
    assert.ok(Math.abs(bytes.q4_0 / bytes.f16 - 18 / 64) < 0.01, JSON.stringify(bytes));
    assert.match(servers.q8_0.stderr(), /KV cache q8_0/);
  });

  test('a model whose heads are not multiples of 64 values keeps f16, and says so', async () => {
    const r = await generate(servers.q8_0, 'tiny', { num_predict: 4 });
    assert.equal(r.eval_count, 4);
    const { models } = await (await fetch(`${servers.q8_0.url}/api/ps`)).json();
    assert.equal(models.find((m) => m.name.startsWith('tiny')).kv_cache_type, 'f16');
    assert.match(servers.q8_0.stderr(), /tiny:latest: its attention heads are not a multiple of 64 values, which a q8_0 cache needs/);
  });

  test('an answer past the context shifts a quantized cache and runs to its end', async () => {
    for (const type of ['q8_0', 'q4_0']) {
      const r = await generate(servers[type], 'pair', { num_ctx: 64, num_predict: 150, draft_num_predict: 0 });
      assert.equal(r.eval_count, 150, type);
      assert.equal(r.done_reason, 'length');
    }
  });

  test('drafts verified against a quantized cache: the same greedy text as without drafting', async () => {
    for (const type of ['q8_0', 'q4_0']) {
      const { models } = await (await fetch(`${servers[type].url}/api/ps`)).json();
      assert.equal(models.find((m) => m.name.startsWith('pair')).kv_cache_type, type, 'the cache is quantized');
      const plain = await generate(servers[type], 'pair', { num_predict: 48, draft_num_predict: 0 });
      const drafted = await generate(servers[type], 'pair', { num_predict: 48 });
      assert.ok(drafted.speculation.drafted > 0, JSON.stringify(drafted.speculation));
      assert.equal(drafted.response, plain.response, type);
    }
  });
});

describe('KV cache settings', () => {
  test('what llama.cpp cannot do stops the server at start', async () => {
    const env = { SPECD_HOST: `127.0.0.1:${await freePort()}` };
    const bad = await runCli(['serve'], { env: { ...env, SPECD_KV_CACHE_TYPE: 'q5_1' }, timeoutMs: 10_000 });
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /KV_CACHE_TYPE must be f16, q8_0 or q4_0/);
    const noFlash = await runCli(['serve'], { env: { ...env, OLLAMA_KV_CACHE_TYPE: 'q8_0', SPECD_FLASH_ATTENTION: '0' }, timeoutMs: 10_000 });
    assert.equal(noFlash.code, 2, noFlash.stderr);
    assert.match(noFlash.stderr, /needs flash attention/);
    const badFlash = await runCli(['serve'], { env: { ...env, OLLAMA_FLASH_ATTENTION: 'maybe' }, timeoutMs: 10_000 });
    assert.equal(badFlash.code, 2, badFlash.stderr);
  });

  test('flash attention off with an f16 cache serves', async () => {
    const s = await startServer({ env: { SPECD_FLASH_ATTENTION: '0' } });
    try {
      const r = await generate(s, 'tiny', { num_predict: 4 });
      assert.equal(r.eval_count, 4);
    } finally {
      await s.stop();
    }
  });
});
