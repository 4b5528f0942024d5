// Decode speed by allocator set-up (`scripts/bench.sh allocator`): specd binaries that differ
// in how malloc is set up (e.g. a build from before configure_allocator() against one with
// it), side by side on one pair: decode tokens/s with speculation on and off; with --mmproj
// instead the wall time of a request carrying one image of the next of 8 sizes (96x80 ..
// 1450x1080), where the buffers from 128 KiB up that malloc maps and unmaps are.
// All servers are up at once and every run visits each in turn, the order rotating from run
// to run, so a slow minute on a shared machine hits all alike; the table has the median over
// the runs, its range, and the median of the per-run ratios to the first binary.
//
//   node bench/allocator.mjs --bins NAME=BIN,NAME=BIN --fixtures DIR [--runs 8] [--num-predict 128]
//        [--target GGUF --draft GGUF] [--mmproj GGUF] [--threads N] [--num-ctx 1024] [--one-at-a-time]
//        [--env NAME:KEY=VALUE ...] [--out DIR]
// The pair is the fixtures' (pair-target.gguf, pair-draft.gguf) unless --target and --draft
// name another, e.g. one of the benchmark pairs (bench/make-models.sh), or the vision
// fixture (vision-text.gguf with pair-draft.gguf and --mmproj vision-mmproj.gguf). --threads
// sets num_thread for every binary; without it each server measures its own at load (shown
// in the report), and two servers that chose differently are not comparing allocators.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { b64, png } from '../tests/e2e/images.mjs';
import { option as opt } from './options.mjs';
import { generate, startSpecd } from './servers.mjs';
import { median } from './stats.mjs';

