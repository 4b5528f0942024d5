// CPU threads: specd times decodes at load to choose how many threads the target and the
// draft decode with (unless num_thread says), and shows the choice in /api/ps and its log.
import assert from 'node:assert/strict';
import os from 'node:os';
import { useServer, test } from './harness.mjs';

const h = useServer({
  models: [
    { name: 'pair', from: 'pair-target.gguf', lines: [`DRAFT ${process.env.SPECD_FIXTURES}/pair-draft.gguf`] },
    { name: 'pinned', from: 'tiny.gguf', lines: ['PARAMETER num_thread 1'] },
  ],
});

async function loaded(name) {
  const r = await fetch(`${h.srv.url}/api/generate`, {
    method: 'POST',
    body: JSON.stringify({ model: name, prompt: 'Hello', stream: false, options: { num_predict: 4, temperature: 0 } }),
  });
  assert.equal(r.status, 200, await r.clone().text());
  await r.json();
  const ps = await (await fetch(`${h.srv.url}/api/ps`)).json();
  const m = ps.models.find((x) => x.name.startsWith(name));
  assert.ok(m, `${name} is loaded`);
  return m;
}

/** The first line of the server's log that `match` accepts, waiting up to 2 s for it: a model's
 *  runner logs its load in its own process, whose lines reach the server's log on their own
 *  path, not necessarily before the answer. */
async function logLine(match) {
  for (let i = 0; i < 100; ++i) {
    const line = h.srv.stderr().split('\n').find(match);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

// The counts specd may choose on this machine: 1 .. its CPUs.
const cpus = os.availableParallelism();

test('a model is timed at load: the target and the draft get measured thread counts', async () => {
  const m = await loaded('pair');
  assert.ok(Number.isInteger(m.threads.decode) && m.threads.decode >= 1 && m.threads.decode <= cpus, JSON.stringify(m.threads));
  assert.ok(m.threads.batch >= 1 && m.threads.batch <= cpus, JSON.stringify(m.threads));
  assert.ok(m.threads.draft >= 1 && m.threads.draft <= cpus, JSON.stringify(m.threads));
  // The log names what was timed: "N threads (1: x ms, ...)", for the target and the draft.
  const line = await logLine((l) => l.includes('pair') && l.includes('; draft '));
  assert.ok(line, `a thread line for the pair in the log:\n${h.srv.stderr().slice(-2000)}`);
  assert.match(line, /\d+ threads? \(\d+: [\d.]+ ms/);
  assert.match(line.split('; draft ')[1], /\d+ threads? \(\d+: [\d.]+ ms/);
  assert.ok(!/not measured/.test(line), line);
});

test('num_thread wins over the measurement and is not timed', async () => {
  const m = await loaded('pinned');
  assert.deepEqual({ decode: m.threads.decode, batch: m.threads.batch, draft: m.threads.draft }, { decode: 1, batch: 1, draft: 0 });
  const line = await logLine((l) => l.includes('specd: pinned'));
  assert.match(line ?? '', /1 thread, batch 1 \(not measured\)/);
});

test('a request option num_thread reloads with that count', async () => {
  const r = await fetch(`${h.srv.url}/api/generate`, {
    method: 'POST',
    body: JSON.stringify({ model: 'pair', prompt: 'Hello', stream: false, options: { num_predict: 2, num_thread: 1 } }),
  });
  assert.equal(r.status, 200);
  const ps = await (await fetch(`${h.srv.url}/api/ps`)).json();
  const m = ps.models.find((x) => x.name.startsWith('pair'));
  assert.equal(m.threads.decode, 1);
  assert.equal(m.threads.draft, 1, 'num_thread caps the draft too');
});
