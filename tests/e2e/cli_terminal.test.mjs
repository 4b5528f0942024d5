// The CLI on a terminal, typed into as a person types (tmux, terminal.mjs): the interactive
// mode (line editing, history kept across sessions, /set, /show, /load, /save, /clear,
// """ blocks, Ctrl+C, /bye), word wrap and dimmed thinking, and the progress bars of create,
// pull and push. Also `run` pulling a missing model first, from a local registry.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import { SPECD_BIN, fixture, runCli, test, useServer } from './harness.mjs';
import { MODEL_TYPE, PARAMS_TYPE, sha256, startRegistry } from './registry_server.mjs';
import { startTerminal } from './terminal.mjs';

/** A registry model made of a GGUF and a params layer. */
function addModel(repository, tag, gguf, params) {
  reg.addModel(repository, tag, {
    layers: [{ mediaType: MODEL_TYPE, bytes: gguf }, { mediaType: PARAMS_TYPE, bytes: Buffer.from(JSON.stringify(params)) }],
    config: {
      model_format: 'gguf', model_family: 'llama', model_families: ['llama'], model_type: '4M', file_type: 'F32',
      rootfs: { type: 'layers', diff_ids: [sha256(gguf)] },
    },
  });
}

let reg;
before(async () => {
  reg = await startRegistry();
});
after(async () => {
  await reg?.close();
});

const h = useServer({
  models: [
    { name: 'tiny', lines: ['PARAMETER num_predict 8', 'PARAMETER temperature 0'] },
    { name: 'long', lines: ['PARAMETER num_predict 40', 'PARAMETER temperature 0'] },
    { name: 'think', from: 'think.gguf', lines: ['PARAMETER num_predict 12', 'PARAMETER temperature 0'] },
  ],
});

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-e2e-cli-tty-'));
after(() => fsp.rm(scratch, { recursive: true, force: true }));
const home = path.join(scratch, 'home');

/** A terminal running `specd ARGS` against the test server, HOME in the scratch folder. */
function specd(args, opts = {}) {
  return startTerminal([SPECD_BIN, ...args], { env: { ...h.srv.env, HOME: home }, ...opts });
}

/** Runs `fn(term)` and always closes the terminal. */
async function withTerminal(args, opts, fn) {
  const term = await specd(args, opts);
  try {
    return await fn(term);
  } finally {
    await term.close();
  }
}

const PROMPT = /^>>> *$/m;

