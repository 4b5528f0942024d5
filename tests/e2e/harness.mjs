// Shared harness for the end-to-end tests: starts the real `specd serve` binary on a free
// loopback port with a private models directory, creates models with the CLI, and makes sure
// no server outlives its test file.
//
// Environment (set by ctest, see tests/CMakeLists.txt):
//   SPECD_BIN       path to the specd binary
//   SPECD_FIXTURES  directory with the generated tiny models (tiny.gguf, tiny-spm.gguf, ...)

import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test as nodeTest } from 'node:test';
import { Ollama } from 'ollama';

export const SPECD_BIN = process.env.SPECD_BIN;
export const FIXTURES = process.env.SPECD_FIXTURES;

if (!SPECD_BIN || !FIXTURES) {
  throw new Error('SPECD_BIN and SPECD_FIXTURES must be set (ctest sets them; see tests/CMakeLists.txt)');
}
for (const p of [SPECD_BIN, path.join(FIXTURES, 'tiny.gguf')]) {
  if (!fs.existsSync(p)) throw new Error(`missing ${p}: build specd and the fixtures first`);
}

export function fixture(name) {
  return path.resolve(FIXTURES, name);
}

/** Every server started by this process that has not exited yet. */
const live = new Set();
/** Every server started by this process and not stopped by stop() (crashed ones included). */
const watched = new Set();

// Last resort: a test runner that exits without running `after` hooks must not leave a
// server behind.
process.on('exit', () => {
  for (const s of live) {
    try {
      s.child.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
});

/** Binds port 0 on the loopback interface, reads the port the kernel picked, releases it. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Runs the specd CLI; never rejects: resolves {code, stdout, stderr}. */
export function runCli(args, { env = {}, timeoutMs = 60_000, input } = {}) {
  return new Promise((resolve) => {
    const child = execFile(
      SPECD_BIN,
      args,
      { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : err.signal ? -1 : 1) : 0;
        resolve({ code, stdout, stderr, signal: err?.signal ?? null });
      },
    );
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

/**
 * Writes a Modelfile (FROM <abs fixture path> plus the given extra lines) and runs
 * `specd create NAME -f Modelfile` with SPECD_MODELS=modelsDir. Throws if the CLI fails.
 */
export async function createModel(modelsDir, name, { from = 'tiny.gguf', lines = [], env = {} } = {}) {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'specd-e2e-mf-'));
  try {
    const file = path.join(dir, 'Modelfile');
    await fsp.writeFile(file, [`FROM ${fixture(from)}`, ...lines, ''].join('\n'));
    const r = await runCli(['create', name, '-f', file], { env: { SPECD_MODELS: modelsDir, ...env } });
    if (r.code !== 0) {
      throw new Error(`specd create ${name} failed (exit ${r.code}):\n${r.stderr}${r.stdout}`);
    }
    return r;
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `specd serve` for a test file.
 *
 * options:
 *   models: [{name, from?, lines?}]  models to create before the server starts
 *                                    (default: one "tiny" model from tiny.gguf)
 *   env:    extra environment for the server
 *   shell:  a sh command run before the server replaces the shell (resource limits:
 *           'ulimit -f 2048'); the server is then `exec`ed, so its pid and signals are the same
 *   startTimeoutMs: how long to wait for GET /api/version (default 20 s)
 *
 * Returns {url, port, modelsDir, client, env, stderr(), exited, stop()}.
 * stop() sends SIGTERM, waits for the exit (SIGKILL after 10 s) and resolves
 * {code, signal, ms}; it is idempotent.
 */
export async function startServer({ models = [{ name: 'tiny' }], env = {}, shell, startTimeoutMs = 20_000 } = {}) {
  const modelsDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'specd-e2e-models-'));
  for (const m of models) await createModel(modelsDir, m.name, m);

  const port = await freePort();
  const serverEnv = { ...process.env, SPECD_HOST: `127.0.0.1:${port}`, SPECD_MODELS: modelsDir, ...env };
  const [cmd, args] = shell ? ['/bin/sh', ['-c', `${shell}; exec "$0" serve`, SPECD_BIN]] : [SPECD_BIN, ['serve']];
  const child = spawn(cmd, args, { env: serverEnv, stdio: ['ignore', 'pipe', 'pipe'] });

  let log = '';
  const append = (chunk) => {
    log += chunk.toString();
    // Keep the log bounded: the tail is what explains a failure.
    if (log.length > 1 << 20) log = log.slice(-(1 << 19));
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);

  let exitInfo = null;
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      exitInfo = { code, signal };
      live.delete(srv);
      resolve(exitInfo);
    });
  });

  const url = `http://127.0.0.1:${port}`;
  let stopping = null;
  const srv = {
    url,
    port,
    modelsDir,
    child,
    env: { SPECD_HOST: `127.0.0.1:${port}`, SPECD_MODELS: modelsDir },
    client: new Ollama({ host: url }),
    exited,
    stderr: () => log,
    get running() {
      return exitInfo === null;
    },
    stop() {
      if (!stopping) stopping = stopServer(srv);
      return stopping;
    },
  };
  live.add(srv);
  watched.add(srv);

  async function stopServer(s) {
    const t0 = Date.now();
    if (exitInfo === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => {
        if (exitInfo === null) child.kill('SIGKILL');
      }, 10_000);
      await exited;
      clearTimeout(killer);
    }
    await fsp.rm(s.modelsDir, { recursive: true, force: true });
    watched.delete(s);
    return { ...exitInfo, ms: Date.now() - t0 };
  }

  // Wait until the server answers.
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (exitInfo !== null) {
      await srv.stop();
      throw new Error(`specd serve exited early (${JSON.stringify(exitInfo)}):\n${log}`);
    }
    try {
      const r = await fetch(`${url}/api/version`, { signal: AbortSignal.timeout(1000) });
      if (r.ok) {
        await r.json();
        break;
      }
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) {
      await srv.stop();
      throw new Error(`specd serve did not answer GET /api/version within ${startTimeoutMs} ms:\n${log}`);
    }
    await sleep(50);
  }
  return srv;
}

