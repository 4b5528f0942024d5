// Requests the server must refuse with a clear error (raw fetch, not the client): each case
// checks the status and the JSON {"error": "..."} body, then that a normal request still works.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { postRaw, test, useServer } from './harness.mjs';

const h = useServer();
const MODEL = 'tiny';

/** A normal small generate must still succeed. */
async function assertHealthy() {
  const r = await postRaw(`${h.srv.url}/api/generate`, {
    model: MODEL, prompt: 'hi', stream: false, options: { num_predict: 2, temperature: 0 },
  });
  assert.equal(r.status, 200, `the server must still answer a normal request: ${r.text}`);
  assert.equal(r.body.done, true);
  assert.equal(r.body.eval_count, 2);
}

/** Sends `body` to `path`, expects `status` and an error string matching `phrase`. */
async function expectError(path, body, status, phrase, { method = 'POST' } = {}) {
  const r = await postRaw(`${h.srv.url}${path}`, body, { method });
  assert.equal(r.status, status, `${path} ${typeof body === 'string' ? body.slice(0, 80) : '<bytes>'}: got ${r.status} ${r.text.slice(0, 300)}`);
  assert.ok(r.body && typeof r.body === 'object', `the body must be JSON: ${r.text.slice(0, 300)}`);
  assert.equal(typeof r.body.error, 'string', `the body must have an error string: ${r.text.slice(0, 300)}`);
  assert.match(r.body.error, phrase);
  assert.match(r.headers.get('content-type') ?? '', /application\/json/);
  await assertHealthy();
  return r.body.error;
}

const gen = (extra) => JSON.stringify({ model: MODEL, prompt: 'hi', stream: false, ...extra });
const chat = (extra) => JSON.stringify({ model: MODEL, stream: false, ...extra });
const user = [{ role: 'user', content: 'hi' }];

