// Model management through the official ollama client: list, show, copy, delete, and a model
// created with the CLI while the server runs.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { createModel, test, useServer } from './harness.mjs';

const h = useServer({
  models: [
    {
      name: 'tiny',
      lines: ['PARAMETER temperature 0', 'PARAMETER stop "###"', 'PARAMETER num_predict 8', 'SYSTEM "be brief"'],
    },
    { name: 'plain' },
  ],
});

async function names() {
  const r = await h.srv.client.list();
  assert.ok(Array.isArray(r.models), JSON.stringify(r));
  return r.models.map((m) => m.name);
}

async function expect404(promise, what) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.name, 'ResponseError', `${what}: ${err}`);
    assert.equal(err.status_code, 404, `${what}: status ${err.status_code} (${err.error})`);
    assert.match(err.error, /not found/i, what);
    return true;
  });
}

describe('models', () => {
  test('list: created models with name, size, digest, details', async () => {
    const r = await h.srv.client.list();
    const tiny = r.models.find((m) => m.name === 'tiny:latest');
    assert.ok(tiny, `tiny:latest in ${JSON.stringify(r.models.map((m) => m.name))}`);
    assert.ok(r.models.some((m) => m.name === 'plain:latest'));
    assert.equal(tiny.model, 'tiny:latest');
    assert.ok(Number.isInteger(tiny.size) && tiny.size > 1_000_000, `size ${tiny.size}`);
    assert.match(tiny.digest, /^(sha256:)?[0-9a-f]{64}$/, `digest ${tiny.digest}`);
    assert.ok(!Number.isNaN(Date.parse(tiny.modified_at)), `modified_at ${tiny.modified_at}`);
    assert.equal(tiny.details.family, 'llama');
    assert.equal(tiny.details.format, 'gguf');
    assert.ok(Array.isArray(tiny.details.families) && tiny.details.families.includes('llama'));
    assert.equal(typeof tiny.details.parameter_size, 'string');
    assert.ok(tiny.details.parameter_size.length > 0);
    assert.equal(typeof tiny.details.quantization_level, 'string');
    // Different Modelfiles, different manifests.
    const plain = r.models.find((m) => m.name === 'plain:latest');
    assert.notEqual(plain.digest, tiny.digest);
  });

  test('list: digests are bare hex, as Ollama shows them', async () => {
    const r = await h.srv.client.list();
    for (const m of r.models) assert.match(m.digest, /^[0-9a-f]{64}$/, `${m.name}: digest ${m.digest}`);
  });

  test('show: modelfile, parameters, system, template, details, model_info', async () => {
    const s = await h.srv.client.show({ model: 'tiny' });
    assert.equal(typeof s.modelfile, 'string');
    assert.match(s.modelfile, /^FROM /m);
    // Number and quoting style are free (Ollama writes `PARAMETER stop ###` unquoted).
    assert.match(s.modelfile, /^PARAMETER temperature 0(\.0*)?$/m);
    assert.match(s.modelfile, /^PARAMETER stop "?###"?$/m);
    assert.match(s.modelfile, /^PARAMETER num_predict 8$/m);
    assert.match(s.modelfile, /^SYSTEM .*be brief/m);
    assert.equal(typeof s.parameters, 'string');
    assert.match(s.parameters, /^temperature\s+0(\.0*)?$/m);
    assert.match(s.parameters, /^stop\s+"###"$/m);
    assert.match(s.parameters, /^num_predict\s+8$/m);
    assert.equal(s.system, 'be brief');
    assert.equal(typeof s.template, 'string');
    assert.ok(s.template.length > 0, 'tiny.gguf has a chat template');
    assert.equal(s.details.family, 'llama');
    assert.equal(s.details.format, 'gguf');
    assert.equal(s.model_info['general.architecture'], 'llama');
    assert.ok(Number.isInteger(s.model_info['general.parameter_count']) && s.model_info['general.parameter_count'] > 0);
    assert.ok(Number.isInteger(s.model_info['llama.context_length']), 'llama.context_length');
    assert.ok(Array.isArray(s.capabilities) && s.capabilities.includes('completion'));

    const p = await h.srv.client.show({ model: 'plain' });
    assert.equal(p.system ?? '', '');
    assert.doesNotMatch(p.modelfile, /^PARAMETER/m);
  });

  test('show verbose: the tokenizer\'s arrays and the tensors, as Ollama\'s show -v', async () => {
    const plain = await h.srv.client.show({ model: 'tiny' });
    assert.equal(plain.model_info['tokenizer.ggml.tokens'], null);
    assert.equal(plain.tensors, undefined);
    const v = await h.srv.client.show({ model: 'tiny', verbose: true });
    const tokens = v.model_info['tokenizer.ggml.tokens'];
    assert.ok(Array.isArray(tokens) && tokens.length > 1000 && tokens.every((t) => typeof t === 'string'), `${tokens?.length}`);
    const types = v.model_info['tokenizer.ggml.token_type'];
    assert.equal(types.length, tokens.length);
    assert.ok(types.every(Number.isInteger));
    assert.ok(Array.isArray(v.tensors) && v.tensors.length > 0);
    const embd = v.tensors.find((t) => t.name === 'token_embd.weight');
    assert.ok(embd, JSON.stringify(v.tensors.slice(0, 3)));
    assert.equal(embd.type, 'F32');
    assert.equal(embd.shape.length, 2);
    assert.equal(embd.shape[1], tokens.length); // ggml's order: [n_embd, n_vocab]
    // The sum of the tensors' elements is the parameter count.
    const total = v.tensors.reduce((a, t) => a + t.shape.reduce((x, y) => x * y, 1), 0);
    assert.equal(total, v.model_info['general.parameter_count']);
  });

  test('the model\'s parameters and system prompt apply to requests', async () => {
    // temperature 0 and num_predict 8 come from the Modelfile: different seeds, same text.
    const a = await h.srv.client.generate({ model: 'tiny', prompt: 'Count to ten.', options: { seed: 1 } });
    const b = await h.srv.client.generate({ model: 'tiny', prompt: 'Count to ten.', options: { seed: 2 } });
    assert.equal(a.eval_count, 8);
    assert.equal(a.done_reason, 'length');
    assert.equal(a.response, b.response);
    // The SYSTEM line adds tokens to the prompt compared with the plain model.
    const p = await h.srv.client.generate({
      model: 'plain', prompt: 'Count to ten.', options: { temperature: 0, num_predict: 8 },
    });
    assert.ok(a.context.length - a.eval_count > p.context.length - p.eval_count,
      `system tokens: ${a.context.length - a.eval_count} vs ${p.context.length - p.eval_count}`);
    // A request's options override the Modelfile's.
    const c = await h.srv.client.generate({ model: 'tiny', prompt: 'Count to ten.', options: { num_predict: 4 } });
    assert.equal(c.eval_count, 4);
  });

  test('show of an unknown model is 404', async () => {
    await expect404(h.srv.client.show({ model: 'nope' }), 'show nope');
  });

  test('copy: the copy is listed, has the same digest and answers', async () => {
    await h.srv.client.copy({ source: 'tiny', destination: 'tiny-copy' });
    const r = await h.srv.client.list();
    const orig = r.models.find((m) => m.name === 'tiny:latest');
    const copy = r.models.find((m) => m.name === 'tiny-copy:latest');
    assert.ok(copy, `tiny-copy:latest in ${JSON.stringify(r.models.map((m) => m.name))}`);
    assert.equal(copy.digest, orig.digest);
    assert.equal(copy.size, orig.size);
    const s = await h.srv.client.show({ model: 'tiny-copy' });
    assert.equal(s.system, 'be brief');
    assert.match(s.parameters, /^temperature\s+0(\.0*)?$/m);
    const g = await h.srv.client.generate({ model: 'tiny-copy', prompt: 'hi' });
    assert.equal(g.done, true);
    assert.equal(g.eval_count, 8);
    // Copying an unknown model is 404.
    await expect404(h.srv.client.copy({ source: 'nope', destination: 'nope2' }), 'copy nope');
  });

  test('delete: gone from the list, generate answers 404', async () => {
    await h.srv.client.copy({ source: 'tiny', destination: 'doomed' });
    assert.ok((await names()).includes('doomed:latest'));
    // Loaded, then deleted.
    await h.srv.client.generate({ model: 'doomed', prompt: 'hi', options: { num_predict: 2 } });
    await h.srv.client.delete({ model: 'doomed' });
    assert.ok(!(await names()).includes('doomed:latest'));
    await expect404(h.srv.client.generate({ model: 'doomed', prompt: 'hi' }), 'generate after delete');
    await expect404(h.srv.client.chat({ model: 'doomed', messages: [{ role: 'user', content: 'hi' }] }), 'chat after delete');
    await expect404(h.srv.client.delete({ model: 'doomed' }), 'delete twice');
    // The source is untouched.
    assert.ok((await names()).includes('tiny:latest'));
    const g = await h.srv.client.generate({ model: 'tiny', prompt: 'hi' });
    assert.equal(g.done, true);
  });

  test('a model created with the CLI while the server runs is served at once', async () => {
    assert.ok(!(await names()).includes('late:latest'));
    await createModel(h.srv.modelsDir, 'late', { lines: ['PARAMETER num_predict 4'] });
    assert.ok((await names()).includes('late:latest'));
    const g = await h.srv.client.generate({ model: 'late', prompt: 'hi', options: { temperature: 0 } });
    assert.equal(g.done, true);
    assert.equal(g.eval_count, 4);
    const s = await h.srv.client.show({ model: 'late' });
    assert.match(s.parameters, /^num_predict\s+4$/m);
  });
});
