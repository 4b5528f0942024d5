// Structured output: format "json" and a JSON schema. A constrained answer that ends with
// done_reason "stop" must parse (and validate against the schema); one cut by num_predict
// ("length") must at least be a prefix of a JSON object.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import Ajv from 'ajv';
import { collect, test, useServer } from './harness.mjs';

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
 * True when `text` can be extended to a valid JSON document (every complete JSON text is
 * also a prefix). A small recursive-descent parser where running out of input is success.
 */
export function isJsonPrefix(text) {
  const EOF = Symbol('eof');
  let i = 0;
  const peek = () => {
    if (i >= text.length) throw EOF;
    return text[i];
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const expect = (word) => {
    for (const ch of word) {
      if (peek() !== ch) throw new SyntaxError(`expected ${word} at ${i}`);
      i++;
    }
  };
  const string = () => {
    expect('"');
    for (;;) {
      const c = peek();
      i++;
      if (c === '"') return;
      if (c === '\\') {
        const e = peek();
        i++;
        if (e === 'u') {
          for (let k = 0; k < 4; k++) {
            if (!/[0-9a-fA-F]/.test(peek())) throw new SyntaxError(`bad \\u escape at ${i}`);
            i++;
          }
        } else if (!'"\\/bfnrt'.includes(e)) throw new SyntaxError(`bad escape \\${e} at ${i}`);
      } else if (c < ' ') throw new SyntaxError(`control character in string at ${i - 1}`);
    }
  };
  const number = () => {
    const m = /^-?(0|[1-9][0-9]*)?(\.[0-9]*)?([eE][+-]?[0-9]*)?/.exec(text.slice(i));
    if (!m || m[0] === '' || m[0] === '-') {
      if (m && m[0] === '-' && i + 1 >= text.length) throw EOF;
      throw new SyntaxError(`bad number at ${i}`);
    }
    const atEnd = i + m[0].length >= text.length;
    // A number that stops at the end of the input may still grow; one that stops before
    // must be complete.
    if (!atEnd && !/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(m[0])) {
      throw new SyntaxError(`incomplete number at ${i}`);
    }
    i += m[0].length;
    if (atEnd) throw EOF;
  };
  const value = () => {
    ws();
    const c = peek();
    if (c === '{') {
      i++;
      ws();
      if (peek() === '}') return void i++;
      for (;;) {
        ws();
        string();
        ws();
        expect(':');
        value();
        ws();
        const d = peek();
        i++;
        if (d === '}') return;
        if (d !== ',') throw new SyntaxError(`expected , or } at ${i - 1}`);
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (peek() === ']') return void i++;
      for (;;) {
        value();
        ws();
        const d = peek();
        i++;
        if (d === ']') return;
        if (d !== ',') throw new SyntaxError(`expected , or ] at ${i - 1}`);
      }
    }
    if (c === '"') return string();
    if (c === 't') return expect('true');
    if (c === 'f') return expect('false');
    if (c === 'n') return expect('null');
    return number();
  };
  try {
    value();
    ws();
    return i === text.length;
  } catch (e) {
    if (e === EOF) return true;
    return false;
  }
}

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
    const seen = await constrainedAttempts('json', [
      { prompt: 'hello' },
      { prompt: 'hello', temperature: 1, seed: 2 },
      { prompt: 'hello', temperature: 1, seed: 5 },
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