describe('bad input', () => {
  test('malformed JSON is 400', async () => {
    await expectError('/api/generate', '{"model": "tiny", "prompt": ', 400, /json/i);
    await expectError('/api/chat', '{"model": "tiny", "messages": [}', 400, /json/i);
    await expectError('/api/generate', 'not json at all', 400, /json/i);
  });

  test('wrong field types are 400 and name the field', async () => {
    await expectError('/api/generate', gen({ prompt: 5 }), 400, /prompt/);
    await expectError('/api/generate', gen({ stream: 'yes' }), 400, /stream/);
    await expectError('/api/generate', gen({ options: [] }), 400, /options/);
    await expectError('/api/generate', gen({ model: 7 }), 400, /model/);
    await expectError('/api/chat', chat({ messages: 'hi' }), 400, /messages/);
    await expectError('/api/generate', gen({ options: { temperature: 'hot' } }), 400, /temperature/);
  });

  test('an unknown model is 404', async () => {
    await expectError('/api/generate', gen({ model: 'no-such-model' }), 404, /not found/);
    await expectError('/api/chat', chat({ model: 'no-such-model', messages: user }), 404, /not found/);
  });

  test('an invalid format is 400 "invalid format"', async () => {
    await expectError('/api/generate', gen({ format: 'xml' }), 400, /invalid format/);
    await expectError('/api/generate', gen({ format: 7 }), 400, /invalid format/);
    await expectError('/api/chat', chat({ messages: user, format: 'yaml' }), 400, /invalid format/);
  });

  test('chat messages without a role or with an unknown role are 400', async () => {
    await expectError('/api/chat', chat({ messages: [{ content: 'hi' }] }), 400, /role/);
    await expectError('/api/chat', chat({ messages: [{ role: 'wizard', content: 'hi' }] }), 400, /role.*wizard|wizard.*role/);
  });

  test('out-of-range options are 400', async () => {
    await expectError('/api/generate', gen({ options: { num_predict: -5 } }), 400, /num_predict/);
    await expectError('/api/generate', gen({ options: { num_ctx: 0 } }), 400, /num_ctx/);
    await expectError('/api/generate', gen({ options: { draft_depth: 17 } }), 400, /draft_depth.*between 0 and 16/);
    const huge = await expectError('/api/generate', gen({ options: { num_predict: 1e12 } }), 400, /num_predict/);
    // 1e12 satisfies ">= -2": an error saying so would blame the wrong bound.
    assert.doesNotMatch(huge, />= ?-2/, `misleading message for num_predict 1e12: ${huge}`);
  });

  test('a body that is not UTF-8 is 400', async () => {
    const enc = new TextEncoder();
    const bytes = new Uint8Array([
      ...enc.encode('{"model":"tiny","stream":false,"prompt":"a'),
      0xff, 0xfe,
      ...enc.encode('b","options":{"num_predict":2}}'),
    ]);
    await expectError('/api/generate', bytes, 400, /utf-?8/i);
  });

  test('100000-deep nesting is 400 and the server survives', async () => {
    await expectError('/api/generate', '['.repeat(100_000), 400, /nest|deep|depth/i);
    await expectError('/api/generate', `{"model":"tiny","prompt":${'['.repeat(100_000)}`, 400, /nest|deep|depth/i);
    await expectError('/api/chat', `{"model":"tiny","messages":[${'{"a":'.repeat(50_000)}`, 400, /nest|deep|depth/i);
    const v = await fetch(`${h.srv.url}/api/version`);
    assert.equal(v.status, 200);
    assert.ok(h.srv.running, 'the server process is alive');
  });

  test('unsupported features are 400 and name the feature', async () => {
    await expectError('/api/generate', gen({ images: ['aGVsbG8='] }), 400, /image 1 is not a recognised image format/);
    await expectError('/api/chat', chat({ messages: [{ role: 'user', content: 'hi', images: ['aGVsbG8='] }] }), 400,
      /image 1 is not a recognised image format/);
    await expectError('/api/chat', chat({
      messages: user,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
    }), 400, /tools/);
    await expectError('/api/generate', gen({ think: true }), 400, /think/);
    await expectError('/api/chat', chat({ messages: user, think: 'high' }), 400, /think/);
  });

  test('an unknown path is 404 with a JSON error', async () => {
    await expectError('/api/nowhere', '{}', 404, /not found/);
    const r = await fetch(`${h.srv.url}/api/nowhere`);
    assert.equal(r.status, 404);
    const body = await r.json();
    assert.equal(typeof body.error, 'string');
  });

  test('a prompt longer than the context: 400 with truncate false, 200 with truncation', async () => {
    const long = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
    const options = { num_ctx: 64, num_predict: 4, temperature: 0 };
    await expectError('/api/generate', gen({ prompt: long, truncate: false, options }), 400, /context/);
    await expectError('/api/chat', chat({ messages: [{ role: 'user', content: long }], truncate: false, options }), 400, /context/);

    for (const truncate of [undefined, true]) {
      const r = await postRaw(`${h.srv.url}/api/generate`, { model: MODEL, prompt: long, stream: false, truncate, options });
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.equal(r.body.done, true);
      assert.equal(r.body.eval_count, 4);
      // The truncated prompt fits the context (generation may then shift it: shift is on).
      assert.ok(r.body.prompt_eval_count > 0 && r.body.prompt_eval_count < 64, `prompt_eval_count ${r.body.prompt_eval_count}`);
    }
    const c = await postRaw(`${h.srv.url}/api/chat`, { model: MODEL, messages: [{ role: 'user', content: long }], stream: false, options });
    assert.equal(c.status, 200, c.text.slice(0, 300));
    assert.equal(c.body.message.role, 'assistant');
  });

  test('an empty messages array loads the model (done_reason "load")', async () => {
    const r = await postRaw(`${h.srv.url}/api/chat`, { model: MODEL, messages: [], stream: false });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.done, true);
    assert.equal(r.body.done_reason, 'load');
    assert.equal(r.body.message?.content ?? '', '');
    // Without the messages field at all, too.
    const r2 = await postRaw(`${h.srv.url}/api/chat`, { model: MODEL, stream: false });
    assert.equal(r2.status, 200, r2.text);
    assert.equal(r2.body.done_reason, 'load');
  });

  test('a streaming request is refused with an HTTP status before any output', async () => {
    const r = await postRaw(`${h.srv.url}/api/generate`, { model: MODEL, prompt: 'hi', options: { num_ctx: 0 } });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /num_ctx/);
    await assertHealthy();
  });
});
