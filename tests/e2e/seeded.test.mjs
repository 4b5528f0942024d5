// A seed gives one text (Ollama's promise, which LangChain's and the AI SDK's seeded calls
// rely on): through the real server, on a model with a draft, the same seeded request gives
// the same text and tokens whatever the drafting does (off, adaptive, capped, fixed at 1/4/8),
// on /api/generate, /api/chat, /v1/chat/completions and /v1/completions, alone and among
// other requests in a batch, and after a prompt-cache hit; different seeds differ.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import OpenAI from 'openai';
import { fixture, startServer, test, useServer } from './harness.mjs';

const pairModel = { name: 'pair', from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`] };
const sampled = (seed, extra = {}) => ({ temperature: 0.9, num_predict: 40, seed, ...extra });
const prompt = 'Once upon a time, in a small village by the sea,';

async function generate(url, options, p = prompt) {
  const r = await fetch(`${url}/api/generate`, {
    method: 'POST',
    body: JSON.stringify({ model: 'pair', prompt: p, stream: false, options }),
  });
  const j = await r.json();
  assert.equal(r.status, 200, JSON.stringify(j));
  return j;
}

describe('seeded sampling', () => {
  const h = useServer({ models: [pairModel], env: { SPECD_NUM_PARALLEL: '4' } });

  test('generate: the same text with drafting off, adaptive, capped and fixed at 1, 4 and 8', async () => {
    const reference = await generate(h.srv.url, sampled(7, { draft_num_predict: 0 }));
    assert.equal(reference.speculation.drafted, 0);
    const modes = [{}, { draft_num_predict: 4 }, { draft_depth: 1 }, { draft_depth: 4 }, { draft_depth: 8 }];
    for (const mode of modes) {
      for (let i = 0; i < 2; ++i) {
        const r = await generate(h.srv.url, sampled(7, mode));
        const what = `${JSON.stringify(mode)}, try ${i}`;
        assert.equal(r.response, reference.response, what);
        assert.deepEqual(r.context, reference.context, what);
        // A fixed depth drafts in every round (the adaptive ones depend on the machine's timing).
        if (mode.draft_depth) assert.ok(r.speculation.drafted > 0, `${what}: drafted ${r.speculation.drafted}`);
      }
    }
  });

  test('chat and the OpenAI endpoints: identical answers for the same seed', async () => {
    const messages = [{ role: 'user', content: 'Tell me about the sea.' }];
    const chat = async (options) => (await h.srv.client.chat({ model: 'pair', messages, stream: false, options })).message.content;
    const ref = await chat(sampled(11, { draft_num_predict: 0 }));
    assert.equal(await chat(sampled(11)), ref);
    assert.equal(await chat(sampled(11, { draft_num_predict: 4 })), ref);

    const openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'unused' });
    const v1chat = async () => (await openai.chat.completions.create({
      model: 'pair', messages, seed: 11, temperature: 0.9, max_tokens: 40 })).choices[0].message.content;
    const first = await v1chat();
    assert.equal(await v1chat(), first);
    assert.equal(first, ref, '/v1/chat/completions with the same seed and options answers as /api/chat');

    const v1text = async () => (await openai.completions.create({
      model: 'pair', prompt, seed: 3, temperature: 0.9, max_tokens: 40 })).choices[0].text;
    const text = await v1text();
    assert.equal(await v1text(), text);
  });

  test('in a batch of four, among other requests, a seeded answer is the one it gives alone', async () => {
    const alone = await generate(h.srv.url, sampled(21));
    const others = ['The river', 'A robot', 'The garden'].map((p, i) => generate(h.srv.url, sampled(100 + i), p));
    const [together] = await Promise.all([generate(h.srv.url, sampled(21)), ...others]);
    assert.equal(together.response, alone.response);
    assert.deepEqual(together.context, alone.context);
  });

  test('after a prompt-cache hit the answer is the same', async () => {
    const long = 'Notes about the garden. ' + Array.from({ length: 12 }, (_, i) => `Item ${i} of the garden list is worth keeping.`).join(' ');
    const cold = await generate(h.srv.url, sampled(33), long);
    // Unrelated prompts on every sequence: the garden prefix must come back from the cache.
    await Promise.all(['a', 'b', 'c', 'd'].map((x) => generate(h.srv.url, sampled(1),
      `Unrelated ${x}. ` + Array.from({ length: 12 }, (_, i) => `Line ${i} about ${x} is long enough to keep.`).join(' '))));
    const hit = await generate(h.srv.url, sampled(33), long);
    assert.ok(hit.prompt_eval_count < cold.prompt_eval_count, `restored: evaluated ${hit.prompt_eval_count} of ${cold.prompt_eval_count}`);
    assert.equal(hit.response, cold.response);
  });

  test('different seeds give different texts; no seed gives a fresh one each time', async () => {
    const texts = new Set();
    for (const seed of [1, 2, 3, 4]) texts.add((await generate(h.srv.url, sampled(seed))).response);
    assert.equal(texts.size, 4);
    const unseeded = new Set();
    for (let i = 0; i < 3; ++i) unseeded.add((await generate(h.srv.url, { temperature: 0.9, num_predict: 40 })).response);
    assert.equal(unseeded.size, 3);
  });
});

describe('SPECD_UNSEEDED_SAMPLING', () => {
  test('seeded and rejection (the default) both serve unseeded requests; seeded ones stay reproducible', async () => {
    for (const value of ['seeded', 'rejection']) {
      const srv = await startServer({ models: [pairModel], env: { SPECD_UNSEEDED_SAMPLING: value, SPECD_NUM_PARALLEL: '1' } });
      try {
        const a = await generate(srv.url, sampled(5, { draft_depth: 4 }));
        const b = await generate(srv.url, sampled(5, { draft_num_predict: 0 }));
        assert.equal(a.response, b.response, value);
        const free = await generate(srv.url, { temperature: 0.9, num_predict: 40, draft_depth: 4 });
        assert.equal(free.eval_count, 40, value);
        assert.ok(free.speculation.drafted > 0, value);
      } finally {
        const r = await srv.stop();
        assert.equal(r.code, 0);
      }
    }
  });

  test('a value other than seeded or rejection stops the server at start', async () => {
    await assert.rejects(startServer({ models: [], env: { SPECD_UNSEEDED_SAMPLING: 'sometimes' } }), /UNSEEDED_SAMPLING/);
  });
});
