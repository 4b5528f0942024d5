// Draft heads through the real server: gemma4's assistant (an MTP head that reads the target's
// hidden state and KV cache) and an EAGLE3 head (reads three of the target's layers, keeps a
// cache of its own) and a DFlash head (drafts a block in one decode) as a Modelfile DRAFT, and
// a model's own MTP layer (no DRAFT). /api/show
// names the kind, create refuses a head that cannot draft for its model, and with the head
// drafting the answers are the ones without it: greedy, seeded sampling, a JSON schema, after
// an image, from the prompt cache.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe } from 'node:test';
import { b64, bmp } from './images.mjs';
import { fixture, runCli, test, useServer } from './harness.mjs';

const head = {
  name: 'g4', from: 'gemma4-head-target.gguf',
  lines: [`DRAFT ${fixture('gemma4-assistant.gguf')}`, `FROM ${fixture('gemma4-mmproj.gguf')}`],
};
const greedy = (n, extra = {}) => ({ temperature: 0, num_predict: n, ...extra });
// The fixture head's step costs more than its tiny target's (both read a 262k vocabulary), so
// the depth controller would rightly not draft: these tests fix the depth.
const depth = (n, extra = {}) => greedy(n, { draft_depth: 3, ...extra });
const off = (n, extra = {}) => greedy(n, { draft_num_predict: 0, ...extra });

const ratio = (s) => s.accepted / s.drafted;
const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 0, maximum: 99 }, ok: { type: 'boolean' } },
  required: ['n', 'ok'] };

// A head with a cache of its own: seeded sampling (`seed`, drafting at depth 3) and the JSON
// schema (drafting with `on`) answer as without drafting.
async function expectSeededAndSchemaAsOff(client, model, seed, on) {
  const opts = { temperature: 0.9, top_k: 20, seed, num_predict: 48 };
  const a = await client.generate({ model, prompt: 'Tell me', stream: false, options: { ...opts, draft_depth: 3 } });
  const b = await client.generate({ model, prompt: 'Tell me', stream: false, options: { ...opts, draft_num_predict: 0 } });
  assert.equal(a.response, b.response);
  assert.ok(a.speculation.drafted > 0, JSON.stringify(a.speculation));
  const c = await client.generate({ model, prompt: 'Answer:', format: schema, stream: false, options: on(60) });
  const d = await client.generate({ model, prompt: 'Answer:', format: schema, stream: false, options: off(60) });
  assert.equal(c.response, d.response);
  assert.equal(typeof JSON.parse(c.response).ok, 'boolean');
}

// A chat goes on in the sequence that holds it (the head's cache kept in place), then after
// another prompt took the sequence (the target's state restored from the prompt cache, the
// head's own cache with it): both answer as without drafting, and the head's drafts are
// accepted.
async function expectKeptAndRestoredAsOff(client, model, on) {
  const first = { role: 'user', content: 'Name a colour. '.repeat(12) };
  const a = await client.chat({ model, stream: false, options: on(24), messages: [first] });
  const messages = [first, a.message, { role: 'user', content: 'And another?' }];
  const kept = await client.chat({ model, stream: false, options: on(32), messages });
  await client.generate({ model, prompt: 'Something else entirely', stream: false, options: off(8) });
  const restored = await client.chat({ model, stream: false, options: on(32), messages });
  const no = await client.chat({ model, stream: false, options: off(32), messages });
  assert.equal(kept.message.content, no.message.content);
  assert.equal(restored.message.content, no.message.content);
  assert.ok(restored.prompt_eval_count < 60, `prompt_eval_count ${restored.prompt_eval_count}`);
  for (const r of [kept, restored]) assert.ok(ratio(r.speculation) > 0.4, JSON.stringify(r.speculation));
}

// After an image the head drafts on: the same text as without drafting, its drafts accepted.
async function expectAfterAnImageAsOff(client, model, on) {
  const images = [b64(bmp(64, 64, 5))];
  const ask = (options) => client.chat({ model, stream: false, options,
    messages: [{ role: 'user', content: 'What is in this picture?', images }] });
  const no = await ask(off(48));
  const yes = await ask(on(48));
  assert.equal(yes.message.content, no.message.content);
  assert.ok(yes.speculation.drafted > 0 && ratio(yes.speculation) > 0.4, JSON.stringify(yes.speculation));
}

