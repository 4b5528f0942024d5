// Bounded work for any single request, through the real server: a prompt of tens of MB, a
// prompt far over the context, a client that leaves during a long prompt, any num_ctx and
// num_batch, and concurrent requests for more models than SPECD_MAX_LOADED_MODELS. Every
// case ends with a normal request that must still succeed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { describe } from 'node:test';
import { postRaw, sleep, test, useServer } from './harness.mjs';

const MAX_LOADED = 2;
const spares = ['m1', 'm2', 'm3', 'm4'];
const h = useServer({
  models: [{ name: 'tiny' }, { name: 'long', from: 'tiny-longctx.gguf' }, ...spares.map((name) => ({ name }))],
  // The budget is far below what num_ctx 16M would need unclamped on tiny (8 GiB of KV) and
  // the compute buffer of num_batch 65536 (9 GB), above one sequence of 2^20 tokens (1.6 GB).
  env: { SPECD_MAX_LOADED_MODELS: String(MAX_LOADED), SPECD_MAX_MEMORY: '3G' },
});

const pid = () => h.srv.child.pid;
const status = () => fs.readFileSync(`/proc/${pid()}/status`, 'utf8');
const kib = (field) => Number(status().match(new RegExp(`${field}:\\s+(\\d+)`))[1]);
// Writing 5 to clear_refs resets the peak resident size (VmHWM) to the current one.
const resetPeak = () => fs.writeFileSync(`/proc/${pid()}/clear_refs`, '5');
// Sanitizer builds keep freed memory in quarantine and run slower: sizes and times are
// then reported, not asserted.
const sanitized = () => /lib[at]san/.test(fs.readFileSync(`/proc/${pid()}/maps`, 'utf8'));

async function normalRequest(model = 'tiny') {
  const r = await postRaw(`${h.srv.url}/api/generate`, { model, prompt: 'Hello', stream: false, options: { num_predict: 4 } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.eval_count, 4);
}

// POSTs on a connection of its own: a pooled keep-alive connection that the server closes
// as idle while tens of MB are written to it fails the write (EPIPE), whatever the server does
// with the request.
function postFresh(url, payload) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let body = null;
        try {
          body = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode, text, body });
      });
    });
    req.setTimeout(60_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(payload);
  });
}

function words(bytes) {
  const w = 'many words in a very long prompt about nothing at all. ';
  return w.repeat(Math.ceil(bytes / w.length)).slice(0, bytes);
}