describe('cli on a terminal', () => {
  test('the interactive mode: editing, history, /set, /show, """, /save, /load, /clear, /bye', async () => {
    await withTerminal(['run', 'tiny'], {}, async (t) => {
      await t.waitFor(PROMPT);
      // Line editing: Ctrl+A goes home, Backspace deletes, Left moves back.
      await t.type('set verbose');
      await t.press('C-a');
      await t.line('/');
      await t.waitFor(/^Set 'verbose' mode\.$/m);
      await t.type('/set parameter num_predict 44');
      await t.press('BSpace', 'Enter');
      await t.waitFor(/^Set parameter 'num_predict' to '4'$/m);
      await t.type('/shw info');
      await t.press('Left', 'Left', 'Left', 'Left', 'Left', 'Left');
      await t.line('o');
      await t.waitFor(/^ {4}architecture +llama$/m);

      // A message: the answer, then the stats (--verbose) with the parameter set above.
      await t.line('hello');
      await t.waitFor(/^eval count: +4 token\(s\)$/m);
      await t.waitFor(/^draft rounds: +\d+$/m);
      // History: Up brings "hello" back.
      await t.press('Up');
      await t.waitFor(/^>>> hello$/m, { count: 2 });
      await t.press('Enter');
      await t.waitFor(/^eval count: +4 token\(s\)$/m, { count: 2 });
      await t.line('/set quiet');
      await t.waitFor(/^Set 'quiet' mode\.$/m);

      // Ctrl+C stops an answer that would take minutes; the session goes on.
      await t.line('/set parameter num_predict 100000');
      await t.waitFor(/^Set parameter 'num_predict' to '100000'$/m);
      await t.line('go on and on');
      await t.waitFor(/^>>> go on and on\n\s*\S/m);
      await t.press('C-c');
      await t.waitFor(/^>>> go on and on\n[\s\S]*^>>> *$/m, { timeoutMs: 10_000 });
      await t.line('/set parameter num_predict 4');
      await t.waitFor(/^Set parameter 'num_predict' to '4'$/m, { count: 2 });

      // Ctrl+C on an empty line says how to leave, and leaves nothing behind.
      await t.press('C-c');
      await t.waitFor(/^Use Ctrl \+ d or \/bye to exit\.$/m);

      await t.line('/set system You are a pirate.');
      await t.waitFor(/^Set system message\.$/m);
      await t.line('/show system');
      await t.waitFor(/^You are a pirate\.$/m);
      await t.line('/show license');
      await t.waitFor(/^No license was specified for this model\.$/m);
      await t.line('/show parameters');
      await t.waitFor(/^User defined parameters:\n {2}num_predict +4$/m);
      await t.line('/show modelfile');
      await t.waitFor(/^FROM .*sha256-[0-9a-f]{64}$/m);
      await t.line('/show template');
      await t.waitFor(/<\|assistant\|>/);

      // A """ block: the continuation prompt, then one message of two lines.
      await t.line('"""');
      await t.waitFor(/^\.\.\. *$/m);
      await t.line('first line');
      await t.line('second line"""');
      // The answer, then the prompt again.
      await t.waitFor(/^\.\.\. second line"""\n[\s\S]*^>>> *$/m);

      // Unknown commands are reported, not sent.
      await t.line('/nope');
      await t.waitFor(/^Unknown command '\/nope'\. Type \/\? for help$/m);
      await t.line('/set nothing');
      await t.waitFor(/^Unknown command '\/set nothing'\. Type \/\? for help$/m);
      await t.line('/?');
      await t.waitFor(/^ {2}\/save <model> +Save your current session$/m);

      // /save: a model with the session's system message, parameters and messages.
      await t.line('/save pirate');
      await t.waitFor(/^Created new model 'pirate'$/m);
      const saved = await h.srv.client.show({ model: 'pirate' });
      assert.equal(saved.system, 'You are a pirate.');
      assert.match(saved.parameters, /^num_predict\s+4$/m);
      assert.match(saved.parameters, /^temperature\s+0/m);
      assert.match(saved.modelfile, /^MESSAGE user hello$/m);
      assert.ok(saved.modelfile.includes('first line\nsecond line'), saved.modelfile);
      // hello twice, the stopped answer (what was answered stays), the block.
      assert.match(saved.modelfile, /^MESSAGE user go on and on$/m);
      assert.equal((saved.modelfile.match(/^MESSAGE assistant /gm) ?? []).length, 4, saved.modelfile);

      await t.line('/clear');
      await t.waitFor(/^Cleared session context$/m);
      // /set format json: the next answer is the one the API gives for that format; what
      // /save keeps after /clear is that one exchange alone.
      await t.line('/set format json');
      await t.waitFor(/^Set format to 'json' mode\.$/m);
      await t.line('hello json');
      await t.waitFor(/^>>> hello json\n[\s\S]*?^>>> *$/m);
      await t.line('/set noformat');
      await t.waitFor(/^Disabled format\.$/m);
      await t.line('/save cleared');
      await t.waitFor(/^Created new model 'cleared'$/m);
      const json = await h.srv.client.chat({
        model: 'tiny', format: 'json', options: { num_predict: 4 },
        messages: [{ role: 'system', content: 'You are a pirate.' }, { role: 'user', content: 'hello json' }],
      });
      assert.match(json.message.content, /^\{/);
      const cleared = (await h.srv.client.show({ model: 'cleared' })).modelfile;
      assert.deepEqual(cleared.match(/^MESSAGE .*$/gm), ['MESSAGE user hello json', `MESSAGE assistant ${json.message.content}`]);
      await t.line('/load nope');
      await t.waitFor(/^Couldn't find model 'nope'$/m);
      await t.line('/load pirate');
      await t.waitFor(/^Loading model 'pirate'$/m);
      await t.line('/show parameters');
      await t.waitFor(/^Model defined parameters:\n(?: {2}.*\n)*? {2}num_predict +4$/m);

      // A request the server refuses is its error line; the session goes on.
      await t.line('/set think');
      await t.waitFor(/^Set 'think' mode\.$/m);
      await t.line('hi');
      await t.waitFor(/^Error: model "pirate:latest" does not support thinking$/m);
      await t.line('/set nothink');
      await t.waitFor(/^Set 'nothink' mode\.$/m);

      await t.line('/bye');
      assert.equal(await t.exited(), 0);
    });
    // The history outlives the session: the next one finds "/bye" on Up.
    const history = fs.readFileSync(path.join(home, '.specd', 'history'), 'utf8');
    assert.match(history, /^hello$/m);
    await withTerminal(['run', 'tiny'], {}, async (t) => {
      await t.waitFor(PROMPT);
      await t.press('Up');
      await t.waitFor(/^>>> \/bye$/m);
      await t.press('C-u', 'C-d');
      assert.equal(await t.exited(), 0);
    });
  });

  test('word wrap at the terminal edge, and --nowordwrap', async () => {
    const width = 24;
    const api = await h.srv.client.generate({ model: 'long', prompt: 'Tell a story.' });
    const words = (s) => s.split(/\s+/).filter(Boolean).join(' ');
    assert.ok(api.response.length > 2 * width, `a long answer: ${JSON.stringify(api.response)}`);

    await withTerminal(['run', 'long', 'Tell a story.'], { width }, async (t) => {
      assert.equal(await t.exited(), 0);
      const lines = (await t.screen()).split('\n').filter((l) => l !== '');
      assert.ok(lines.length >= 2, lines.join('\n'));
      // Joined lines are what the program printed: wrapped ones would be longer than the width.
      for (const l of lines) assert.ok([...l.trimEnd()].length <= width, `"${l}" is wider than ${width}`);
      assert.equal(words(lines.join(' ')), words(api.response));
    });
    await withTerminal(['run', 'long', 'Tell a story.', '--nowordwrap'], { width }, async (t) => {
      assert.equal(await t.exited(), 0);
      const lines = (await t.screen()).split('\n').filter((l) => l !== '');
      assert.ok(lines.some((l) => [...l].length > width), `not wrapped: ${lines.join('\n')}`);
      assert.equal(words(lines.join(' ')), words(api.response));
    });
  });

  test('thinking when stdout is not a terminal: plain, between markers; --hidethinking leaves the answer', async () => {
    // (The first request loads the think model, which takes a while.)
    const body = { model: 'think', prompt: 'Is it raining?', think: true, format: 'json' };
    const api = await h.srv.client.generate(body);
    assert.ok(api.thinking.length > 0, JSON.stringify(api));
    const args = ['run', 'think', 'Is it raining?', '--format', 'json'];
    const shown = await runCli([...args, '--think'], { env: h.srv.env });
    assert.equal(shown.code, 0, shown.stderr);
    assert.ok(shown.stdout.startsWith(`Thinking...\n${api.thinking}`), JSON.stringify(shown.stdout));
    assert.match(shown.stdout, /\n\.\.\.done thinking\.\n\n/);
    assert.doesNotMatch(shown.stdout, /\x1b/, 'no escape codes into a pipe');
    const hidden = await runCli([...args, '--think=true', '--hidethinking'], { env: h.srv.env });
    assert.equal(hidden.code, 0, hidden.stderr);
    assert.equal(hidden.stdout, api.response ? `${api.response}\n` : '');
    const bad = await runCli([...args, '--think=maybe'], { env: h.srv.env });
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr, 'Error: invalid value for --think: "maybe" (true, false, low, medium or high)\n');
  });

  test('thinking is dimmed on a terminal, and hidden with --hidethinking', async () => {
    const args = ['run', 'think', 'Is it raining?', '--think', '--format', 'json'];
    await withTerminal(args, {}, async (t) => {
      assert.equal(await t.exited(), 0);
      const screen = await t.screen({ escapes: true });
      // tmux writes the dim attribute as SGR 2 before the thinking text.
      assert.match(screen, /\x1b\[2m[^\n]*Thinking\.\.\./, JSON.stringify(screen));
    });
    await withTerminal([...args, '--hidethinking'], {}, async (t) => {
      assert.equal(await t.exited(), 0);
      assert.doesNotMatch(await t.screen(), /Thinking/);
    });
  });

  test('progress bars: create uploads the model and its draft, pull downloads layers', async () => {
    const mf = path.join(scratch, 'Modelfile.bar');
    await fsp.writeFile(mf, `FROM ${fixture('pair-target.gguf')}\nDRAFT ${fixture('pair-draft.gguf')}\n`);
    await withTerminal(['create', 'bar', '-f', mf, '-q', 'q8_0', '--draft-quantize', 'q8_0'], {}, async (t) => {
      assert.equal(await t.exited({ timeoutMs: 60_000 }), 0, await t.screen());
      const screen = await t.screen();
      assert.match(screen, /^gathering model components$/m);
      // One bar per uploaded file, each drawn in place to its end.
      const bars = screen.match(/^copying file sha256:[0-9a-f]{12}: 100% ▕█{25}▏ 17 MB$/gm) ?? [];
      assert.equal(bars.length, 2, screen);
      assert.notEqual(bars[0], bars[1]);
      assert.equal((screen.match(/^quantizing F32 model to Q8_0$/gm) ?? []).length, 2, screen);
      assert.equal((screen.match(/^success$/gm) ?? []).length, 1, screen);
    });

    const gguf = fs.readFileSync(fixture('tiny-spm.gguf'));
    addModel('ns/spm', 'v1', gguf, { num_predict: 3 });
    const name = `${reg.host}/ns/spm:v1`;
    await withTerminal(['pull', name], {}, async (t) => {
      assert.equal(await t.exited({ timeoutMs: 60_000 }), 0, await t.screen());
      const screen = await t.screen();
      assert.match(screen, /^pulling manifest$/m);
      assert.match(screen, new RegExp(`^pulling ${sha256(gguf).slice(7, 19)}: 100% ▕█{25}▏ 17 MB$`, 'm'));
      assert.match(screen, /^success$/m);
    });
  });

  test('push: the progress bar of a push through the server to a registry, and its error line as it is', async () => {
    const name = `${reg.host}/ns/pushed:v1`;
    const copied = await runCli(['cp', 'tiny', name], { env: h.srv.env });
    assert.equal(copied.code, 0, copied.stderr);
    const stored = fs.readFileSync(path.join(h.srv.modelsDir, 'manifests', reg.host, 'ns', 'pushed', 'v1'), 'utf8');
    const gguf = JSON.parse(stored).layers[0];
    await withTerminal(['push', name], {}, async (t) => {
      assert.equal(await t.exited({ timeoutMs: 60_000 }), 0, await t.screen());
      const screen = await t.screen();
      assert.match(screen, new RegExp(`^retrieving manifest\npushing ${gguf.digest.slice(7, 19)}: 100% ▕█{25}▏ 17 MB$`, 'm'));
      assert.match(screen, /^pushing manifest\nsuccess$/m);
    });
    assert.equal(reg.manifest('ns/pushed', 'v1'), stored);
    assert.ok(reg.uploads.some((u) => u.digest === gguf.digest && u.complete));

    // The registry's refusal, as the server words it, on one line.
    reg.refusePushes({ status: 403, code: 'DENIED', message: 'requested access to the resource is denied' });
    try {
      const denied = await runCli(['push', name], { env: h.srv.env });
      assert.equal(denied.code, 1);
      assert.match(denied.stderr, /^retrieving manifest\n(.*\n)*Error: the registry at http:\/\/127\.0\.0\.1:\d+ refused the manifest \(PUT \/v2\/ns\/pushed\/manifests\/v1\): HTTP 403: requested access to the resource is denied \(specd does not authenticate to registries\)\n$/);
    } finally {
      reg.refusePushes(null);
    }
  });

  test('run pulls a missing model first, then answers', async () => {
    const gguf = fs.readFileSync(fixture('tiny.gguf'));
    addModel('ns/fresh', 'v1', gguf, { num_predict: 5, temperature: 0 });
    const name = `${reg.host}/ns/fresh:v1`;
    const r = await runCli(['run', name, 'hello'], { env: h.srv.env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^pulling manifest$/m);
    assert.match(r.stderr, /^success$/m);
    const api = await h.srv.client.generate({ model: name, prompt: 'hello' });
    assert.equal(api.eval_count, 5);
    assert.equal(r.stdout, `${api.response}\n`);

    // Nothing to pull: the registry's answer is the one error line.
    const missing = await runCli(['run', `${reg.host}/ns/nope:v1`, 'hello'], { env: h.srv.env });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^Error: .*not found/m);
    assert.equal(missing.stderr.trim().split('\n').filter((l) => l.startsWith('Error')).length, 1, missing.stderr);
  });
});
