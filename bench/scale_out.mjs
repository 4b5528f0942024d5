// Past one machine, on one machine (`scripts/bench.sh scale-out`): what the two ways of
// docs/deploy.md cost on loopback.
//   - RPC split: decode tokens/s of the medium bench target with every layer on two RPC
//     workers (`specd worker`), and with half its layers there (num_gpu), against the same
//     model fully local; one server at a time, each after a warm-up.
//   - Replicas: the aggregate tokens/s of 3 concurrent clients (one model each) sent to one
//     server directly, and to three replicas behind HAProxy (deploy/haproxy.cfg, addresses
//     moved to free ports).
// On a 2-core machine neither can gain: workers, replicas and the server share the same
// cores. The numbers say what the network hop and the balancer cost.
//   node bench/scale_out.mjs --specd BIN --models DIR [--runs 5] [--num-predict 128] [--out DIR]
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { option as opt } from './options.mjs';
import { shortenPaths as shorten, specdCommit } from './report.mjs';
import { freePort, generate, startSpecd } from './servers.mjs';
import { median, range } from './stats.mjs';

const specdBin = opt('specd');
const modelsDir = opt('models');
const outDir = opt('out', 'bench/results');
const runs = Number(opt('runs', 5));
const numPredict = Number(opt('num-predict', 128));
const target = path.join(modelsDir, 'medium-target.gguf');
const draft = path.join(modelsDir, 'medium-draft.gguf');
const prompt = 'Write a long story about a lighthouse keeper and the ships she watched over.';
const fmt = (x, d = 1) => x.toFixed(d);
const live = new Set();
process.on('exit', () => { for (const c of live) c.kill('SIGKILL'); });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startWorker() {
  const port = await freePort();
  const args = ['worker', '--port', String(port)];
  const child = spawn(specdBin, args, { stdio: 'ignore' });
  live.add(child);
  await sleep(500);
  return { endpoint: `127.0.0.1:${port}`, commandLine: `${specdBin} ${args.join(' ')}`, stop: () => child.kill('SIGKILL') };
}

async function decodeRuns(server, options) {
  await generate(server, { prompt, numPredict: 16, draft: false, options }); // warm-up (and the load)
  const tps = [];
  for (let i = 0; i < runs; ++i) tps.push((await generate(server, { prompt, numPredict, draft: false, options })).tps);
  return tps;
}

