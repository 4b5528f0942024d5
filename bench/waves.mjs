// Waves on one specd server kept up (a probe, not a report): N concurrent streams per wave,
// each wave in one arm, the arms in the order given, so that a server's learning (the
// drafting gate per batch size, the model's depth prior) shows wave by wave and arms that
// follow each other compare on the same server. bench/concurrency.mjs measures fresh servers
// instead; this is what its readings' probes ran.
//
//   node bench/waves.mjs --specd BIN --models DIR --cells bench/mtp.json --pair mtp_09
//        --arms on,off,on,k3,off [--streams 4] [--num-predict 128] [--same-prompts] [--no-draft]
// --no-draft starts the server without the pair's draft (a head of the target's own nextn
// layers still drafts): its `off` waves against a drafting server's measure what having a
// drafter costs steps that do not draft. Arms: `on` (the adaptive depth), `off`
// (draft_num_predict 0), `kN` (draft_depth N, which the drafting gate does not hold back),
// each with an optional `:S`, that wave's number of streams (at most --streams):
// `on:1,on,on:1,on` is the order bench/concurrency.mjs runs a fresh server in (its warm-up,
// then a measured wave of each shape). Each wave's streams get prompts of their own; a
// wave's prompts change after every `off` wave (so an on/off pair runs the same text), or
// never with --same-prompts. Before each wave every sequence is made to hold other text
// (servers.mjs flushSequences), so each wave evaluates its prompts in full: without that, the
// waves after the first on a prompt set reused its prompts' KV and read about 2% high against
// it (what bench/results/concurrency-mtp.md's third probe saw as an order effect). Prints per
// wave: aggregate tokens/s (all tokens / wall time) and per stream mean depth, drafted and
// accepted tokens.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { option as opt } from './options.mjs';
import { flushSequences, generate, pairModels, startSpecd, streamPrompt } from './servers.mjs';

const specdBin = opt('specd');
const modelsDir = opt('models');
const cellFile = opt('cells', 'bench/speculation.json');
const pair = opt('pair');
const arms = opt('arms', 'on,off').split(',');
const streams = Number(opt('streams', 4));
const numPredict = Number(opt('num-predict', 128));
const samePrompts = process.argv.includes('--same-prompts');
const noDraft = process.argv.includes('--no-draft');
if (!specdBin || !modelsDir || !pair) {
  console.error('usage: node bench/waves.mjs --specd BIN --models DIR --cells FILE --pair NAME --arms on,off,k3');
  process.exit(2);
}
for (const a of arms) {
  if (!/^(on|off|k\d+)(:\d+)?$/.test(a)) throw new Error(`arm ${a}: on, off or kN, optionally :streams`);
}

const armOptions = (arm) => (arm.startsWith('k') ? { draft_depth: Number(arm.slice(1)) } : {});

const { target, draft } = pairModels(modelsDir, pair, JSON.parse(fs.readFileSync(cellFile, 'utf8')).pairs[pair]);
const store = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-waves-'));
const server = await startSpecd({ bin: specdBin, modelsDir: store, name: 'pair', target,
  draft: noDraft ? undefined : draft, numCtx: 1024,
  env: { SPECD_NUM_PARALLEL: String(streams), SPECD_PROMPT_CACHE: '0' } });
console.log(`${pair}: ${server.commandLine}  -> threads ${JSON.stringify(server.threads)}`);
try {
  let run = 0;
  for (const spec of arms) {
    const [arm, n] = spec.split(':');
    const wave = Math.min(streams, Number(n ?? streams));
    await flushSequences(server, streams);
    const t0 = performance.now();
    const answers = await Promise.all(Array.from({ length: wave }, (_, i) => generate(server, {
      prompt: streamPrompt(i, run), numPredict, draft: arm !== 'off', options: armOptions(arm) })));
    const wall = (performance.now() - t0) / 1000;
    const tokens = answers.reduce((a, b) => a + b.tokens, 0);
    const each = answers.map((a) => `k ${(a.mean_k ?? 0).toFixed(2)} drafted ${a.drafted} accepted ${a.accepted}`);
    console.log(`${spec.padEnd(6)} prompts ${run}  ${(tokens / wall).toFixed(1).padStart(6)} tok/s  ${each.join(' | ')}`);
    if (arm === 'off' && !samePrompts) ++run;
  }
} finally {
  await server.stop();
  fs.rmSync(store, { recursive: true, force: true });
}
