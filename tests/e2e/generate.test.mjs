// /api/generate through the official ollama client: final fields, streaming, determinism,
// context continuation, load-only requests, stop strings, raw, system, keep_alive and /api/ps.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { collect, sleep, test, useServer } from './harness.mjs';

const h = useServer();
const MODEL = 'tiny';
const greedy = (extra = {}) => ({ temperature: 0, seed: 42, num_predict: 8, ...extra });

function assertDuration(v, name, { allowZero = false } = {}) {
  assert.ok(Number.isInteger(v), `${name} must be an integer, got ${v}`);
  if (allowZero) assert.ok(v >= 0, `${name} must be >= 0, got ${v}`);
  else assert.ok(v > 0, `${name} must be > 0 ns, got ${v}`);
}

function assertTokenArray(ctx) {
  assert.ok(Array.isArray(ctx), `context must be an array, got ${JSON.stringify(ctx)}`);
  assert.ok(ctx.length > 0, 'context must not be empty');
  for (const t of ctx) assert.ok(Number.isInteger(t) && t >= 0, `context holds a non-token ${t}`);
}

async function psModels() {
  const ps = await h.srv.client.ps();
  assert.ok(Array.isArray(ps.models), `ps().models must be an array: ${JSON.stringify(ps)}`);
  return ps.models;
}

async function waitUnloaded(ms = 3000) {
  const deadline = Date.now() + ms;
  let models;
  while ((models = await psModels()).length > 0 && Date.now() < deadline) await sleep(50);
  return models;
}

