// Runner isolation (docs/process.md): each loaded model runs in a runner process of its own, so
// an abort inside it (here the test hook SPECD_TEST_RUNNER_ABORT, or a SIGKILL) ends that runner
// and its requests, never the server or another model; the next request gets a fresh runner.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { afterEach, describe } from 'node:test';
import { createModel, postRaw, sleep, startServer, test } from './harness.mjs';

const LONG_PROMPT = 'Count to one million.'; // the tiny fixture runs on for thousands of tokens
const TWO = [{ name: 'a' }, { name: 'b' }];

let servers = [];
async function server(options) {
  const s = await startServer(options);
  servers.push(s);
  return s;
}
afterEach(async () => {
  for (const s of servers) {
    const r = await s.stop();
    assert.equal(r.code, 0, `the server did not exit cleanly (code ${r.code}, signal ${r.signal})`);
  }
  servers = [];
});

/** The pids of the runners the server started, from its log, by model name. */
function runnerPids(s) {
  const out = {};
  for (const m of s.stderr().matchAll(/runner (\d+) of model '([^']+)' started \(pid (\d+)\)/g)) {
    (out[m[2]] ??= []).push(Number(m[3]));
  }
  return out;
}

/** Whether the process runs (a zombie waiting to be reaped does not). */
function alive(pid) {
  try {
    return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false; // gone
  }
}

async function generate(s, model, options = {}) {
  return postRaw(`${s.url}/api/generate`, {
    model, prompt: 'hi', stream: false, options: { num_predict: 8, temperature: 0, ...options },
  });
}

