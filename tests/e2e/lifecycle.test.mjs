// Process and request lifecycle: clean exit on SIGTERM (idle and mid-generation), and
// clients that go away mid-request must not keep the model busy.
import assert from 'node:assert/strict';
import { afterEach, describe } from 'node:test';
import { postRaw, sleep, startServer, test } from './harness.mjs';

const MODEL = 'tiny';
const LONG = { num_predict: 100_000, temperature: 0 };
// At temperature 0 the tiny fixture answers this prompt without an end-of-generation token
// for more than 20000 tokens (most prompts hit one within a few thousand, i.e. in a second).
const LONG_PROMPT = 'Count to one million.';

let servers = [];
async function server(options) {
  const s = await startServer(options);
  servers.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  servers = [];
});

/** Times a small non-streaming generate; it must succeed (within 15 s at most). */
async function timedSmallRequest(s) {
  const t0 = Date.now();
  let r;
  try {
    r = await postRaw(`${s.url}/api/generate`, {
      model: MODEL, prompt: 'hi', stream: false, options: { num_predict: 4, temperature: 0 },
    }, { timeoutMs: 15_000 });
  } catch (err) {
    assert.fail(`a small generate got no answer within ${Date.now() - t0} ms (${err.message}): the model is still busy`);
  }
  const ms = Date.now() - t0;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.eval_count, 4);
  return ms;
}

/** Starts a long streaming generate through the client and waits for its first parts. */
async function startLongStream(s, nParts = 3) {
  const stream = await s.client.generate({ model: MODEL, prompt: LONG_PROMPT, options: LONG, stream: true });
  const it = stream[Symbol.asyncIterator]();
  const parts = [];
  while (parts.length < nParts) {
    const { value, done } = await it.next();
    assert.ok(!done, 'the stream ended early');
    parts.push(value);
  }
  return { stream, it, parts };
}

describe('lifecycle', () => {
  test('SIGTERM on an idle server: exit code 0', async () => {
    const s = await server();
    await timedSmallRequest(s);
    const r = await s.stop();
    assert.equal(r.signal, null, `killed by ${r.signal}`);
    assert.equal(r.code, 0);
    assert.ok(r.ms < 10_000, `exit took ${r.ms} ms`);
  });

  test('SIGTERM during a long streaming generation: exit code 0 within 10 s', async () => {
    const s = await server();
    const { it, parts } = await startLongStream(s);
    assert.equal(parts[0].done, false);
    // Keep draining the stream while the server stops; it must end one way or another.
    const drained = (async () => {
      try {
        for (;;) {
          const { done, value } = await it.next();
          if (done || value?.done) return 'done';
        }
      } catch (err) {
        return `error: ${err.message}`;
      }
    })();
    const r = await s.stop();
    assert.equal(r.signal, null, `killed by ${r.signal} after ${r.ms} ms:\n${s.stderr()}`);
    assert.equal(r.code, 0, s.stderr());
    assert.ok(r.ms < 10_000, `exit took ${r.ms} ms`);
    const outcome = await Promise.race([drained, sleep(5000).then(() => 'still hanging')]);
    assert.notEqual(outcome, 'still hanging', 'the client stream must end when the server exits');
  });

  test('a streaming client that aborts does not keep the model busy', async () => {
    const s = await server();
    await timedSmallRequest(s); // load the model first
    const { stream } = await startLongStream(s, 5);
    stream.abort();
    // The next request would wait behind 100000 tokens if the aborted job kept running.
    const ms = await timedSmallRequest(s);
    assert.ok(ms < 8000, `the request after the abort took ${ms} ms`);
    // And again, to be sure nothing is left queued.
    const ms2 = await timedSmallRequest(s);
    assert.ok(ms2 < 8000, `the second request after the abort took ${ms2} ms`);
  });

  test('a non-streaming client that disconnects does not keep the model busy', async () => {
    const s = await server();
    await timedSmallRequest(s);
    const ac = new AbortController();
    const pending = fetch(`${s.url}/api/generate`, {
      method: 'POST',
      body: JSON.stringify({ model: MODEL, prompt: LONG_PROMPT, stream: false, options: LONG }),
      signal: ac.signal,
    });
    await sleep(1000); // generating by now
    ac.abort();
    await assert.rejects(pending, { name: 'AbortError' });
    const ms = await timedSmallRequest(s);
    assert.ok(ms < 8000, `the request after the disconnect took ${ms} ms`);
  });

  test('a raw streaming fetch aborted mid-body does not keep the model busy', async () => {
    const s = await server();
    await timedSmallRequest(s);
    const ac = new AbortController();
    const res = await fetch(`${s.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: LONG_PROMPT }], options: LONG }),
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    const first = await reader.read();
    assert.ok(!first.done && first.value.length > 0);
    ac.abort();
    await reader.read().catch(() => {});
    const ms = await timedSmallRequest(s);
    assert.ok(ms < 8000, `the request after the abort took ${ms} ms`);
  });

  test('a full queue answers 503 "server busy" and recovers', async () => {
    // One sequence: the long stream holds it, so the small requests queue behind it.
    const s = await server({ env: { SPECD_MAX_QUEUE: '1', SPECD_NUM_PARALLEL: '1' } });
    await timedSmallRequest(s);
    const { stream } = await startLongStream(s);
    // One more request may wait in the queue; the rest must be refused at once.
    const small = () => postRaw(`${s.url}/api/generate`, {
      model: MODEL, prompt: 'hi', stream: false, options: { num_predict: 4, temperature: 0 },
    }, { timeoutMs: 30_000 });
    const queued = [small(), small(), small(), small()];
    const t0 = Date.now();
    const refused = [];
    for (let i = 0; i < 20 && refused.length < 3; i++) {
      refused.length = 0;
      await sleep(100);
      for (const p of queued) {
        const r = await Promise.race([p, sleep(0).then(() => null)]);
        if (r) refused.push(r);
      }
    }
    assert.ok(refused.length >= 3, `expected at least 3 of 4 requests refused within ${Date.now() - t0} ms, got ${refused.length}`);
    for (const r of refused) {
      assert.equal(r.status, 503, r.text);
      assert.match(r.body.error, /^server busy, please try again\.\s+maximum pending requests exceeded$/);
    }
    stream.abort();
    const done = await Promise.all(queued);
    assert.equal(done.filter((r) => r.status === 200).length, 4 - refused.length);
    const ms = await timedSmallRequest(s);
    assert.ok(ms < 8000, `the request after the queue drained took ${ms} ms`);
  });
});
