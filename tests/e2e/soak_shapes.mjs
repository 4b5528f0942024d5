// The image-shape soak (`scripts/soak.sh --profile shapes`; not part of the default run).
//
// N /api/chat requests to a vision model with a draft model, every one with an image of the
// next of S sizes (96x80 .. 1450x1080, cycled), every other answer stop-terminated (see
// shapes_workload.mjs); twice, prompt cache off and on. After every request it reads the
// server's resident memory and the prompt cache's bytes. Passes when, in both runs, the
// least-squares slope of RSS minus the cache over the second half of the requests is at most
// --limit-mib per request. Prints RSS minus cache at every --checkpoint requests, the slopes
// (MiB/request) over the second half and over the whole run, the peak RSS and the
// allocator's own counts at the same checkpoints.
//
//   node tests/e2e/soak_shapes.mjs [--requests N] [--shapes S] [--checkpoint C] [--limit-mib X]
//                                  [--runs off,on] [--json FILE]
//   (SPECD_BIN and SPECD_FIXTURES as for the end-to-end tests)
import fs from 'node:fs';
import { fixture, startServer } from './harness.mjs';
import { runShapes, shapeSize, summarizeShapes } from './shapes_workload.mjs';

const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}
const requests = Number(option('requests', 240));
const shapes = Number(option('shapes', 60));
const checkpoint = Number(option('checkpoint', 40));
const limitMiB = Number(option('limit-mib', 0.05));
const runs = option('runs', 'off,on').split(',');
const jsonOut = option('json', '');

const MiB = 1024 * 1024;
const visModel = {
  name: 'vis',
  from: 'vision-text.gguf',
  lines: [`FROM ${fixture('vision-mmproj.gguf')}`, `DRAFT ${fixture('pair-draft.gguf')}`],
};

async function soak(cache) {
  const label = `cache ${cache}`;
  const srv = await startServer({ models: [visModel], env: cache === 'off' ? { SPECD_PROMPT_CACHE: '0' } : {} });
  const t0 = Date.now();
  let samples;
  let allocator;
  try {
    samples = await runShapes({
      client: srv.client, url: srv.url, model: 'vis', n: requests, shapes,
      onSample: (i, mem) => {
        allocator = mem.allocator;
        if ((i + 1) % checkpoint === 0) {
          process.stderr.write(`${label}: ${i + 1}/${requests}, RSS ${(mem.resident_bytes / MiB).toFixed(1)} MiB, ` +
            `cache ${(mem.prompt_cache.bytes / MiB).toFixed(2)} MiB\n`);
        }
      },
    });
  } catch (err) {
    throw new Error(`${label}: ${err.message}\nserver log:\n${srv.stderr().split('\n').slice(-30).join('\n')}`);
  } finally {
    await srv.stop();
  }
  const s = summarizeShapes(samples, checkpoint);
  return {
    label, requests, shapes, seconds: (Date.now() - t0) / 1000, ...s, allocator,
    stop_as_planned: s.stop_missed === 0,
    pass: s.slope_mib_per_request <= limitMiB,
  };
}

const results = [];
for (const cache of runs) results.push(await soak(cache));

const [w0, h0] = shapeSize(0, shapes);
const [w1, h1] = shapeSize(shapes - 1, shapes);
const half = Math.floor(requests / 2);
console.log(`\nsoak --profile shapes: ${requests} /api/chat requests per run, ${shapes} image sizes (${w0}x${h0} .. ${w1}x${h1}) cycled, ` +
  `draft model; RSS minus prompt cache (MiB) at checkpoints; slope over requests ${half + 1}-${requests}, limit ${limitMiB} MiB/request\n`);
const cps = results[0].checkpoints.map((c) => c.request);
console.log(`| run | ${cps.map((r) => `@${r}`).join(' | ')} | slope ${half + 1}-${requests} | slope 1-${requests} | peak RSS (MiB) | ` +
  'cache max (MiB) | stop / length | drafted | seconds | result |');
console.log(`|---|${cps.map(() => '---|').join('')}---|---|---|---|---|---|---|---|`);
for (const r of results) {
  console.log(`| ${r.label} | ${r.checkpoints.map((c) => c.net_mib.toFixed(1)).join(' | ')} | ${r.slope_mib_per_request.toFixed(4)} | ${r.slope_all_mib_per_request.toFixed(4)} | ` +
    `${r.peak_rss_mib.toFixed(1)} | ${r.cache_max_mib.toFixed(2)} | ${r.done_reasons.stop ?? 0} / ${r.done_reasons.length ?? 0} | ` +
    `${r.drafted} | ${r.seconds.toFixed(0)} | ${r.pass && r.stop_as_planned ? 'pass' : 'FAIL'} |`);
}
const fmt = (v) => (v === undefined ? '-' : v.toFixed(1));
for (const r of results) {
  if (!r.allocator) continue;
  console.log(`\n${r.label}: ${r.allocator.name} ${r.allocator.version}, its counts (MiB) at the same checkpoints\n`);
  console.log(`| count | ${r.checkpoints.map((c) => `@${c.request}`).join(' | ')} |`);
  console.log(`|---|${r.checkpoints.map(() => '---|').join('')}`);
  for (const k of ['allocated', 'free', 'mapped', 'resident']) {
    if (r.checkpoints.every((c) => c[`${k}_mib`] === undefined)) continue;
    console.log(`| ${k} | ${r.checkpoints.map((c) => fmt(c[`${k}_mib`])).join(' | ')} |`);
  }
}
for (const r of results) {
  if (!r.stop_as_planned) console.log(`${r.label}: ${r.stop_missed} stop-string requests did not stop (${JSON.stringify(r.done_reasons)})`);
}
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(results, null, 2));
process.exit(results.every((r) => r.pass && r.stop_as_planned) ? 0 : 1);
