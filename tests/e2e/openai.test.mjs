// The OpenAI-compatible /v1 subset through the official `openai` client: chat completions
// (whole and streamed, usage, response_format, stop, max_tokens), completions, responses
// (whole and streamed, function calls, text.format), logit_bias, models, an
// image as a data URL, and OpenAI-shaped errors (unknown model, unimplemented fields, bad
// JSON, access rules, a full queue). At temperature 0 every answer must be the text the
// Ollama API gives for the same request.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe } from 'node:test';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { fixture, postRaw, sleep, startServer, test, useServer } from './harness.mjs';
import { b64, png } from './images.mjs';

const visModel = { name: 'vis', from: 'vision-mmproj.gguf', lines: [`FROM ${fixture('vision-text.gguf')}`] };
const IMAGE_TOKENS = 16; // every image of the fixture projector

const history = [
  { role: 'system', content: 'You are a helpful assistant. Answer briefly.' },
  { role: 'user', content: 'What is the capital of France?' },
  { role: 'assistant', content: 'Paris.' },
  { role: 'user', content: 'And of Italy?' },
];

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

const client = (srv, apiKey = 'unused') => new OpenAI({ baseURL: `${srv.url}/v1`, apiKey, maxRetries: 0 });

/** Reads a chat stream: the chunks, the concatenated content and the finish reason. */
async function readChatStream(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  const withChoice = chunks.filter((c) => c.choices.length > 0);
  return {
    chunks,
    text: withChoice.map((c) => c.choices[0].delta.content ?? '').join(''),
    finish: withChoice.at(-1)?.choices[0].finish_reason,
  };
}

