// README command 1, as a new user meets it: scripts/demo.sh generates its model, serves it on
// the host and store it is given, and prints examples; every example it prints runs here,
// exactly as printed, and succeeds: a generation that drafts, a schema-constrained answer
// that completes and matches, a streamed chat, an image, the CLI, the counters and the
// dashboard. (SPECD_DEMO_SKIP_BUILD: the test run has built already.)
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe } from 'node:test';
import { fileURLToPath } from 'node:url';

import { SPECD_BIN, freePort, sleep, test } from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const printedBin = path.join(ROOT, 'build/bin/specd');
const skip = path.resolve(SPECD_BIN) === printedBin
  ? false
  : `the demo prints build/bin/specd: it runs with the release preset's binary (this run uses ${SPECD_BIN})`;

// Runs one printed line with bash, as a user would paste it (stdin empty: `specd run` reads
// piped input before its prompt).
function sh(command, timeoutMs = 120_000) {
  return new Promise((resolve) => {
    const child = execFile('bash', ['-c', command], { cwd: ROOT, timeout: timeoutMs, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
      });
    child.stdin.end();
  });
}

describe('scripts/demo.sh', { skip }, () => {
  let demo = null;
  let tmp = null;
  after(async () => {
    if (demo && demo.exitCode === null) {
      demo.kill('SIGTERM');
      await new Promise((r) => demo.once('exit', r));
    }
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
  });

  test('every example it prints succeeds against the server it starts', async () => {
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'specd-demo-'));
    const port = await freePort();
    const host = `127.0.0.1:${port}`;
    demo = spawn('bash', ['scripts/demo.sh'], {
      cwd: ROOT,
      env: {
        ...process.env,
        SPECD_DEMO_SKIP_BUILD: '1',
        SPECD_HOST: host,
        SPECD_MODELS: path.join(tmp, 'models'),
        SPECD_DEMO_DIR: path.join(tmp, 'demo'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let log = '';
    demo.stdout.on('data', (d) => (out += d));
    demo.stderr.on('data', (d) => (log += d));

    const deadline = Date.now() + 300_000;
    for (;;) {
      assert.equal(demo.exitCode, null, `the demo exited:\n${out}\n${log}`);
      try {
        if ((await fetch(`http://${host}/api/version`)).ok) break;
      } catch {
        /* not up yet */
      }
      assert.ok(Date.now() < deadline, `the demo's server did not come up:\n${out}\n${log}`);
      await sleep(200);
    }

    const lines = out.split('\n');
    const examples = lines.filter((l) => /^ {2}(curl |build\/bin\/specd )/.test(l)).map((l) => l.trim());
    const urls = lines.filter((l) => /^ {2}http:\/\//.test(l)).map((l) => l.trim());
    assert.equal(examples.length, 7, out);
    for (const e of examples) assert.ok(e.includes(host), `printed for the host it serves on: ${e}`);
    assert.deepEqual(urls, [`http://${host}/ui`]);

    const [generate, schema, streamed, image, cli, ps, metrics] = examples;

    let r = await sh(generate);
    assert.equal(r.code, 0, r.stderr);
    let answer = JSON.parse(r.stdout);
    assert.equal(answer.done, true);
    assert.ok(answer.eval_count > 0 && answer.response.length > 0);

    r = await sh(schema);
    assert.equal(r.code, 0, r.stderr);
    answer = JSON.parse(r.stdout);
    assert.equal(answer.done_reason, 'stop', `the structured answer completes: ${r.stdout}`);
    const person = JSON.parse(answer.message.content);
    assert.deepEqual(Object.keys(person).sort(), ['age', 'colors', 'name']);
    // maxLength counts code points (JSON Schema's characters); a random model's name may hold
    // a character outside the BMP, which JavaScript's .length counts twice.
    assert.ok(typeof person.name === 'string' && [...person.name].length <= 12, r.stdout);
    assert.ok(Number.isInteger(person.age) && person.age >= 0 && person.age <= 120);
    assert.ok(person.colors.length >= 1 && person.colors.length <= 3);
    for (const c of person.colors) assert.ok(['red', 'green', 'blue'].includes(c));

    r = await sh(streamed);
    assert.equal(r.code, 0, r.stderr);
    const parts = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(parts.length > 2, 'streamed in several lines');
    assert.equal(parts.at(-1).done, true);

    r = await sh(image);
    assert.equal(r.code, 0, r.stderr);
    answer = JSON.parse(r.stdout);
    assert.equal(answer.done, true, r.stdout);
    assert.ok(answer.prompt_eval_count > 16, `the image's tokens are part of the prompt: ${answer.prompt_eval_count}`);

    r = await sh(cli);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.trim().length > 0);

    r = await sh(ps);
    assert.equal(r.code, 0, r.stderr);
    const loaded = JSON.parse(r.stdout).models;
    assert.equal(loaded[0].name, 'demo:latest');
    assert.ok(loaded[0].threads.draft > 0, 'the demo model has a draft');

    r = await sh(metrics);
    assert.equal(r.code, 0, r.stderr);
    const counter = (name) => Number(r.stdout.match(new RegExp(`^${name} (\\d+)`, 'm'))?.[1]);
    assert.ok(counter('specd_spec_drafted_total') > 0, r.stdout);
    assert.ok(counter('specd_spec_accepted_total') > 0, r.stdout);
    // Whether forced text was verified is the depth controller's call, timed on this machine.
    assert.ok(Number.isInteger(counter('specd_spec_forced_total')), r.stdout);

    const ui = await fetch(urls[0]);
    assert.equal(ui.status, 200);
    assert.match(await ui.text(), /specd dashboard/);
  });
});
