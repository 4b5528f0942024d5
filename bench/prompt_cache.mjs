// The prompt-cache benchmark (`scripts/bench.sh cache`): time to first token with a long
// shared prefix, cold against restored, side by side for specd with the cache on, specd with
// it off, and llama-server (its host-memory prompt cache, on by default) from the same pinned
// tree; then a multi-turn chat of two interleaved users on specd, cache on and off.
//
// Time to first token is the wall time of a num_predict 1 request (prefill + one token).
// "restored" is the same prefix with a new question after an unrelated prompt has replaced
// the live KV, so the prefix must come back from the cache (specd: the trie; llama-server:
// its prompt cache) or be evaluated again.
//
//   node bench/prompt_cache.mjs --specd BIN --llama-server BIN --models DIR --out DIR
//        [--prefix-tokens 2000] [--runs 3] [--threads 2] [--pair medium]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { option as opt } from './options.mjs';
import { shortenPaths } from './report.mjs';
import { startLlamaServer, startSpecd } from './servers.mjs';
import { median } from './stats.mjs';

const specdBin = opt('specd');
const llamaBin = opt('llama-server');
const modelsDir = opt('models');
const outDir = opt('out', 'bench/results');
const prefixTokens = Number(opt('prefix-tokens', 2000));
const runs = Number(opt('runs', 3));
const threads = Number(opt('threads', os.cpus().length));
const pair = opt('pair', 'medium');
const numCtx = 4096;
const target = path.join(modelsDir, `${pair}-target.gguf`);
const draft = path.join(modelsDir, `${pair}-draft.gguf`);

const WORDS = ('time year people way day man thing woman life child world school state family student group ' +
  'country problem hand part place case week company system program question work government number night ' +
  'point home water room mother area money story fact month lot right study book eye job word business issue').split(' ');
// About `n` tokens of text, different for every seed (nothing shared between seeds).
function text(seed, n) {
  const out = [`Document ${seed}.`];
  let x = seed * 2654435761 % 4294967296;
  for (let i = 0; i < n; ++i) { // about one token per word (phi-3 vocabulary)
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(WORDS[x % WORDS.length]);
  }
  return out.join(' ');
}

// One num_predict 1 request: wall seconds and the prompt tokens the server evaluated.
async function first(server, prompt) {
  const t0 = performance.now();
  if (server.kind === 'specd') {
    const body = { model: server.name, prompt, raw: true, stream: false, options: { temperature: 0, num_predict: 1 } };
    const r = await fetch(`${server.url}/api/generate`, { method: 'POST', body: JSON.stringify(body) });
    const j = await r.json();
    if (!r.ok) throw new Error(`specd: ${j.error}`);
    return { s: (performance.now() - t0) / 1000, evaluated: j.prompt_eval_count };
  }
  const body = { prompt, n_predict: 1, temperature: 0, cache_prompt: true };
  const r = await fetch(`${server.url}/completion`, { method: 'POST', body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok && r.status !== 500) throw new Error(`llama-server: ${JSON.stringify(j).slice(0, 200)}`);
  return { s: (performance.now() - t0) / 1000, evaluated: j?.timings?.prompt_n ?? null };
}

async function memory(server) {
  if (server.kind !== 'specd') return null;
  return (await fetch(`${server.url}/api/debug/memory`)).json();
}

async function ttftCell(server, label) {
  const cold = [];
  const restored = [];
  const live = [];
  for (let run = 0; run < runs; ++run) {
    const prefix = text(1000 + run, prefixTokens);
    const c = await first(server, `${prefix}\nQuestion: what is the first word?`);
    // The same prefix at once: the live KV serves it.
    const l = await first(server, `${prefix}\nQuestion: what is the second word?`);
    // An unrelated prompt replaces the live KV; then the prefix again.
    await first(server, text(5000 + run, 300));
    const h = await first(server, `${prefix}\nQuestion: what is the last word?`);
    cold.push(c);
    live.push(l);
    restored.push(h);
  }
  const mem = await memory(server);
  const row = {
    server: label,
    prompt_tokens: cold[0].evaluated,
    cold_s: median(cold.map((x) => x.s)),
    live_s: median(live.map((x) => x.s)),
    restored_s: median(restored.map((x) => x.s)),
    restored_evaluated: median(restored.map((x) => x.evaluated ?? NaN)),
    bytes_per_token: mem && mem.prompt_cache.tokens > 0 ? mem.prompt_cache.bytes / mem.prompt_cache.tokens : null,
  };
  row.speedup = row.cold_s / row.restored_s;
  return row;
}

// Two users, `turns` turns each, interleaved: every turn's history was displaced by the other
// user's turn, so only the cache can serve it.
async function chatCell(server, label, turns = 4) {
  const before = await memory(server);
  const users = [0, 1].map((u) => [{ role: 'system', content: text(7000 + u, 400) }]);
  const times = [];
  for (let t = 0; t < turns; ++t) {
    for (const history of users) {
      history.push({ role: 'user', content: `Turn ${t}: ${text(8000 + t * 2 + users.indexOf(history), 40)}` });
      const t0 = performance.now();
      const body = { model: server.name, messages: history, stream: false, options: { temperature: 0, num_predict: 16 } };
      const r = await fetch(`${server.url}/api/chat`, { method: 'POST', body: JSON.stringify(body) });
      const j = await r.json();
      if (!r.ok) throw new Error(`specd: ${j.error}`);
      times.push({ s: (performance.now() - t0) / 1000, evaluated: j.prompt_eval_count, turn: t });
      history.push({ role: 'assistant', content: j.message.content });
    }
  }
  const after = await memory(server);
  const hits = after.prompt_cache.hits - before.prompt_cache.hits;
  const misses = after.prompt_cache.misses - before.prompt_cache.misses;
  const later = times.filter((x) => x.turn > 0);
  return {
    server: label,
    requests: times.length,
    hits,
    misses,
    hit_rate: hits + misses > 0 ? hits / (hits + misses) : 0,
    mean_evaluated_after_first_turn: later.reduce((a, x) => a + x.evaluated, 0) / later.length,
    mean_s_after_first_turn: later.reduce((a, x) => a + x.s, 0) / later.length,
  };
}

const store = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-bench-cache-'));
const rows = [];
const chats = [];
const commands = []; // [label, the exact command line]
try {
  for (const [label, env] of [['specd, cache on', {}], ['specd, cache off', { SPECD_PROMPT_CACHE: '0' }]]) {
    const srv = await startSpecd({ bin: specdBin, modelsDir: path.join(store, label.replace(/\W+/g, '-')),
      name: 'bench', target, draft, numCtx, env });
    commands.push([label, srv.commandLine + (srv.threads ? `  -> threads ${JSON.stringify(srv.threads)}` : '')]);
    try {
      await first(srv, 'warm up');
      rows.push(await ttftCell(srv, label));
      chats.push(await chatCell(srv, label));
    } finally {
      await srv.stop();
    }
  }
  if (llamaBin) {
    // As its users start it: its host-memory prompt cache is on by default (--cache-ram
    // 8192 MiB in this tree), so no flag is needed.
    const label = 'llama-server (default prompt cache)';
    const srv = await startLlamaServer({ bin: llamaBin, target, draft, draftNMax: 0, threads, numCtx });
    commands.push([label, srv.commandLine]);
    try {
      await first(srv, 'warm up');
      rows.push(await ttftCell(srv, label));
    } finally {
      await srv.stop();
    }
  }
} finally {
  fs.rmSync(store, { recursive: true, force: true });
}

const f = (x, d = 3) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));
const lines = [];
lines.push(`# Prompt cache: time to first token with a ${prefixTokens}-token shared prefix`, '');
lines.push(`Models: \`${pair}\` pair from bench/speculation.json's shape; num_ctx ${numCtx}; median of ${runs} runs. ` +
  `Machine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}. Date: ${new Date().toISOString().slice(0, 10)}.`);
