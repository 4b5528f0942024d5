// Acceptance of coupled drafting against rejection sampling (`scripts/bench.sh coupling`).
//
// Since reproducible sampling, a draft model draws with the target's seeded noise and a draft
// is accepted where it equals the target's own draw; before, drafts were verified by
// rejection sampling (accept with min(1, p/q)), which SPECD_UNSEEDED_SAMPLING=rejection keeps
// for requests without a seed. This runs both on the bench pairs at temperatures 0.7 and 1.0
// (the sampler's other options at their defaults), the depth fixed (options.draft_depth) so
// that both verify the same number of drafts per round, and reports accepted / drafted of
// each and their ratio. Acceptance does not depend on timing: the machine may be busy.
//
//   node bench/coupling.mjs --specd BIN --models DIR --out DIR
//        [--pairs low,medium,high] [--requests 6] [--tokens 64] [--depth 4]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { option as opt } from './options.mjs';
import { startSpecd } from './servers.mjs';

const specdBin = opt('specd');
const modelsDir = opt('models');
const outDir = opt('out', 'bench/results');
const pairs = opt('pairs', 'low,medium,high').split(',');
const requests = Number(opt('requests', 6));
const tokens = Number(opt('tokens', 64));
const depth = Number(opt('depth', 4));
const temperatures = [0.7, 1.0];
const PROMPTS = ['Once upon a time', 'The report says that', 'def main():', 'In the morning we', 'List of items:',
  'Dear colleague,'];

async function acceptance(server, temperature, seeded) {
  let drafted = 0, accepted = 0, generated = 0;
  for (let i = 0; i < requests; ++i) {
    const options = { temperature, num_predict: tokens, draft_depth: depth };
    if (seeded) options.seed = 1000 + i;
    // Streamed: a slow machine may take longer for a whole answer than fetch waits for headers.
    const body = { model: server.name, prompt: PROMPTS[i % PROMPTS.length], raw: true, stream: true, options };
    const r = await fetch(`${server.url}/api/generate`, { method: 'POST', body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`specd: ${(await r.json()).error}`);
    const lines = (await r.text()).trim().split('\n');
    const j = JSON.parse(lines[lines.length - 1]);
    if (j.error || !j.done) throw new Error(`specd: ${j.error ?? 'the answer did not finish'}`);
    drafted += j.speculation.drafted;
    accepted += j.speculation.accepted;
    generated += j.eval_count;
  }
  return { drafted, accepted, generated, rate: drafted > 0 ? accepted / drafted : null };
}

const rows = [];
const commands = new Set();
for (const pair of pairs) {
  const target = path.join(modelsDir, `${pair}-target.gguf`);
  const draft = path.join(modelsDir, `${pair}-draft.gguf`);
  for (const [mode, env, seeded] of [['coupled (seeded)', {}, true], ['rejection', { SPECD_UNSEEDED_SAMPLING: 'rejection' }, false]]) {
    const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-coupling-'));
    const server = await startSpecd({ bin: specdBin, modelsDir: storeDir, name: pair, target, draft, numCtx: 2048, env });
    commands.add(server.commandLine.replaceAll(modelsDir, '$MODELS').replaceAll(storeDir, '$STORE'));
    try {
      for (const temperature of temperatures) {
        const a = await acceptance(server, temperature, seeded);
        rows.push({ pair, mode, temperature, ...a });
        console.log(`${pair} T=${temperature} ${mode}: accepted ${a.accepted} / drafted ${a.drafted} = ${a.rate?.toFixed(3)}`);
      }
    } finally {
      await server.stop();
      fs.rmSync(storeDir, { recursive: true, force: true });
    }
  }
}

const lines = ['# Coupled drafting vs rejection sampling: acceptance', '',
  `Per pair and temperature: accepted / drafted over ${requests} requests of ${tokens} tokens, depth fixed at ${depth}`,
  '(`options.draft_depth`), other sampler options at their defaults. Coupled: requests with a seed (the draft',
  'draws with the target\'s noise, a draft is accepted where it equals the target\'s draw). Rejection: requests',
  'without a seed on a server started with `SPECD_UNSEEDED_SAMPLING=rejection`.', '',
  '| pair | T | coupled | rejection | coupled / rejection |', '|---|---|---|---|---|'];
for (const pair of pairs) {
  for (const temperature of temperatures) {
    const c = rows.find((r) => r.pair === pair && r.temperature === temperature && r.mode.startsWith('coupled'));
    const j = rows.find((r) => r.pair === pair && r.temperature === temperature && r.mode === 'rejection');
    const f = (r) => `${r.rate.toFixed(3)} (${r.accepted}/${r.drafted})`;
    lines.push(`| ${pair} | ${temperature} | ${f(c)} | ${f(j)} | ${(c.rate / j.rate).toFixed(2)} |`);
  }
}
lines.push('', 'Commands:', ...[...commands].map((c) => `- \`${c}\``), '',
  `Run: \`scripts/bench.sh coupling\` (${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} CPUs).`, '');
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'coupling.md'), lines.join('\n'));
fs.writeFileSync(path.join(outDir, 'coupling.json'), JSON.stringify(rows, null, 1));
console.log(lines.join('\n'));
