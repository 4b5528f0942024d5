// How a model's weights are loaded: read into memory unless the request says use_mmap: true
// (Ollama's rule for weights the CPU computes with; the CPU decodes faster from memory than
// from a mapped file, docs/engine.md). Seen from outside in /proc/PID/maps of the server and
// its runners: a mapped model is a mapping of its blob in the store.
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

// The server and its model runners (child processes, docs/process.md).
function serverProcesses() {
  const pids = [h.srv.child.pid];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === h.srv.child.pid) pids.push(Number(name));
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

// The store's blob files the server's processes have mapped.
function mappedBlobs() {
  const out = new Set();
  for (const pid of serverProcesses()) {
    let maps = '';
    try {
      maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
    } catch { continue; }
    for (const l of maps.split('\n')) if (l.includes(`${h.srv.modelsDir}/blobs/`)) out.add(l.slice(l.indexOf('/')));
  }
  return out;
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
