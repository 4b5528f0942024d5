// How a model's weights are loaded: read into memory unless the request says use_mmap: true
// (Ollama's rule for weights the CPU computes with; the CPU decodes faster from memory than
// from a mapped file, docs/engine.md). Seen from outside in the server's /proc/PID/maps: a
// mapped model is a mapping of its blob in the store.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { useServer, test } from './harness.mjs';

const h = useServer({ models: [{ name: 'tiny' }] });

async function generate(options) {
  const r = await fetch(`${h.srv.url}/api/generate`, {
    method: 'POST',
    body: JSON.stringify({ model: 'tiny', prompt: 'Hello', stream: false, options: { num_predict: 2, temperature: 0, ...options } }),
  });
  const body = await r.json();
  return { status: r.status, body };
}

// The store's blob files the server process has mapped.
function mappedBlobs() {
  const maps = fs.readFileSync(`/proc/${h.srv.child.pid}/maps`, 'utf8');
  return new Set(maps.split('\n').filter((l) => l.includes(`${h.srv.modelsDir}/blobs/`)).map((l) => l.slice(l.indexOf('/'))));
}

test('by default the weights are read into memory, not mapped from the blob', async () => {
  const r = await generate({});
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual([...mappedBlobs()], []);
});

test('use_mmap: true maps the blob; use_mmap: false reads it again', async () => {
  const mapped = await generate({ use_mmap: true });
  assert.equal(mapped.status, 200, JSON.stringify(mapped.body));
  const blobs = [...mappedBlobs()];
  assert.equal(blobs.length, 1, `one blob mapped: ${blobs}`);
  assert.match(blobs[0], /\/blobs\/sha256-[0-9a-f]{64}$/);

  const read = await generate({ use_mmap: false });
  assert.equal(read.status, 200, JSON.stringify(read.body));
  assert.deepEqual([...mappedBlobs()], [], 'the mapped model was unloaded for the one read into memory');
});

test('use_mmap that is not a boolean is a 400', async () => {
  const r = await generate({ use_mmap: 'yes' });
  assert.equal(r.status, 400);
  assert.match(r.body.error, /use_mmap must be a boolean/);
});
