// /api/chat through the official ollama client: non-streaming and streaming answers over a
// multi-turn history, and a model without a chat template (fallback template).
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { collect, test, useServer } from './harness.mjs';

const h = useServer({ models: [{ name: 'tiny' }, { name: 'tiny-spm', from: 'tiny-spm.gguf' }] });
const greedy = (extra = {}) => ({ temperature: 0, seed: 7, num_predict: 8, ...extra });

const history = [
  { role: 'system', content: 'You are a helpful assistant. Answer briefly.' },
  { role: 'user', content: 'What is the capital of France?' },
  { role: 'assistant', content: 'Paris.' },
  { role: 'user', content: 'And of Italy?' },
];

function assertFinal(r, { evalCount = 8 } = {}) {
  assert.equal(r.done, true);
  assert.equal(r.done_reason, 'length');
  assert.equal(r.eval_count, evalCount);
  assert.ok(Number.isInteger(r.prompt_eval_count) && r.prompt_eval_count > 0, `prompt_eval_count ${r.prompt_eval_count}`);
  for (const k of ['total_duration', 'prompt_eval_duration', 'eval_duration']) {
    assert.ok(Number.isInteger(r[k]) && r[k] > 0, `${k} = ${r[k]}`);
  }
  assert.ok(!('context' in r), 'chat answers carry no context');
}

describe('chat', () => {
  test('non-streaming: system + user + assistant + user history', async () => {
    const r = await h.srv.client.chat({ model: 'tiny', messages: history, options: greedy() });
    assert.equal(r.message.role, 'assistant');
    assert.equal(typeof r.message.content, 'string');
    assert.ok(r.message.content.length > 0, 'content must not be empty');
    assert.match(r.model, /^tiny(:latest)?$/);
    assertFinal(r);
  });

  test('streaming: assistant parts concatenate to the non-streaming answer', async () => {
    const whole = await h.srv.client.chat({ model: 'tiny', messages: history, options: greedy({ num_predict: 10 }) });
    const { parts, text, final } = await collect(
      await h.srv.client.chat({ model: 'tiny', messages: history, options: greedy({ num_predict: 10 }), stream: true }),
    );
    assert.ok(parts.length >= 2, `expected several parts, got ${parts.length}`);
    for (const p of parts) {
      assert.equal(p.message.role, 'assistant');
      assert.equal(typeof p.message.content, 'string');
    }
    for (const p of parts.slice(0, -1)) assert.equal(p.done, false);
    assertFinal(final, { evalCount: 10 });
    assert.equal(text, whole.message.content);
  });

  test('the history reaches the model', async () => {
    const last = await h.srv.client.chat({ model: 'tiny', messages: history.slice(-1), options: greedy() });
    const full = await h.srv.client.chat({ model: 'tiny', messages: history, options: greedy() });
    assert.equal(last.done, true);
    assert.equal(full.done, true);
    // A random-weight model answers different prompts differently at temperature 0: the same
    // text for both would mean the earlier turns were dropped.
    assert.notEqual(full.message.content, last.message.content, 'the earlier turns must change the answer');
  });

  test('chat and generate render the same chat template', async () => {
    const user = 'Name three rivers.';
    const c = await h.srv.client.chat({ model: 'tiny', messages: [{ role: 'user', content: user }], options: greedy() });
    const g = await h.srv.client.generate({ model: 'tiny', prompt: user, options: greedy() });
    assert.equal(c.message.content, g.response);

    const system = 'You are terse.';
    const cs = await h.srv.client.chat({
      model: 'tiny', messages: [{ role: 'system', content: system }, { role: 'user', content: user }], options: greedy(),
    });
    const gs = await h.srv.client.generate({ model: 'tiny', prompt: user, system, options: greedy() });
    assert.equal(cs.message.content, gs.response);
  });

  test('a model without a chat template answers (fallback template)', async () => {
    const r = await h.srv.client.chat({ model: 'tiny-spm', messages: history, options: greedy() });
    assert.equal(r.message.role, 'assistant');
    assert.equal(typeof r.message.content, 'string');
    assert.match(r.model, /^tiny-spm(:latest)?$/);
    assertFinal(r);

    const s = await collect(
      await h.srv.client.chat({ model: 'tiny-spm', messages: history, options: greedy(), stream: true }),
    );
    assert.equal(s.text, r.message.content);
    assert.equal(s.final.done_reason, 'length');
  });

  test('same seed at temperature 0.8 gives the same chat answer', async () => {
    const options = { temperature: 0.8, seed: 4242, num_predict: 10 };
    const a = await h.srv.client.chat({ model: 'tiny', messages: history, options });
    const b = await h.srv.client.chat({ model: 'tiny', messages: history, options });
    assert.equal(a.message.content, b.message.content);
  });
});