/** Asserts that `promise` rejects with an OpenAI APIError of `cls`; returns the error. */
async function rejectsWith(promise, cls) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${err?.constructor?.name}: ${err?.message}`);
    return err;
  }
  assert.fail(`expected ${cls.name}, the request succeeded`);
}

/** GET with a custom Host header (node's fetch will not send one): {status, body}. */
function getWithHost(url, path, host) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ host: u.hostname, port: u.port, path, headers: { Host: host } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** OpenAI's error body: {error: {message, type, param, code}}. */
function assertOpenAIError(body, type) {
  assert.ok(body && typeof body.error === 'object', `not an OpenAI error: ${JSON.stringify(body)}`);
  assert.equal(typeof body.error.message, 'string');
  assert.equal(body.error.type, type);
  assert.ok('param' in body.error && 'code' in body.error, JSON.stringify(body));
}

describe('openai /v1', () => {
  const h = useServer({ models: [{ name: 'tiny' }, visModel] });

  test('chat, not streamed: the answer /api/chat gives, with usage', async () => {
    const openai = client(h.srv);
    const r = await openai.chat.completions.create({ model: 'tiny', messages: history, temperature: 0, seed: 7, max_tokens: 8 });
    const ollama = await h.srv.client.chat({ model: 'tiny', messages: history, options: { temperature: 0, seed: 7, num_predict: 8 } });
    assert.match(r.id, /^chatcmpl-/);
    assert.equal(r.object, 'chat.completion');
    assert.ok(Number.isInteger(r.created) && Math.abs(r.created - Date.now() / 1000) < 600);
    assert.equal(r.model, 'tiny:latest');
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].index, 0);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(r.choices[0].message.content, ollama.message.content);
    assert.equal(r.choices[0].finish_reason, 'length'); // max_tokens
    assert.equal(r.usage.completion_tokens, 8);
    assert.ok(r.usage.prompt_tokens > 0);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 8);
    // The prompt was reused from the KV this time (Ollama counts 1 evaluated token), but
    // usage counts the whole prompt.
    const again = await openai.chat.completions.create({ model: 'tiny', messages: history, temperature: 0, max_completion_tokens: 8 });
    assert.equal(again.choices[0].message.content, r.choices[0].message.content);
    assert.equal(again.usage.prompt_tokens, r.usage.prompt_tokens);
  });

  test('chat, streamed: SSE chunks concatenate to the same answer', async () => {
    const openai = client(h.srv);
    const body = { model: 'tiny', messages: history, temperature: 0, max_tokens: 10 };
    const whole = await openai.chat.completions.create(body);
    const s = await readChatStream(await openai.chat.completions.create({ ...body, stream: true }));
    assert.ok(s.chunks.length >= 3, `${s.chunks.length} chunks`);
    assert.equal(s.text, whole.choices[0].message.content);
    assert.equal(s.finish, 'length');
    assert.equal(s.chunks[0].choices[0].delta.role, 'assistant');
    for (const c of s.chunks) {
      assert.equal(c.object, 'chat.completion.chunk');
      assert.equal(c.id, s.chunks[0].id);
      assert.ok(!('usage' in c) || c.usage === null);
    }
    for (const c of s.chunks.slice(0, -1)) assert.equal(c.choices[0].finish_reason, null);
    const ollama = await h.srv.client.chat({ model: 'tiny', messages: history, options: { temperature: 0, num_predict: 10 } });
    assert.equal(s.text, ollama.message.content);
  });

  test('stream_options.include_usage: a last chunk with usage and no choices', async () => {
    const openai = client(h.srv);
    const s = await readChatStream(await openai.chat.completions.create({
      model: 'tiny', messages: history, temperature: 0, max_tokens: 6, stream: true, stream_options: { include_usage: true },
    }));
    const last = s.chunks.at(-1);
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.completion_tokens, 6);
    assert.ok(last.usage.prompt_tokens > 0);
    assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + 6);
    for (const c of s.chunks.slice(0, -1)) assert.equal(c.usage, null);
    assert.equal(s.finish, 'length');
  });

  test('response_format json_object: a finished answer parses', async () => {
    const openai = client(h.srv);
    const tried = [];
    for (const a of [{ prompt: 'Return an empty object.' }, { prompt: 'hello' }, { prompt: 'hello', temperature: 1, seed: 2 }]) {
      const r = await openai.chat.completions.create({
        model: 'tiny', messages: [{ role: 'user', content: a.prompt }], response_format: { type: 'json_object' },
        temperature: a.temperature ?? 0, seed: a.seed ?? 1, max_tokens: 400,
      });
      const text = r.choices[0].message.content;
      assert.ok(text.trimStart().startsWith('{'), text);
      tried.push(`${JSON.stringify(a)} -> ${r.choices[0].finish_reason}`);
      if (r.choices[0].finish_reason !== 'stop') continue;
      const parsed = JSON.parse(text);
      assert.ok(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed), text);
      return;
    }
    assert.fail(`no answer finished within 400 tokens:\n${tried.join('\n')}`);
  });

  test('response_format json_schema: a finished answer validates (ajv)', async () => {
    const openai = client(h.srv);
    const tried = [];
    for (const prompt of ['Who is Bob?', 'hello', 'Describe a person as JSON.']) {
      const r = await openai.chat.completions.create({
        model: 'tiny', messages: [{ role: 'user', content: prompt }], temperature: 0, max_tokens: 400,
        response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: SCHEMA } },
      });
      const text = r.choices[0].message.content;
      tried.push(`${prompt} -> ${r.choices[0].finish_reason}`);
      if (r.choices[0].finish_reason !== 'stop') continue;
      const parsed = JSON.parse(text);
      assert.ok(validate(parsed), `schema violations ${JSON.stringify(validate.errors)} in ${text}`);
      // The same schema as Ollama's `format` gives the same answer.
      const ollama = await h.srv.client.chat({ model: 'tiny', messages: [{ role: 'user', content: prompt }], format: SCHEMA,
        options: { temperature: 0, num_predict: 400 } });
      assert.equal(ollama.message.content, text);
      return;
    }
    assert.fail(`no answer finished within 400 tokens:\n${tried.join('\n')}`);
  });

  test('stop: the answer ends before the stop string, finish_reason "stop"', async () => {
    const openai = client(h.srv);
    const messages = [{ role: 'user', content: 'Name three rivers.' }];
    const full = (await openai.chat.completions.create({ model: 'tiny', messages, temperature: 0, max_tokens: 16 })).choices[0].message.content;
    const cps = Array.from(full);
    let stop = null;
    for (let start = Math.floor(cps.length / 2); start < cps.length - 1 && !stop; start++) {
      const cand = cps.slice(start, start + 2).join('');
      if (cand.trim() !== '') stop = cand;
    }
    assert.ok(stop, `no stop candidate in ${JSON.stringify(full)}`);
    const expected = full.slice(0, full.indexOf(stop));
    for (const value of [stop, [stop, '\u0000never']]) {
      const r = await openai.chat.completions.create({ model: 'tiny', messages, temperature: 0, max_tokens: 16, stop: value });
      assert.equal(r.choices[0].finish_reason, 'stop', `stop ${JSON.stringify(value)} in ${JSON.stringify(full)}`);
      assert.equal(r.choices[0].message.content, expected);
    }
  });

  test('/v1/completions: the answer /api/generate gives, whole and streamed', async () => {
    const openai = client(h.srv);
    const prompt = 'Name three rivers.';
    const r = await openai.completions.create({ model: 'tiny', prompt, temperature: 0, max_tokens: 8 });
    const ollama = await h.srv.client.generate({ model: 'tiny', prompt, options: { temperature: 0, num_predict: 8 } });
    assert.match(r.id, /^cmpl-/);
    assert.equal(r.object, 'text_completion');
    assert.equal(r.choices[0].text, ollama.response);
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.usage.completion_tokens, 8);
    const parts = [];
    for await (const c of await openai.completions.create({ model: 'tiny', prompt, temperature: 0, max_tokens: 8, stream: true })) {
      assert.equal(c.object, 'text_completion');
      parts.push(c);
    }
    assert.equal(parts.map((c) => c.choices[0].text).join(''), r.choices[0].text);
    assert.equal(parts.at(-1).choices[0].finish_reason, 'length');
  });

  test('/v1/models: list and retrieve; an unknown model is NotFoundError', async () => {
    const openai = client(h.srv);
    const list = await openai.models.list();
    const ids = list.data.map((m) => m.id).sort();
    assert.deepEqual(ids, ['tiny:latest', 'vis:latest']);
    for (const m of list.data) {
      assert.equal(m.object, 'model');
      assert.ok(Number.isInteger(m.created) && m.created > 1_600_000_000, `${m.created}`);
      assert.equal(m.owned_by, 'library');
    }
    const one = await openai.models.retrieve('tiny:latest');
    assert.equal(one.id, 'tiny:latest');
    assert.equal(one.object, 'model');
    assert.equal((await openai.models.retrieve('tiny')).id, 'tiny:latest');
    const err = await rejectsWith(openai.models.retrieve('no-such-model'), OpenAI.NotFoundError);
    assert.equal(err.status, 404);
    assert.equal(err.type, 'not_found_error');
  });

  test('an image as a data URL: the answer /api/chat gives for the same image', async () => {
    const openai = client(h.srv);
    const image = b64(png(96, 64, 1));
    const text = 'What is in this picture?';
    const r = await openai.chat.completions.create({
      model: 'vis', temperature: 0, max_tokens: 10,
      messages: [{ role: 'user', content: [
        { type: 'text', text },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${image}` } },
      ] }],
    });
    const ollama = await h.srv.client.chat({ model: 'vis', messages: [{ role: 'user', content: text, images: [image] }],
      options: { temperature: 0, num_predict: 10 } });
    assert.equal(r.choices[0].message.content, ollama.message.content);
    assert.ok(r.usage.prompt_tokens > IMAGE_TOKENS, `${r.usage.prompt_tokens} prompt tokens`);

    const remote = await rejectsWith(openai.chat.completions.create({ model: 'vis', messages: [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }] }), OpenAI.BadRequestError);
    assert.match(remote.message, /only data URLs/);
    assert.equal(remote.param, 'messages[0].content[0].image_url.url');
    // A model without a projector refuses images, in OpenAI's shape.
    const noVision = await rejectsWith(openai.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: `data:image/png;base64,${image}` } }] }] }), OpenAI.BadRequestError);
    assert.match(noVision.message, /does not support images/);
  });

  test('logprobs: chat content entries, streamed and not, and legacy completion logprobs', async () => {
    const openai = client(h.srv);
    const req = { model: 'tiny', messages: history, temperature: 0, max_tokens: 10, logprobs: true, top_logprobs: 3 };
    const whole = await openai.chat.completions.create(req);
    const content = whole.choices[0].logprobs.content;
    assert.equal(content.length, whole.usage.completion_tokens);
    for (const e of content) {
      assert.equal(typeof e.token, 'string');
      assert.ok(e.logprob <= 0);
      assert.equal(e.top_logprobs.length, 3);
      assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob && e.top_logprobs[1].logprob >= e.top_logprobs[2].logprob);
      assert.equal(e.top_logprobs[0].token, e.token); // temperature 0: the chosen token is the most likely
      assert.equal(e.top_logprobs[0].logprob, e.logprob);
    }
    assert.equal(Buffer.from(content.flatMap((e) => e.bytes)).toString('utf8'), whole.choices[0].message.content);

    const { chunks, text } = await readChatStream(await openai.chat.completions.create({ ...req, stream: true }));
    assert.equal(text, whole.choices[0].message.content);
    const streamed = chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? []);
    assert.deepEqual(streamed.map((e) => e.token), content.map((e) => e.token));
    // Prompt lookup may draft differently in the two runs: the last bits can differ.
    streamed.forEach((e, i) => assert.ok(Math.abs(e.logprob - content[i].logprob) <= 2e-3 * Math.max(1, Math.abs(content[i].logprob)),
      `#${i}: ${e.logprob} vs ${content[i].logprob}`));

    const plain = await openai.chat.completions.create({ model: 'tiny', messages: history, temperature: 0, max_tokens: 4 });
    assert.equal(plain.choices[0].logprobs, null);

    const legacy = await openai.completions.create({ model: 'tiny', prompt: 'Once upon', temperature: 0, max_tokens: 6, logprobs: 2 });
    const l = legacy.choices[0].logprobs;
    assert.equal(l.tokens.length, legacy.usage.completion_tokens);
    assert.equal(l.token_logprobs.length, l.tokens.length);
    assert.equal(l.top_logprobs.length, l.tokens.length);
    for (const top of l.top_logprobs) assert.ok(Object.keys(top).length >= 1 && Object.keys(top).length <= 2);
    assert.equal(l.text_offset[0], 0);
    for (let i = 1; i < l.text_offset.length; ++i) assert.ok(l.text_offset[i] >= l.text_offset[i - 1]);
  });

  test('unknown model -> NotFoundError; tools, logprobs, n > 1 -> BadRequestError naming the field', async () => {
    const openai = client(h.srv);
    const missing = await rejectsWith(openai.chat.completions.create({ model: 'nope', messages: history }), OpenAI.NotFoundError);
    assert.match(missing.message, /nope/);
    assert.equal(missing.code, 'model_not_found');
    await rejectsWith(openai.completions.create({ model: 'nope', prompt: 'x' }), OpenAI.NotFoundError);
    await rejectsWith(openai.chat.completions.create({ model: 'nope', messages: history, stream: true }), OpenAI.NotFoundError);

    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }];
    const t = await rejectsWith(openai.chat.completions.create({ model: 'tiny', messages: history, tools }), OpenAI.BadRequestError);
    assert.equal(t.status, 400);
    assert.equal(t.param, 'tools');
    assert.equal(t.type, 'invalid_request_error');
    assert.match(t.message, /tools/);
    const lp = await rejectsWith(openai.chat.completions.create({ model: 'tiny', messages: history, top_logprobs: 3 }), OpenAI.BadRequestError);
    assert.equal(lp.param, 'top_logprobs');
    assert.match(lp.message, /requires logprobs/);
    const lp21 = await rejectsWith(openai.chat.completions.create({ model: 'tiny', messages: history, logprobs: true, top_logprobs: 21 }),
      OpenAI.BadRequestError);
    assert.equal(lp21.param, 'top_logprobs');
    const n = await rejectsWith(openai.chat.completions.create({ model: 'tiny', messages: history, n: 2 }), OpenAI.BadRequestError);
    assert.equal(n.param, 'n');
    const temp = await rejectsWith(openai.chat.completions.create({ model: 'tiny', messages: history, temperature: 5 }), OpenAI.BadRequestError);
    assert.equal(temp.param, 'temperature');
  });

  test('every /v1 failure is in OpenAI\'s error shape', async () => {
    const { url } = h.srv;
    const badJson = await postRaw(`${url}/v1/chat/completions`, '{"model": "tiny", ');
    assert.equal(badJson.status, 400);
    assertOpenAIError(badJson.body, 'invalid_request_error');
    assert.match(badJson.body.error.message, /invalid JSON/);
    const notObject = await postRaw(`${url}/v1/completions`, '[1]');
    assert.equal(notObject.status, 400);
    assertOpenAIError(notObject.body, 'invalid_request_error');
    const badName = await postRaw(`${url}/v1/chat/completions`, { model: '../x', messages: history });
    assert.equal(badName.status, 400);
    assertOpenAIError(badName.body, 'invalid_request_error');
    const route = await fetch(`${url}/v1/no-such-route`);
    assert.equal(route.status, 404);
    assertOpenAIError(await route.json(), 'not_found_error');
    const emb = await postRaw(`${url}/v1/embeddings`, { model: 'tiny', input: 5 });
    assert.equal(emb.status, 400);
    assertOpenAIError(emb.body, 'invalid_request_error');
    assert.equal(emb.body.error.param, 'input');
    // The Ollama routes keep Ollama's shape.
    const ollama = await postRaw(`${url}/api/chat`, '{"model": ');
    assert.equal(ollama.status, 400);
    assert.equal(typeof ollama.body.error, 'string');
  });
});