// `specd create` refuses each [Modelfile text, message] with an error matching its message.
async function expectRefusedAtCreate(env, cases) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-e2e-heads-'));
  try {
    const file = path.join(dir, 'Modelfile');
    for (const [text, message] of cases) {
      fs.writeFileSync(file, text);
      const r = await runCli(['create', 'refused-head', '-f', file], { env });
      assert.notEqual(r.code, 0, text);
      assert.match(r.stderr, message, text);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// Each [FROM fixture, message] with `head` as its DRAFT.
const withDraft = (head, cases) => cases.map(([from, message]) => [`FROM ${fixture(from)}\nDRAFT ${fixture(head)}\n`, message]);

describe('draft heads', () => {
  const h = useServer({ models: [head], env: { SPECD_NUM_PARALLEL: '1' } });

  test('/api/show names the draft kind', async () => {
    const r = await (await fetch(`${h.srv.url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'g4' }) })).json();
    assert.equal(r.draft.kind, 'gemma4-assistant');
    assert.equal(r.draft.architecture, 'gemma4-assistant');
    assert.ok(r.capabilities.includes('vision'));
  });

  test('greedy: the same text with the head on and off; the head drafts and is accepted', async () => {
    const { client } = h.srv;
    for (const prompt of ['Once upon a time', 'List the planets']) {
      const on = await client.generate({ model: 'g4', prompt, stream: false, options: depth(64) });
      const no = await client.generate({ model: 'g4', prompt, stream: false, options: off(64) });
      assert.equal(on.response, no.response, prompt);
      assert.equal(on.speculation.drafter, 'gemma4-assistant');
      assert.ok(on.speculation.drafted > 0, JSON.stringify(on.speculation));
      // The fixture head agrees with its target on ~80% of tokens.
      assert.ok(on.speculation.accepted / on.speculation.drafted > 0.4, JSON.stringify(on.speculation));
      assert.equal(no.speculation.drafted, 0);
    }
  });

  test('seeded sampling: one text for a seed, drafting or not', async () => {
    const { client } = h.srv;
    const opts = { temperature: 0.9, top_k: 20, seed: 42, num_predict: 48 };
    const on = await client.generate({ model: 'g4', prompt: 'Tell me', stream: false, options: { ...opts, draft_depth: 3 } });
    const no = await client.generate({ model: 'g4', prompt: 'Tell me', stream: false, options: { ...opts, draft_num_predict: 0 } });
    assert.equal(on.response, no.response);
    assert.ok(on.speculation.drafted > 0, JSON.stringify(on.speculation));
  });

  test('a JSON schema: valid, and the same with the head on and off', async () => {
    const { client } = h.srv;
    const on = await client.generate({ model: 'g4', prompt: 'Answer:', format: schema, stream: false, options: depth(60) });
    const no = await client.generate({ model: 'g4', prompt: 'Answer:', format: schema, stream: false, options: off(60) });
    assert.equal(on.response, no.response);
    const j = JSON.parse(on.response);
    assert.equal(typeof j.n, 'number');
    assert.equal(typeof j.ok, 'boolean');
    assert.ok(on.speculation.forced > 0 || on.speculation.drafted > 0, JSON.stringify(on.speculation));
  });

  test('after an image: the same text, and the head still drafts (it reads the target)', async () => {
    const { client } = h.srv;
    const images = [b64(bmp(96, 64, 3))];
    const ask = (options) => client.chat({ model: 'g4', stream: false, options,
      messages: [{ role: 'user', content: 'What is in this picture?', images }] });
    const no = await ask(off(48));
    const on = await ask(depth(48));
    assert.equal(on.message.content, no.message.content);
    assert.ok(on.speculation.drafted > 0, JSON.stringify(on.speculation));
    assert.ok(on.speculation.accepted / on.speculation.drafted > 0.4, JSON.stringify(on.speculation));
  });

  test('from the prompt cache: the head drafts on after the target state is restored', async () => {
    const { client } = h.srv;
    const first = { role: 'user', content: 'Name a colour. '.repeat(12) };
    const a = await client.chat({ model: 'g4', stream: false, options: depth(24), messages: [first] });
    // Another prompt takes the only sequence; the chat's state is in the prompt cache then.
    await client.generate({ model: 'g4', prompt: 'Something else entirely', stream: false, options: off(8) });
    const messages = [first, a.message, { role: 'user', content: 'And another?' }];
    const on = await client.chat({ model: 'g4', stream: false, options: depth(32), messages });
    const no = await client.chat({ model: 'g4', stream: false, options: off(32), messages });
    assert.equal(on.message.content, no.message.content);
    // The first turn and its answer (over 80 tokens) came back from the cache: only the new
    // turn was evaluated.
    assert.ok(on.prompt_eval_count < 60, `prompt_eval_count ${on.prompt_eval_count}`);
    assert.ok(on.speculation.drafted > 0 && on.speculation.accepted > 0, JSON.stringify(on.speculation));
  });

  test('a head for another architecture is refused at create with a 400', async () => {
    // A llama model: the kind's check comes before the vocabularies are compared.
    await expectRefusedAtCreate(h.srv.env, withDraft('gemma4-assistant.gguf', [
      ['vision-text.gguf', /DRAFT cannot be used with this model: a gemma4-assistant drafts for gemma4 models only/],
    ]));
  });
});

describe('EAGLE3 head', () => {
  // The fixture's llama target (n_embd 64) takes the gemma3 projector made for that width.
  const eagle = {
    name: 'e3', from: 'eagle3-target.gguf',
    lines: [`DRAFT ${fixture('eagle3-head.gguf')}`, `FROM ${fixture('vision-mmproj.gguf')}`],
  };
  const h = useServer({ models: [eagle], env: { SPECD_NUM_PARALLEL: '1' } });

  test('/api/show names the draft kind', async () => {
    const r = await (await fetch(`${h.srv.url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'e3' }) })).json();
    assert.equal(r.draft.kind, 'eagle3');
    assert.equal(r.draft.architecture, 'eagle3');
  });

  test('greedy: the same text with the head on (fixed and adaptive depth) and off; its drafts are accepted', async () => {
    const { client } = h.srv;
    for (const prompt of ['Once upon a time', 'List the planets']) {
      const no = await client.generate({ model: 'e3', prompt, stream: false, options: off(64) });
      const on = await client.generate({ model: 'e3', prompt, stream: false, options: depth(64) });
      const auto = await client.generate({ model: 'e3', prompt, stream: false, options: greedy(64) });
      assert.equal(on.response, no.response, prompt);
      assert.equal(auto.response, no.response, prompt);
      assert.equal(on.speculation.drafter, 'eagle3');
      assert.ok(on.speculation.drafted > 0, JSON.stringify(on.speculation));
      // The fixture head agrees with its target on ~80% of tokens.
      assert.ok(ratio(on.speculation) > 0.4, JSON.stringify(on.speculation));
    }
  });

  test('seeded sampling and a JSON schema: the same answers drafting or not', async () => {
    await expectSeededAndSchemaAsOff(h.srv.client, 'e3', 7, depth);
  });

  test('after an image and from the prompt cache: the same text, and the head drafts on', async () => {
    await expectAfterAnImageAsOff(h.srv.client, 'e3', depth);
    await expectKeptAndRestoredAsOff(h.srv.client, 'e3', depth);
  });

  test('a head for another width, layers the model lacks or an architecture whose layers cannot be read is refused at create', async () => {
    await expectRefusedAtCreate(h.srv.env, withDraft('eagle3-head.gguf', [
      ['deep.gguf', /DRAFT cannot be used with this model: the eagle3 head was made for a hidden size of 64, the model's is 128/],
      ['qwen-vl-text.gguf', /DRAFT cannot be used with this model: an eagle3 head cannot read the layers of a qwen2vl model/],
      // tiny.gguf is as wide, with 2 layers: the head reads layer 3.
      ['tiny.gguf', /DRAFT cannot be used with this model: the eagle3 head reads layer 3, the model has 2/],
    ]));
  });
});

describe('a model with an MTP layer of its own', () => {
  // glm4moe with one nextn layer, no DRAFT line: the model drafts with its layer by default.
  const mtp = { name: 'mtp', from: 'mtp.gguf', lines: [] };
  const h = useServer({ models: [mtp], env: { SPECD_NUM_PARALLEL: '1' } });

  test('/api/show names the draft kind', async () => {
    const r = await (await fetch(`${h.srv.url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'mtp' }) })).json();
    assert.equal(r.draft.kind, 'mtp');
    assert.equal(r.draft.architecture, 'glm4moe');
    assert.equal(r.model_info['glm4moe.nextn_predict_layers'], 1);
  });

  test('greedy: the same text with its layer drafting (fixed and adaptive depth) and not; its drafts are accepted', async () => {
    const { client } = h.srv;
    for (const prompt of ['Once upon a time', 'List the planets']) {
      const no = await client.generate({ model: 'mtp', prompt, stream: false, options: off(64) });
      const on = await client.generate({ model: 'mtp', prompt, stream: false, options: depth(64) });
      const auto = await client.generate({ model: 'mtp', prompt, stream: false, options: greedy(64) });
      assert.equal(on.response, no.response, prompt);
      assert.equal(auto.response, no.response, prompt);
      assert.equal(on.speculation.drafter, 'mtp');
      assert.ok(on.speculation.drafted > 0, JSON.stringify(on.speculation));
      // The fixture's layer agrees with its model on ~80% of tokens.
      assert.ok(ratio(on.speculation) > 0.4, JSON.stringify(on.speculation));
      assert.equal(no.speculation.drafted, 0);
    }
  });

  test('seeded sampling and a JSON schema: the same answers drafting or not', async () => {
    await expectSeededAndSchemaAsOff(h.srv.client, 'mtp', 11, depth);
  });

  test('a vision projector for it is refused at create: its graph would stop the process on an image', async () => {
    await expectRefusedAtCreate(h.srv.env, [[`FROM ${fixture('mtp.gguf')}\nFROM ${fixture('vision-mmproj.gguf')}\n`,
      /a glm4moe model without M-RoPE sections cannot take images/]]);
  });

  test('from the prompt cache: the same text, and its layer drafts on', async () => {
    await expectKeptAndRestoredAsOff(h.srv.client, 'mtp', depth);
  });
});

describe('DFlash head', () => {
  // The fixture's llama target (n_embd 64) takes the gemma3 projector made for that width.
  const dflash = {
    name: 'df', from: 'dflash-target.gguf',
    lines: [`DRAFT ${fixture('dflash-head.gguf')}`, `FROM ${fixture('vision-mmproj.gguf')}`],
  };
  const h = useServer({ models: [dflash], env: { SPECD_NUM_PARALLEL: '1' } });
  // The fixture head's first drafted token is the one it dialed, the later ones guesses.
  const first = (n, extra = {}) => greedy(n, { draft_depth: 1, ...extra });

  test('/api/show names the draft kind', async () => {
    const r = await (await fetch(`${h.srv.url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'df' }) })).json();
    assert.equal(r.draft.kind, 'dflash');
    assert.equal(r.draft.architecture, 'dflash');
  });

  test('greedy: the same text with the head on (depths 1 and 4, adaptive) and off; its first drafts are accepted', async () => {
    const { client } = h.srv;
    for (const prompt of ['Once upon a time', 'List the planets']) {
      const no = await client.generate({ model: 'df', prompt, stream: false, options: off(64) });
      const one = await client.generate({ model: 'df', prompt, stream: false, options: first(64) });
      const four = await client.generate({ model: 'df', prompt, stream: false, options: greedy(64, { draft_depth: 4 }) });
      const auto = await client.generate({ model: 'df', prompt, stream: false, options: greedy(64) });
      for (const r of [one, four, auto]) assert.equal(r.response, no.response, prompt);
      assert.equal(one.speculation.drafter, 'dflash');
      assert.ok(one.speculation.drafted > 20, JSON.stringify(one.speculation));
      assert.ok(ratio(one.speculation) > 0.4, JSON.stringify(one.speculation));
      assert.ok(four.speculation.drafted > one.speculation.drafted, JSON.stringify(four.speculation));
    }
  });

  test('seeded sampling and a JSON schema: the same answers drafting or not', async () => {
    await expectSeededAndSchemaAsOff(h.srv.client, 'df', 5, depth);
  });

  test('after an image and from the prompt cache: the same text, and the head drafts on', async () => {
    await expectAfterAnImageAsOff(h.srv.client, 'df', first);
    await expectKeptAndRestoredAsOff(h.srv.client, 'df', first);
  });

  test('a head for another width, layers the model lacks or an architecture whose layers cannot be read is refused at create', async () => {
    await expectRefusedAtCreate(h.srv.env, withDraft('dflash-head.gguf', [
      ['deep.gguf', /DRAFT cannot be used with this model: the dflash head was made for a hidden size of 64, the model's is 128/],
      ['qwen-vl-text.gguf', /DRAFT cannot be used with this model: a dflash head cannot read the layers of a qwen2vl model/],
      // tiny.gguf is as wide, with 2 layers: the head reads layers 2 and 3.
      ['tiny.gguf', /DRAFT cannot be used with this model: the dflash head reads layer 2, the model has 2/],
    ]));
  });
});
