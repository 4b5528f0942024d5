// Memory through the real server: the ledger's breakdown in /api/ps, /api/debug/memory and
// /metrics; the invariant that nothing is owned by a request once it has answered; the prompt
// cache within its budget, restoring a prefix without changing the answer; and a short soak
// (the long one is `scripts/soak.sh`).
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { fixture, startServer, test, useServer } from './harness.mjs';
import { ledgerViolations, readMemory, runSoak } from './soak_workload.mjs';

const pairModel = { name: 'pair', from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`] };
const visModel = { name: 'vis', from: 'vision-text.gguf', lines: [`FROM ${fixture('vision-mmproj.gguf')}`] };
const BUDGET = 1 << 20; // a few saved states of the soak's prompts: evictions happen

function longPrompt(topic) {
  let p = `Notes about ${topic}.`;
  for (let i = 0; i < 10; ++i) p += ` Item ${i} of the ${topic} list is worth keeping.`;
  return p;
}

async function metric(url, name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  assert.ok(line, `/metrics has ${name}`);
  return Number(line.split(' ').pop());
}

describe('memory', () => {
  const h = useServer({ models: [pairModel, visModel], env: { SPECD_PROMPT_CACHE: String(BUDGET) } });

  test('/api/ps breaks the loaded model down by bucket', async () => {
    const { client } = h.srv;
    await client.generate({ model: 'pair', prompt: 'hello', stream: false, options: { num_predict: 4 } });
    const ps = await client.ps();
    assert.equal(ps.models.length, 1);
    const m = ps.models[0].memory;
    assert.ok(m, '/api/ps has memory');
    for (const b of ['weights', 'kv_target', 'kv_draft', 'compute']) assert.ok(m[b] > 0, `${b} > 0`);
    assert.equal(m.request, 0);
    assert.equal(m.images, 0);
    const sum = ['weights', 'kv_target', 'kv_draft', 'compute', 'prompt_cache', 'images', 'grammar', 'request']
      .reduce((a, b) => a + m[b], 0);
    assert.equal(m.total, sum);
    assert.equal(ps.models[0].size, m.total);
  });

  test('/api/debug/memory lists owners and reservations; /metrics has the buckets', async () => {
    const { client, url } = h.srv;
    await client.generate({ model: 'pair', prompt: 'hi', stream: false, format: 'json', options: { num_predict: 8 } });
    const mem = await readMemory(url);
    assert.deepEqual(ledgerViolations(mem), []);
    assert.ok(mem.owners.request.created >= 1);
    assert.equal(mem.owners.request.created, mem.owners.request.closed);
    const model = mem.reservations.filter((r) => r.owner.kind === 'model');
    assert.ok(model.some((r) => r.bucket === 'weights' && r.bytes > 0));
    // The constrained request built the model's vocabulary index: model-owned grammar bytes.
    assert.ok(model.some((r) => r.bucket === 'grammar' && r.bytes > 0));
    assert.ok(mem.resident_bytes > 0);
    assert.equal(await metric(url, 'specd_memory_bytes{bucket="weights"}'), mem.buckets.weights);
    assert.equal(await metric(url, 'specd_memory_bytes{bucket="request"}'), 0);
    assert.equal(await metric(url, 'specd_prompt_cache_budget_bytes'), BUDGET);
    assert.ok((await metric(url, 'process_resident_memory_bytes')) > 0);
    // The allocator's own view: which malloc, and its counts (the ones it keeps).
    const a = mem.allocator;
    assert.ok(['jemalloc', 'glibc', 'sanitizer'].includes(a.name), `allocator ${a.name}`);
    assert.ok(a.allocated_bytes > 0 && a.mapped_bytes >= a.allocated_bytes, JSON.stringify(a));
    assert.ok(a.free_bytes >= 0);
    // specd serve gives every buffer from 128 KiB up its own mapping (docs/memory.md).
    if (a.name === 'glibc') assert.equal(a.mmap_threshold_bytes, 128 * 1024);
    assert.ok((await metric(url, 'specd_allocator_bytes{kind="allocated"}')) > 0);
    assert.equal(await metric(url, `specd_allocator_info{name="${a.name}",version="${a.version}"}`), 1);
  });

  test('a restored prefix gives the same answer, with speculation on and off', async () => {
    const { client, url } = h.srv;
    for (const draft of [undefined, 0]) {
      const options = { temperature: 0, num_predict: 24, ...(draft === undefined ? {} : { draft_num_predict: draft }) };
      const a = longPrompt(`garden ${draft}`);
      const first = await client.generate({ model: 'pair', prompt: a, stream: false, options });
      const hits0 = (await readMemory(url)).prompt_cache.hits;
      await client.generate({ model: 'pair', prompt: longPrompt(`harbour ${draft}`), stream: false, options });
      const again = await client.generate({ model: 'pair', prompt: a, stream: false, options });
      assert.equal(again.response, first.response);
      assert.deepEqual(again.context, first.context);
      assert.equal(again.prompt_eval_count, 1, 'only the last prompt token is evaluated');
      assert.ok(first.prompt_eval_count > 40);
      const mem = await readMemory(url);
      assert.equal(mem.prompt_cache.hits, hits0 + 1);
      assert.deepEqual(ledgerViolations(mem), []);
    }
  });

  test('short soak: every request leaves the ledger clean and the cache within budget', async () => {
    const { client, url } = h.srv;
    const problems = [];
    let maxCache = 0;
    await runSoak({
      client, url, model: 'pair', visionModel: 'vis', n: 30,
      onSample: (i, mem) => {
        for (const p of ledgerViolations(mem)) problems.push(`after request ${i}: ${p}`);
        maxCache = Math.max(maxCache, mem.prompt_cache.bytes);
      },
    });
    assert.deepEqual(problems, []);
    const mem = await readMemory(url);
    assert.ok(mem.prompt_cache.stores > 0, 'states were saved');
    assert.ok(mem.prompt_cache.hits > 0, 'states were restored');
    assert.ok(mem.prompt_cache.evictions > 0, 'the budget forced evictions');
    assert.ok(maxCache <= BUDGET);
  });
});

describe('memory without a prompt cache', () => {
  test('SPECD_PROMPT_CACHE=0: nothing saved, answers unchanged', async () => {
    const srv = await startServer({ models: [pairModel], env: { SPECD_PROMPT_CACHE: '0' } });
    try {
      const options = { temperature: 0, num_predict: 16 };
      const a = longPrompt('meadow');
      const first = await srv.client.generate({ model: 'pair', prompt: a, stream: false, options });
      await srv.client.generate({ model: 'pair', prompt: longPrompt('valley'), stream: false, options });
      const again = await srv.client.generate({ model: 'pair', prompt: a, stream: false, options });
      assert.equal(again.response, first.response);
      // Only the few tokens it shares with the "valley" prompt come from the live KV.
      assert.ok(again.prompt_eval_count > first.prompt_eval_count - 16,
        `${again.prompt_eval_count} of ${first.prompt_eval_count} evaluated again`);
      const mem = await readMemory(srv.url);
      assert.equal(mem.prompt_cache.budget_bytes, 0);
      assert.equal(mem.prompt_cache.entries, 0);
      assert.equal(mem.buckets.prompt_cache, 0);
      assert.deepEqual(ledgerViolations(mem), []);
    } finally {
      await srv.stop();
    }
  });
});

describe('the allocator set-up', () => {
  test("glibc's thresholds set in the environment are left as they are (docs/memory.md's opt-out)", async () => {
    const tunables = 'glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864';
    const srv = await startServer({ models: [pairModel], env: { GLIBC_TUNABLES: tunables } });
    try {
      const { allocator } = await readMemory(srv.url);
      // specd reports the threshold only where it set one itself.
      if (allocator.name === 'glibc') assert.equal(allocator.mmap_threshold_bytes, undefined, JSON.stringify(allocator));
      const r = await srv.client.generate({ model: 'pair', prompt: 'Hello', stream: false, options: { num_predict: 4 } });
      assert.equal(r.eval_count, 4);
    } finally {
      await srv.stop();
    }
  });
});
