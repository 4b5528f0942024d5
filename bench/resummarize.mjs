// A concurrency report's medians again from its JSON, with the summaries of bench/stats.mjs
// (a report written before them gave the upper of the two middle values for an even count):
//   node bench/resummarize.mjs bench/results/concurrency-heads.json
// Prints, per pair, markdown rows: each engine's tokens/s, then the report's ratios.
import fs from 'node:fs';
import { concurrencyRatios } from './concurrency_ratios.mjs';
import { median, range } from './stats.mjs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node bench/resummarize.mjs REPORT.json');
  process.exit(2);
}
const { config, results } = JSON.parse(fs.readFileSync(file, 'utf8'));
const tps = (xs) => (xs.length ? `${median(xs).toFixed(1)} [${range(xs).map((x) => x.toFixed(1)).join('-')}]` : '—');
for (const { pair, rows } of results) {
  console.log(`\n### ${pair}\n\n| engine | 1 stream tok/s | ${config.streams} streams tok/s |\n|---|---|---|`);
  for (const r of rows) console.log(`| ${r.engine} | ${tps(r.single_runs)} | ${tps(r.aggregate_runs)} |`);
  console.log('\n| ratio | median | range |\n|---|---|---|');
  for (const [name, v] of concurrencyRatios(rows, config.streams)) {
    console.log(`| ${name} | ${v.value.toFixed(2)}x | ${v.range[0].toFixed(2)}-${v.range[1].toFixed(2)} |`);
  }
}
