// The ratios a concurrency report gives (bench/concurrency.mjs), from its rows: each the
// median of the ratios of waves of the same run and round (the rows' *_runs arrays line up by
// run and round); against several engines, the one with the best median.
import { median, range } from './stats.mjs';

export function concurrencyRatios(rows, streams) {
  const by = Object.fromEntries(rows.map((r) => [r.engine, r]));
  const paired = (a, bs, key) => {
    const per = bs.map((b) => by[a][key].map((v, i) => v / by[b][key][i]));
    const worst = per.reduce((w, r) => (w === null || median(r) < median(w) ? r : w), null);
    return { value: median(worst), range: range(worst) };
  };
  return [
    [`${streams} streams, specd spec-on / llama-server best of no-draft, k=3, k=8 (target >= 1.10)`,
      paired('specd spec-on', ['llama-server no-draft', 'llama-server k=3', 'llama-server k=8'], 'aggregate_runs')],
    [`${streams} streams, specd spec-off / llama-server no-draft`, paired('specd spec-off', ['llama-server no-draft'], 'aggregate_runs')],
    [`${streams} streams, specd spec-on / specd spec-off (target >= 0.97)`, paired('specd spec-on', ['specd spec-off'], 'aggregate_runs')],
    ['1 stream, specd spec-on / specd spec-off (target >= 0.97)', paired('specd spec-on', ['specd spec-off'], 'single_runs')],
    ['1 stream, specd spec-on / llama-server best of k=3, k=8', paired('specd spec-on', ['llama-server k=3', 'llama-server k=8'], 'single_runs')],
    [`1 stream, specd spec-on on ${streams} sequences / on 1`, paired('specd spec-on', ['specd spec-on, --parallel 1'], 'single_runs')],
    [`${streams} streams, first wave on a fresh server (warm-up, drafting gate still learning), specd spec-on / specd spec-off`,
      paired('specd spec-on', ['specd spec-off'], 'cold_runs')],
  ];
}
