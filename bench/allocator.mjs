// Decode speed by allocator set-up (`scripts/bench.sh allocator`): specd binaries that differ
// in how malloc is set up (e.g. a build from before configure_allocator() against one with
// it), side by side on the fixture pair, speculation on and off.
// All servers are up at once and every run visits each in turn, so a slow minute on a shared
// machine hits all alike; the table has the median decode tokens/s over the runs, its range,
// and the median of the per-run ratios to the first binary.
//
//   node bench/allocator.mjs --bins NAME=BIN,NAME=BIN --fixtures DIR [--runs 7] [--num-predict 128]
//        [--out DIR]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { option as opt } from './options.mjs';
import { generate, startSpecd } from './servers.mjs';

const bins = opt('bins', '').split(',').filter(Boolean).map((b) => {
  const [name, bin] = b.split('=');
  if (!name || !bin) throw new Error(`--bins takes NAME=BIN,NAME=BIN, not "${b}"`);
  return { name, bin };
});
const fixtures = opt('fixtures');
const runs = Number(opt('runs', 7));
const numPredict = Number(opt('num-predict', 128));
const outDir = opt('out', '');
if (bins.length < 2 || !fixtures) {
  console.error('usage: node bench/allocator.mjs --bins NAME=BIN,NAME=BIN --fixtures DIR [--runs 7] [--num-predict 128]');
  process.exit(2);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cells = [{ name: 'pair, speculation on', draft: true }, { name: 'pair, no draft', draft: false }];
const prompt = (run) => `Run ${run}: the story of a river that ran uphill begins`;

const store = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-bench-alloc-'));
const servers = [];
try {
  for (const b of bins) {
    servers.push(await startSpecd({
      bin: b.bin, modelsDir: path.join(store, b.name), name: 'pair', numCtx: 1024,
      target: path.resolve(fixtures, 'pair-target.gguf'), draft: path.resolve(fixtures, 'pair-draft.gguf'),
    }));
  }
  const tps = cells.map(() => bins.map(() => []));
  for (const s of servers) for (const c of cells) await generate(s, { prompt: prompt(-1), numPredict: 16, draft: c.draft }); // warm-up
  for (let run = 0; run < runs; ++run) {
    for (const [ci, c] of cells.entries()) {
      for (const [bi, s] of servers.entries()) {
        const r = await generate(s, { prompt: prompt(run), numPredict, draft: c.draft });
        if (r.tokens !== numPredict) throw new Error(`${bins[bi].name}: ${r.tokens} tokens, expected ${numPredict}`);
        tps[ci][bi].push(r.tps);
      }
    }
  }
  const lines = [`allocator: decode tokens/s, ${runs} interleaved runs of ${numPredict} tokens, temperature 0, fixture pair (build/fixtures)`, '',
    `| cell | ${bins.map((b) => `${b.name} median (range)`).join(' | ')} | ${bins.slice(1).map((b) => `${b.name} / ${bins[0].name}`).join(' | ')} |`,
    `|---|${bins.map(() => '---|').join('')}${bins.slice(1).map(() => '---|').join('')}`];
  for (const [ci, c] of cells.entries()) {
    const cols = tps[ci].map((xs) => `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)})`);
    const ratios = tps[ci].slice(1).map((xs) => median(xs.map((x, run) => x / tps[ci][0][run])).toFixed(3));
    lines.push(`| ${c.name} | ${cols.join(' | ')} | ${ratios.join(' | ')} |`);
  }
  lines.push('', ...servers.map((s, i) => `${bins[i].name}: ${s.commandLine}`));
  console.log(lines.join('\n'));
  if (outDir) {
    fs.mkdirSync(outDir, { recursive: true });
    fs.writeFileSync(path.join(outDir, 'allocator.md'), `# Decode speed by allocator\n\n${lines.join('\n')}\n`);
    fs.writeFileSync(path.join(outDir, 'allocator.json'), JSON.stringify({ runs, numPredict, cells, bins, tps }, null, 2));
  }
} finally {
  for (const s of servers) await s.stop();
  fs.rmSync(store, { recursive: true, force: true });
}
