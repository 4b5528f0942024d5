// POST /api/create with Ollama's JSON body, end to end: blobs uploaded through /api/blobs,
// LoRA `adapters`, `messages`, `quantize`, and /api/show's capabilities for an embedding
// model and a fill-in-the-middle vocabulary (llama.cpp's vocab-only files, served as models).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe } from 'node:test';
import { fixture, postRaw, readNdjson, test, useServer } from './harness.mjs';

const h = useServer({ models: [] });

function digestOf(bytes) {
  return 'sha256:' + crypto.createHash('sha256').update(bytes).digest('hex');
}

/** Uploads a fixture as a blob (POST /api/blobs/:digest); returns its digest. */
async function upload(name) {
  const bytes = fs.readFileSync(fixture(name));
  const digest = digestOf(bytes);
  const r = await fetch(`${h.srv.url}/api/blobs/${digest}`, { method: 'POST', body: bytes });
  assert.ok(r.status === 201 || r.status === 200, `upload ${name}: ${r.status}`);
  return digest;
}

/** POST /api/create, streamed; returns {status, lines} (or the error body's one line). */
async function create(body) {
  const r = await fetch(`${h.srv.url}/api/create`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: r.status, lines: await readNdjson(r) };
}

async function created(body) {
  const { status, lines } = await create(body);
  assert.equal(status, 200, JSON.stringify(lines));
  assert.equal(lines.at(-1).status, 'success');
  return lines.map((l) => l.status);
}

/** Every file under the store's blobs/, temp files included. */
function blobFiles() {
  return fs.readdirSync(path.join(h.srv.modelsDir, 'blobs')).sort();
}

const greedy = { temperature: 0, num_predict: 12, seed: 1 };