describe('openai /v1/responses', () => {
  const h = useServer({ models: [{ name: 'tiny' }, { name: 'think', from: 'think.gguf' }] });
  const input = history.slice(1).map((m) => ({ role: m.role, content: m.content }));

  test('not streamed: the answer /v1/chat/completions gives, as a response object', async () => {
    const openai = client(h.srv);
    const r = await openai.responses.create({
      model: 'tiny', instructions: history[0].content, input, temperature: 0, max_output_tokens: 8,
    });
    const chat = await openai.chat.completions.create({ model: 'tiny', messages: history, temperature: 0, max_tokens: 8 });
    assert.match(r.id, /^resp_/);
    assert.equal(r.object, 'response');
    assert.equal(r.status, 'incomplete'); // cut by max_output_tokens
    assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(r.output.length, 1);
    assert.equal(r.output[0].type, 'message');
    assert.equal(r.output[0].role, 'assistant');
    assert.equal(r.output[0].content[0].type, 'output_text');
    assert.equal(r.output_text, chat.choices[0].message.content); // the SDK's convenience field
    assert.equal(r.usage.output_tokens, 8);
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + 8);
    // A plain string input is one user message.
    const s = await openai.responses.create({ model: 'tiny', input: 'And of Italy?', temperature: 0, max_output_tokens: 4 });
    assert.equal(s.output[0].content[0].text.length > 0, true);
  });

  test('streamed: typed events in order, deltas adding up to the final text', async () => {
    const openai = client(h.srv);
    const body = { model: 'tiny', instructions: history[0].content, input, temperature: 0, max_output_tokens: 12 };
    const whole = await openai.responses.create(body);
    const stream = await openai.responses.create({ ...body, stream: true });
    const events = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    assert.deepEqual(events.map((e) => e.sequence_number), [...events.keys()]);
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
    assert.equal(text, whole.output_text);
    const last = events.at(-1).response;
    assert.equal(last.output[0].content[0].text, text);
    assert.equal(last.usage.output_tokens, 12);
    assert.ok(last.id !== whole.id && last.id.startsWith('resp_'));
  });

  test('function calls and their outputs go back into the prompt; text.format is the schema', async () => {
    const openai = client(h.srv);
    const tools = [{ type: 'function', name: 'get_weather', description: 'Weather of a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
    const ask = (extra) => openai.responses.create({ model: 'think', input: [{ role: 'user', content: 'Weather in Paris?' }, ...extra],
      tools, temperature: 0, max_output_tokens: 1 });
    const before = await ask([]);
    const after = await ask([
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'sunny, 21 C' },
    ]);
    assert.ok(after.usage.input_tokens > before.usage.input_tokens + 10, `${before.usage.input_tokens} -> ${after.usage.input_tokens}`);

    const tried = [];
    for (const prompt of ['Who is Bob?', 'hello', 'Describe a person as JSON.']) {
      const r = await openai.responses.create({ model: 'tiny', input: prompt, temperature: 0, max_output_tokens: 400,
        text: { format: { type: 'json_schema', name: 'person', schema: SCHEMA, strict: true } } });
      tried.push(`${prompt} -> ${r.status}`);
      if (r.status !== 'completed') continue;
      assert.ok(validate(JSON.parse(r.output_text)), `${JSON.stringify(validate.errors)} in ${r.output_text}`);
      return;
    }
    assert.fail(`no answer finished within 400 tokens:\n${tried.join('\n')}`);
  });

  test('what specd cannot serve is a 400 naming the field', async () => {
    const openai = client(h.srv);
    const prev = await rejectsWith(openai.responses.create({ model: 'tiny', input: 'hi', previous_response_id: 'resp_1' }), OpenAI.BadRequestError);
    assert.equal(prev.param, 'previous_response_id');
    const hosted = await rejectsWith(openai.responses.create({ model: 'tiny', input: 'hi', tools: [{ type: 'web_search' }] }), OpenAI.BadRequestError);
    assert.equal(hosted.param, 'tools[0].type');
    const noInput = await rejectsWith(openai.responses.create({ model: 'tiny' }), OpenAI.BadRequestError);
    assert.equal(noInput.param, 'input');
    const badPart = await rejectsWith(openai.responses.create({ model: 'tiny', input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] }),
      OpenAI.BadRequestError);
    assert.equal(badPart.param, 'input[0].content[0].type');
  });
});

