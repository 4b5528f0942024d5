// logprobs and top_logprobs on /api/generate and /api/chat through the ollama client: each
// chunk carries the tokens its text completes, the whole answer all of them, speculation
// (a DRAFT model) does not change them, and top_logprobs outside 0..20 is a 400.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { collect, fixture, postRaw, test, useServer } from './harness.mjs';

const pairModel = { name: 'pair', from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`] };
const greedy = (n, extra = {}) => ({ temperature: 0, seed: 1, num_predict: n, ...extra });

/** Checks one answer's logprobs: one entry per token, top_logprobs sorted, the greedy choice on top. */
function checkLogprobs(logprobs, text, nTop) {
  assert.ok(Array.isArray(logprobs) && logprobs.length > 0, `logprobs: ${JSON.stringify(logprobs)}`);
  for (const lp of logprobs) {
    assert.equal(typeof lp.token, 'string');
    assert.ok(lp.logprob <= 0, `logprob ${lp.logprob}`);
    assert.ok(Array.isArray(lp.bytes) && lp.bytes.length > 0, `bytes ${JSON.stringify(lp.bytes)}`);
    if (nTop === 0) {
      assert.equal(lp.top_logprobs, undefined);
      continue;
    }
    assert.equal(lp.top_logprobs.length, nTop);
    for (let i = 1; i < nTop; ++i) assert.ok(lp.top_logprobs[i - 1].logprob >= lp.top_logprobs[i].logprob);
    assert.equal(lp.top_logprobs[0].token, lp.token);
    assert.equal(lp.top_logprobs[0].logprob, lp.logprob);
  }
  // The tokens' exact bytes spell the answer.
  const bytes = Buffer.from(logprobs.flatMap((lp) => lp.bytes));
  assert.equal(bytes.toString('utf8'), text);
}

describe('logprobs', () => {
  const h = useServer({ models: [pairModel] });

  test('generate: non-streamed and streamed answers report the same tokens', async () => {
    const req = { model: 'pair', prompt: 'Once upon a time', options: greedy(24), logprobs: true, top_logprobs: 3 };
    const whole = await h.srv.client.generate(req);
    assert.equal(whole.logprobs.length, whole.eval_count);
    checkLogprobs(whole.logprobs, whole.response, 3);

    const { parts, text } = await collect(await h.srv.client.generate({ ...req, stream: true }));
    assert.equal(text, whole.response);
    const streamed = parts.flatMap((p) => p.logprobs ?? []);
    assert.deepEqual(streamed.map((lp) => lp.token), whole.logprobs.map((lp) => lp.token));
    for (const p of parts.filter((p) => !p.done)) {
      // A chunk's tokens are the ones its text completes.
      const piece = Buffer.from((p.logprobs ?? []).flatMap((lp) => lp.bytes)).toString('utf8');
      assert.equal(piece, p.response);
    }
    assert.equal(parts.at(-1).logprobs, undefined);
  });

  test('chat: logprobs without alternatives, streamed and not', async () => {
    const req = { model: 'pair', messages: [{ role: 'user', content: 'Hello there' }], options: greedy(16), logprobs: true };
    const whole = await h.srv.client.chat(req);
    checkLogprobs(whole.logprobs, whole.message.content, 0);
    const { parts, text } = await collect(await h.srv.client.chat({ ...req, stream: true }));
    assert.equal(text, whole.message.content);
    const streamed = parts.flatMap((p) => p.logprobs ?? []);
    assert.deepEqual(streamed.map((lp) => lp.token), whole.logprobs.map((lp) => lp.token));
    // The two runs may draft differently (the depth controller adapts to measured timings),
    // and a verify batch rounds the last bits differently than single-token steps.
    streamed.forEach((lp, i) => {
      const ref = whole.logprobs[i].logprob;
      assert.ok(Math.abs(lp.logprob - ref) <= 2e-3 * Math.max(1, Math.abs(ref)), `#${i}: ${lp.logprob} vs ${ref}`);
    });
  });

  test('speculation on and off report the same logprobs', async () => {
    const req = { model: 'pair', prompt: 'the cat sat on the mat. the cat sat on the mat. the cat', logprobs: true, top_logprobs: 2 };
    const off = await h.srv.client.generate({ ...req, options: greedy(48, { draft_num_predict: 0 }) });
    const on = await h.srv.client.generate({ ...req, options: greedy(48) });
    // The adaptive depth decides whether drafting pays here; tests/integration/engine/
    // test_logprobs.cpp fixes the depth so that drafts are surely verified and accepted.
    assert.equal(on.response, off.response);
    assert.equal(on.logprobs.length, off.logprobs.length);
    on.logprobs.forEach((lp, i) => {
      assert.equal(lp.token, off.logprobs[i].token);
      // A verify batch may round the last bits differently than single-token steps.
      assert.ok(Math.abs(lp.logprob - off.logprobs[i].logprob) <= 2e-3 * Math.max(1, Math.abs(lp.logprob)),
        `#${i}: ${lp.logprob} vs ${off.logprobs[i].logprob}`);
    });
  });

  test('not asked for: no logprobs field; bad values are a 400 naming the field', async () => {
    const plain = await h.srv.client.generate({ model: 'pair', prompt: 'hi', options: greedy(4) });
    assert.equal(plain.logprobs, undefined);
    for (const [body, re] of [
      [{ logprobs: true, top_logprobs: 21 }, /top_logprobs must be between 0 and 20/],
      [{ top_logprobs: -1 }, /top_logprobs must be between 0 and 20/],
      [{ top_logprobs: 2.5 }, /top_logprobs must be an integer/],
      [{ logprobs: 'yes' }, /logprobs must be a boolean/],
    ]) {
      for (const path of ['/api/generate', '/api/chat']) {
        const r = await postRaw(`${h.srv.url}${path}`, { model: 'pair', prompt: 'x', messages: [{ role: 'user', content: 'x' }], ...body });
        assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
        assert.match(r.body.error, re);
      }
    }
  });
});
