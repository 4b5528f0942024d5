// Starting and stopping the servers a benchmark compares, and one timed request to each.
// Loopback only; every process is stopped when its cell group ends (or this process exits).
import { spawn, execFileSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

const live = new Set();
process.on('exit', () => { for (const c of live) c.kill('SIGKILL'); });

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function waitReady(url, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}) before it was ready`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`server not ready at ${url} after ${timeoutMs} ms`);
}

async function start(cmd, args, env, readyPath, port) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => { log = (log + d).slice(-4000); });
  live.add(child);
  const url = `http://127.0.0.1:${port}`;
  const envText = Object.entries(env).map(([k, v]) => `${k}=${v} `).join('');
  try {
    await waitReady(url + readyPath, child, 120_000);
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${e.message}\n${log}`);
  }
  return {
    url,
    pid: child.pid,
    // What was run, for the report: every engine's exact command line.
    commandLine: `${envText}${cmd} ${args.join(' ')}`,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      live.delete(child);
    },
  };
}

const created = new Set(); // models created in this process: binary, store, name, Modelfile

// specd with a private store holding `name` = target + draft. Its thread counts are its own
// choice (measured at load) unless `threads` sets num_thread.
// A bench pair's model files in `modelsDir` as bench/make-models.sh names them. A pair with an
// MTP layer of its own (`"mtp": true`) has no draft file: the model drafts with its layer.
export function pairModels(modelsDir, name, pair) {
  return { target: path.resolve(modelsDir, `${name}-target.gguf`),
           draft: pair?.mtp ? undefined : path.resolve(modelsDir, `${name}-draft.gguf`) };
}

export async function startSpecd({ bin, modelsDir, name, target, draft, threads, numCtx, mmproj, env: extraEnv = {} }) {
  const port = await freePort();
  const env = { SPECD_MODELS: modelsDir, SPECD_HOST: `127.0.0.1:${port}`, ...extraEnv };
  const fs = await import('node:fs');
  const path = await import('node:path');
  const modelfile = path.join(modelsDir, `${name}.Modelfile`);
  fs.mkdirSync(modelsDir, { recursive: true });
  // No draft: the model drafts with its own MTP layer.
  const text = `FROM ${target}\n${mmproj ? `FROM ${mmproj}\n` : ''}${draft ? `DRAFT ${draft}\n` : ''}` +
    `${threads ? `PARAMETER num_thread ${threads}\n` : ''}PARAMETER num_ctx ${numCtx}\n`;
  // A server started again for its next turn (bench/turns.mjs) serves the model it created
  // before: creating it again would hash every weight file on each start.
  const key = `${bin}\n${modelsDir}\n${name}\n${text}`;
  if (!created.has(key)) {
    fs.writeFileSync(modelfile, text);
    execFileSync(bin, ['create', name, '-f', modelfile], { env: { ...process.env, SPECD_MODELS: modelsDir, SPECD_HOST: '127.0.0.1:1' }, stdio: 'ignore' });
    created.add(key);
  }
  const server = await start(bin, ['serve'], env, '/api/version', port);
  const t0 = performance.now();
  const threadsUsed = await loadedThreads(server.url, name);
  return { ...server, kind: 'specd', name, threads: threadsUsed, loadSeconds: (performance.now() - t0) / 1000,
           commandLine: `${server.commandLine}  (Modelfile: ${text.trim().replaceAll('\n', '; ')})` };
}

// Loads the model (an empty request; its wall time is the server's loadSeconds) and reads the
// thread counts specd chose for it.
async function loadedThreads(url, name) {
  await fetch(`${url}/api/generate`, { method: 'POST', body: JSON.stringify({ model: name }) });
  const ps = await (await fetch(`${url}/api/ps`)).json();
  return ps.models?.find((m) => m.name.startsWith(name))?.threads ?? null;
}

// How scripts/llama.sh built the llama-server at `bin`, for a report: its build key names
// the one option it changes from upstream's (AMX off where the compiler is GCC before 13).
export function llamaServerOptions(bin) {
  return /-server-upstream-noamx\//.test(bin ?? '')
    ? "upstream's default options except AMX, which scripts/llama.sh leaves out under GCC before 13 (its AMX kernels fault there)"
    : "upstream's default options";
}

export async function startLlamaServer({ bin, target, draft, draftNMax, draftNMin, specType = 'draft-simple', threads, numCtx,
  parallel, mmproj, extraArgs = [] }) {
  const port = await freePort();
  // As its users start it: the same thread count as specd's machine, the draft's threads left
  // at their default (the target's), its slots at their default (auto: 4 sharing one KV of -c
  // cells, as specd's sequences share num_ctx x N) unless a run sets them, the web UI off (a
  // benchmark does not need it).
  const args = ['-m', target, '--host', '127.0.0.1', '--port', String(port), '-t', String(threads),
    '-c', String(numCtx), ...(parallel ? ['-np', String(parallel)] : []), ...(mmproj ? ['--mmproj', mmproj] : []),
    '--no-webui', '--metrics', ...extraArgs];
  // Drafting is off unless a type is named.
  if (draftNMax > 0) {
    // `specType`: draft-simple for a draft model, draft-mtp for a head (gemma4's assistant) or
    // a model's own MTP layer (no draft file), draft-eagle3 or draft-dflash for those heads.
    args.push(...(draft ? ['-md', draft] : []), '--spec-type', specType, '--spec-draft-n-max', String(draftNMax));
    // n-min = n-max fixes the depth: a shorter draft is dropped instead of verified.
    if (draftNMin > 0) args.push('--spec-draft-n-min', String(draftNMin));
  }
  const server = await start(bin, args, {}, '/health', port);
  return { ...server, kind: 'llama-server' };
}

// Makes a specd server's next prompts evaluate in full. With its prompt cache off, specd still
// keeps each sequence's KV for the next prompt that shares its prefix, as Ollama does; a wave
// that repeats the prompts of the wave before it (spec-on, then spec-off, on the same text)
// would evaluate only their last token while the first evaluated them all: on the 4-stream
// bench that gave the second arm about 2% (60 prompt tokens of a 5 s wave), and llama-server's
// requests there do not reuse (cache_prompt false). `sequences` requests at once, of one token
// each and no drafts, take every sequence (the least recently used first) and leave it holding
// text that no benchmark prompt starts with.
export async function flushSequences(server, sequences) {
  await Promise.all(Array.from({ length: sequences }, (_, i) => fetch(`${server.url}/api/generate`, {
    method: 'POST',
    body: JSON.stringify({ model: server.name, prompt: `${i} flush`, raw: true, stream: false,
                           options: { num_predict: 1, temperature: 0, draft_num_predict: 0 } }),
  }).then(async (r) => { if (!r.ok) throw new Error(`specd flush: ${(await r.json()).error}`); })));
}

// The concurrency benchmarks' raw prompts (bench/concurrency.mjs, bench/waves.mjs): one per
// stream `i` and run, so that a probe reads the same text as the report it explains.
export const streamPrompt = (i, run) =>
  `Stream ${i}, run ${run}: the story of a ${['river', 'city', 'robot', 'garden'][i % 4]} begins`;

// One generation; returns decode tokens/s as the server measured it, wall seconds, the text
// (null when the server could not send it), done_reason ("stop" | "length") and the draft
// counters. `schema`, when set, constrains the answer: specd's `format`, llama-server's
// `json_schema`; an answer then ends when its JSON is complete, so it may be shorter than
// numPredict.
export async function generate(server, { prompt, numPredict, draft, schema, images, options: extra = {} }) {
  const t0 = performance.now();
  if (server.kind === 'specd') {
    const options = { temperature: 0, num_predict: numPredict, seed: 1, ...extra };
    if (!draft) options.draft_num_predict = 0;
    const body = { model: server.name, prompt, raw: true, stream: false, options };
    if (schema) body.format = schema;
    if (images) body.images = images;
    const r = await fetch(`${server.url}/api/generate`, { method: 'POST', body: JSON.stringify(body) });
    const j = await r.json();
    if (!r.ok) throw new Error(`specd: ${j.error}`);
    return { tokens: j.eval_count, tps: j.eval_count / (j.eval_duration / 1e9), wall: (performance.now() - t0) / 1000,
             text: j.response, done_reason: j.done_reason, ...specdCounters(j.speculation),
             prompt_tokens: j.prompt_eval_count, prompt_tps: j.prompt_eval_count / (j.prompt_eval_duration / 1e9),
             vision: j.vision ?? null };
  }
  // Decode speed from llama-server's own counters: its /completion answer can be a 500
  // ("does not match the expected Content-only format") when random-weight output is not
  // valid UTF-8, although the generation itself ran to the end.
  const before = await llamaMetrics(server);
  // Images as specd places them in a raw prompt: one media marker and a newline each, then
  // the text. The server draws its marker at random when it starts (/props names it).
  if (images && server.mediaMarker === undefined) {
    server.mediaMarker = (await (await fetch(`${server.url}/props`)).json()).media_marker;
  }
  const body = { prompt: images ? { prompt_string: `${server.mediaMarker}\n`.repeat(images.length) + prompt,
                                    multimodal_data: images }
                                : prompt,
                 n_predict: numPredict, temperature: 0, seed: 1, top_k: 1 };
  if (schema) body.json_schema = schema;
  const r = await fetch(`${server.url}/completion`, { method: 'POST', body: JSON.stringify(body) });
  const j = await r.json();
  const parseFailure = r.status === 500 && /does not match the expected/.test(j?.error?.message ?? '');
  if (!r.ok && !parseFailure) throw new Error(`llama-server: ${JSON.stringify(j).slice(0, 300)}`);
  const after = await llamaMetrics(server);
  const tokens = after.tokens_predicted_total - before.tokens_predicted_total;
  const seconds = after.tokens_predicted_seconds_total - before.tokens_predicted_seconds_total;
  if (schema ? tokens < 1 || tokens > numPredict : tokens !== numPredict) {
    throw new Error(`llama-server generated ${tokens} tokens, expected ${schema ? 'at most ' : ''}${numPredict}`);
  }
  const doneReason = j.stop_type ? (j.stop_type === 'limit' ? 'length' : 'stop') : (tokens >= numPredict ? 'length' : 'stop');
  return { tokens, tps: tokens / seconds, wall: (performance.now() - t0) / 1000, text: parseFailure ? null : j.content ?? null,
           done_reason: doneReason, prompt_tokens: j.timings?.prompt_n, prompt_tps: j.timings?.prompt_per_second,
           accepted: after.spec_decode_num_accepted_tokens_total - before.spec_decode_num_accepted_tokens_total,
           drafted: after.spec_decode_num_draft_tokens_total - before.spec_decode_num_draft_tokens_total,
           forced: null, forced_accepted: null, grammar_truncated: null, grammar_truncated_rounds: null, grammar_no_legal_draft: null };
}

// specd's `speculation` object, read defensively: a counter this build does not report is
// null. `forced`: draft tokens proposed from grammar-forced text, `forced_accepted`: those the
// target kept. `grammar_truncated` was once an object {rounds, tokens}; now it is the token count
// with `grammar_truncated_rounds` beside it.
function specdCounters(s) {
  const num = (v) => (typeof v === 'number' ? v : null);
  const gt = s?.grammar_truncated;
  const gtObject = gt !== null && typeof gt === 'object';
  return {
    drafted: num(s?.drafted) ?? 0,
    accepted: num(s?.accepted) ?? 0,
    forced: num(s?.forced),
    forced_accepted: num(s?.forced_accepted),
    grammar_truncated: gtObject ? num(gt.tokens) : num(gt),
    grammar_truncated_rounds: num(s?.grammar_truncated_rounds) ?? (gtObject ? num(gt.rounds) : null),
    grammar_no_legal_draft: num(s?.grammar_no_legal_draft),
    mean_k: num(s?.mean_k), // the mean depth of the request's rounds
  };
}
async function llamaMetrics(server) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const out = {};
  for (const m of text.matchAll(/^llamacpp:(\w+) (\S+)$/gm)) out[m[1]] = Number(m[2]);
  for (const k of ['tokens_predicted_total', 'tokens_predicted_seconds_total',
                   'spec_decode_num_accepted_tokens_total', 'spec_decode_num_draft_tokens_total']) out[k] ??= 0;
  return out;
}

// The server's resident memory in MiB (specd's /api/debug/memory), null for other servers.
export async function residentMiB(server) {
  if (server.kind !== 'specd') { // llama-server: its process's resident set
    const fs = await import('node:fs');
    const kb = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${server.pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : null;
  }
  const j = await (await fetch(`${server.url}/api/debug/memory`)).json();
  return j.resident_bytes / (1024 * 1024);
}
