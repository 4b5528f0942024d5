// Embeddings: /api/embed and the legacy /api/embeddings through the official ollama client,
// /v1/embeddings through the openai client. Vectors of /api/embed and /v1 are unit-length,
// deterministic, and the same for an input alone or inside a batch.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import OpenAI from 'openai';
import { postRaw, test, useServer } from './harness.mjs';

const h = useServer();
const MODEL = 'tiny';

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

function assertClose(a, b, eps = 1e-4) {
  assert.equal(a.length, b.length);
  for (let i = 0; i < a.length; ++i) assert.ok(Math.abs(a[i] - b[i]) <= eps, `[${i}] ${a[i]} vs ${b[i]}`);
}

describe('ollama /api/embed', () => {
  test('one input: a unit vector, the final fields, the same vector twice', async () => {
    const r = await h.srv.client.embed({ model: MODEL, input: 'The sky is blue.' });
    assert.equal(r.model, MODEL);
    assert.equal(r.embeddings.length, 1);
    const v = r.embeddings[0];
    assert.ok(v.length > 0);
    assert.ok(Math.abs(norm(v) - 1) < 1e-4, `norm ${norm(v)}`);
    assert.ok(Number.isInteger(r.total_duration) && r.total_duration > 0);
    assert.ok(Number.isInteger(r.load_duration) && r.load_duration >= 0);
    assert.ok(r.prompt_eval_count > 0);
    const again = await h.srv.client.embed({ model: MODEL, input: 'The sky is blue.' });
    assertClose(again.embeddings[0], v, 1e-6);
  });

  test('an array: one vector per input, each as it is alone', async () => {
    const inputs = ['first text', 'a second, longer piece of text', 'third'];
    const r = await h.srv.client.embed({ model: MODEL, input: inputs });
    assert.equal(r.embeddings.length, 3);
    for (let i = 0; i < inputs.length; ++i) {
      const alone = await h.srv.client.embed({ model: MODEL, input: inputs[i] });
      assertClose(r.embeddings[i], alone.embeddings[0]);
    }
    assert.notDeepEqual(r.embeddings[0], r.embeddings[1]);
  });

  test('dimensions keeps the first N and re-normalizes; out of range is a 400', async () => {
    const full = (await h.srv.client.embed({ model: MODEL, input: 'hello' })).embeddings[0];
    const r = await h.srv.client.embed({ model: MODEL, input: 'hello', dimensions: 8 });
    const v = r.embeddings[0];
    assert.equal(v.length, 8);
    assert.ok(Math.abs(norm(v) - 1) < 1e-4);
    const head = full.slice(0, 8);
    assertClose(v, head.map((x) => x / norm(head)));
    const big = await postRaw(`${h.srv.url}/api/embed`, { model: MODEL, input: 'hello', dimensions: full.length + 1 });
    assert.equal(big.status, 400);
    assert.match(big.body.error, /dimensions/);
    const zero = await postRaw(`${h.srv.url}/api/embed`, { model: MODEL, input: 'hello', dimensions: 0 });
    assert.equal(zero.status, 400);
  });

  test('truncate: over the context is cut by default, a 400 when false', async () => {
    const long = 'word '.repeat(400);
    const options = { num_ctx: 64 };
    const cut = await h.srv.client.embed({ model: MODEL, input: long, options });
    assert.equal(cut.embeddings.length, 1);
    assert.ok(cut.prompt_eval_count <= 64);
    await assert.rejects(h.srv.client.embed({ model: MODEL, input: long, truncate: false, options }), (err) => {
      assert.equal(err.status_code, 400);
      assert.match(err.message, /context length/);
      return true;
    });
  });

  test('an empty input list loads the model and answers no vectors; limits are 400s', async () => {
    const r = await h.srv.client.embed({ model: MODEL, input: [] });
    assert.deepEqual(r.embeddings, []);
    const many = await postRaw(`${h.srv.url}/api/embed`, { model: MODEL, input: Array(257).fill('x') });
    assert.equal(many.status, 400);
    assert.match(many.body.error, /at most 256 inputs/);
    const bad = await postRaw(`${h.srv.url}/api/embed`, { model: MODEL, input: [1, 2] });
    assert.equal(bad.status, 400);
    const missing = await postRaw(`${h.srv.url}/api/embed`, { model: 'nope', input: 'x' });
    assert.equal(missing.status, 404);
  });

  test('legacy /api/embeddings: one vector, not normalized, the same direction', async () => {
    const r = await h.srv.client.embeddings({ model: MODEL, prompt: 'The sky is blue.' });
    const unit = (await h.srv.client.embed({ model: MODEL, input: 'The sky is blue.' })).embeddings[0];
    assert.equal(r.embedding.length, unit.length);
    const n = norm(r.embedding);
    assertClose(r.embedding.map((x) => x / n), unit);
  });
});

describe('openai /v1/embeddings', () => {
  test('embeddings.create: a string and an array, usage, base64', async () => {
    const client = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const one = await client.embeddings.create({ model: MODEL, input: 'hello', encoding_format: 'float' });
    assert.equal(one.object, 'list');
    assert.equal(one.model, MODEL);
    assert.equal(one.data.length, 1);
    assert.equal(one.data[0].object, 'embedding');
    assert.equal(one.data[0].index, 0);
    assert.ok(Math.abs(norm(one.data[0].embedding) - 1) < 1e-4);
    assert.ok(one.usage.prompt_tokens > 0);
    assert.equal(one.usage.total_tokens, one.usage.prompt_tokens);
    const ollama = await h.srv.client.embed({ model: MODEL, input: 'hello' });
    assertClose(one.data[0].embedding, ollama.embeddings[0]);

    const many = await client.embeddings.create({ model: MODEL, input: ['a', 'b'], dimensions: 4 });
    assert.deepEqual(many.data.map((d) => d.index), [0, 1]);
    for (const d of many.data) assert.equal(d.embedding.length, 4);

    // The client asks for base64 by default and decodes it.
    const b64 = await client.embeddings.create({ model: MODEL, input: 'hello' });
    assertClose(b64.data[0].embedding, one.data[0].embedding, 1e-6);

    await assert.rejects(client.embeddings.create({ model: MODEL, input: [[1, 2, 3]] }), (err) => {
      assert.equal(err.status, 400);
      return true;
    });
  });
});