describe('bounded work per request', () => {
  test('a 50 MB prompt is refused in seconds without the memory of its copies (generate, chat, /v1, embed)', async () => {
    const text = words(50_000_000);
    // Built first: an idle keep-alive connection would be closed while they are.
    const bodies = [
      ['/api/generate', { model: 'tiny', prompt: text, stream: false }],
      ['/api/chat', { model: 'tiny', messages: [{ role: 'user', content: text }], stream: false }],
      ['/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: text }] }],
      // Embedding inputs too, counted over an array (each keeps only num_ctx tokens).
      ['/api/embed', { model: 'tiny', input: [text.slice(0, 25_000_000), text.slice(25_000_000)] }],
    ].map(([route, body]) => [route, JSON.stringify(body)]);
    await normalRequest();
    for (const [route, payload] of bodies) {
      resetPeak();
      const before = kib('VmRSS');
      const t0 = Date.now();
      const r = await postFresh(`${h.srv.url}${route}`, payload);
      const ms = Date.now() - t0;
      const growthMiB = (kib('VmHWM') - before) / 1024;
      console.log(`${route}: ${r.status} in ${ms} ms, peak RSS +${growthMiB.toFixed(0)} MiB for a ${(payload.length / 2 ** 20).toFixed(0)} MiB body`);
      assert.equal(r.status, 400, r.text.slice(0, 300));
      assert.match(r.text, /16\.0 MiB a request may bring/);
      // The target is 5 s; the bound leaves room for a loaded CI machine (it was ~100 s).
      if (!sanitized()) {
        assert.ok(ms < 10_000, `${route} took ${ms} ms`);
        assert.ok(growthMiB * 2 ** 20 < 2 * payload.length, `${route}: peak RSS grew ${growthMiB} MiB`);
      }
    }
    await normalRequest();
  });

  test('a prompt over the context is truncated from its ends, quickly; truncate false is a 400', async () => {
    const options = { num_ctx: 256, num_predict: 2 };
    const text = words(3_000_000); // under the 4 MiB limit of num_ctx 256, ~750k tokens
    const cases = [
      ['/api/generate', { model: 'tiny', prompt: text, stream: false, options }],
      ['/api/generate', { model: 'tiny', prompt: text, raw: true, stream: false, options }],
      ['/api/chat', { model: 'tiny', messages: [{ role: 'user', content: text }], stream: false, options }],
    ];
    for (const [route, body] of cases) {
      const t0 = Date.now();
      const r = await postRaw(`${h.srv.url}${route}`, body);
      const ms = Date.now() - t0;
      console.log(`${route}${body.raw ? ' (raw)' : ''}: ${r.status} in ${ms} ms, prompt_eval_count ${r.body?.prompt_eval_count}`);
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.ok(r.body.prompt_eval_count <= 255, `${r.body.prompt_eval_count} prompt tokens in a context of 256`);
      if (!sanitized()) assert.ok(ms < 10_000, `${route} took ${ms} ms`);
      const refused = await postRaw(`${h.srv.url}${route}`, { ...body, truncate: false });
      assert.equal(refused.status, 400);
      assert.match(refused.body.error, /more than \d+ tokens, longer than the context length of 256/);
    }
    // The kept beginning is the prompt's own: its first num_keep tokens, as a short prompt
    // with the same start has them.
    const head = await postRaw(`${h.srv.url}/api/generate`, { model: 'tiny', prompt: text.slice(0, 40), raw: true, stream: false, options });
    const long = await postRaw(`${h.srv.url}/api/generate`, { model: 'tiny', prompt: text, raw: true, stream: false, options });
    assert.deepEqual(long.body.context.slice(0, 4), head.body.context.slice(0, 4));
    await normalRequest();
  });

  // Leaving while the prompt is read, raw and through the chat template: the text is cut and
  // tokenized in cancellable steps, and the template renders a stand-in for it (not 3.9 MB,
  // which in llama.cpp's jinja took ~1 s in one call that cannot be cancelled; docs/engine.md).
  for (const [route, boundMs, bodyOf] of [
    ['/api/generate (raw)', 2000, (text) => ({ model: 'tiny', prompt: text, raw: true, options: { num_predict: 100000 } })],
    ['/api/chat', 2000, (text) => ({ model: 'tiny', messages: [{ role: 'user', content: text }], options: { num_predict: 100000 } })],
  ]) {
    test(`a client that leaves during a long prompt on ${route}: its memory is back`, async () => {
      const text = words(3_900_000); // just under the 4 MiB limit of the default num_ctx
      const body = JSON.stringify(bodyOf(text));
      const memory = async () => (await fetch(`${h.srv.url}/api/debug/memory`)).json();
      await normalRequest();
      const before = kib('VmRSS');
      const ac = new AbortController();
      const url = `${h.srv.url}${route.startsWith('/api/chat') ? '/api/chat' : '/api/generate'}`;
      const pending = fetch(url, { method: 'POST', body, signal: ac.signal }).catch((e) => e.name);
      // Leave once the runner has the request (its text is in the ledger), while the prompt is
      // being read.
      const t0 = Date.now();
      while ((await memory()).buckets.request < text.length && Date.now() - t0 < 10_000) await sleep(5);
      ac.abort();
      const left = Date.now();
      assert.equal(await pending, 'AbortError');
      let mem;
      do {
        await sleep(20);
        mem = await memory();
      } while (!mem.request_buckets_zero && Date.now() - left < 15_000);
      const ms = Date.now() - left;
      const rssMiB = (kib('VmRSS') - before) / 1024;
      console.log(`${route}: request memory back in ${ms} ms; RSS then ${rssMiB.toFixed(0)} MiB over its level before the request`);
      assert.equal(mem.request_buckets_zero, true);
      // The target is 1 s (measured 60-430 ms); the bound leaves room for a loaded machine.
      if (!sanitized()) {
        assert.ok(ms < boundMs, `${ms} ms`);
        // What the allocator keeps for the next request, not what a whole tokenization held
        // (hundreds of MiB for this prompt).
        assert.ok(rssMiB < 64, `RSS still ${rssMiB} MiB higher`);
      }
      await normalRequest();
    });
  }

  test('any num_ctx and num_batch: 200 or 4xx within 90 s, never 5xx', async () => {
    // tiny-longctx.gguf says it was trained for 2^24 tokens; tiny.gguf for 4096.
    const cases = [
      ['tiny', { num_ctx: 16777216 }, 200], // clamped to 4096 before the memory estimate
      ['long', { num_ctx: 4194304 }, 400], // over the 2^21 tokens a model's context may hold
      ['long', { num_ctx: 16777216 }, 400],
      ['long', { num_ctx: 2147483647 }, 400],
      ['long', { num_ctx: 1 }, 200],
      ['long', { num_ctx: 2, num_batch: 1 }, 200],
      ['long', { num_ctx: 4096, num_batch: 2147483647 }, 200], // a batch is at most the context
      ['long', { num_ctx: 16384, num_batch: 16384 }, 200],
      // The compute buffer grows with the batch: 9 to 34 GB, over the budget before any
      // allocation (they used to be tried: 200 with 17 GB held, or an abort under ASan).
      ['long', { num_ctx: 65536, num_batch: 65536 }, 400],
      ['long', { num_ctx: 131072, num_batch: 131072 }, 400],
      ['long', { num_ctx: 1048576 }, 200], // one sequence of 2^20 tokens: ~1.6 GB, a few seconds
    ];
    for (const [model, opts, want] of cases) {
      const t0 = Date.now();
      const r = await postRaw(`${h.srv.url}/api/generate`, {
        model, prompt: 'hi', stream: false, keep_alive: 0, options: { ...opts, num_predict: 1 },
      }, { timeoutMs: 90_000 });
      const ms = Date.now() - t0;
      console.log(`${model} ${JSON.stringify(opts)}: ${r.status} in ${ms} ms ${r.body?.error ?? ''}`);
      assert.ok(r.status < 500, `${JSON.stringify(opts)}: ${r.status} ${r.text}`);
      if (want) assert.equal(r.status, want, r.text);
      if (r.status === 400 && opts.num_ctx === 4194304) assert.match(r.body.error, /at most 2097152 tokens/);
      if (r.status === 400 && opts.num_batch >= 65536) assert.match(r.body.error, /more than the memory budget of 3\.00 GiB \(SPECD_MAX_MEMORY\)/);
      assert.ok(ms < 90_000);
    }
    // An embedding context holds a decode of num_ctx tokens: 65536 of them would take 9 GB
    // (it used to, past the budget), more than the session the same num_ctx gets.
    const embed = (options) => postRaw(`${h.srv.url}/api/embed`, { model: 'long', input: 'hi', keep_alive: 0, options });
    const big = await embed({ num_ctx: 65536 });
    assert.equal(big.status, 400, big.text);
    assert.match(big.body.error, /more than the memory budget of 3\.00 GiB/);
    assert.equal((await embed({ num_ctx: 2048 })).status, 200);
    const ps = await (await fetch(`${h.srv.url}/api/ps`)).json();
    assert.equal(ps.models.length, 0, 'keep_alive 0 unloads each one');
    const clamped = await postRaw(`${h.srv.url}/api/generate`, { model: 'tiny', prompt: 'hi', stream: false, options: { num_ctx: 16777216, num_predict: 1 } });
    assert.equal(clamped.status, 200);
    const loaded = (await (await fetch(`${h.srv.url}/api/ps`)).json()).models.find((m) => m.name === 'tiny:latest');
    assert.equal(loaded.context_length, 4096);
    await normalRequest();
  });

  test(`SPECD_MAX_LOADED_MODELS=${MAX_LOADED} holds under concurrent requests for different models`, async () => {
    const names = ['tiny', ...spares, 'long'];
    let most = 0;
    let done = false;
    const watcher = (async () => {
      while (!done) {
        const ps = await (await fetch(`${h.srv.url}/api/ps`)).json();
        most = Math.max(most, ps.models.length);
        await sleep(10);
      }
    })();
    const results = [];
    for (let round = 0; round < 2; ++round) {
      results.push(...await Promise.all(names.map((model) => postRaw(`${h.srv.url}/api/generate`, {
        model, prompt: 'Count to a hundred', stream: false, options: { num_predict: 32 },
      }))));
    }
    done = true;
    await watcher;
    const ok = results.filter((r) => r.status === 200).length;
    console.log(`${ok} of ${results.length} answered, the others 503; at most ${most} models in /api/ps`);
    for (const r of results) {
      assert.ok(r.status === 200 || r.status === 503, `${r.status} ${r.text}`);
      if (r.status === 503) assert.match(r.body.error, /SPECD_MAX_LOADED_MODELS is 2|in use/);
    }
    assert.ok(ok >= MAX_LOADED, `${ok} answered`);
    assert.ok(most <= MAX_LOADED, `${most} models were loaded at once`);
    await normalRequest('m4');
  });
});
