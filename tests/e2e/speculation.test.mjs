// Speculative decoding through the real server: counters in every final response, output
// identical with drafting on and off at temperature 0, per-request and server-wide switches,
// /metrics totals, and models with a DRAFT line created before and while the server runs.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe } from 'node:test';
import { createModel, fixture, runCli, startServer, test, useServer } from './harness.mjs';

const pairModel = { name: 'pair', from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`] };
const greedy = (n, extra = {}) => ({ temperature: 0, num_predict: n, ...extra });

function checkCounters(s) {
  assert.ok(s, 'final response has a speculation object');
  for (const k of ['rounds', 'drafted', 'accepted', 'mean_k', 'zero_k_rounds', 'probes']) {
    assert.equal(typeof s[k], 'number', `speculation.${k} is a number`);
    assert.ok(s[k] >= 0, `speculation.${k} >= 0`);
  }
  assert.ok(Array.isArray(s.accepted_per_position));
  for (const k of ['forced', 'forced_accepted', 'grammar_truncated', 'grammar_truncated_rounds', 'grammar_no_legal_draft']) {
    assert.equal(typeof s[k], 'number', `speculation.${k} is a number`);
    assert.ok(s[k] >= 0, `speculation.${k} >= 0`);
  }
  assert.ok(s.accepted <= s.drafted);
  assert.ok(s.forced_accepted <= s.forced);
  assert.ok(s.rounds >= 1);
}

describe('speculation', () => {
  // One sequence, as these tests were written for: the depth controller's timings on the tiny
  // pair decide whether drafting runs at all, and a fresh-clone asan run once saw no model draft
  // accepted on the default 4 sequences. Batching has its own tests (concurrency.test.mjs).
  const h = useServer({ models: [pairModel, { name: 'tiny' }], env: { SPECD_NUM_PARALLEL: '1' } });

  test('generate: counters, and the same text with drafting off', async () => {
    const { client } = h.srv;
    const on = await client.generate({ model: 'pair', prompt: 'Once upon a time', stream: false, options: greedy(64) });
    const off = await client.generate({ model: 'pair', prompt: 'Once upon a time', stream: false,
      options: greedy(64, { draft_num_predict: 0 }) });
    checkCounters(on.speculation);
    checkCounters(off.speculation);
    assert.equal(off.speculation.drafted, 0);
    assert.equal(off.speculation.probes, 0);
    assert.equal(on.response, off.response);
    assert.equal(on.eval_count, 64);
  });

  test('streaming chat: the last chunk carries the counters', async () => {
    const { client } = h.srv;
    const parts = await client.chat({ model: 'pair', messages: [{ role: 'user', content: 'hi' }], stream: true,
      options: greedy(24) });
    let last, text = '';
    for await (const p of parts) { text += p.message.content; last = p; }
    assert.equal(last.done, true);
    checkCounters(last.speculation);
    const off = await client.chat({ model: 'pair', messages: [{ role: 'user', content: 'hi' }], stream: false,
      options: greedy(24, { draft_num_predict: 0 }) });
    assert.equal(text, off.message.content);
  });

  test('streaming: one piece of text per round, not per token', async () => {
    const { client } = h.srv;
    const parts = await client.generate({ model: 'pair', prompt: 'Once upon a time', stream: true,
      options: greedy(64, { draft_depth: 4 }) });
    let pieces = 0, last;
    for await (const p of parts) {
      if (p.response !== '') ++pieces;
      last = p;
    }
    const s = last.speculation;
    checkCounters(s);
    assert.ok(s.accepted > 0, JSON.stringify(s));
    // A round commits its accepted drafts and the target's token at once; their text goes out
    // together (each piece wakes the client's reader, and in process mode the server's too).
    // The first token comes from the prompt's step, before any round.
    assert.ok(pieces <= s.rounds + 1, `${pieces} pieces for ${s.rounds} rounds`);
    assert.ok(pieces < last.eval_count, `${pieces} pieces for ${last.eval_count} tokens`);
  });

  test('format: grammar counters are reported and the answer is unchanged by drafting', async () => {
    const { client } = h.srv;
    const format = { type: 'object', properties: { n: { type: 'integer' }, ok: { type: 'boolean' } }, required: ['n', 'ok'] };
    const on = await client.generate({ model: 'pair', prompt: 'Answer:', format, stream: false, options: greedy(120) });
    const off = await client.generate({ model: 'pair', prompt: 'Answer:', format, stream: false,
      options: greedy(120, { draft_num_predict: 0 }) });
    checkCounters(on.speculation);
    assert.equal(on.response, off.response);
    assert.equal(on.done_reason, 'stop');
    const j = JSON.parse(on.response);
    assert.equal(typeof j.n, 'number');
    assert.equal(typeof j.ok, 'boolean');
    // Drafting off drafts nothing, so nothing can have been cut.
    assert.equal(off.speculation.grammar_truncated, 0);
    assert.equal(off.speculation.grammar_no_legal_draft, 0);
    assert.equal(off.speculation.forced, 0);
  });

  test('format with fixed keys: forced text and model drafts are proposed and accepted', async () => {
    const { client } = h.srv;
    const item = {
      type: 'object',
      properties: {
        label: { type: 'string', maxLength: 8 },
        bbox: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 999 }, minItems: 4, maxItems: 4 },
      },
      required: ['label', 'bbox'],
    };
    const format = { type: 'array', items: item, minItems: 6, maxItems: 6 };
    // The depth controller drafts only while drafting pays, which on these tiny models depends
    // on the machine's load: a fixed depth (options.draft_depth) makes every round draft.
    const total = { forced: 0, drafted: 0, accepted: 0 };
    for (const stream of [false, true]) {
      const on = await client.generate({ model: 'pair', prompt: 'Objects:', format, stream,
        options: greedy(400, { draft_depth: 4 }) });
      let final = on, text = on.response;
      if (stream) { text = ''; for await (const p of on) { text += p.response; final = p; } }
      const off = await client.generate({ model: 'pair', prompt: 'Objects:', format, stream: false,
        options: greedy(400, { draft_num_predict: 0 }) });
      assert.equal(text, off.response);
      assert.equal(final.done_reason, 'stop');
      const j = JSON.parse(text);
      assert.equal(j.length, 6);
      for (const o of j) {
        assert.deepEqual(Object.keys(o), ['label', 'bbox']);
        assert.equal(o.bbox.length, 4);
      }
      const s = final.speculation;
      checkCounters(s);
      for (const k of Object.keys(total)) total[k] += s[k];
      assert.equal(off.speculation.forced + off.speculation.drafted, 0);
    }
    assert.ok(total.forced > 0, `forced ${total.forced}`);
    assert.ok(total.drafted > 0, `drafted ${total.drafted}`);
    assert.ok(total.accepted > 0, `accepted ${total.accepted}`);
  });

  test('prompt lookup drafts on a model without a draft', async () => {
    const { client } = h.srv;
    const prompt = 'one two three four. one two three four. one two three four. one two';
    const r = await client.generate({ model: 'tiny', prompt, raw: true, stream: false, options: greedy(32) });
    checkCounters(r.speculation);
  });

  test('/metrics carries the totals and the depth histogram', async () => {
    const res = await fetch(`${h.srv.url}/metrics`);
    assert.equal(res.status, 200);
    const text = await res.text();
    const value = (name) => Number((text.match(new RegExp(`^${name} (\\S+)$`, 'm')) ?? [])[1]);
    assert.ok(value('specd_requests_total') >= 3);
    assert.ok(value('specd_spec_rounds_total') > 0);
    assert.ok(value('specd_generated_tokens_total') >= 64);
    assert.ok(value('specd_spec_forced_total') > 0);
    for (const name of ['specd_spec_forced_accepted_total', 'specd_spec_grammar_truncated_total',
      'specd_spec_grammar_truncated_rounds_total', 'specd_spec_grammar_no_legal_draft_total']) {
      assert.ok(value(name) >= 0, name);
    }
    assert.match(text, /^specd_spec_depth_bucket\{le="\+Inf"\} \d+$/m);
  });

  test('a DRAFT model created while the server runs is served at once', async () => {
    const { client, env, modelsDir } = h.srv;
    await createModel(modelsDir, 'pair2', { from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`], env });
    const r = await client.generate({ model: 'pair2', prompt: 'x', stream: false, options: greedy(8) });
    checkCounters(r.speculation);
    const show = await client.show({ model: 'pair2' });
    assert.match(show.modelfile, /^DRAFT /m);
  });

  test('a draft with another vocabulary is refused at create, with and without a server', async () => {
    const { env, modelsDir, url } = h.srv;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-e2e-mismatch-'));
    try {
      const file = path.join(dir, 'Modelfile');
      fs.writeFileSync(file, `FROM ${fixture('tiny.gguf')}\nDRAFT ${fixture('tiny-spm.gguf')}\n`);
      // Through the running server (blobs + /api/create) ...
      const viaServer = await runCli(['create', 'mismatch', '-f', file], { env });
      assert.notEqual(viaServer.code, 0);
      assert.match(viaServer.stderr, /DRAFT cannot be used with this model: .*tokens/);
      // ... and straight into a store with no server.
      const direct = await runCli(['create', 'mismatch', '-f', file],
        { env: { SPECD_MODELS: dir, SPECD_HOST: '127.0.0.1:1' } });
      assert.notEqual(direct.code, 0);
      assert.match(direct.stderr, /DRAFT cannot be used with this model/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const res = await fetch(`${url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'mismatch' }) });
    assert.equal(res.status, 404);
    assert.ok(modelsDir);
  });
});

describe('speculation off for the whole server', () => {
  test('SPECD_NO_DRAFT=1 drafts nothing', async () => {
    const srv = await startServer({ models: [pairModel], env: { SPECD_NO_DRAFT: '1' } });
    try {
      const r = await srv.client.generate({ model: 'pair', prompt: 'Once upon a time', stream: false, options: greedy(32) });
      checkCounters(r.speculation);
      assert.equal(r.speculation.drafted, 0);
      assert.equal(r.speculation.probes, 0);
    } finally {
      const s = await srv.stop();
      assert.equal(s.code, 0);
    }
  });

  test('specd serve rejects unknown flags', async () => {
    const r = await runCli(['serve', '--no-such-flag']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /^Error: unknown flag: --no-such-flag$/m);
  });
});
