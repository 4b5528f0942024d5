// The specd CLI against a running server (SPECD_HOST points it there): list, show, ps, stop,
// run, cp, rm, create (with ADAPTER, MESSAGE and -q) and create's refusals.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe } from 'node:test';
import { fixture, freePort, runCli, test, useServer } from './harness.mjs';

const h = useServer({ models: [{ name: 'tiny', lines: ['PARAMETER num_predict 8', 'PARAMETER temperature 0'] }] });
const cli = (args, opts = {}) => runCli(args, { env: h.srv.env, ...opts });

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-e2e-cli-'));
after(() => fsp.rm(scratch, { recursive: true, force: true }));

function ok(r, what) {
  assert.equal(r.code, 0, `${what} failed (exit ${r.code}):\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

describe('cli', () => {
  test('specd version matches GET /api/version', async () => {
    const r = await cli(['version']);
    ok(r, 'specd version');
    const { version } = await h.srv.client.version();
    assert.ok(r.stdout.includes(version), `${r.stdout} vs ${version}`);
  });

  test('specd list shows the model', async () => {
    const r = await cli(['list']);
    ok(r, 'specd list');
    assert.match(r.stdout, /^NAME\s+ID\s+SIZE\s+MODIFIED/m);
    assert.match(r.stdout, /^tiny:latest\s+[0-9a-f]{12}\s+\d+ MB/m);
  });

  test('specd show tiny', async () => {
    const r = await cli(['show', 'tiny']);
    ok(r, 'specd show');
    assert.match(r.stdout, /architecture\s+llama/);
    assert.match(r.stdout, /num_predict\s+8/);
    const mf = await cli(['show', 'tiny', '--modelfile']);
    ok(mf, 'specd show --modelfile');
    assert.match(mf.stdout, /^FROM /m);
    assert.match(mf.stdout, /^PARAMETER num_predict 8$/m);
    const params = await cli(['show', 'tiny', '--parameters']);
    ok(params, 'specd show --parameters');
    assert.match(params.stdout, /^num_predict\s+8$/m);
  });

  test('specd run tiny "hello" prints the same answer as the API', async () => {
    const r = await cli(['run', 'tiny', 'hello']);
    ok(r, 'specd run');
    const api = await h.srv.client.generate({ model: 'tiny', prompt: 'hello' });
    assert.equal(api.eval_count, 8, 'num_predict 8 from the Modelfile');
    assert.ok(api.response.length > 0);
    assert.equal(r.stdout, `${api.response}\n`);
  });

  test('specd run with the prompt on stdin', async () => {
    const r = await cli(['run', 'tiny'], { input: 'hello' });
    ok(r, 'specd run < prompt');
    const api = await h.srv.client.generate({ model: 'tiny', prompt: 'hello' });
    assert.equal(r.stdout, `${api.response}\n`);
  });

  test('specd ps lists the loaded model', async () => {
    await h.srv.client.generate({ model: 'tiny', prompt: 'hi', options: { num_predict: 2 } });
    const r = await cli(['ps']);
    ok(r, 'specd ps');
    assert.match(r.stdout, /^NAME\s+SIZE\s+CONTEXT/m);
    assert.match(r.stdout, /^tiny:latest\s+\d+ MB\s+4096\b/m);
  });

  test('specd stop unloads a running model', async () => {
    await h.srv.client.generate({ model: 'tiny', prompt: 'hi', options: { num_predict: 2 } });
    assert.ok((await h.srv.client.ps()).models.some((m) => m.name === 'tiny:latest'));
    ok(await cli(['stop', 'tiny']), 'specd stop');
    // The unload may finish just after the answer: give it a moment, not forever.
    let loaded = (await h.srv.client.ps()).models;
    for (let i = 0; i < 50 && loaded.length > 0; ++i) {
      await new Promise((r) => setTimeout(r, 100));
      loaded = (await h.srv.client.ps()).models;
    }
    assert.deepEqual(loaded, []);
    const unknown = await cli(['stop', 'nope']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /couldn't find model "nope"/);
    const usage = await cli(['stop']);
    assert.notEqual(usage.code, 0);
    assert.match(usage.stderr, /usage: specd stop MODEL/);
  });

  test('specd create uploads ADAPTER files and sends MESSAGEs; -q quantizes', async () => {
    const mf = path.join(scratch, 'Modelfile.adapted');
    await fsp.writeFile(mf, [
      `FROM ${fixture('tiny.gguf')}`, `ADAPTER ${fixture('tiny-lora.gguf')}`, 'MESSAGE user hello', 'MESSAGE assistant hi', '',
    ].join('\n'));
    ok(await cli(['create', 'adapted', '-f', mf]), 'specd create with ADAPTER');
    const show = await cli(['show', 'adapted', '--modelfile']);
    ok(show, 'specd show --modelfile');
    assert.match(show.stdout, /^ADAPTER .*sha256-[0-9a-f]{64}$/m);
    assert.match(show.stdout, /^MESSAGE user hello$/m);
    assert.match(show.stdout, /^MESSAGE assistant hi$/m);

    const q = path.join(scratch, 'Modelfile.q');
    await fsp.writeFile(q, `FROM ${fixture('tiny.gguf')}\n`);
    ok(await cli(['create', 'tiny-q4', '-f', q, '-q', 'q4_0']), 'specd create -q q4_0');
    assert.equal((await h.srv.client.show({ model: 'tiny-q4' })).details.quantization_level, 'Q4_0');
    const bad = await cli(['create', 'x', '-f', q, '--quantize', 'q7']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /unsupported quantization type q7/);
  });

  test('specd cp and specd rm', async () => {
    ok(await cli(['cp', 'tiny', 'tiny2']), 'specd cp');
    assert.ok((await h.srv.client.list()).models.some((m) => m.name === 'tiny2:latest'));
    const rm = await cli(['rm', 'tiny2']);
    ok(rm, 'specd rm');
    assert.match(rm.stdout, /deleted 'tiny2'/);
    assert.ok(!(await h.srv.client.list()).models.some((m) => m.name === 'tiny2:latest'));
    const again = await cli(['rm', 'tiny2']);
    assert.notEqual(again.code, 0, 'removing a missing model fails');
    assert.match(again.stderr, /not found/);
  });

  test('errors: unknown model for run and show', async () => {
    const run = await cli(['run', 'nope', 'hello']);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /not found/);
    const show = await cli(['show', 'nope']);
    assert.notEqual(show.code, 0);
    assert.match(show.stderr, /not found/);
  });

  test('specd create refuses a FROM that is not a GGUF file', async () => {
    const notGguf = path.join(scratch, 'weights.gguf');
    await fsp.writeFile(notGguf, 'this is not a gguf file\n'.repeat(100));
    const mf = path.join(scratch, 'Modelfile.bad');
    await fsp.writeFile(mf, `FROM ${notGguf}\n`);
    const r = await cli(['create', 'bad', '-f', mf]);
    assert.notEqual(r.code, 0, `create must fail: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /gguf/i);
    assert.match(r.stderr, /^Error: /m);
    assert.ok(!(await h.srv.client.list()).models.some((m) => m.name.startsWith('bad')));

    const missing = path.join(scratch, 'Modelfile.missing');
    await fsp.writeFile(missing, `FROM ${path.join(scratch, 'does-not-exist.gguf')}\n`);
    const r2 = await cli(['create', 'bad', '-f', missing]);
    assert.notEqual(r2.code, 0);
    assert.match(r2.stderr, /^Error: /m);
  });

  test('specd create refuses an invalid model name', async () => {
    const mf = path.join(scratch, 'Modelfile.good');
    await fsp.writeFile(mf, `FROM ${path.resolve(process.env.SPECD_FIXTURES, 'tiny.gguf')}\n`);
    for (const name of ['../evil', 'a/../../evil', '..']) {
      const r = await cli(['create', name, '-f', mf]);
      assert.notEqual(r.code, 0, `create ${name} must fail: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /name/i, `create ${name}: ${r.stderr}`);
    }
    // Nothing escaped the models directory.
    const parent = path.dirname(h.srv.modelsDir);
    assert.ok(!fs.existsSync(path.join(parent, 'evil')));
    assert.ok(!fs.existsSync(path.join(h.srv.modelsDir, '..', 'manifests')));
  });

  test('commands without a server: list works on the store, ps and run fail clearly', async () => {
    const port = await freePort();
    const env = { ...h.srv.env, SPECD_HOST: `127.0.0.1:${port}` };
    const list = await runCli(['list'], { env });
    ok(list, 'specd list without a server');
    assert.match(list.stdout, /^tiny:latest/m);
    const ps = await runCli(['ps'], { env });
    assert.notEqual(ps.code, 0);
    assert.match(ps.stderr, /^Error: /m);
    const run = await runCli(['run', 'tiny', 'hi'], { env });
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /connect/);
  });
});
