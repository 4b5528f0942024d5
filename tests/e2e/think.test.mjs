// Thinking (with and without format) and tools through the real server, on a model whose
// chat template is Qwen3's (think.gguf): it renders a reasoning block and tool definitions.
// Random weights never close a reasoning block by themselves, so think + format answers are
// bounded with thinking_budget_chars; the grammar then forces the end tag and the JSON.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { collect, postRaw, test, useServer } from './harness.mjs';
import { isJsonPrefix } from './json_prefix.mjs';

const SCHEMA = {
  type: 'object',
  properties: { answer: { type: 'boolean' }, count: { type: 'integer', minimum: 0, maximum: 9 } },
  required: ['answer', 'count'],
  additionalProperties: false,
};
const validate = new Ajv({ strict: true }).compile(SCHEMA);
const TOOLS = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
const greedy = (extra = {}) => ({ temperature: 0, seed: 1, num_predict: 200, ...extra });
const BUDGET = 48;

/** The reasoning and the answer of a streamed or whole response, from either endpoint. */
async function ask(h, endpoint, body) {
  const client = h.srv.client;
  if (!body.stream) {
    const r = endpoint === 'chat' ? await client.chat(body) : await client.generate(body);
    const m = r.message ?? r;
    return { thinking: m.thinking ?? '', content: m.content ?? r.response, final: r };
  }
  const s = await collect(endpoint === 'chat' ? await client.chat(body) : await client.generate(body));
  const thinking = s.parts.map((p) => p.message?.thinking ?? p.thinking ?? '').join('');
  return { thinking, content: s.text, final: s.final, parts: s.parts };
}

// prompt_eval_count leaves out what the KV or the prompt cache reused. A system message of
// its own, a counter written backwards (digits are one token each in this vocabulary, so every
// nonce is as long, and consecutive ones differ in their first digit), makes each prompt share
// at most its first four tokens with any earlier one: the count is the whole prompt but those.
let nonce = 1000;
const fresh = (msgs) => [{ role: 'system', content: String(nonce++).split('').reverse().join('') }, ...msgs];