/** A streamed generate, read line by line: returns the parsed lines once the stream ends. */
async function streamLines(s, model, numPredict) {
  const r = await fetch(`${s.url}/api/generate`, {
    method: 'POST',
    body: JSON.stringify({ model, prompt: LONG_PROMPT, options: { num_predict: numPredict, temperature: 0 } }),
  });
  assert.equal(r.status, 200);
  const text = await r.text();
  return text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

const DIED = /the runner of model 'a:latest' stopped unexpectedly \(killed by signal \d+/;

describe('runner isolation', () => {
  for (const stage of ['load', 'prefill']) {
    test(`an abort at ${stage}: that request fails, the other model serves, the next request gets a new runner`, async () => {
      const s = await server({ models: TWO, env: { SPECD_TEST_RUNNER_ABORT: `${stage}:a:latest` } });
      const [ra, rb] = await Promise.all([generate(s, 'a'), generate(s, 'b')]);
      assert.equal(ra.status, 500, ra.text);
      assert.match(ra.body.error, DIED);
      assert.match(ra.body.error, /test abort at/, 'the error names the runner\'s last log line');
      assert.equal(rb.status, 200, rb.text);
      assert.equal(rb.body.eval_count, 8);
      const again = await generate(s, 'a');
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.eval_count, 8);
      assert.equal(runnerPids(s)['a:latest'].length, 2, 'model a got a second runner');
      assert.equal(runnerPids(s)['b:latest'].length, 1, 'model b kept its runner');
    });
  }

  test('an abort mid-stream ends that stream with an error line; a stream on the other model runs on', async () => {
    const s = await server({ models: TWO, env: { SPECD_TEST_RUNNER_ABORT: 'stream:a:latest' } });
    const [la, lb] = await Promise.all([streamLines(s, 'a', 64), streamLines(s, 'b', 64)]);
    const last = la[la.length - 1];
    assert.ok(last.error, `the aborted stream ends with an error line: ${JSON.stringify(last)}`);
    assert.match(last.error, DIED);
    assert.equal(lb[lb.length - 1].done, true);
    assert.equal(lb[lb.length - 1].eval_count, 64);
    const again = await generate(s, 'a');
    assert.equal(again.status, 200, again.text);
  });

  test('kill -9 of a runner while it streams: the same', async () => {
    const s = await server({ models: TWO });
    assert.equal((await generate(s, 'b')).status, 200); // b's runner is up and stays up
    const r = await fetch(`${s.url}/api/generate`, {
      method: 'POST',
      body: JSON.stringify({ model: 'a', prompt: LONG_PROMPT, options: { num_predict: 100_000, temperature: 0 } }),
    });
    assert.equal(r.status, 200);
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while ((text.match(/\n/g) ?? []).length < 3) { // the stream is under way
      const { value, done } = await reader.read();
      assert.ok(!done, 'the stream ended before the kill');
      text += value;
    }
    const pid = runnerPids(s)['a:latest']?.[0];
    assert.ok(pid, 'the server logged the runner of a');
    process.kill(pid, 'SIGKILL');
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    const lines = text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    assert.match(lines[lines.length - 1].error ?? '', /stopped unexpectedly \(killed by signal 9/);
    const rb = await generate(s, 'b');
    assert.equal(rb.status, 200, rb.text);
    const again = await generate(s, 'a');
    assert.equal(again.status, 200, again.text);
    assert.equal(runnerPids(s)['b:latest'].length, 1);
  });

  test('a model whose runner dies at every load is marked failed after two, until it is created again', async () => {
    const s = await server({ models: TWO, env: { SPECD_TEST_RUNNER_ABORT: 'load-always:a:latest' } });
    for (let i = 0; i < 2; ++i) {
      const r = await generate(s, 'a');
      assert.equal(r.status, 500, r.text);
      assert.match(r.body.error, DIED);
    }
    const failed = await generate(s, 'a');
    assert.equal(failed.status, 500);
    assert.match(failed.body.error, /model 'a:latest' cannot be loaded: .*twice in a row/);
    assert.equal(runnerPids(s)['a:latest'].length, 2, 'no third runner was started');
    assert.equal((await generate(s, 'b')).status, 200);
    // Created again (another digest): the server tries once more.
    await createModel(s.modelsDir, 'a', { lines: ['PARAMETER num_ctx 512'] });
    const retried = await generate(s, 'a');
    assert.match(retried.body.error, DIED);
    assert.equal(runnerPids(s)['a:latest'].length, 3);
  });

  // A runner that dies before it ever reports (a broken build, a library that does not load)
  // counts as dying while loading: before, its queued request started runner after runner.
  test('a model whose runner dies at every start is marked failed after two, without a third', async () => {
    const s = await server({ models: TWO, env: { SPECD_TEST_RUNNER_ABORT: 'start-always:a:latest' } });
    const t0 = Date.now();
    const r = await generate(s, 'a');
    assert.equal(r.status, 500, r.text);
    assert.match(r.body.error, /model 'a:latest' cannot be loaded: .*test abort at start.*twice in a row/);
    assert.ok(Date.now() - t0 < 30_000);
    assert.equal(runnerPids(s)['a:latest'].length, 2, 'no third runner was started');
    assert.equal((await generate(s, 'b')).status, 200);
  });

  test('unloading a model ends its runner process; SIGTERM leaves no runner behind', async () => {
    const s = await server({ models: TWO });
    assert.equal((await generate(s, 'a')).status, 200);
    assert.equal((await generate(s, 'b')).status, 200);
    const pa = runnerPids(s)['a:latest'][0];
    const pb = runnerPids(s)['b:latest'][0];
    assert.ok(alive(pa) && alive(pb));
    const ps = await (await fetch(`${s.url}/api/ps`)).json();
    assert.equal(ps.models.length, 2);
    assert.ok(ps.models.every((m) => m.size > 0), 'the ledger mirror shows each runner\'s bytes');
    const r = await postRaw(`${s.url}/api/generate`, { model: 'a', keep_alive: 0 });
    assert.equal(r.status, 200, r.text);
    for (let i = 0; i < 100 && alive(pa); ++i) await sleep(20);
    assert.ok(!alive(pa), 'a\'s runner exited after its model unloaded');
    const after = await (await fetch(`${s.url}/api/ps`)).json();
    assert.deepEqual(after.models.map((m) => m.name), ['b:latest']);
    const stopped = await s.stop();
    assert.equal(stopped.code, 0);
    assert.ok(!alive(pb), 'b\'s runner ended with the server');
  });
});
