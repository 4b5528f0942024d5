// The specd CLI against a running server (SPECD_HOST points it there): --help everywhere, start,
// flags in any position and unknown ones refused, list, show and its flags, ps, stop, run and
// its flags (--verbose, --format, --keepalive, --think), cp, rm, create (with ADAPTER, MESSAGE,
// -q and --draft-quantize) and create's refusals, uploads the server refuses (SIGPIPE ignored,
// the server's reason printed), push's errors, and one-line errors. The terminal
// (interactive mode, word wrap, progress bars) is in cli_terminal.test.mjs.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, describe } from 'node:test';
import { SPECD_BIN, fixture, freePort, runCli, startServer, test, useServer } from './harness.mjs';

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

  test('--help on every command: exit 0 and a usage line', async () => {
    const commands = ['serve', 'start', 'create', 'show', 'run', 'stop', 'pull', 'push', 'list', 'ls', 'ps', 'cp', 'rm',
      'version', 'help'];
    const runs = await Promise.all(commands.map((c) => cli([c, '--help'])));
    runs.forEach((r, i) => {
      assert.equal(r.code, 0, `${commands[i]} --help: ${r.stderr}`);
      const name = { start: 'serve', ls: 'list' }[commands[i]] ?? commands[i];
      assert.match(r.stdout, new RegExp(`^Usage: specd ${name} `, 'm'), `${commands[i]}: ${r.stdout}`);
      assert.equal(r.stderr, '');
    });
    const serve = runs[0].stdout;
    for (const flag of ['--host', '--models', '--no-draft', '--parallel']) assert.ok(serve.includes(flag), serve);
    const run = runs[commands.indexOf('run')].stdout;
    for (const flag of ['--verbose', '--format', '--think', '--hidethinking', '--keepalive', '--nowordwrap']) {
      assert.ok(run.includes(flag), run);
    }
    for (const flag of ['--license', '--modelfile', '--parameters', '--template', '--system', '--verbose']) {
      assert.ok(runs[commands.indexOf('show')].stdout.includes(flag), flag);
    }
    assert.match(runs[commands.indexOf('create')].stdout, /--draft-quantize/);
    for (const args of [['--help'], ['-h'], [], ['help']]) {
      const r = await cli(args);
      assert.equal(r.code, 0, `${args}: ${r.stderr}`);
      assert.match(r.stdout, /^Usage: specd /m);
      assert.match(r.stdout, /^ {2}serve, start /m);
    }
    const topic = await cli(['help', 'run']);
    assert.equal(topic.code, 0);
    assert.match(topic.stdout, /^Usage: specd run \[OPTIONS\] MODEL \[PROMPT\.\.\.\]$/m);
  });

  test('specd start is serve: it listens where --host says and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const dir = await fsp.mkdtemp(path.join(scratch, 'start-'));
    const child = spawn(SPECD_BIN, ['start', '--models', dir, '--host', `127.0.0.1:${port}`], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    try {
      let version = null;
      for (let i = 0; i < 200 && !version; ++i) {
        version = await fetch(`http://127.0.0.1:${port}/api/version`).then((r) => r.json()).catch(() => null);
        if (!version) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(version?.version, 'specd start answers GET /api/version');
      child.kill('SIGTERM');
      assert.deepEqual(await exited, { code: 0, signal: null });
    } finally {
      child.kill('SIGKILL');
    }
    // A setting it cannot use is a usage error (exit 2); a host it cannot listen on, exit 1.
    const parallel = await runCli(['serve', '--models', dir, '--parallel', 'nope']);
    assert.equal(parallel.code, 2);
    assert.equal(parallel.stderr, 'Error: parallel sequences must be a number from 0 (automatic) to 256, not "nope"\n');
    const taken = `127.0.0.1:${h.srv.port}`;
    const host = await runCli(['start', '--models', dir, '--host', taken]);
    assert.equal(host.code, 1);
    assert.equal(host.stderr, `Error: cannot listen on ${taken} (address in use or not available)\n`);
  });

  test('unknown flags and commands are one error line with exit 1; flags go anywhere', async () => {
    for (const args of [['run', 'tiny', 'hi', '--nope'], ['list', '--nope'], ['serve', '--no-such-flag'], ['--nope']]) {
      const r = await cli(args);
      assert.equal(r.code, 1, `${args}: ${r.stdout}`);
      assert.equal(r.stderr, `Error: unknown flag: ${args.at(-1)}\n`);
      assert.equal(r.stdout, '');
    }
    const extra = await cli(['cp', 'a', 'b', 'c']);
    assert.equal(extra.code, 1);
    assert.equal(extra.stderr, 'Error: unexpected argument: c\n');
    const unknown = await cli(['frobnicate']);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr.split('\n').length, 2, unknown.stderr);
    // The same flag before the model, between the words of the prompt, at the end.
    const api = await h.srv.client.generate({ model: 'tiny', prompt: 'hello there' });
    for (const args of [['run', '--verbose', 'tiny', 'hello', 'there'], ['run', 'tiny', 'hello', '--verbose', 'there'],
      ['run', 'tiny', 'hello', 'there', '--verbose']]) {
      const r = await cli(args);
      ok(r, args.join(' '));
      assert.equal(r.stdout, `${api.response}\n`);
      assert.match(r.stderr, /^eval count: +8 token\(s\)$/m);
    }
  });

  test('run --verbose: timings and the speculation counters on stderr', async () => {
    const r = await cli(['run', 'tiny', 'hello', '--verbose']);
    ok(r, 'specd run --verbose');
    const api = await h.srv.client.generate({ model: 'tiny', prompt: 'hello' });
    assert.equal(r.stdout, `${api.response}\n`);
    for (const row of [/^total duration: +[\d.]+(ns|µs|ms|s)$/m, /^prompt eval count: +\d+ token\(s\)$/m,
      /^prompt eval rate: +[\d.]+ tokens\/s$/m, /^eval count: +8 token\(s\)$/m, /^eval rate: +[\d.]+ tokens\/s$/m,
      /^draft rounds: +\d+$/m, /^draft tokens: +\d+$/m, /^draft accepted: +\d+/m, /^draft mean depth: +[\d.]+$/m]) {
      assert.match(r.stderr, row);
    }
    const rounds = Number(/^draft rounds: +(\d+)$/m.exec(r.stderr)[1]);
    assert.ok(rounds > 0 && rounds <= 8, r.stderr);
  });

  test('run --format json and a JSON schema: the answer the API gives for that format', async () => {
    const json = await cli(['run', 'tiny', 'hello', '--format', 'json']);
    ok(json, 'specd run --format json');
    const api = await h.srv.client.generate({ model: 'tiny', prompt: 'hello', format: 'json' });
    assert.equal(json.stdout, `${api.response}\n`);
    assert.match(json.stdout, /^\s*\{/);
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
    const r = await cli(['run', 'tiny', 'hello', `--format=${JSON.stringify(schema)}`, '--verbose']);
    ok(r, 'specd run --format <schema>');
    const withSchema = await h.srv.client.generate({ model: 'tiny', prompt: 'hello', format: schema });
    assert.equal(r.stdout, `${withSchema.response}\n`);
    assert.match(r.stdout, /^\{\s*"a"/);
    assert.match(r.stderr, /^forced tokens: +[1-9]\d*$/m, 'the schema forces its key');
  });

  test('run --keepalive: how long the model stays, as ps shows it', async () => {
    const until = async () => {
      const r = await cli(['ps']);
      ok(r, 'specd ps');
      return /^tiny:latest\s.*\s{4}(\S.*)$/m.exec(r.stdout)?.[1];
    };
    ok(await cli(['run', 'tiny', 'hi', '--keepalive', '-1']), 'run --keepalive -1');
    assert.equal(await until(), 'Forever');
    ok(await cli(['run', 'tiny', 'hi', '--keepalive=1h']), 'run --keepalive=1h');
    assert.match(await until(), /^(59 minutes|About an hour) from now$/);
    ok(await cli(['run', 'tiny', 'hi', '--keepalive', '0']), 'run --keepalive 0');
    let loaded = (await h.srv.client.ps()).models;
    for (let i = 0; i < 50 && loaded.length > 0; ++i) {
      await new Promise((r) => setTimeout(r, 100));
      loaded = (await h.srv.client.ps()).models;
    }
    assert.deepEqual(loaded, []);
  });

  test('show: sections, -v metadata, one of --license --modelfile --parameters --template --system', async () => {
    const r = await cli(['show', 'tiny']);
    ok(r, 'specd show');
    assert.match(r.stdout, /^ {2}Model\n {4}architecture +llama\n {4}parameters +\S+\n {4}context length +\d+\n/m);
    assert.match(r.stdout, /^ {2}Capabilities\n {4}completion$/m);
    assert.doesNotMatch(r.stdout, /Metadata/);
    const v = await cli(['show', '-v', 'tiny']);
    ok(v, 'specd show -v');
    assert.match(v.stdout, /^ {2}Metadata$/m);
    assert.match(v.stdout, /^ {4}general\.architecture +llama$/m);
    const api = await h.srv.client.show({ model: 'tiny' });
    for (const [flag, field] of [['--template', 'template'], ['--parameters', 'parameters'], ['--modelfile', 'modelfile']]) {
      const f = await cli(['show', 'tiny', flag]);
      ok(f, `show ${flag}`);
      assert.equal(f.stdout.trimEnd(), api[field].trimEnd(), flag);
    }
    for (const flag of ['--license', '--system']) {
      const f = await cli(['show', flag, 'tiny']);
      ok(f, `show ${flag}`);
      assert.equal(f.stdout, '', `${flag}: tiny has none`);
    }
    const two = await cli(['show', 'tiny', '--license', '--system']);
    assert.equal(two.code, 1);
    assert.match(two.stderr, /^Error: only one of .* can be specified\n$/);
  });

  test('push: a model the server does not have, a registry it cannot reach, and a server without /api/push', async () => {
    const r = await cli(['push', 'nope']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'Error: model "nope:latest" not found\n');

    const port = await freePort();
    const name = `127.0.0.1:${port}/ns/tiny:v1`;
    ok(await cli(['cp', 'tiny', name]), 'specd cp');
    const down = await cli(['push', name]);
    assert.equal(down.code, 1);
    assert.match(down.stderr, new RegExp(`^Error: cannot reach the registry at http://127\\.0\\.0\\.1:${port}: .+\n$`));

    // A server that predates /api/push answers its generic 404: the CLI says what is missing.
    const old = http.createServer((req, res) => {
      if (req.url === '/api/version') return res.end('{"version":"0.0.0"}');
      res.statusCode = 404;
      return res.end('404 page not found');
    });
    await new Promise((resolve) => old.listen(0, '127.0.0.1', resolve));
    try {
      const o = await runCli(['push', 'tiny'], { env: { SPECD_HOST: `127.0.0.1:${old.address().port}` } });
      assert.equal(o.code, 1);
      assert.equal(o.stderr, 'Error: this server cannot push models: it has no /api/push (HTTP 404)\n');
    } finally {
      old.closeAllConnections();
      await new Promise((resolve) => old.close(resolve));
    }
  });

  test('specd list shows the model', async () => {
    const r = await cli(['list']);
    ok(r, 'specd list');
    assert.match(r.stdout, /^NAME\s+ID\s+SIZE\s+MODIFIED$/m);
    // Ollama's columns: a short ID, a human size, how long ago.
    assert.match(r.stdout, /^tiny:latest\s+[0-9a-f]{12}\s+17 MB\s+(Less than a second|\d+ seconds?|About a minute|\d+ minutes) ago$/m);
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
    assert.match(r.stdout, /^NAME\s+ID\s+SIZE\s+PROCESSOR\s+CONTEXT\s+UNTIL$/m);
    const [m] = (await h.srv.client.ps()).models;
    assert.match(r.stdout, new RegExp(`^tiny:latest\\s+${m.digest.slice(0, 12)}\\s+\\d+ MB\\s+100% CPU\\s+4096\\s+\\d+ minutes from now$`, 'm'));
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
    assert.equal(usage.code, 1);
    assert.equal(usage.stderr, 'Error: MODEL is required\n');
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

  test('create prints "success" once, through a server and without one; --draft-quantize', async () => {
    const mf = path.join(scratch, 'Modelfile.once');
    await fsp.writeFile(mf, `FROM ${fixture('tiny.gguf')}\nSYSTEM be brief\n`);
    const viaServer = await cli(['create', 'once', '-f', mf]);
    ok(viaServer, 'create through the server');
    assert.equal((viaServer.stderr.match(/^success$/gm) ?? []).length, 1, viaServer.stderr);
    assert.match(viaServer.stderr, /^gathering model components\n/);
    assert.match(viaServer.stderr, /^writing manifest$/m);
    const dir = await fsp.mkdtemp(path.join(scratch, 'store-'));
    const direct = await runCli(['create', 'once', '-f', mf], { env: { SPECD_HOST: `127.0.0.1:${await freePort()}`, SPECD_MODELS: dir } });
    ok(direct, 'create without a server');
    assert.equal((direct.stderr.match(/^success$/gm) ?? []).length, 1, direct.stderr);

    // The draft quantized as the model is: its layer is a new, smaller GGUF.
    const pair = path.join(scratch, 'Modelfile.pair');
    await fsp.writeFile(pair, `FROM ${fixture('pair-target.gguf')}\nDRAFT ${fixture('pair-draft.gguf')}\n`);
    ok(await cli(['create', 'pair-q', '-f', pair, '-q', 'q8_0', '--draft-quantize', 'q8_0']), 'create --draft-quantize');
    const manifest = JSON.parse(fs.readFileSync(
      path.join(h.srv.modelsDir, 'manifests', 'registry.ollama.ai', 'library', 'pair-q', 'latest'), 'utf8'));
    const draft = manifest.layers.find((l) => l.mediaType === 'application/vnd.ollama.image.draft');
    const original = fs.statSync(fixture('pair-draft.gguf')).size;
    assert.ok(draft.size < original / 2, `draft layer ${draft.size} bytes vs ${original}`);
    assert.equal((await h.srv.client.show({ model: 'pair-q' })).details.quantization_level, 'Q8_0');
    const g = await h.srv.client.generate({ model: 'pair-q', prompt: 'hi', options: { num_predict: 4 } });
    assert.ok(g.speculation.drafted > 0, JSON.stringify(g.speculation));
    const noDraft = await cli(['create', 'x', '-f', mf, '--draft-quantize', 'q8_0']);
    assert.equal(noDraft.code, 1);
    assert.equal(noDraft.stderr.split('\n').filter((l) => l.startsWith('Error: ')).at(-1),
      'Error: draft quantization needs a DRAFT model');
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

  test('errors: the server\'s message on one line, exit 1', async () => {
    const show = await cli(['show', 'nope']);
    assert.equal(show.code, 1);
    assert.equal(show.stderr, 'Error: model "nope" not found, try pulling it first\n');
    const think = await cli(['run', 'tiny', 'hi', '--think']);
    assert.equal(think.code, 1);
    assert.equal(think.stderr, 'Error: model "tiny:latest" does not support thinking\n');
    const format = await cli(['run', 'tiny', 'hi', '--format', 'yaml']);
    assert.equal(format.code, 1);
    assert.match(format.stderr, /^Error: invalid format "yaml"; expected "json" or a JSON schema object\n$/);
    const keep = await cli(['run', 'tiny', 'hi', '--keepalive', 'soon']);
    assert.equal(keep.code, 1);
    assert.equal(keep.stderr.split('\n').length, 2, keep.stderr);
    assert.match(keep.stderr, /^Error: .*keep_alive/);
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
    assert.equal(ps.code, 1);
    assert.match(ps.stderr, /^Error: could not connect to the server at 127\.0\.0\.1:\d+; start it with `specd serve`\n$/);
    const run = await runCli(['run', 'tiny', 'hi'], { env });
    assert.equal(run.code, 1);
    assert.equal(run.stderr, ps.stderr);
    const show = await runCli(['show', 'tiny', '--parameters'], { env });
    ok(show, 'specd show without a server');
    assert.match(show.stdout, /^num_predict\s+8$/m);
  });
});

// An upload the server refuses, before or during the body: the CLI says why and exits 1,
// where it used to die of SIGPIPE during the upload, silently.
describe('cli uploads the server refuses', () => {
  const modelfile = async () => {
    const mf = path.join(scratch, 'Modelfile.upload');
    await fsp.writeFile(mf, `FROM ${fixture('tiny.gguf')}\n`);
    return mf;
  };

  test('a wrong API key: the server\'s 401 is printed, nothing is uploaded', async () => {
    const srv = await startServer({ models: [], env: { SPECD_API_KEY: 'right-key' } });
    try {
      const r = await runCli(['create', 'up', '-f', await modelfile()], { env: { ...srv.env, SPECD_API_KEY: 'wrong-key' } });
      assert.equal(r.signal, null, `killed by ${r.signal}: ${r.stderr}`);
      assert.equal(r.code, 1, r.stderr);
      // Asked before any byte is sent (GET /api/blobs), so the refusal comes with its reason.
      assert.match(r.stderr, /^Error: cannot upload tiny\.gguf: unauthorized/m);
      const good = await runCli(['list'], { env: { ...srv.env, SPECD_API_KEY: 'right-key' } });
      ok(good, 'specd list with the right key');
    } finally {
      await srv.stop();
    }
  });

  test('a store that cannot take the file (file size limit, as a full disk): the server\'s error is printed', async () => {
    // 2048 blocks (1 or 2 MiB, by the shell's unit) of the 17 MB model; writes past it fail
    // with EFBIG instead of a signal.
    const srv = await startServer({ models: [], shell: "ulimit -f 2048; trap '' XFSZ" });
    try {
      const r = await runCli(['create', 'up', '-f', await modelfile()], { env: srv.env });
      assert.equal(r.signal, null, `killed by ${r.signal}: ${r.stderr}`);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^Error: uploading tiny\.gguf failed: cannot write to the model store: File too large/m);
      assert.equal((await srv.client.list()).models.length, 0);
      // The server is fine: its own small writes still work.
      const version = await srv.client.version();
      assert.ok(version.version);
    } finally {
      await srv.stop();
    }
  });
});