/**
 * Starts one server for the whole test file (before) and stops it afterwards (after).
 * Returns a holder whose `.srv` is the running server once the tests run.
 */
export function useServer(options) {
  const h = { srv: null };
  before(async () => {
    h.srv = await startServer(options);
  });
  after(async () => {
    if (!h.srv) return;
    const crashed = !h.srv.running;
    const r = await h.srv.stop();
    // A clean SIGTERM shutdown exits 0; anything else (a crash mid-file) fails the file.
    if (crashed || r.code !== 0 || r.signal) {
      throw new Error(`specd serve ${crashed ? 'died during the tests' : 'did not exit cleanly'} ` +
        `(code ${r.code}, signal ${r.signal}):\n${h.srv.stderr().split('\n').slice(-80).join('\n')}`);
    }
  });
  return h;
}

function printLogs(name, err) {
  for (const s of watched) {
    const tail = s.stderr().split('\n').slice(-80).join('\n');
    const state = s.running ? 'running' : `exited ${JSON.stringify(s.child.exitCode ?? s.child.signalCode)}`;
    process.stderr.write(`\n--- test "${name}" failed: ${err?.message ?? err}\n` +
      `--- specd serve (${s.url}, ${state}) output, last lines:\n${tail}\n--- end of server output\n`);
  }
}

/**
 * node:test's `test`, printing the output of every running server when the test fails.
 * Same signature: test(name, [options], fn).
 */
export function test(name, optionsOrFn, maybeFn) {
  const fn = typeof optionsOrFn === 'function' ? optionsOrFn : maybeFn;
  const options = typeof optionsOrFn === 'function' ? {} : optionsOrFn;
  return nodeTest(name, options, async (t) => {
    try {
      return await fn(t);
    } catch (err) {
      printLogs(name, err);
      throw err;
    }
  });
}

/** POSTs a JSON (or raw string/bytes) body and returns {status, headers, body (parsed or null), text}. */
export async function postRaw(url, body, { method = 'POST', headers = {}, timeoutMs = 60_000 } = {}) {
  const payload = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
  const r = await fetch(url, {
    method,
    body: payload,
    headers: { 'Content-Type': 'application/json', ...headers },
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await r.text();
  let parsed = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: r.status, headers: r.headers, body: parsed, text };
}

/** Reads an NDJSON streaming response into an array of parsed lines. */
export async function readNdjson(response) {
  const text = await response.text();
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
}

/** Concatenates the parts of a streamed generate (response) or chat (message.content). */
export async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  const text = parts.map((p) => p.response ?? p.message?.content ?? '').join('');
  return { parts, text, final: parts[parts.length - 1] };
}

export { sleep };