async function rpcPart() {
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-scale-'));
  const rows = [];
  const commands = [];
  const local = await startSpecd({ bin: specdBin, modelsDir: store, name: 'medium', target, draft, numCtx: 2048 });
  commands.push(`local: ${local.commandLine}`);
  const base = await decodeRuns(local, {});
  await local.stop();
  rows.push({ engine: 'local (every layer on the host)', tps: base });
  const workers = [await startWorker(), await startWorker()];
  commands.push(...workers.map((w) => `worker: ${w.commandLine}`));
  const rpc = workers.map((w) => w.endpoint).join(',');
  const split = await startSpecd({ bin: specdBin, modelsDir: store, name: 'medium', target, draft, numCtx: 2048,
                                   env: { SPECD_RPC: rpc, SPECD_TENSOR_SPLIT: '1,1' } });
  commands.push(`split: ${split.commandLine}`);
  // An even split: the model fits one worker, where the fit alone would put all of it.
  rows.push({ engine: 'all layers on 2 workers (SPECD_TENSOR_SPLIT 1,1)', tps: await decodeRuns(split, {}) });
  const info = (await (await fetch(`${split.url}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'medium' }) })).json()).model_info;
  const layers = Object.entries(info).find(([k]) => k.endsWith('.block_count'))[1];
  const half = Math.floor(layers / 2);
  rows.push({ engine: `${half} of ${layers} layers on 2 workers (num_gpu ${half})`, tps: await decodeRuns(split, { num_gpu: half }) });
  const ps = await (await fetch(`${split.url}/api/ps`)).json();
  await split.stop();
  workers.forEach((w) => w.stop());
  fs.rmSync(store, { recursive: true, force: true });
  return { rows, base, commands, devices: ps.models[0]?.devices ?? [] };
}

function haproxyConfig(front, ports) {
  let text = fs.readFileSync(path.resolve('deploy/haproxy.cfg'), 'utf8');
  text = text.replace(/bind 127\.0\.0\.1:11434/, `bind 127.0.0.1:${front}`);
  ports.forEach((p, i) => { text = text.replace(new RegExp(`server r${i + 1} 127\\.0\\.0\\.1:\\d+`), `server r${i + 1} 127.0.0.1:${p}`); });
  return text;
}

// `clients` concurrent clients, client i asking for model names[i] `perClient` times in a row:
// total tokens over wall seconds.
async function aggregate(url, names, perClient) {
  const t0 = performance.now();
  let tokens = 0;
  const replicas = new Set();
  await Promise.all(names.map(async (name) => {
    for (let i = 0; i < perClient; ++i) {
      const r = await fetch(`${url}/api/generate`, { method: 'POST', body: JSON.stringify({ model: name, prompt, raw: true, stream: false,
        options: { temperature: 0, num_predict: numPredict, seed: 1, draft_num_predict: 0 } }) });
      const j = await r.json();
      if (!r.ok) throw new Error(JSON.stringify(j));
      tokens += j.eval_count;
      replicas.add(`${name}->${r.headers.get('x-specd-replica') ?? 'direct'}`);
    }
  }));
  return { tps: tokens / ((performance.now() - t0) / 1000), replicas: [...replicas] };
}

async function replicaPart() {
  const names = ['medium', 'm2', 'm3'];
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-scale-'));
  const servers = [];
  // Each replica (and the direct server) has the three models; each model is the same GGUF.
  const startOne = async () => {
    const s = await startSpecd({ bin: specdBin, modelsDir: store, name: 'medium', target, draft, numCtx: 2048 });
    for (const n of names.slice(1)) {
      execFileSync(specdBin, ['cp', 'medium', n], { env: { ...process.env, SPECD_MODELS: store, SPECD_HOST: s.url.replace('http://', '') } });
    }
    return s;
  };
  const direct = await startOne();
  const commands = [`one server: ${direct.commandLine}`];
  await aggregate(direct.url, names, 1); // warm-up: every model loaded
  const one = [];
  for (let i = 0; i < runs; ++i) one.push((await aggregate(direct.url, names, 2)).tps);
  await direct.stop();
  for (let i = 0; i < 3; ++i) servers.push(await startOne());
  const front = await freePort();
  const cfg = path.join(store, 'haproxy.cfg');
  fs.writeFileSync(cfg, haproxyConfig(front, servers.map((s) => Number(new URL(s.url).port))));
  const proxy = spawn('haproxy', ['-db', '-f', cfg], { stdio: 'ignore' });
  live.add(proxy);
  commands.push(`replicas: 3 x ${servers[0].commandLine}`, `haproxy -db -f deploy/haproxy.cfg (front and servers on free ports)`);
  await sleep(2500); // its health checks mark the three up
  const url = `http://127.0.0.1:${front}`;
  const warm = await aggregate(url, names, 1);
  const three = [];
  for (let i = 0; i < runs; ++i) three.push((await aggregate(url, names, 2)).tps);
  proxy.kill('SIGTERM');
  for (const s of servers) await s.stop();
  fs.rmSync(store, { recursive: true, force: true });
  return { one, three, commands, placement: warm.replicas };
}

const rpc = await rpcPart();
const rep = await replicaPart();
const lines = [
  '# Past one machine, on one machine: RPC workers and replicas on loopback',
  '',
  `specd ${specdCommit()}; ${os.cpus().length} CPUs; medium bench target (no draft), ${numPredict} tokens greedy, ` +
    `${runs} runs after a warm-up; median [min-max]. Reproduce: \`scripts/bench.sh scale-out\`.`,
  '',
  '## RPC split (decode tokens/s, one server at a time)',
  '',
  '| engine | tokens/s | vs local |',
  '|---|---|---|',
  ...rpc.rows.map((r) => `| ${r.engine} | ${fmt(median(r.tps))} [${range(r.tps).map((x) => fmt(x)).join('-')}] | ` +
    `${fmt(median(r.tps) / median(rpc.base), 2)}x |`),
  '',
  `Devices of the half split (/api/ps): ${rpc.devices.map((d) => `${d.name} ${fmt(d.total / 1048576)} MiB`).join(', ')}.`,
  '',
  '## Replicas (aggregate tokens/s of 3 concurrent clients, one model each, 2 answers per client)',
  '',
  '| engine | tokens/s | vs one server |',
  '|---|---|---|',
  `| one server, directly | ${fmt(median(rep.one))} [${range(rep.one).map((x) => fmt(x)).join('-')}] | 1.00x |`,
  `| 3 replicas behind HAProxy | ${fmt(median(rep.three))} [${range(rep.three).map((x) => fmt(x)).join('-')}] | ` +
    `${fmt(median(rep.three) / median(rep.one), 2)}x |`,
  '',
  `Where the models went: ${rep.placement.join(', ')}.`,
  '',
  '## Command lines',
  '',
  ...[...rpc.commands, ...rep.commands].map((c) => `- \`${shorten(c)}\``),
  '',
];
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'scale-out.md'), lines.join('\n'));
console.log(lines.join('\n'));
process.exit(0);