describe('think', () => {
  const h = useServer({ models: [{ name: 'think', from: 'think.gguf' }, { name: 'tiny' }] });
  const messages = [{ role: 'user', content: 'Is it raining? Count the clouds.' }];

  test('/api/show lists thinking and tools for the Qwen3 template, neither for phi-3', async () => {
    const think = await h.srv.client.show({ model: 'think' });
    assert.ok(think.capabilities.includes('thinking'), JSON.stringify(think.capabilities));
    assert.ok(think.capabilities.includes('tools'), JSON.stringify(think.capabilities));
    assert.ok(think.capabilities.includes('completion'));
    const tiny = await h.srv.client.show({ model: 'tiny' });
    assert.deepEqual(tiny.capabilities.filter((c) => c === 'thinking' || c === 'tools'), []);
  });

  test('think and tools on a model whose template has neither are a 400 naming the model', async () => {
    for (const [path, body, re] of [
      ['/api/chat', { model: 'tiny', messages, think: true }, /does not support thinking/],
      ['/api/generate', { model: 'tiny', prompt: 'x', think: 'low' }, /does not support thinking/],
      ['/api/chat', { model: 'tiny', messages, tools: TOOLS }, /does not support tools/],
    ]) {
      const r = await postRaw(`${h.srv.url}${path}`, { ...body, stream: false });
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error, re);
      assert.match(r.body.error, /tiny/);
    }
    // think: false asks for nothing the template lacks.
    const ok = await h.srv.client.chat({ model: 'tiny', messages, think: false, options: greedy({ num_predict: 4 }) });
    assert.equal(ok.done, true);
    assert.equal(ok.message.thinking, undefined);
  });

  test('think changes the prompt: off renders the empty reasoning block, on leaves it to the model', async () => {
    const count = async (think) =>
      (await h.srv.client.chat({ model: 'think', messages: fresh(messages), think, options: greedy({ num_predict: 1 }) }))
        .prompt_eval_count;
    const on = await count(true);
    const off = await count(false);
    // Qwen3 with thinking off ends the prompt with "<think>\n\n</think>\n\n".
    assert.ok(off > on, `think:false ${off} tokens, think:true ${on}`);
  });

  for (const endpoint of ['chat', 'generate']) {
    test(`${endpoint}: think + schema -> reasoning in thinking, bare JSON that validates; streamed = whole`, async () => {
      const base = {
        model: 'think', think: true, format: SCHEMA, thinking_budget_chars: BUDGET, options: greedy(),
        ...(endpoint === 'chat' ? { messages } : { prompt: messages[0].content }),
      };
      const whole = await ask(h, endpoint, { ...base, stream: false });
      assert.equal(whole.final.done_reason, 'stop', JSON.stringify(whole));
      assert.ok(!whole.content.includes('```'), `fenced: ${whole.content}`);
      assert.ok(!whole.content.includes('<think>') && !whole.content.includes('</think>'), whole.content);
      const value = JSON.parse(whole.content);
      assert.ok(validate(value), `${whole.content}: ${JSON.stringify(validate.errors)}`);
      assert.ok(whole.thinking.length > 0, 'the model reasoned (the grammar opened the block)');
      // The budget counts code points, not JavaScript's UTF-16 units.
      const thought = [...whole.thinking].length;
      assert.ok(thought <= BUDGET, `thinking ${thought} chars > budget ${BUDGET}`);
      assert.ok(!whole.thinking.includes('<'), whole.thinking);
      // Speculation keeps working under the composed grammar: the end tag, the separator and
      // the schema's keys are forced text, proposed for free.
      assert.ok(whole.final.speculation.forced > 0, JSON.stringify(whole.final.speculation));

      const streamed = await ask(h, endpoint, { ...base, stream: true });
      assert.equal(streamed.thinking, whole.thinking);
      assert.equal(streamed.content, whole.content);
      assert.equal(streamed.final.done_reason, 'stop');
      // The reasoning streams before the answer, never in the same piece as its JSON.
      const firstContent = streamed.parts.findIndex((p) => (p.message?.content ?? p.response ?? '') !== '');
      const lastThinking = streamed.parts.findLastIndex((p) => (p.message?.thinking ?? p.thinking ?? '') !== '');
      assert.ok(lastThinking >= 0 && lastThinking <= firstContent, `thinking at ${lastThinking}, content from ${firstContent}`);
    });
  }

  test('think + format "json" (chat, streamed): a stop answer parses, a cut one is a JSON prefix', async () => {
    const r = await ask(h, 'chat', {
      model: 'think', messages, think: 'high', format: 'json', thinking_budget_chars: 16, stream: true, options: greedy(),
    });
    assert.ok([...r.thinking].length <= 16, r.thinking);
    assert.ok(r.content.trimStart().startsWith('{'), r.content);
    if (r.final.done_reason === 'stop') JSON.parse(r.content);
    else assert.ok(isJsonPrefix(r.content), r.content);
  });

  test('think: false + format: no thinking, valid JSON, on both endpoints', async () => {
    const c = await h.srv.client.chat({ model: 'think', messages, think: false, format: SCHEMA, options: greedy() });
    assert.equal(c.message.thinking, undefined);
    assert.ok(validate(JSON.parse(c.message.content)), c.message.content);
    const g = await h.srv.client.generate({ model: 'think', prompt: 'x', think: false, format: SCHEMA, options: greedy() });
    assert.equal(g.thinking, undefined);
    assert.ok(validate(JSON.parse(g.response)), g.response);
  });

  test('a budget of 0 closes the reasoning at once', async () => {
    const r = await h.srv.client.chat({
      model: 'think', messages, think: true, format: SCHEMA, thinking_budget_chars: 0, options: greedy(),
    });
    assert.equal(r.message.thinking ?? '', '');
    assert.ok(validate(JSON.parse(r.message.content)), r.message.content);
  });

  test('tools are rendered; tool calls and tool results go back into the prompt', async () => {
    const ask1 = (extra) => h.srv.client.chat({ model: 'think', messages: fresh(messages), options: greedy({ num_predict: 1 }), ...extra });
    const plain = await ask1({});
    const withTools = await ask1({ tools: TOOLS });
    assert.ok(withTools.prompt_eval_count > plain.prompt_eval_count + 20,
      `tools add their definitions: ${plain.prompt_eval_count} -> ${withTools.prompt_eval_count}`);

    const history = [
      ...messages,
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', content: 'sunny, 21 degrees', tool_name: 'get_weather' },
    ];
    const after = await h.srv.client.chat({ model: 'think', messages: fresh(history), tools: TOOLS, options: greedy({ num_predict: 1 }) });
    assert.equal(after.done, true);
    assert.ok(after.prompt_eval_count > withTools.prompt_eval_count + 10,
      `the call and its result are in the prompt: ${withTools.prompt_eval_count} -> ${after.prompt_eval_count}`);
    // A longer result makes a longer prompt: the tool message's content is rendered.
    const longer = history.map((m) => (m.role === 'tool' ? { ...m, content: `${m.content}, light wind from the west` } : m));
    const after2 = await h.srv.client.chat({ model: 'think', messages: fresh(longer), tools: TOOLS, options: greedy({ num_predict: 1 }) });
    assert.ok(after2.prompt_eval_count > after.prompt_eval_count + 2, `${after.prompt_eval_count} -> ${after2.prompt_eval_count}`);
  });

  test('tools, streamed and whole: the same text, no raw tool-call markup left in content', async () => {
    const body = { model: 'think', messages, tools: TOOLS, options: greedy({ num_predict: 48 }) };
    const whole = await h.srv.client.chat({ ...body, stream: false });
    const streamed = await collect(await h.srv.client.chat({ ...body, stream: true }));
    assert.equal(streamed.text, whole.message.content);
    const calls = streamed.parts.flatMap((p) => p.message?.tool_calls ?? []);
    assert.deepEqual(calls, whole.message.tool_calls ?? []);
    assert.ok(!whole.message.content.includes('<tool_call>'), whole.message.content);
  });

  test('Go TEMPLATE: tools and tool calls are rendered; a template without .Tools refuses tools', async () => {
    // .System first: the nonce of fresh() comes before everything else, as with Qwen3.
    const template = '{{ .System }}{{- range .Tools }}<tool>{{ .Function }}</tool>{{ end }}'
      + '{{- range .Messages }}<{{ .Role }}>{{ .Content }}'
      + '{{- range .ToolCalls }}<tool_call>{{ json .Function }}</tool_call>{{ end }}</{{ .Role }}>{{ end }}<assistant>';
    const ask1 = (msgs, extra = {}) => h.srv.client.chat({
      model: 'tiny', template, messages: fresh(msgs), options: greedy({ num_predict: 1 }), ...extra,
    });
    const plain = await ask1(messages);
    const tooled = await ask1(messages, { tools: TOOLS });
    assert.ok(tooled.prompt_eval_count > plain.prompt_eval_count + 20, `${plain.prompt_eval_count} -> ${tooled.prompt_eval_count}`);
    const called = await ask1([...messages,
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', content: 'sunny', tool_name: 'get_weather' }], { tools: TOOLS });
    assert.ok(called.prompt_eval_count > tooled.prompt_eval_count + 10, `${tooled.prompt_eval_count} -> ${called.prompt_eval_count}`);

    const body = { model: 'tiny', template, messages, tools: TOOLS, options: greedy({ num_predict: 24 }) };
    const whole = await h.srv.client.chat({ ...body, stream: false });
    const streamed = await collect(await h.srv.client.chat({ ...body, stream: true }));
    assert.equal(streamed.text, whole.message.content);

    const r = await postRaw(`${h.srv.url}/api/chat`, { model: 'tiny', template: '{{ .Prompt }}', messages, tools: TOOLS, stream: false });
    assert.equal(r.status, 400, r.text);
    assert.match(r.body.error, /does not support tools/);
  });

  test('OpenAI: tool_choice "required" or a named function holds the answer to a call', async () => {
    const openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    // Bounded arguments: random weights never close a free string.
    const tools = [
      { type: 'function', function: { name: 'pick', description: 'Pick a digit',
        parameters: { type: 'object', properties: { n: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['n'] } } },
      { type: 'function', function: { name: 'flag', description: 'Set a flag',
        parameters: { type: 'object', properties: { on: { type: 'boolean' } }, required: ['on'] } } },
    ];
    const ask = (tool_choice, extra = {}) => openai.chat.completions.create({
      model: 'think', messages, tools, tool_choice, temperature: 0, max_tokens: 60, ...extra });
    const auto = await ask('auto');
    assert.equal(auto.choices[0].message.tool_calls, undefined, 'random weights call nothing by themselves');
    const required = await ask('required');
    const call = required.choices[0].message.tool_calls?.[0];
    assert.ok(call, JSON.stringify(required.choices[0]));
    assert.equal(required.choices[0].finish_reason, 'tool_calls');
    assert.ok(['pick', 'flag'].includes(call.function.name), call.function.name);
    assert.match(call.id, /^call_/);
    JSON.parse(call.function.arguments);
    for (const name of ['pick', 'flag']) {
      const named = await ask({ type: 'function', function: { name } });
      const calls = named.choices[0].message.tool_calls;
      assert.ok(calls?.length >= 1, JSON.stringify(named.choices[0]));
      assert.ok(calls.every((c) => c.function.name === name), JSON.stringify(calls));
      const args = JSON.parse(calls[0].function.arguments);
      if (name === 'pick') assert.ok(Number.isInteger(args.n) && args.n >= 0 && args.n <= 9, calls[0].function.arguments);
      else assert.equal(typeof args.on, 'boolean');
    }
    // Streamed, the call arrives as a tool_calls delta.
    const stream = await ask('required', { stream: true });
    const deltas = [];
    for await (const c of stream) deltas.push(...(c.choices[0]?.delta?.tool_calls ?? []));
    assert.equal(deltas[0]?.function?.name, call.function.name);
    for (const [tool_choice, extra, re] of [
      [{ type: 'function', function: { name: 'nope' } }, {}, /not in tools/],
      ['sometimes', {}, /tool_choice must be/],
      ['required', { response_format: { type: 'json_object' } }, /response format/],
    ]) {
      const bad = await ask(tool_choice, extra).catch((e) => e);
      assert.ok(bad instanceof OpenAI.BadRequestError, String(bad));
      assert.equal(bad.param, 'tool_choice');
      assert.match(bad.message, re);
    }
  });

  test('OpenAI: tools and reasoning_effort on /v1/chat/completions', async () => {
    const openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const plain = await openai.chat.completions.create({ model: 'think', messages, max_tokens: 1, temperature: 0 });
    const tooled = await openai.chat.completions.create({ model: 'think', messages, tools: TOOLS, max_tokens: 1, temperature: 0 });
    assert.ok(tooled.usage.prompt_tokens > plain.usage.prompt_tokens + 20);
    const history = [
      ...messages,
      { role: 'assistant', content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ];
    const after = await openai.chat.completions.create({ model: 'think', messages: history, tools: TOOLS, max_tokens: 1, temperature: 0 });
    assert.ok(after.usage.prompt_tokens > tooled.usage.prompt_tokens);
    const off = await openai.chat.completions.create({ model: 'think', messages, reasoning_effort: 'none', max_tokens: 1, temperature: 0 });
    const on = await openai.chat.completions.create({ model: 'think', messages, reasoning_effort: 'low', max_tokens: 1, temperature: 0 });
    assert.ok(off.usage.prompt_tokens > on.usage.prompt_tokens, 'reasoning_effort none renders the empty block');
    // The Responses API's form, which Ollama's /v1 also reads on chat, means the same.
    const offToo = await openai.chat.completions.create({ model: 'think', messages, reasoning: { effort: 'none' }, max_tokens: 1, temperature: 0 });
    assert.equal(offToo.usage.prompt_tokens, off.usage.prompt_tokens);
    // The reasoning comes back as Ollama's /v1 sends it (`reasoning`) and as llama-server's
    // (`reasoning_content`), whole and streamed. (Random weights never open a reasoning block
    // by themselves; under a response_format the grammar opens it.)
    const ask = { model: 'think', messages, reasoning_effort: 'low', max_tokens: 8, temperature: 0, response_format: { type: 'json_object' } };
    const reasoned = await openai.chat.completions.create(ask);
    const m = reasoned.choices[0].message;
    assert.ok(m.reasoning.length > 0, JSON.stringify(m));
    assert.equal(m.reasoning, m.reasoning_content);
    const stream = await openai.chat.completions.create({ ...ask, stream: true });
    let r1 = '', r2 = '';
    for await (const c of stream) {
      r1 += c.choices[0]?.delta?.reasoning ?? '';
      r2 += c.choices[0]?.delta?.reasoning_content ?? '';
    }
    assert.equal(r1, m.reasoning);
    assert.equal(r2, m.reasoning);
    const bad = await openai.chat.completions.create({ model: 'tiny', messages, tools: TOOLS }).catch((e) => e);
    assert.ok(bad instanceof OpenAI.BadRequestError);
    assert.equal(bad.param, 'tools');
  });
});
