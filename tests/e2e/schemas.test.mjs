// Many JSON schemas through the real server with speculation on: at temperature 0 the answer
// is the same with drafting on and off, and every answer that ends with done_reason "stop"
// validates against its schema (one cut by num_predict is a JSON prefix). Strings are
// bounded because random-weight models rarely close a free string. Malformed schemas are a
// 400 that names the problem and do not disturb the next request; keywords a grammar cannot
// enforce are served and named in warnings, or refused under SPECD_STRICT_SCHEMA=1.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import Ajv from 'ajv';
import { fixture, test, useServer } from './harness.mjs';
import { isJsonPrefix } from './json_prefix.mjs';

const pairModel = { name: 'pair', from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`] };
const label = { type: 'string', maxLength: 8 };

function nested(depth) {
  return depth === 0
    ? { type: 'integer', minimum: 0, maximum: 99 }
    : { type: 'object', properties: { a: nested(depth - 1) }, required: ['a'], additionalProperties: false };
}

const SCHEMAS = {
  bbox: {
    type: 'array', minItems: 6, maxItems: 6,
    items: {
      type: 'object',
      properties: {
        label,
        bbox: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 1000 }, minItems: 4, maxItems: 4 },
      },
      required: ['label', 'bbox'],
    },
  },
  record: {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 10 },
      age: { type: 'integer', minimum: 0, maximum: 120 },
      address: {
        type: 'object',
        properties: { city: label, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
        required: ['city', 'zip'],
      },
      tags: { type: 'array', items: { enum: ['red', 'green', 'blue'] }, minItems: 1, maxItems: 3 },
      active: { type: 'boolean' },
      nickname: { anyOf: [{ type: 'string', maxLength: 5 }, { type: 'null' }] },
    },
    required: ['name', 'age', 'address', 'tags', 'active'],
  },
  deep: nested(16),
  big_enum: {
    type: 'object',
    properties: { pick: { enum: Array.from({ length: 500 }, (_, i) => `item-${i}`) }, n: { type: 'integer', minimum: 1, maximum: 9 } },
    required: ['pick', 'n'],
  },
  tree: {
    $defs: {
      node: {
        type: 'object',
        properties: { v: { type: 'integer', minimum: 0, maximum: 9 }, kids: { type: 'array', maxItems: 2, items: { $ref: '#/$defs/node' } } },
        required: ['v', 'kids'],
      },
    },
    $ref: '#/$defs/node',
  },
  shapes: {
    oneOf: [
      { type: 'object', properties: { kind: { const: 'circle' }, r: { type: 'number', minimum: 0, maximum: 10 } }, required: ['kind', 'r'] },
      { type: 'object', properties: { kind: { const: 'square' }, side: { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 10 } }, required: ['kind', 'side'] },
    ],
  },
  scalars: {
    type: 'object',
    properties: {
      x: { type: 'number', minimum: -5, maximum: 5 },
      code: { type: 'string', minLength: 2, maxLength: 4 },
      answer: { const: 42 },
      maybe: { type: ['string', 'null'], maxLength: 3 },
      when: { type: 'string', format: 'date' },
    },
    required: ['x', 'code', 'answer', 'maybe', 'when'],
  },
};

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
const greedy = (extra = {}) => ({ temperature: 0, num_predict: 300, ...extra });

describe('schemas', () => {
  const h = useServer({ models: [pairModel] });

  for (const [name, schema] of Object.entries(SCHEMAS)) {
    test(`${name}: same answer with and without drafting; a complete answer validates`, async () => {
      const validate = ajv.compile(schema);
      let completed = 0;
      for (const prompt of ['Answer in JSON:', 'Describe the picture.']) {
        const ask = (options) => h.srv.client.generate({ model: 'pair', prompt, format: schema, stream: false, options });
        const on = await ask(greedy());
        const off = await ask(greedy({ draft_num_predict: 0 }));
        assert.equal(on.response, off.response, `${name}: drafting changed the answer`);
        assert.equal(on.done_reason, off.done_reason);
        assert.equal(off.speculation.forced + off.speculation.drafted, 0);
        if (on.done_reason === 'length') {
          assert.ok(isJsonPrefix(on.response), `${name}: a cut answer must be a JSON prefix: ${on.response}`);
          continue;
        }
        assert.equal(on.done_reason, 'stop');
        const value = JSON.parse(on.response);
        assert.ok(validate(value), `${name}: ${on.response}\n${ajv.errorsText(validate.errors)}`);
        assert.equal(on.response, JSON.stringify(value), `${name}: schema answers are compact JSON`);
        completed++;
      }
      assert.ok(completed > 0, `${name}: no answer completed within 300 tokens`);
    });
  }

  test('fixed keys are forced text: proposed (at least as probes) and verified', async () => {
    // How much forced text a round verifies follows how often this target accepted it
    // (random weights spell it their own way), but a parked forced run is still probed.
    const r = await h.srv.client.generate({ model: 'pair', prompt: 'Objects:', format: SCHEMAS.bbox, stream: false, options: greedy() });
    assert.ok(r.speculation.forced > 0, `forced ${r.speculation.forced}`);
    assert.ok(r.speculation.forced_accepted <= r.speculation.forced);
  });

  test('malformed schemas are a 400 naming the problem; the next request still works', async () => {
    const cases = [
      [{ $ref: '#/$defs/missing' }, /missing|\$ref/],
      [{ type: 'array', items: { type: 'integer' }, minItems: 5, maxItems: 2 }, /minItems|maxItems/],
      [{ type: 'string', pattern: '(a' }, /pattern/],
      [{ type: 'integer', multipleOf: 0 }, /multipleOf/],
    ];
    for (const [format, message] of cases) {
      const res = await fetch(`${h.srv.url}/api/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'pair', prompt: 'x', format, stream: false }),
      });
      assert.equal(res.status, 400, JSON.stringify(format));
      const body = await res.json();
      assert.match(body.error, message, JSON.stringify(format));
      const ok = await h.srv.client.generate({ model: 'pair', prompt: 'x', format: SCHEMAS.scalars, stream: false, options: greedy({ num_predict: 8 }) });
      assert.equal(ok.done, true);
    }
  });

  // As Ollama serves them: what the grammar cannot enforce is left out and named in warnings;
  // the rest of the schema still holds.
  test('keywords a grammar cannot enforce are served, named in warnings', async () => {
    const format = {
      type: 'object',
      properties: {
        ids: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 9 }, minItems: 2, maxItems: 2, uniqueItems: true },
        n: { type: 'integer', multipleOf: 7 },
      },
      required: ['ids', 'n'],
      not: { required: ['x'] },
    };
    const r = await h.srv.client.generate({ model: 'pair', prompt: 'x', format, stream: false, options: greedy({ num_predict: 48 }) });
    assert.deepEqual(r.warnings.map((w) => w.replace(/ is not enforced.*/, '')),
      ['format: "not" at /', 'format: "uniqueItems" at /properties/ids', 'format: "multipleOf" at /properties/n']);
    if (r.done_reason === 'stop') {
      const v = JSON.parse(r.response);
      assert.equal(v.ids.length, 2);
      assert.ok(v.ids.every((i) => Number.isInteger(i) && i >= 0 && i <= 9), r.response);
    } else {
      assert.ok(isJsonPrefix(r.response), r.response);
    }
    // What the grammar can enforce, it does, without a warning: a bounded multipleOf, an email.
    const enforced = await h.srv.client.generate({
      model: 'pair', prompt: 'x', stream: false, options: greedy({ num_predict: 64 }),
      format: { type: 'object', properties: { n: { type: 'integer', minimum: 0, maximum: 50, multipleOf: 10 } }, required: ['n'] },
    });
    assert.equal(enforced.warnings, undefined);
    if (enforced.done_reason === 'stop') assert.equal(JSON.parse(enforced.response).n % 10, 0, enforced.response);
  });
});

describe('schemas, strict', () => {
  const h = useServer({ models: [pairModel], env: { SPECD_STRICT_SCHEMA: '1' } });

  test('SPECD_STRICT_SCHEMA=1 refuses what the grammar cannot enforce', async () => {
    for (const [format, message] of [
      [{ type: 'number', multipleOf: 3 }, /unsupported JSON schema feature "multipleOf" at \/.*SPECD_STRICT_SCHEMA/],
      [{ type: 'object', properties: { a: { not: { type: 'string' } } } }, /"not" at \/properties\/a/],
      [{ type: 'array', items: { type: 'integer' }, uniqueItems: true }, /uniqueItems/],
    ]) {
      const res = await fetch(`${h.srv.url}/api/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'pair', prompt: 'x', format, stream: false }),
      });
      assert.equal(res.status, 400, JSON.stringify(format));
      assert.match((await res.json()).error, message);
    }
  });
});