lines.push('Reproduce: `scripts/bench.sh cache`.', '', 'Engines, exactly as started (model paths shortened to their file names):', '');
for (const [label, line] of commands) lines.push(`- ${label}: \`${shortenPaths(line)}\``);
lines.push('');
lines.push('| server | prompt tokens | cold (s) | live KV (s) | restored (s) | tokens evaluated when restored | cold / restored | cache bytes per token |');
lines.push('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  lines.push(`| ${r.server} | ${r.prompt_tokens ?? '-'} | ${f(r.cold_s)} | ${f(r.live_s)} | ${f(r.restored_s)} | ${r.restored_evaluated ?? '-'} | ` +
    `${f(r.speedup, 1)}x | ${r.bytes_per_token === null ? '-' : Math.round(r.bytes_per_token)} |`);
}
const on = rows.find((r) => r.server === 'specd, cache on');
const ls = rows.find((r) => r.server.startsWith('llama-server'));
if (on && ls) {
  lines.push('', `specd restored vs llama-server restored: ${f(ls.restored_s / on.restored_s, 2)}x faster.`);
  lines.push('', 'llama-server runs with its default slots (auto: 4): the unrelated prompt may take another slot and ' +
    'leave the prefix live in its own, so its "restored" can be a live-slot hit rather than its prompt cache; ' +
    'from outside the two look alike (3 tokens evaluated). specd\'s "restored" comes from its cache whenever ' +
    'the live KV was replaced.');
}
lines.push('', '## Multi-turn chat: two users interleaved, 4 turns each', '');
lines.push('| server | requests | hits | misses | hit rate | mean tokens evaluated (turns 2-4) | mean request s (turns 2-4) |');
lines.push('|---|---|---|---|---|---|---|');
for (const c of chats) {
  lines.push(`| ${c.server} | ${c.requests} | ${c.hits} | ${c.misses} | ${f(c.hit_rate * 100, 0)}% | ${f(c.mean_evaluated_after_first_turn, 0)} | ${f(c.mean_s_after_first_turn)} |`);
}
const md = lines.join('\n') + '\n';
console.log(md);
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'prompt-cache.md'), md);
fs.writeFileSync(path.join(outDir, 'prompt-cache.json'), JSON.stringify({ rows, chats }, null, 2));
