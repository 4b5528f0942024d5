// The memory soak (not part of the default test run; `scripts/soak.sh` runs it).
//
// N requests of the soak mix against one server, twice: with the prompt cache at its default
// budget and with it off. After every request it reads the server's ledger and resident
// memory. Passes when, in both runs, no request-owned reservation outlives its request and
// the resident memory not held by the prompt cache (RSS minus the cache's bytes: the cache
// is meant to grow to its budget) grows by less than --limit-mib per request, as the
// least-squares slope over the last --window requests.
//
//   node tests/e2e/soak.mjs [--requests N] [--window W] [--limit-mib X] [--concurrency C] [--json FILE]
// --concurrency C sends the requests C at a time (the model decodes them in one batch).
//   (SPECD_BIN and SPECD_FIXTURES as for the end-to-end tests)
import fs from 'node:fs';
import { fixture, startServer } from './harness.mjs';
import { ledgerViolations, runSoak, slope, soakImageSize } from './soak_workload.mjs';

const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}
const requests = Number(option('requests', 300));
const window = Math.min(Number(option('window', 200)), requests);
const limitMiB = Number(option('limit-mib', 0.25));
const jsonOut = option('json', '');
const concurrency = Math.max(1, Number(option('concurrency', 1)));

const MiB = 1024 * 1024;
const pairModel = { name: 'pair', from: 'pair-target.gguf', lines: [`DRAFT ${fixture('pair-draft.gguf')}`] };
const visModel = { name: 'vis', from: 'vision-text.gguf', lines: [`FROM ${fixture('vision-mmproj.gguf')}`] };

async function soak(label, env) {
  const srv = await startServer({ models: [pairModel, visModel], env });
  const samples = [];
  const violations = [];
  const t0 = Date.now();
  try {
    await runSoak({
      client: srv.client, url: srv.url, model: 'pair', visionModel: 'vis', n: requests, concurrency,
      onSample: (i, mem, final) => {
        for (const v of ledgerViolations(mem)) violations.push(`request ${i}: ${v}`);
        samples.push({
          rss: mem.resident_bytes,
          cache: mem.prompt_cache.bytes,
          ledger: mem.buckets.total,
          done_reason: final.done_reason,
        });
        if ((i + 1) % 50 === 0) {
          process.stderr.write(`${label}: ${i + 1}/${requests} requests, RSS ${(mem.resident_bytes / MiB).toFixed(1)} MiB, ` +
            `cache ${(mem.prompt_cache.bytes / MiB).toFixed(2)} MiB\n`);
        }
      },
    });
  } finally {
    await srv.stop();
  }
  const tail = samples.slice(-window);
  const growth = slope(tail.map((s) => (s.rss - s.cache) / MiB));
  const reasons = {};
  for (const s of samples) reasons[s.done_reason] = (reasons[s.done_reason] ?? 0) + 1;
  return {
    label,
    requests,
    seconds: (Date.now() - t0) / 1000,
    rss_first_mib: samples[0].rss / MiB,
    rss_last_mib: samples.at(-1).rss / MiB,
    cache_max_mib: Math.max(...samples.map((s) => s.cache)) / MiB,
    slope_mib_per_request: growth,
    done_reasons: reasons,
    violations,
    pass: violations.length === 0 && growth < limitMiB,
  };
}

const results = [];
results.push(await soak('cache on', {}));
results.push(await soak('cache off', { SPECD_PROMPT_CACHE: '0' }));

const sizes = new Set();
for (let i = 2; i < requests; i += 3) sizes.add(soakImageSize(i).join('x'));
console.log(`\nsoak: ${requests} requests per run, ${concurrency} at a time (${sizes.size} image sizes on the vision model); slope of (RSS - prompt cache) over the last ${window}, limit ${limitMiB} MiB/request\n`);
console.log('| run | seconds | RSS first (MiB) | RSS last (MiB) | cache max (MiB) | slope (MiB/request) | stop / length | ledger violations | result |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.label} | ${r.seconds.toFixed(0)} | ${r.rss_first_mib.toFixed(1)} | ${r.rss_last_mib.toFixed(1)} | ` +
    `${r.cache_max_mib.toFixed(2)} | ${r.slope_mib_per_request.toFixed(4)} | ${r.done_reasons.stop ?? 0} / ${r.done_reasons.length ?? 0} | ` +
    `${r.violations.length} | ${r.pass ? 'pass' : 'FAIL'} |`);
  for (const v of r.violations.slice(0, 10)) console.log(`  ${v}`);
}
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(results, null, 2));
process.exit(results.every((r) => r.pass) ? 0 : 1);