describe('create', () => {
  let tiny;
  test('from an uploaded GGUF (files)', async () => {
    tiny = await upload('tiny.gguf');
    const statuses = await created({ model: 'base', files: { 'tiny.gguf': tiny } });
    assert.ok(statuses.includes(`creating new layer ${tiny}`) || statuses.includes(`using existing layer ${tiny}`),
      JSON.stringify(statuses));
    const s = await h.srv.client.show({ model: 'base' });
    assert.ok(s.capabilities.includes('completion'), JSON.stringify(s.capabilities));
    assert.ok(!s.capabilities.includes('embedding') && !s.capabilities.includes('insert'), JSON.stringify(s.capabilities));
  });

  test('Ollama\'s create fields: draft_files (stored under Ollama\'s draft type), renderer/parser/requires, the old name', async () => {
    const target = await upload('pair-target.gguf');
    const draft = await upload('pair-draft.gguf');
    // `name` is what Ollama's create took before `model`.
    await created({ name: 'ollama-pair', files: { 'target.gguf': target }, draft_files: { 'draft.gguf': draft },
      renderer: 'qwen3-coder', parser: 'qwen3-coder', requires: '0.12.0' });
    const manifest = JSON.parse(fs.readFileSync(
      path.join(h.srv.modelsDir, 'manifests', 'registry.ollama.ai', 'library', 'ollama-pair', 'latest'), 'utf8'));
    const draftLayer = manifest.layers.find((l) => l.digest === draft);
    assert.equal(draftLayer?.mediaType, 'application/vnd.ollama.image.draft', JSON.stringify(manifest.layers));
    const s = await h.srv.client.show({ model: 'ollama-pair' });
    assert.equal(s.renderer, 'qwen3-coder');
    assert.equal(s.parser, 'qwen3-coder');
    assert.equal(s.requires, '0.12.0');
    assert.match(s.modelfile, /^RENDERER qwen3-coder$/m);
    assert.match(s.modelfile, /^DRAFT /m);
    // The draft drafts: the model runs with speculation.
    const r = await h.srv.client.generate({ model: 'ollama-pair', prompt: 'hi', options: greedy });
    assert.ok(r.speculation.drafted > 0, JSON.stringify(r.speculation));
    const both = await create({ model: 'x', files: { 'target.gguf': target }, draft_files: { 'draft.gguf': draft }, draft: 'ollama-pair' });
    assert.equal(both.status, 400);
    const two = await create({ model: 'x', files: { 'target.gguf': target }, draft_files: { a: draft, b: draft } });
    assert.equal(two.status, 400);
  });

  test('adapters: a LoRA layer, shown in the modelfile, with its own digest', async () => {
    const lora = await upload('tiny-lora.gguf');
    await created({ model: 'adapted', from: 'base', adapters: { 'tiny-lora.gguf': lora } });
    const s = await h.srv.client.show({ model: 'adapted' });
    assert.match(s.modelfile, new RegExp(`^ADAPTER .*sha256-${lora.slice(7)}$`, 'm'));
    // The adapter is part of the model's identity (the digest names its prompt-cache states).
    const list = await h.srv.client.list();
    const digest = (n) => list.models.find((m) => m.name === n).digest;
    assert.notEqual(digest('adapted:latest'), digest('base:latest'));
  });

  test('adapters are applied when the model runs', async () => {
    const prompt = 'Once upon a time';
    const base = await h.srv.client.generate({ model: 'base', prompt, options: greedy });
    const adapted = await h.srv.client.generate({ model: 'adapted', prompt, options: greedy });
    const again = await h.srv.client.generate({ model: 'adapted', prompt, options: greedy });
    assert.equal(adapted.response, again.response, 'deterministic');
    assert.notEqual(adapted.response, base.response, 'the adapter changed nothing');
  });

  test('adapters that do not fit, or are not uploaded, are a 400 and write nothing', async () => {
    const small = await upload('small-lora.gguf');
    const spm = await upload('tiny-spm.gguf');
    const before = blobFiles();
    const cases = [
      [{ model: 'x', from: 'base', adapters: { 'small-lora.gguf': small } }, /ADAPTER cannot be used .*shapes/],
      [{ model: 'x', from: 'base', adapters: { 'tiny-spm.gguf': spm } }, /not an adapter/],
      [{ model: 'x', from: 'base', adapters: { 'l.gguf': `sha256:${'0'.repeat(64)}` } }, /not found; upload it/],
      [{ model: 'x', from: 'base', adapters: { 'l.gguf': '../../etc/passwd' } }, /digest/],
      [{ model: 'x', from: 'base', adapters: ['tiny-lora.gguf'] }, /adapters must be an object/],
    ];
    for (const [body, why] of cases) {
      const r = await postRaw(`${h.srv.url}/api/create`, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.body.error, why, JSON.stringify(body));
    }
    assert.deepEqual(blobFiles(), before);
    assert.ok(!(await h.srv.client.list()).models.some((m) => m.name === 'x:latest'));
  });

  test('messages: shown, and the start of every chat', async () => {
    const messages = [
      { role: 'user', content: 'What is the capital of France?' },
      { role: 'assistant', content: 'Paris is the capital of France.' },
    ];
    await created({ model: 'primed', from: 'base', messages });
    const s = await h.srv.client.show({ model: 'primed' });
    assert.match(s.modelfile, /^MESSAGE user "?What is the capital of France\?"?$/m);
    assert.match(s.modelfile, /^MESSAGE assistant "?Paris is the capital of France\."?$/m);
    const ask = [{ role: 'user', content: 'And of Italy?' }];
    const primed = await h.srv.client.chat({ model: 'primed', messages: ask, options: greedy });
    const plain = await h.srv.client.chat({ model: 'base', messages: ask, options: greedy });
    const explicit = await h.srv.client.chat({ model: 'base', messages: [...messages, ...ask], options: greedy });
    // The model's messages went in front of the request's: ~20 more prompt tokens (primed's
    // namespace in the prompt cache is new, so none of its tokens were reused), and the same
    // greedy answer as a request that sends them itself.
    assert.ok(primed.prompt_eval_count > plain.prompt_eval_count + 10, `${primed.prompt_eval_count} vs ${plain.prompt_eval_count}`);
    assert.equal(primed.message.content, explicit.message.content);

    const bad = await postRaw(`${h.srv.url}/api/create`, { model: 'x', from: 'base', messages: [{ role: 'robot', content: 'hi' }] });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /role must be one of/);
  });

  test('quantize: q8_0 from F32, with progress; the model runs and is smaller', async () => {
    const t0 = Date.now();
    const { status, lines } = await create({ model: 'tiny-q8', from: 'base', quantize: 'q8_0' });
    const ms = Date.now() - t0;
    assert.equal(status, 200, JSON.stringify(lines));
    assert.equal(lines.at(-1).status, 'success');
    assert.equal(lines.filter((l) => l.status === 'success').length, 1);
    const statuses = lines.map((l) => l.status);
    assert.ok(statuses.includes('quantizing F32 model to Q8_0'), JSON.stringify(statuses));
    // A line per tensor as llama.cpp quantizes it: the same total, completed counting up to it.
    const counted = lines.filter((l) => l.status === 'quantizing F32 model to Q8_0' && l.total > 0);
    assert.ok(counted.length > 3, JSON.stringify(lines.slice(0, 5)));
    const total = counted[0].total;
    assert.ok(counted.every((l) => l.total === total));
    assert.deepEqual(counted.map((l) => l.completed), [...Array(total).keys()].map((i) => i + 1));
    const tensors = (await h.srv.client.show({ model: 'base', verbose: true })).tensors.length;
    assert.equal(total, tensors);
    const list = (await h.srv.client.list()).models;
    const q8 = list.find((m) => m.name === 'tiny-q8:latest');
    const base = list.find((m) => m.name === 'base:latest');
    assert.equal(q8.details.quantization_level, 'Q8_0');
    assert.equal(base.details.quantization_level, 'F32'); // Ollama's name, not llama.cpp's "all F32"
    assert.ok(q8.size < base.size / 3, `${q8.size} vs ${base.size}`);
    console.log(`quantize tiny F32 ${base.size} B -> Q8_0 ${q8.size} B through /api/create in ${ms} ms`);
    const g = await h.srv.client.generate({ model: 'tiny-q8', prompt: 'hello', options: greedy });
    assert.equal(g.eval_count, 12);
    // Q4_K_M too (llama.cpp falls back per tensor where rows are narrower than a K block).
    await created({ model: 'tiny-q4', files: { 'tiny.gguf': tiny }, quantize: 'Q4_K_M' });
    assert.equal((await h.srv.client.show({ model: 'tiny-q4' })).details.quantization_level, 'Q4_K_M');
  });

  test('quantize refusals: an unknown type, an already quantized source; nothing left behind', async () => {
    const before = blobFiles();
    const unknown = await postRaw(`${h.srv.url}/api/create`, { model: 'x', from: 'base', quantize: 'q9_9' });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error, /unsupported quantization type q9_9; supported: .*Q4_K_M/);
    const twice = await postRaw(`${h.srv.url}/api/create`, { model: 'x', from: 'tiny-q8', quantize: 'q4_0' });
    assert.equal(twice.status, 400);
    assert.match(twice.body.error, /already quantized/);
    assert.deepEqual(blobFiles(), before, 'no blob and no temp file');
  });

  test('capabilities: embedding for a BERT model, insert for a FIM vocabulary', async () => {
    await created({ model: 'bge', files: { 'vocab-bert-bge.gguf': await upload('vocab-bert-bge.gguf') } });
    await created({ model: 'coder', files: { 'vocab-starcoder.gguf': await upload('vocab-starcoder.gguf') } });
    // Ollama lists an embedding model as "embedding" only, not "completion".
    const bge = (await h.srv.client.show({ model: 'bge' })).capabilities;
    assert.ok(bge.includes('embedding') && !bge.includes('completion') && !bge.includes('insert'), JSON.stringify(bge));
    const coder = (await h.srv.client.show({ model: 'coder' })).capabilities;
    assert.ok(coder.includes('completion') && coder.includes('insert') && !coder.includes('embedding'), JSON.stringify(coder));
    // Asked again (cached per blob): the same answer.
    assert.deepEqual((await h.srv.client.show({ model: 'coder' })).capabilities, coder);
  });
});