const bins = opt('bins', '').split(',').filter(Boolean).map((b) => {
  const [name, bin] = b.split('=');
  if (!name || !bin) throw new Error(`--bins takes NAME=BIN,NAME=BIN, not "${b}"`);
  return { name, bin };
});
// --env NAME:KEY=VALUE (repeatable) sets a variable for one binary's server only, so that one
// binary can be compared with itself under another setting (e.g. SPECD_RUNNERS=thread).
for (let i = 2; i < process.argv.length - 1; ++i) {
  if (process.argv[i] !== '--env') continue;
  const m = /^([^:]+):([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(process.argv[i + 1]);
  const b = m && bins.find((x) => x.name === m[1]);
  if (!b) throw new Error(`--env takes NAME:KEY=VALUE for a NAME of --bins, not "${process.argv[i + 1]}"`);
  (b.env ??= {})[m[2]] = m[3];
}
const fixtures = opt('fixtures');
// Every binary goes first in as many runs as every other (see the rotation below): with an
// odd count for two binaries the one listed second followed the other in one run more, and
// its median came out faster whichever binary it was (measured: two builds of the same code
// listed in both orders, 7 runs: the second 1.07x-1.11x). So the count is rounded up to a
// multiple of the binaries.
const runs = Math.ceil(Number(opt('runs', 8)) / Math.max(1, bins.length)) * Math.max(1, bins.length);
const numPredict = Number(opt('num-predict', 128));
const outDir = opt('out', '');
const numCtx = Number(opt('num-ctx', 1024));
const threads = opt('threads') ? Number(opt('threads')) : undefined;
if (bins.length < 2 || (!fixtures && !(opt('target') && opt('draft')))) {
  console.error('usage: node bench/allocator.mjs --bins NAME=BIN,NAME=BIN --fixtures DIR [--runs 8] [--num-predict 128] ' +
    '[--target GGUF --draft GGUF] [--mmproj GGUF] [--threads N] [--num-ctx 1024] [--one-at-a-time] [--out DIR]');
  process.exit(2);
}
const target = path.resolve(opt('target') ?? path.join(fixtures, 'pair-target.gguf'));
const draft = path.resolve(opt('draft') ?? path.join(fixtures, 'pair-draft.gguf'));
const mmproj = opt('mmproj') ? path.resolve(opt('mmproj')) : undefined;

// tokens/s: higher is better; seconds: lower is better (the ratio is then of times).
// (A random-weight vision model ends on its end-of-generation token early now and then, so it
// has no fixed-length decode cells.)
const cells = mmproj
  ? [{ name: 'request with one image (decode, preprocess, encode, prompt; 1 token)', draft: true, image: true, unit: 's' }]
  : [{ name: 'decode, speculation on', draft: true, unit: 'tokens/s' },
     { name: 'decode, no draft', draft: false, unit: 'tokens/s' }];
const IMAGE_SIZES = 8;
const imageSize = (k) => {
  const t = k / (IMAGE_SIZES - 1);
  return [Math.round(96 + (1450 - 96) * t), Math.round(80 + (1080 - 80) * t)];
};
const prompt = (run) => `Run ${run}: the story of a river that ran uphill begins`;

// One measurement of cell c: decode tokens/s, or the request's wall seconds. Every binary
// gets the same request in a run; the image's pixels differ between runs (no cache hits).
async function measure(server, c, run) {
  if (!c.image) {
    const r = await generate(server, { prompt: prompt(run), numPredict, draft: c.draft });
    if (r.tokens !== numPredict) throw new Error(`${server.commandLine}: ${r.tokens} tokens, expected ${numPredict}`);
    return r.tps;
  }
  const [w, h] = imageSize(((run % IMAGE_SIZES) + IMAGE_SIZES) % IMAGE_SIZES);
  const r = await generate(server, { prompt: `Image ${run}. Describe the scene.`, numPredict: 1, draft: c.draft,
    images: [b64(png(w, h, run + 1000))] });
  return r.wall;
}

const store = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-bench-alloc-'));
const servers = [];
// --one-at-a-time: only one server is up at a time, started afresh for each binary's turn in
// each run. With both up at once, two copies of the same binary measured 1.15x-1.25x apart on
// the 2-core bench machine, the one started second faster, in either order of visits: more
// than most differences worth measuring. Slower (a load per turn), but free of that.
const oneAtATime = process.argv.includes('--one-at-a-time');
const start = (b) => startSpecd({ bin: b.bin, modelsDir: path.join(store, b.name), name: 'pair', numCtx, target, draft, mmproj, threads,
                                   env: b.env });
try {
  const values = cells.map(() => bins.map(() => []));
  const loads = bins.map(() => []); // --one-at-a-time: each start's load request, seconds
  if (!oneAtATime) {
    for (const b of bins) servers.push(await start(b));
    for (const s of servers) for (const c of cells) await measure(s, c, -1); // warm-up
  }
  for (let run = 0; run < runs; ++run) {
    // The first binary to run goes first in one run, second in the next, and so on: the
    // servers map the same model files, so the one that follows another finds the weights
    // warm in the CPU's caches (on the fixtures, 10-16% faster), whichever binary it is.
    for (let k = 0; k < bins.length; ++k) {
      const bi = (k + run) % bins.length;
      const server = oneAtATime ? await start(bins[bi]) : servers[bi];
      if (oneAtATime) loads[bi][run] = server.loadSeconds;
      try {
        if (oneAtATime) for (const c of cells) await measure(server, c, -1); // warm-up
        for (const [ci, c] of cells.entries()) values[ci][bi][run] = await measure(server, c, run);
      } finally {
        if (oneAtATime) await server.stop();
      }
      if (oneAtATime && run === 0) servers[bi] = server; // for the command lines in the report
    }
  }
  const pair = `${path.basename(target)} + ${path.basename(draft)}${mmproj ? ` + ${path.basename(mmproj)}` : ''}`;
  const digits = (unit) => (unit === 's' ? 3 : 1);
  const lines = [`allocator: ${runs} interleaved runs, temperature 0, ${pair}; ` +
    (mmproj ? `one PNG of ${IMAGE_SIZES} sizes cycled, 1 token` : `${numPredict} tokens`), '',
    `| cell | unit | ${bins.map((b) => `${b.name} median (range)`).join(' | ')} | ${bins.slice(1).map((b) => `${b.name} / ${bins[0].name}`).join(' | ')} |`,
    `|---|---|${bins.map(() => '---|').join('')}${bins.slice(1).map(() => '---|').join('')}`];
  for (const [ci, c] of cells.entries()) {
    const d = digits(c.unit);
    const cols = values[ci].map((xs) => `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)})`);
    const ratios = values[ci].slice(1).map((xs) => median(xs.map((x, run) => x / values[ci][0][run])).toFixed(3));
    lines.push(`| ${c.name} | ${c.unit} | ${cols.join(' | ')} | ${ratios.join(' | ')} |`);
  }
  if (oneAtATime) {
    // The first request after a start: the model's load (an empty generate), as /api/generate
    // answers it: the weights read, contexts made, threads measured.
    const cols = loads.map((xs) => `${median(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)})`);
    const ratios = loads.slice(1).map((xs) => median(xs.map((x, run) => x / loads[0][run])).toFixed(3));
    lines.push(`| load: the first request after a start (an empty generate) | s | ${cols.join(' | ')} | ${ratios.join(' | ')} |`);
  }
  const imageCell = cells.findIndex((c) => c.image);
  if (imageCell >= 0) {
    // The image cell by size: run r sent size r mod IMAGE_SIZES to every binary.
    lines.push('', `| image size | ${bins.map((b) => `${b.name} median (s)`).join(' | ')} | ${bins.slice(1).map((b) => `${b.name} / ${bins[0].name}`).join(' | ')} |`,
      `|---|${bins.map(() => '---|').join('')}${bins.slice(1).map(() => '---|').join('')}`);
    for (let k = 0; k < IMAGE_SIZES; ++k) {
      const at = (xs) => xs.filter((_, run) => run % IMAGE_SIZES === k);
      const per = values[imageCell].map(at);
      if (per[0].length === 0) continue;
      const ratios = per.slice(1).map((xs) => median(xs.map((x, i) => x / per[0][i])).toFixed(3));
      lines.push(`| ${imageSize(k).join('x')} | ${per.map((xs) => median(xs).toFixed(3)).join(' | ')} | ${ratios.join(' | ')} |`);
    }
  }
  lines.push('', ...servers.map((s, i) => `${bins[i].name}: ${s.commandLine}` +
    (s.threads ? `  -> threads ${JSON.stringify(s.threads)}` : '')));
  console.log(lines.join('\n'));
  if (outDir) {
    fs.mkdirSync(outDir, { recursive: true });
    fs.writeFileSync(path.join(outDir, 'allocator.md'), `# Speed by allocator set-up\n\n${lines.join('\n')}\n`);
    fs.writeFileSync(path.join(outDir, 'allocator.json'), JSON.stringify({ runs, numPredict, target, draft, mmproj, cells, bins, values }, null, 2));
  }
} finally {
  if (!oneAtATime) for (const s of servers) await s.stop();
  fs.rmSync(store, { recursive: true, force: true });
}
