// The benchmark runner: reads a declarative cell file, starts each engine once per model
// pair, runs every cell `runs` times, prints one table and writes markdown + SVG.
//   node bench/run.mjs bench/speculation.json --specd build/bin/specd --llama-server PATH
//        --models DIR --out DIR
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSpecd, startLlamaServer, generate } from './servers.mjs';
import { summarise, table, markdown, svg, write } from './report.mjs';

function args() {
  const a = process.argv.slice(2);
  const out = { spec: a[0] };
  for (let i = 1; i < a.length; i += 2) out[a[i].replace(/^--/, '')] = a[i + 1];
  for (const k of ['spec', 'specd', 'llama-server', 'models', 'out']) {
    if (!out[k]) throw new Error(`missing --${k} (see the header of bench/run.mjs)`);
  }
  return out;
}

async function main() {
  const opt = args();
  const spec = JSON.parse(fs.readFileSync(opt.spec, 'utf8'));
  const results = [];
  const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-bench-'));
  try {
    for (const [pairName] of Object.entries(spec.pairs)) {
      const cells = spec.cells.filter((c) => c.pair === pairName);
      if (cells.length === 0) continue;
      const target = path.resolve(opt.models, `${pairName}-target.gguf`);
      const draft = path.resolve(opt.models, `${pairName}-draft.gguf`);
      // Every engine of a pair is up at once and the runs interleave (run 1 of each engine,
      // then run 2 ...), so a slow minute on a shared machine hits all engines alike.
      const servers = [];
      try {
        for (const engine of spec.engines) {
          servers.push(engine.kind === 'specd'
            ? await startSpecd({ bin: opt.specd, modelsDir: storeDir, name: `bench-${pairName}`, target, draft,
                                 threads: spec.threads, numCtx: spec.num_ctx })
            : await startLlamaServer({ bin: opt['llama-server'], target, draft, draftNMax: engine.draft_n_max,
                                       threads: spec.threads, numCtx: spec.num_ctx }));
        }
        for (const cell of cells) {
          const acc = spec.engines.map(() => ({ tps: [], drafted: 0, accepted: 0 }));
          const request = (i) => ({ prompt: cell.prompt, numPredict: cell.num_predict, draft: spec.engines[i].draft });
          for (let i = 0; i < servers.length; ++i) await generate(servers[i], request(i)); // warm-up
          for (let run = 0; run < spec.runs; ++run) {
            for (let i = 0; i < servers.length; ++i) {
              const r = await generate(servers[i], request(i));
              acc[i].tps.push(r.tps);
              acc[i].drafted += r.drafted;
              acc[i].accepted += r.accepted;
            }
          }
          spec.engines.forEach((engine, i) => {
            const a = acc[i];
            results.push({ cell: cell.name, engine: engine.name, tps: a.tps,
                           accept_rate: a.drafted > 0 ? a.accepted / a.drafted : null });
            console.error(`${cell.name.padEnd(16)} ${engine.name.padEnd(24)} ${a.tps.map((t) => t.toFixed(1)).join(' ')} tok/s`);
          });
        }
      } finally {
        for (const s of servers) await s.stop();
      }
    }
  } finally {
    fs.rmSync(storeDir, { recursive: true, force: true });
  }
  const rows = summarise(spec, results);
  console.log(table(spec, rows));
  fs.mkdirSync(opt.out, { recursive: true });
  const meta = { machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}`, date: new Date().toISOString().slice(0, 10),
                 command: 'scripts/bench.sh' };
  write(path.join(opt.out, `${spec.name}.md`), markdown(spec, rows, meta));
  write(path.join(opt.out, `${spec.name}.svg`), svg(spec, rows));
  write(path.join(opt.out, `${spec.name}.json`), JSON.stringify({ meta, results, rows }, null, 2));
  console.log(`\nwrote ${path.join(opt.out, spec.name)}.{md,svg,json}`);
}

main().catch((e) => { console.error(e.stack || e.message); process.exit(1); });