describe('openai /v1 logit_bias', () => {
  const h = useServer({ models: [{ name: 'tiny' }] });

  test('a bias of 100 on a token makes it every greedy token; -100 bans it; an id past the vocabulary is a 400', async () => {
    const openai = client(h.srv);
    const ask = (logit_bias) => openai.chat.completions.create({
      model: 'tiny', messages: history, temperature: 0, max_tokens: 6, logprobs: true, ...(logit_bias ? { logit_bias } : {}),
    });
    const tokens = (r) => r.choices[0].logprobs.content.map((t) => t.token);
    const plain = tokens(await ask());
    assert.ok(new Set(plain).size > 1, `the unbiased answer repeats one token: ${JSON.stringify(plain)}`);
    const forced = [];
    for (const id of ['300', '301']) {
      const t = tokens(await ask({ [id]: 100 }));
      assert.equal(t.length, 6);
      assert.equal(new Set(t).size, 1, `${id}: ${JSON.stringify(t)}`);
      forced.push(t[0]);
    }
    assert.notEqual(forced[0], forced[1], 'two ids force two different tokens');
    // Banning the greedy answer's first token (its id from /api/generate's context, the same
    // prompt and answer as /v1/completions) changes that token.
    const prompt = 'Why is the sky blue?';
    const g = await h.srv.client.generate({ model: 'tiny', prompt, options: { temperature: 0, num_predict: 3 } });
    const first = g.context[g.context.length - 3];
    const complete = (logit_bias) => openai.completions.create({
      model: 'tiny', prompt, temperature: 0, max_tokens: 3, logprobs: 1, ...(logit_bias ? { logit_bias } : {}),
    });
    const unbiased = await complete();
    assert.equal(unbiased.choices[0].text, g.response);
    const banned = await complete({ [String(first)]: -100 });
    assert.notEqual(banned.choices[0].logprobs.tokens[0], unbiased.choices[0].logprobs.tokens[0]);
    const outside = await rejectsWith(ask({ '99999999': 5 }), OpenAI.BadRequestError);
    assert.match(outside.message, /not in the model's vocabulary/);
    const range = await rejectsWith(ask({ '5': 101 }), OpenAI.BadRequestError);
    assert.equal(range.param, 'logit_bias');
  });
});

describe('openai /v1 access rules', () => {
  test('API key (Bearer), Host check, CORS and the body limit apply to /v1, errors in OpenAI\'s shape', async () => {
    const srv = await startServer({ env: { SPECD_API_KEY: 'k3y', SPECD_MAX_BODY: '4K' } });
    try {
      const ok = await client(srv, 'k3y').models.list();
      assert.deepEqual(ok.data.map((m) => m.id), ['tiny:latest']);
      const r = await client(srv, 'k3y').chat.completions.create({ model: 'tiny', messages: history, temperature: 0, max_tokens: 2 });
      assert.equal(r.usage.completion_tokens, 2);

      const wrong = await rejectsWith(client(srv, 'nope').models.list(), OpenAI.AuthenticationError);
      assert.equal(wrong.status, 401);
      assert.equal(wrong.type, 'invalid_request_error');
      const none = await fetch(`${srv.url}/v1/models`);
      assert.equal(none.status, 401);
      assertOpenAIError(await none.json(), 'invalid_request_error');

      const foreignHost = await getWithHost(srv.url, '/v1/models', 'evil.example:11434');
      assert.equal(foreignHost.status, 403);
      assertOpenAIError(JSON.parse(foreignHost.body), 'invalid_request_error');
      assert.match(JSON.parse(foreignHost.body).error.message, /Host header/);

      const big = await rejectsWith(client(srv, 'k3y').chat.completions.create({
        model: 'tiny', messages: [{ role: 'user', content: 'x'.repeat(5000) }] }), OpenAI.APIError);
      assert.equal(big.status, 413);
      assert.match(big.message, /larger than 4096 bytes/);

      const pre = await fetch(`${srv.url}/v1/chat/completions`, { method: 'OPTIONS', headers: {
        Origin: 'http://localhost:3000', 'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type' } });
      assert.equal(pre.status, 204);
      assert.equal(pre.headers.get('access-control-allow-origin'), 'http://localhost:3000');
      assert.match(pre.headers.get('access-control-allow-headers'), /Authorization/);
      const foreign = await fetch(`${srv.url}/v1/models`, { method: 'OPTIONS', headers: { Origin: 'https://evil.example' } });
      assert.equal(foreign.status, 403);
      assertOpenAIError(await foreign.json(), 'invalid_request_error');
    } finally {
      await srv.stop();
    }
  });

  test('a full queue answers 503 in OpenAI\'s shape', async () => {
    // One sequence: the long answer holds it, so the small requests queue behind it.
    const srv = await startServer({ env: { SPECD_MAX_QUEUE: '1', SPECD_NUM_PARALLEL: '1' } });
    try {
      const openai = client(srv);
      // A long answer holds the model (see lifecycle.test.mjs for the prompt).
      const long = await srv.client.generate({ model: 'tiny', prompt: 'Count to one million.', stream: true,
        options: { num_predict: 100_000, temperature: 0 } });
      const it = long[Symbol.asyncIterator]();
      await it.next();
      const small = () => openai.chat.completions.create({ model: 'tiny', messages: history, max_tokens: 2 })
        .then(() => null, (err) => err);
      const pending = [small(), small(), small(), small()];
      let refused = [];
      for (let i = 0; i < 50 && refused.length < 3; i++) {
        await sleep(100);
        refused = (await Promise.all(pending.map((p) => Promise.race([p, sleep(0).then(() => undefined)]))))
          .filter((e) => e);
      }
      assert.ok(refused.length >= 3, `${refused.length} of 4 refused`);
      for (const e of refused) {
        assert.ok(e instanceof OpenAI.InternalServerError, `${e?.constructor?.name}: ${e?.message}`);
        assert.equal(e.status, 503);
        assert.equal(e.type, 'api_error');
        assert.match(e.message, /server busy/);
      }
      long.abort();
      await Promise.all(pending);
    } finally {
      await srv.stop();
    }
  });
});
