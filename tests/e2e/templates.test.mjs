// Ollama Go templates through the real server: a Modelfile TEMPLATE (and `template` in a
// create request) replaces the GGUF's chat template, a request's `template` wins over both,
// and the prompt is exactly the text Ollama would render: the answer equals the raw answer
// to that text at temperature 0.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { postRaw, test, useServer } from './harness.mjs';

const CHATML = `{{- if .System }}<|system|>{{ .System }}<|end|>
{{ end }}{{- range .Messages }}<|{{ .Role }}|>{{ .Content }}<|end|>
{{ end }}<|assistant|>`;
const LEGACY = '{{ if .System }}SYS: {{ .System }}\n{{ end }}Q: {{ .Prompt }}\nA: {{ .Response }}\n';
const greedy = { temperature: 0, num_predict: 12 };

describe('templates', () => {
  const h = useServer({
    models: [
      { name: 'tiny' },
      { name: 'msgs', lines: [`TEMPLATE """${CHATML}"""`, 'SYSTEM Be brief.'] },
      { name: 'legacy', lines: [`TEMPLATE """${LEGACY}"""`] },
    ],
  });
  const raw = async (prompt) => (await h.srv.client.generate({ model: 'tiny', prompt, raw: true, options: greedy })).response;

  test('a .Messages TEMPLATE renders the conversation as Ollama would', async () => {
    const { client } = h.srv;
    const r = await client.chat({ model: 'msgs', options: greedy, messages: [
      { role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello!' }, { role: 'user', content: 'And now?' }] });
    const expected = '<|system|>Be brief.<|end|>\n<|system|>Be brief.<|end|>\n<|user|>Hi<|end|>\n' +
      '<|assistant|>Hello!<|end|>\n<|user|>And now?<|end|>\n<|assistant|>';
    assert.equal(r.message.content, await raw(expected));
    const show = await client.show({ model: 'msgs' });
    assert.equal(show.template, CHATML);
  });

  test('a legacy TEMPLATE renders turn by turn and cuts the last turn at .Response', async () => {
    const { client } = h.srv;
    const r = await client.chat({ model: 'legacy', options: greedy, messages: [
      { role: 'system', content: 'S' }, { role: 'user', content: 'one' }, { role: 'assistant', content: 'uno' },
      { role: 'user', content: 'two' }] });
    assert.equal(r.message.content, await raw('SYS: S\nQ: one\nA: uno\nQ: two\nA: '));
    const g = await client.generate({ model: 'legacy', prompt: 'three', options: greedy });
    assert.equal(g.response, await raw('Q: three\nA: '));
  });

  test("a request's template wins over the model's", async () => {
    const { client } = h.srv;
    const g = await client.generate({ model: 'msgs', prompt: 'x', template: '<<{{ .Prompt }}>>', system: '', options: greedy });
    // The model's SYSTEM still applies; this template does not print it.
    assert.equal(g.response, await raw('<<x>>'));
  });

  test('a template that does not parse is a 400 naming where, at create and per request', async () => {
    let r = await postRaw(`${h.srv.url}/api/create`, { model: 'broken', from: 'tiny', template: '{{ if .System }}open', stream: false });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /invalid template: line 1, column \d+/);
    r = await postRaw(`${h.srv.url}/api/generate`, { model: 'tiny', prompt: 'hi', template: '{{ .Prompt', stream: false });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /invalid template/);
    // And a good one through the API's create.
    r = await postRaw(`${h.srv.url}/api/create`, { model: 'made', from: 'tiny', template: '[{{ .Prompt }}]', stream: false });
    assert.equal(r.status, 200, r.text);
    const g = await h.srv.client.generate({ model: 'made', prompt: 'q', options: greedy });
    assert.equal(g.response, await raw('[q]'));
  });
});