describe('generate', () => {
  test('non-streaming: final fields', async () => {
    const r = await h.srv.client.generate({ model: MODEL, prompt: 'Why is the sky blue?', options: greedy() });
    assert.equal(typeof r.response, 'string');
    assert.ok(r.response.length > 0, 'response must not be empty');
    assert.equal(r.done, true);
    assert.equal(r.done_reason, 'length');
    assert.equal(r.eval_count, 8);
    assert.ok(Number.isInteger(r.prompt_eval_count) && r.prompt_eval_count > 0, `prompt_eval_count ${r.prompt_eval_count}`);
    assertDuration(r.total_duration, 'total_duration');
    assertDuration(r.load_duration, 'load_duration', { allowZero: true });
    assertDuration(r.prompt_eval_duration, 'prompt_eval_duration');
    assertDuration(r.eval_duration, 'eval_duration');
    assert.ok(r.total_duration >= r.eval_duration, 'total_duration must cover eval_duration');
    assert.ok(r.total_duration >= r.prompt_eval_duration, 'total_duration must cover prompt_eval_duration');
    assertTokenArray(r.context);
    assert.ok(r.context.length >= r.eval_count, 'context must hold at least the generated tokens');
    assert.match(r.model, /^tiny(:latest)?$/);
    assert.ok(!Number.isNaN(Date.parse(r.created_at)), `created_at must be a date: ${r.created_at}`);
  });

  test('streaming: parts concatenate to the non-streaming text', async () => {
    const prompt = 'Tell me a story about a dragon.';
    const options = greedy({ num_predict: 12 });
    const whole = await h.srv.client.generate({ model: MODEL, prompt, options });
    const stream = await h.srv.client.generate({ model: MODEL, prompt, options, stream: true });
    assert.equal(typeof stream[Symbol.asyncIterator], 'function', 'stream: true must give an async iterator');
    const { parts, text, final } = await collect(stream);
    assert.ok(parts.length >= 2, `expected several parts, got ${parts.length}`);
    for (const p of parts.slice(0, -1)) {
      assert.equal(p.done, false);
      assert.equal(typeof p.response, 'string');
    }
    assert.equal(final.done, true);
    assert.equal(final.done_reason, 'length');
    assert.equal(final.eval_count, 12);
    assertTokenArray(final.context);
    assert.equal(text, whole.response);
    assert.deepEqual(final.context, whole.context);
  });

  test('same seed at temperature 0.8 gives the same text', async () => {
    const options = { temperature: 0.8, seed: 1234, num_predict: 12 };
    const prompt = 'Write a haiku about autumn.';
    const a = await h.srv.client.generate({ model: MODEL, prompt, options });
    const b = await h.srv.client.generate({ model: MODEL, prompt, options });
    assert.equal(a.response, b.response);
    assert.equal(a.eval_count, b.eval_count);
    // A different seed is allowed to give the same text, but the request must work.
    const c = await h.srv.client.generate({ model: MODEL, prompt, options: { ...options, seed: 99 } });
    assert.equal(c.done, true);
  });

  test('context continuation', async () => {
    const first = await h.srv.client.generate({ model: MODEL, prompt: 'My name is Ada.', options: greedy() });
    assertTokenArray(first.context);
    const second = await h.srv.client.generate({
      model: MODEL,
      prompt: 'What is my name?',
      context: first.context,
      options: greedy(),
    });
    assert.equal(second.done, true);
    assert.equal(second.eval_count, 8);
    assertTokenArray(second.context);
    assert.ok(second.context.length > first.context.length, 'the continued context must be longer');
    assert.deepEqual(second.context.slice(0, first.context.length), first.context,
      'the continued context must start with the previous context');
    // Without the context the model sees a different (shorter) prompt.
    const alone = await h.srv.client.generate({ model: MODEL, prompt: 'What is my name?', options: greedy() });
    assert.ok(alone.context.length < second.context.length);
  });

  test('an empty prompt loads the model (done_reason "load")', async () => {
    const r = await h.srv.client.generate({ model: MODEL, prompt: '' });
    assert.equal(r.done, true);
    assert.equal(r.done_reason, 'load');
    assert.equal(r.response, '');
  });

  test('stop string: the answer ends before its first occurrence', async () => {
    const prompt = 'List some colors.';
    const options = greedy({ num_predict: 16 });
    const full = await h.srv.client.generate({ model: MODEL, prompt, options });
    assert.equal(full.done_reason, 'length');
    // Pick a stop string from the middle of the answer (whole code points, not only spaces).
    const cps = Array.from(full.response);
    assert.ok(cps.length >= 6, `answer too short to pick a stop string: ${JSON.stringify(full.response)}`);
    let stop = null;
    for (let start = Math.floor(cps.length / 2); start < cps.length - 1 && !stop; start++) {
      const cand = cps.slice(start, start + 3).join('');
      if (cand.trim() !== '') stop = cand;
    }
    assert.ok(stop, 'no usable stop string in the middle of the answer');
    const expected = full.response.slice(0, full.response.indexOf(stop));

    const r = await h.srv.client.generate({ model: MODEL, prompt, options: { ...options, stop: [stop] } });
    assert.equal(r.done_reason, 'stop', `stop ${JSON.stringify(stop)} in ${JSON.stringify(full.response)}`);
    assert.equal(r.response, expected, `stop ${JSON.stringify(stop)} in ${JSON.stringify(full.response)}`);
    assert.ok(!r.response.includes(stop));

    // The same through a stream: the concatenation never contains the stop string.
    const s = await collect(await h.srv.client.generate({
      model: MODEL, prompt, options: { ...options, stop: [stop] }, stream: true,
    }));
    assert.equal(s.final.done_reason, 'stop');
    assert.equal(s.text, expected);

    // Several stop strings: the earliest occurrence in the text wins, whatever the list order.
    const before = Array.from(expected);
    let early = null;
    for (let i = 1; i + 2 <= before.length && !early; i++) {
      const cand = before.slice(i, i + 2).join('');
      if (cand.trim() !== '') early = cand;
    }
    assert.ok(early, `no second stop string before ${JSON.stringify(stop)} in ${JSON.stringify(full.response)}`);
    const m = await h.srv.client.generate({ model: MODEL, prompt, options: { ...options, stop: [stop, early] } });
    assert.equal(m.done_reason, 'stop');
    assert.equal(m.response, full.response.slice(0, full.response.indexOf(early)),
      `stops ${JSON.stringify([stop, early])} in ${JSON.stringify(full.response)}`);
  });

  test('queued requests: parallel identical requests all get the same answer', async () => {
    const req = { model: MODEL, prompt: 'Name a fruit.', options: greedy({ num_predict: 6 }) };
    const rs = await Promise.all([1, 2, 3].map(() => h.srv.client.generate(req)));
    for (const r of rs) {
      assert.equal(r.done, true);
      assert.equal(r.eval_count, 6);
      assert.equal(r.response, rs[0].response);
    }
  });

  test('raw: the prompt is not templated', async () => {
    const prompt = 'The quick brown fox';
    const templated = await h.srv.client.generate({ model: MODEL, prompt, options: greedy() });
    const raw = await h.srv.client.generate({ model: MODEL, prompt, raw: true, options: greedy() });
    assert.equal(raw.done, true);
    assert.equal(typeof raw.response, 'string');
    assert.equal(raw.eval_count, 8);
    // context = prompt tokens + generated tokens; the template adds tokens around the prompt.
    const rawPrompt = raw.context.length - raw.eval_count;
    const tplPrompt = templated.context.length - templated.eval_count;
    assert.ok(rawPrompt > 0, `raw prompt tokens ${rawPrompt}`);
    assert.ok(rawPrompt < tplPrompt, `raw prompt (${rawPrompt} tokens) must be shorter than templated (${tplPrompt})`);
  });

  test('system: the system prompt reaches the model', async () => {
    const prompt = 'Who are you?';
    const plain = await h.srv.client.generate({ model: MODEL, prompt, options: greedy() });
    const sys = await h.srv.client.generate({
      model: MODEL, prompt, system: 'You are a pirate who speaks only in rhymes.', options: greedy(),
    });
    assert.equal(sys.done, true);
    assert.equal(sys.eval_count, 8);
    const plainPrompt = plain.context.length - plain.eval_count;
    const sysPrompt = sys.context.length - sys.eval_count;
    assert.ok(sysPrompt >= plainPrompt + 8, `system prompt adds tokens: ${plainPrompt} -> ${sysPrompt}`);
  });

  test('ps after a request: loaded model, default context 4096, expiry in the future', async () => {
    await h.srv.client.generate({ model: MODEL, prompt: 'hi', options: greedy({ num_predict: 4 }) });
    const models = await psModels();
    assert.equal(models.length, 1, JSON.stringify(models));
    const m = models[0];
    assert.equal(m.name, 'tiny:latest');
    assert.ok(Number.isInteger(m.size) && m.size > 0, `size ${m.size}`);
    assert.equal(m.context_length, 4096);
    const exp = Date.parse(m.expires_at);
    assert.ok(!Number.isNaN(exp), `expires_at ${m.expires_at}`);
    assert.ok(exp > Date.now(), `expires_at ${m.expires_at} must be in the future`);
    assert.ok(exp < Date.now() + 10 * 60_000, `default keep_alive is 5 minutes: ${m.expires_at}`);
    assert.match(m.digest, /^(sha256:)?[0-9a-f]{64}$/, `digest ${m.digest}`);
  });

  test('ps: the digest is bare hex, as Ollama shows it', async () => {
    await h.srv.client.generate({ model: MODEL, prompt: 'hi', options: greedy({ num_predict: 2 }) });
    const models = await psModels();
    assert.equal(models.length, 1);
    assert.match(models[0].digest, /^[0-9a-f]{64}$/, `digest ${models[0].digest}`);
  });

  test('ps reports num_ctx 256 for a request with options.num_ctx 256', async () => {
    const r = await h.srv.client.generate({ model: MODEL, prompt: 'hi', options: greedy({ num_predict: 4, num_ctx: 256 }) });
    assert.equal(r.done, true);
    const models = await psModels();
    assert.equal(models.length, 1, JSON.stringify(models));
    assert.equal(models[0].context_length, 256);
    // Back to the default.
    await h.srv.client.generate({ model: MODEL, prompt: 'hi', options: greedy({ num_predict: 4 }) });
    const again = await psModels();
    assert.equal(again.length, 1);
    assert.equal(again[0].context_length, 4096);
  });

  test('keep_alive "10m" and -1 set the expiry shown by ps', async () => {
    await h.srv.client.generate({ model: MODEL, prompt: 'hi', keep_alive: '10m', options: greedy({ num_predict: 2 }) });
    let [m] = await psModels();
    const left = Date.parse(m.expires_at) - Date.now();
    assert.ok(left > 9 * 60_000 && left <= 10 * 60_000 + 5000, `expires in ${left} ms: ${m.expires_at}`);
    await h.srv.client.generate({ model: MODEL, prompt: 'hi', keep_alive: -1, options: greedy({ num_predict: 2 }) });
    [m] = await psModels();
    assert.ok(Date.parse(m.expires_at) > Date.now() + 365 * 24 * 3600_000, `kept forever: ${m.expires_at}`);
    // Back to the default 5 minutes.
    await h.srv.client.generate({ model: MODEL, prompt: 'hi', options: greedy({ num_predict: 2 }) });
    [m] = await psModels();
    const dflt = Date.parse(m.expires_at) - Date.now();
    assert.ok(dflt > 4 * 60_000 && dflt <= 5 * 60_000 + 5000, `default expiry in ${dflt} ms: ${m.expires_at}`);
  });

  test('keep_alive 0 unloads the model after the request; the next request loads it again', async () => {
    const r = await h.srv.client.generate({ model: MODEL, prompt: 'hi', keep_alive: 0, options: greedy({ num_predict: 4 }) });
    assert.equal(r.done, true);
    assert.equal(r.eval_count, 4);
    const models = await waitUnloaded();
    assert.deepEqual(models, [], 'ps must show no model after keep_alive 0');

    const again = await h.srv.client.generate({ model: MODEL, prompt: 'hi', options: greedy({ num_predict: 4 }) });
    assertDuration(again.load_duration, 'load_duration of a fresh load');
    assert.equal((await psModels()).length, 1);
  });

  test('keep_alive 0 with an empty prompt unloads at once (done_reason "unload")', async () => {
    await h.srv.client.generate({ model: MODEL, prompt: 'hi', options: greedy({ num_predict: 4 }) });
    assert.equal((await psModels()).length, 1);
    const r = await h.srv.client.generate({ model: MODEL, prompt: '', keep_alive: 0 });
    assert.equal(r.done, true);
    assert.equal(r.done_reason, 'unload');
    assert.deepEqual(await waitUnloaded(), []);
  });

  test('options the server does not know are ignored, as Ollama does, and listed in warnings', async () => {
    const options = greedy({ num_gqa: 8, tfs_z: 0.5 });
    const r = await h.srv.client.generate({ model: MODEL, prompt: 'hi', options });
    const plain = await h.srv.client.generate({ model: MODEL, prompt: 'hi', options: greedy() });
    assert.equal(r.response, plain.response, 'the ignored options change nothing');
    assert.deepEqual(r.warnings, ['option "num_gqa" is not a known option: ignored',
      'option tfs_z is not supported (llama.cpp removed it): ignored']);
    assert.equal(plain.warnings, undefined, 'no warnings without a reason');
    const streamed = await collect(await h.srv.client.generate({ model: MODEL, prompt: 'hi', options, stream: true }));
    assert.deepEqual(streamed.final.warnings, r.warnings);
    assert.ok(streamed.parts.slice(0, -1).every((p) => p.warnings === undefined), 'only the final chunk carries them');
    const chat = await h.srv.client.chat({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], options });
    assert.equal(chat.warnings.length, 2);
    // A known option with a wrong value is still refused.
    const bad = await h.srv.client.generate({ model: MODEL, prompt: 'hi', options: { top_k: 'many' } }).catch((e) => e);
    assert.match(String(bad.message ?? bad), /top_k/);
  });

  test('mirostat 2 with a tiny target surprise keeps only the most probable token: the greedy answer at any seed', async () => {
    const greedyText = (await h.srv.client.generate({ model: MODEL, prompt: 'Tell me a story.', options: greedy({ num_predict: 16 }) })).response;
    const sampled = async (seed, extra) => (await h.srv.client.generate({
      model: MODEL, prompt: 'Tell me a story.', options: { temperature: 1, seed, num_predict: 16, ...extra },
    })).response;
    // Without mirostat, temperature 1 wanders off the greedy answer (so the check below can fail).
    const free = await Promise.all([1, 2, 3].map((seed) => sampled(seed, {})));
    assert.ok(free.some((t) => t !== greedyText), 'sampling at temperature 1 never left the greedy answer');
    for (const seed of [1, 2, 3]) {
      assert.equal(await sampled(seed, { mirostat: 2, mirostat_tau: 0.01, mirostat_eta: 0.1 }), greedyText, `seed ${seed}`);
    }
    // A generous target surprise samples freely again; version 1 runs too.
    const loose = await Promise.all([1, 2, 3].map((seed) => sampled(seed, { mirostat: 2, mirostat_tau: 20 })));
    assert.ok(loose.some((t) => t !== greedyText));
    assert.equal(typeof await sampled(4, { mirostat: 1, mirostat_tau: 3 }), 'string');
  });
});
