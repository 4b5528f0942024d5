// Structured output: format "json" and a JSON schema. A constrained answer that ends with
// done_reason "stop" must parse (and validate against the schema); one cut by num_predict
// ("length") must at least be a prefix of a JSON object.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import Ajv from 'ajv';
import { collect, test, useServer } from './harness.mjs';
import { isJsonPrefix } from './json_prefix.mjs';

const h = useServer();
const MODEL = 'tiny';

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    age: { type: 'integer', minimum: 0 },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
  },
  required: ['name', 'age'],
};

const validate = new Ajv({ allErrors: true, strict: true }).compile(SCHEMA);

/**
 * Runs the attempts in order until one ends with "stop"; every answer is checked on the way.
 * Returns the list of {attempt, response, done_reason, parsed}.
 */
async function constrainedAttempts(format, attempts, onComplete) {
  const seen = [];
  for (const a of attempts) {
    const r = await h.srv.client.generate({
      model: MODEL,
      prompt: a.prompt,
      format,
      options: { num_predict: 400, temperature: a.temperature ?? 0, seed: a.seed ?? 1 },
    });
    const entry = { attempt: a, done_reason: r.done_reason, eval_count: r.eval_count, response: r.response };
    seen.push(entry);
    assert.equal(r.done, true);
    assert.ok(['stop', 'length'].includes(r.done_reason), `done_reason ${r.done_reason}`);
    assert.ok(r.response.trimStart().startsWith('{'), `answer must start with {: ${JSON.stringify(r.response.slice(0, 80))}`);
    if (r.done_reason === 'length') {
      assert.equal(r.eval_count, 400, 'a "length" answer used the whole num_predict');
      assert.ok(isJsonPrefix(r.response), `a cut answer must be a JSON prefix: ${JSON.stringify(r.response)}`);
      continue;
    }
    let parsed;
    assert.doesNotThrow(() => {
      parsed = JSON.parse(r.response);
    }, `a "stop" answer must be JSON: ${JSON.stringify(r.response)}`);
    assert.equal(typeof parsed, 'object');
    assert.ok(parsed !== null && !Array.isArray(parsed), 'the answer must be a JSON object');
    entry.parsed = parsed;
    onComplete?.(parsed, r);
    return seen;
  }
  const summary = seen.map((s) => `${JSON.stringify(s.attempt)} -> ${s.done_reason} (${s.eval_count} tokens)`).join('\n');
  assert.fail(`no constrained answer completed with done_reason "stop" within 400 tokens:\n${summary}`);
}

describe('format', () => {
  test('the JSON prefix checker itself', () => {
    for (const ok of ['{', '{"a', '{"a":', '{"a": 1', '{"a": -', '{"a": 1.', '{"a": [tr', '{"a":"\\u12', '{}', '{"a":[1,{"b":null}]}']) {
      assert.ok(isJsonPrefix(ok), ok);
    }
    for (const bad of ['}', '{a', '{"a" 1', '{"a":1}}', '{"a":01', '{"a":"\\x"', '{"a":[1,]']) {
      assert.ok(!isJsonPrefix(bad), bad);
    }
  });

  test('format "json": a completed answer parses', async () => {
    // Known to finish at temperature 0 on the tiny fixture; further attempts for robustness.
    const seen = await constrainedAttempts('json', [
      { prompt: 'Return an empty object.' },
      { prompt: 'hello' },
      { prompt: 'hello', temperature: 1, seed: 2 },
      { prompt: 'hello', temperature: 1, seed: 5 },
    ]);
    assert.ok(seen.some((s) => s.done_reason === 'stop'));
  });

  test('format "json": a non-trivial answer also parses', async () => {
    // A prompt whose answer holds a key and a long string value.
    // Found by trying prompts and seeds on the tiny fixture: most random-weight answers never
    // close their first string within 400 tokens.
    const seen = await constrainedAttempts('json', [
      { prompt: 'hello' },
      { prompt: 'hello', temperature: 1, seed: 7 },
      { prompt: 'Give me a JSON object.', temperature: 1, seed: 10 },
      { prompt: '{"a"', temperature: 0, seed: 1 },
    ]);
    const done = seen.find((s) => s.done_reason === 'stop');
    assert.ok(Object.keys(done.parsed).length >= 1, `expected at least one key: ${done.response}`);
  });

  test('format <JSON schema>: a completed answer validates', async () => {
    await constrainedAttempts(SCHEMA, [
      { prompt: 'Who is Bob?' },
      { prompt: 'hello' },
      { prompt: 'Describe a person as JSON.' },
    ], (parsed, r) => {
      assert.ok(validate(parsed), `schema violations ${JSON.stringify(validate.errors)} in ${r.response}`);
      assert.equal(typeof parsed.name, 'string');
      assert.ok(Number.isInteger(parsed.age) && parsed.age >= 0);
      if ('tags' in parsed) assert.ok(parsed.tags.length <= 3);
    });
  });

  test('format <JSON schema> through chat and streaming', async () => {
    const options = { num_predict: 24, temperature: 0 };
    const messages = [{ role: 'user', content: 'Who is Bob?' }];
    const whole = await h.srv.client.chat({ model: MODEL, messages, format: SCHEMA, options });
    const s = await collect(await h.srv.client.chat({ model: MODEL, messages, format: SCHEMA, options, stream: true }));
    assert.equal(s.text, whole.message.content);
    assert.equal(s.final.done_reason, whole.done_reason);
    assert.ok(isJsonPrefix(whole.message.content), whole.message.content);
    assert.ok(whole.message.content.trimStart().startsWith('{'));
    if (whole.done_reason === 'stop') assert.ok(validate(JSON.parse(whole.message.content)));
    else assert.equal(whole.eval_count, 24);
  });

  test('format combined with a stop string', async () => {
    const prompt = 'hello';
    const options = { num_predict: 16, temperature: 0 };
    const full = await h.srv.client.generate({ model: MODEL, prompt, format: 'json', options });
    assert.ok(isJsonPrefix(full.response), full.response);
    const cps = Array.from(full.response);
    assert.ok(cps.length >= 6, `answer too short: ${JSON.stringify(full.response)}`);
    let stop = null;
    for (let start = Math.floor(cps.length / 2); start < cps.length - 1 && !stop; start++) {
      const cand = cps.slice(start, start + 2).join('');
      if (cand.trim() !== '') stop = cand;
    }
    assert.ok(stop);
    const expected = full.response.slice(0, full.response.indexOf(stop));
    const r = await h.srv.client.generate({ model: MODEL, prompt, format: 'json', options: { ...options, stop: [stop] } });
    assert.equal(r.done, true);
    assert.equal(r.done_reason, 'stop', `stop ${JSON.stringify(stop)} in ${JSON.stringify(full.response)}`);
    assert.equal(r.response, expected);
    assert.ok(isJsonPrefix(r.response));
  });
});
