// What running each model in a runner process costs per token (`scripts/bench.sh runners`):
// the same binary with SPECD_RUNNERS=thread and =process, on the bench pairs, answers streamed
// and not, speculation on and off. Decode tokens/s between two server starts differs by more
// than the boundary costs on a small machine (bench/results/allocator.md), so the measure is
// CPU time: per thread of the server process (and of the runner process), from /proc's
// schedstat, over the answers of one visit, per generated token.
//
// In thread mode the threads that decode take milliseconds per token; every other thread of
// the server (HTTP, the request's handler) takes what serving costs without the boundary.
// In process mode the server holds no decode at all: all its CPU is serving plus the
// boundary (reading the runner's messages, mirroring its state). The boundary's cost per token
// is the difference, shown as a share of the decode time per token (1 / decode tokens/s):
// on a machine whose cores all decode, every millisecond the server runs delays the decode.
//
//   node bench/runner_cost.mjs --specd BIN --models DIR [--pairs medium,cheap] [--runs 3]
//        [--num-predict 256] [--requests 2] [--out DIR]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { option as opt } from './options.mjs';
import { shortenPaths as shorten, specdCommit } from './report.mjs';
import { startSpecd } from './servers.mjs';
import { median, range } from './stats.mjs';

const specdBin = opt('specd');
const modelsDir = opt('models');
const outDir = opt('out', 'bench/results');
const pairs = opt('pairs', 'medium,cheap').split(',');
const runs = Number(opt('runs', 3));
const numPredict = Number(opt('num-predict', 256));
const requests = Number(opt('requests', 2));
const threads = os.cpus().length;
const modes = ['thread', 'process'];
const kinds = [
  { name: 'not streamed, spec-off', stream: false, spec: false },
  { name: 'not streamed, spec-on', stream: false, spec: true },
  { name: 'streamed, spec-off', stream: true, spec: false },
  { name: 'streamed, spec-on', stream: true, spec: true },
];

// CPU milliseconds of every thread of `pid` (schedstat's first field: nanoseconds on the CPU).
function threadCpu(pid) {
  const out = new Map();
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(t, Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]) / 1e6);
    } catch { /* the thread ended */ }
  }
  return out;
}
const delta = (a, b) => [...b].map(([t, ms]) => ms - (a.get(t) ?? 0)).filter((ms) => ms > 0);
const childPids = (pid) => {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
};

async function answer(server, kind, text) {
  const options = { temperature: 0, num_predict: numPredict, seed: 1 };
  if (!kind.spec) options.draft_num_predict = 0;
  const r = await fetch(`${server.url}/api/generate`, {
    method: 'POST', body: JSON.stringify({ model: server.name, prompt: text, raw: true, stream: kind.stream, options }) });
  const body = await r.text();
  if (!r.ok) throw new Error(`specd: ${body.slice(0, 300)}`);
  const last = JSON.parse(body.trim().split('\n').at(-1));
  return { tokens: last.eval_count, seconds: last.eval_duration / 1e9 };
}

// One visit: a fresh server in `mode`, every kind of answer, CPU per token by thread.
async function visit(pair, mode, run, store) {
  const server = await startSpecd({ bin: specdBin, modelsDir: path.join(store, `${pair}-${mode}`), name: 'pair',
    target: path.join(modelsDir, `${pair}-target.gguf`), draft: path.join(modelsDir, `${pair}-draft.gguf`),
    numCtx: 2048, threads, env: { SPECD_RUNNERS: mode } });
  const pid = server.pid;
  const out = {};
  try {
    for (const kind of kinds) {
      await answer(server, kind, `Warm-up ${run}: once upon a time`);
      const runner = mode === 'process' ? childPids(pid)[0] : null;
      const s0 = threadCpu(pid), r0 = runner ? threadCpu(runner) : null;
      let tokens = 0, seconds = 0;
      for (let i = 0; i < requests; ++i) {
        const a = await answer(server, kind, `Run ${run}, answer ${i}: once upon a time`);
        tokens += a.tokens;
        seconds += a.seconds;
      }
      const serverMs = delta(s0, threadCpu(pid));
      // Thread mode: the decode threads are the ones that took over a millisecond per token.
      const serving = mode === 'thread' ? serverMs.filter((ms) => ms / tokens < 1) : serverMs;
      out[kind.name] = {
        tokens, decode_tps: tokens / seconds,
        serving_ms_per_token: serving.reduce((a, b) => a + b, 0) / tokens,
        runner_ms_per_token: runner ? delta(r0, threadCpu(runner)).reduce((a, b) => a + b, 0) / tokens : null,
      };
    }
  } finally {
    await server.stop();
  }
  return { command: server.commandLine, out };
}

async function main() {
  if (!specdBin || !modelsDir) {
    console.error('usage: node bench/runner_cost.mjs --specd BIN --models DIR [--out DIR]');
    process.exit(2);
  }
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-bench-runners-'));
  const results = [];
  const commands = new Set();
  try {
    for (const pair of pairs) {
      const acc = Object.fromEntries(modes.map((m) => [m, Object.fromEntries(kinds.map((k) => [k.name, []]))]));
      for (let run = 0; run < runs; ++run) {
        for (const mode of run % 2 ? [...modes].reverse() : modes) {
          const v = await visit(pair, mode, run, store);
          commands.add(shorten(v.command));
          for (const k of kinds) acc[mode][k.name].push(v.out[k.name]);
        }
        console.error(`${pair}: run ${run + 1}/${runs} done`);
      }
      for (const k of kinds) {
        const t = acc.thread[k.name], p = acc.process[k.name];
        const serveThread = median(t.map((x) => x.serving_ms_per_token));
        const serveProcess = median(p.map((x) => x.serving_ms_per_token));
        const tps = median(p.map((x) => x.decode_tps));
        const extra = serveProcess - serveThread;
        results.push({ pair, kind: k.name, thread_serving_ms: serveThread, process_serving_ms: serveProcess,
          extra_ms: extra, decode_tps_process: tps, decode_tps_thread: median(t.map((x) => x.decode_tps)),
          decode_tps_range: range([...t, ...p].map((x) => x.decode_tps)),
          extra_share: extra / (1000 / tps), runs: { thread: t, process: p } });
        console.log(`${pair} ${k.name.padEnd(24)} serving ms/token thread ${serveThread.toFixed(3)} process ${serveProcess.toFixed(3)}` +
          ` -> boundary ${extra.toFixed(3)} ms = ${(100 * extra / (1000 / tps)).toFixed(2)}% of decode`);
      }
    }
  } finally {
    fs.rmSync(store, { recursive: true, force: true });
  }

  const date = new Date().toISOString().slice(0, 10);
  const machine = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}`;
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'runner-cost.json'), JSON.stringify(
    { config: { pairs, runs, num_predict: numPredict, requests, threads, machine, date }, results }, null, 2) + '\n');
  const md = [
    '# Runner processes: what the boundary costs per token',
    '',
    `\`scripts/bench.sh runners\` (\`node bench/runner_cost.mjs --runs ${runs} --num-predict ${numPredict} --requests ${requests}\`). ` +
      `Machine: ${machine}. Date: ${date}. specd at commit ${specdCommit()}.`,
    '',
    'The same binary with each model on a thread of the server (`SPECD_RUNNERS=thread`) and in a runner process ' +
      '(`SPECD_RUNNERS=process`, the default), on the bench pairs of bench/speculation.json, temperature 0, ' +
      `${requests} answers of ${numPredict} tokens per kind after a warm-up answer, a fresh server per visit, ` +
      `${runs} visits per mode, the order alternating. Decode tokens/s between two server starts differs by more than ` +
      'the boundary costs on this machine, so the measure is CPU time per generated token, per thread, from /proc: ' +
      "in thread mode the server's threads other than the two that decode (HTTP, the request's handler), in process " +
      "mode all of the server's threads (serving plus the boundary: reading the runner's messages, mirroring its state). " +
      'The difference is what the boundary adds; its share is of the decode time per token (1 / decode tokens/s in ' +
      'process mode): with every core decoding, each millisecond the server runs delays the decode by as much. ' +
      "The runner's own sending happens on its decode thread, inside the decode time measured.",
    '',
    'Servers, exactly as started (model paths shortened to their file names):',
    '',
    ...[...commands].map((c) => `- \`${c}\``),
    '',
    '| pair | answers | serving ms/token, thread | serving ms/token, process | boundary ms/token | share of decode | decode tok/s thread / process [range] |',
    '|---|---|---|---|---|---|---|',
    ...results.map((r) => `| ${r.pair} | ${r.kind} | ${r.thread_serving_ms.toFixed(3)} | ${r.process_serving_ms.toFixed(3)} | ` +
      `${r.extra_ms.toFixed(3)} | ${(100 * r.extra_share).toFixed(2)}% | ${r.decode_tps_thread.toFixed(1)} / ${r.decode_tps_process.toFixed(1)} ` +
      `[${r.decode_tps_range[0].toFixed(1)}-${r.decode_tps_range[1].toFixed(1)}] |`),
    '',
    'Medians over the visits. The target of issue 19: below 2% of decode time.',
    '',
  ];
  fs.writeFileSync(path.join(outDir, 'runner-cost.md'), md.join('\n'));
}

await main();
