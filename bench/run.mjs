// The benchmark runner: reads a declarative cell file, and for each model pair and engine set
// used by its cells starts the set's servers once, runs every cell `runs` times, prints the
// tables and writes markdown + SVG + JSON.
//   node bench/run.mjs bench/speculation.json --specd build/bin/specd --llama-server PATH
//        --models DIR --out DIR [--cells NAME,NAME] [--runs N] [--num-predict N]
// --cells, --runs and --num-predict override the file, for smoke runs. --keep EARLIER.json
// takes the cells this run does not measure from an earlier run's results (with their command
// lines and that run's date and command), so one report covers every cell after some cells
// were measured again.
//
// A cell names its engine set ("engines": "plain"); a set lists its engines and the ratios
// its table shows. An engine's "options" go into every specd request's options; a
// llama-server engine's "args" are added to its command line (both shown in the report).
// Engines with the same "server" share one process (otherwise each engine has its own). A cell with "format" (a key of "schemas") sends that schema to every engine
// of its set that is not "constrained": false, and each such answer is checked against it.
// A cell with "images" ([[width, height], ...]) sends that many generated PNGs (different
// pixels every run) to specd engines, whose model then has the file's "projector"; its table
// adds prompt tokens/s, tokens per image, encode time per image and resident memory.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSpecd, startLlamaServer, generate, residentMiB } from './servers.mjs';
import { b64, png } from '../tests/e2e/images.mjs';
import { summarise, tables, markdown, shortenPaths, svg, write } from './report.mjs';
import { check } from './schema.mjs';

function args() {
  const a = process.argv.slice(2);
  const out = { spec: a[0] };
  for (let i = 1; i < a.length; i += 2) out[a[i].replace(/^--/, '')] = a[i + 1];
  for (const k of ['spec', 'specd', 'llama-server', 'models', 'out']) {
    if (!out[k]) throw new Error(`missing --${k} (see the header of bench/run.mjs)`);
  }
  return out;
}

// The cell file with the command line's overrides applied, checked for dangling names.
function load(opt) {
  const spec = JSON.parse(fs.readFileSync(opt.spec, 'utf8'));
  if (opt.runs) spec.runs = Number(opt.runs);
  spec.allCells = spec.cells;
  if (opt.cells) {
    const want = opt.cells.split(',');
    for (const n of want) if (!spec.cells.some((c) => c.name === n)) throw new Error(`no cell "${n}"`);
    spec.cells = spec.cells.filter((c) => want.includes(c.name));
  }
  if (opt['num-predict']) for (const c of spec.cells) c.num_predict = Number(opt['num-predict']);
  for (const c of spec.cells) {
    if (!spec.pairs[c.pair]) throw new Error(`cell ${c.name}: no pair "${c.pair}"`);
    if (!spec.engine_sets[c.engines]) throw new Error(`cell ${c.name}: no engine set "${c.engines}"`);
    if (c.format !== undefined && !spec.schemas?.[c.format]) throw new Error(`cell ${c.name}: no schema "${c.format}"`);
    if (c.images && (!spec.projector || spec.engine_sets[c.engines].engines.some((e) => e.kind !== 'specd'))) {
      throw new Error(`cell ${c.name}: images need a "projector" and an engine set of specd engines`);
    }
  }
  return spec;
}

// "pair / engine" -> the command line that started it (and the threads specd chose).
const commandLines = new Map();

async function startServers(engines, opt, spec, pairName, storeDir) {
  const target = path.resolve(opt.models, `${pairName}-target.gguf`);
  const draft = path.resolve(opt.models, `${pairName}-draft.gguf`);
  const byServer = new Map();
  const servers = [];
  try {
    for (const engine of engines) {
      const shared = engine.server !== undefined ? byServer.get(engine.server) : undefined;
      if (shared) { servers.push(shared); continue; }
      const s = engine.kind === 'specd'
        ? await startSpecd({ bin: opt.specd, modelsDir: storeDir, name: `bench-${pairName}`, target, draft,
                             threads: engine.num_thread, numCtx: spec.num_ctx,
                             mmproj: spec.projector ? path.resolve(opt.models, 'mmproj.gguf') : undefined })
        : await startLlamaServer({ bin: opt['llama-server'], target, draft, draftNMax: engine.draft_n_max,
                                   draftNMin: engine.draft_n_min, threads: spec.threads ?? os.cpus().length,
                                   numCtx: spec.num_ctx, extraArgs: engine.args ?? [] });
      commandLines.set(`${pairName} / ${engine.name}`, shortenPaths(s.commandLine) +
        (engine.options ? `  (request options ${JSON.stringify(engine.options)})` : '') +
        (s.threads ? `  -> threads ${JSON.stringify(s.threads)}` : ''));
      if (engine.server !== undefined) byServer.set(engine.server, s);
      servers.push(s);
    }
  } catch (e) {
    await stopAll(servers);
    throw e;
  }
  return servers;
}

async function stopAll(servers) {
  for (const s of new Set(servers)) await s.stop();
}

const counters = ['drafted', 'accepted', 'forced', 'forced_accepted', 'grammar_truncated', 'grammar_truncated_rounds', 'grammar_no_legal_draft'];

async function runCell(spec, cell, engines, servers) {
  const schema = cell.format !== undefined ? spec.schemas[cell.format] : undefined;
  const constrained = (e) => schema !== undefined && e.constrained !== false;
  // "{run}" in a prompt is replaced by the run's number: each run asks a different question
  // (all engines the same one), so nothing a server learned from an earlier run's identical
  // answer (specd's forced-text spelling, any prompt cache) makes a later run look faster.
  // Images are new pixels every run and for every engine: engines may share a server, and an
  // image already in its KV would not be evaluated again.
  const images = (run, e) => cell.images?.map(([w, h], k) => b64(png(w, h, (run * engines.length + engines.indexOf(e)) * 16 + k)));
  const request = (e, run) => ({ prompt: cell.prompt.replaceAll('{run}', String(run)), numPredict: cell.num_predict,
                                 draft: e.draft, schema: constrained(e) ? schema : undefined, images: images(run, e),
                                 options: e.options });
  const acc = engines.map(() => ({ tps: [], tokens: [], sums: {}, answers: [], text: null, prompt_tps: [], encode_ms: [],
                                   image_tokens: [] }));
  for (let i = 0; i < servers.length; ++i) await generate(servers[i], request(engines[i], 0)); // warm-up
  // Runs interleave (run 1 of each engine, then run 2 ...), so a slow minute on a shared
  // machine hits all engines alike, and the order rotates from run to run: an engine that
  // always ran right after the same other one measured up to ~10% apart from its place in
  // the order alone (bench/allocator.mjs has the measurement). With as many runs as engines
  // every engine takes every place once.
  for (let run = 0; run < spec.runs; ++run) {
    for (let k = 0; k < servers.length; ++k) {
      const i = (k + run) % servers.length;
      const r = await generate(servers[i], request(engines[i], run + 1));
      const a = acc[i];
      a.tps.push(r.tps);
      a.tokens.push(r.tokens);
      // A counter the server does not report stays null (shown as "-").
      for (const k of counters) if (r[k] !== null && r[k] !== undefined) a.sums[k] = (a.sums[k] ?? 0) + r[k];
      a.text = r.text;
      if (r.vision) {
        a.prompt_tps.push(r.prompt_tps);
        a.encode_ms.push(r.vision.encode_duration / 1e6 / r.vision.images);
        a.image_tokens.push(r.vision.image_tokens / r.vision.images);
      }
      if (constrained(engines[i])) {
        a.answers.push(r.done_reason === 'length' ? { outcome: 'length' }
          : r.text === null ? { outcome: 'unreadable' }
          : ((err) => (err ? { outcome: 'invalid', error: err } : { outcome: 'valid' }))(check(schema, r.text)));
      }
    }
  }
  const rss = [];
  for (const s of servers) rss.push(cell.images ? await residentMiB(s) : null);
  return engines.map((engine, i) => {
    const a = acc[i];
    const perRun = Object.fromEntries(counters.map((k) => [k, a.sums[k] !== undefined ? a.sums[k] / spec.runs : null]));
    const tally = (o) => a.answers.filter((x) => x.outcome === o).length;
    console.error(`${cell.name.padEnd(16)} ${engine.name.padEnd(24)} ${a.tps.map((t) => t.toFixed(1)).join(' ')} tok/s`);
    return {
      cell: cell.name, engine: engine.name, tps: a.tps, tokens: a.tokens,
      accept_rate: a.sums.drafted > 0 ? a.sums.accepted / a.sums.drafted : null,
      ...(cell.images ? { vision: { prompt_tps: a.prompt_tps, encode_ms: a.encode_ms, image_tokens: a.image_tokens,
                                    images: cell.images.length, rss_mib: rss[i] } } : {}),
      ...(schema !== undefined ? {
        counters: perRun,
        answers: constrained(engine) ? { valid: tally('valid'), invalid: tally('invalid'), length: tally('length'),
                                         unreadable: tally('unreadable'),
                                         errors: [...new Set(a.answers.filter((x) => x.error).map((x) => x.error))] } : null,
        last_text: a.text,
      } : {}),
    };
  });
}

async function main() {
  const opt = args();
  const spec = load(opt);
  const results = [];
  const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-bench-'));
  try {
    for (const pairName of Object.keys(spec.pairs)) {
      for (const [setName, set] of Object.entries(spec.engine_sets)) {
        const cells = spec.cells.filter((c) => c.pair === pairName && c.engines === setName);
        if (cells.length === 0) continue;
        // Every engine of a set is up at once, for all its cells of this pair.
        const servers = await startServers(set.engines, opt, spec, pairName, storeDir);
        try {
          for (const cell of cells) results.push(...await runCell(spec, cell, set.engines, servers));
        } finally {
          await stopAll(servers);
        }
      }
    }
  } finally {
    fs.rmSync(storeDir, { recursive: true, force: true });
  }
  let earlier = null;
  let keptCells = new Set();
  if (opt.keep) {
    earlier = JSON.parse(fs.readFileSync(opt.keep, 'utf8'));
    const ran = new Set(spec.cells.map((c) => c.name));
    const kept = earlier.results.filter((r) => !ran.has(r.cell) && spec.allCells.some((c) => c.name === r.cell));
    results.push(...kept);
    keptCells = new Set(kept.map((r) => r.cell));
    spec.cells = spec.allCells.filter((c) => ran.has(c.name) || keptCells.has(c.name));
    for (const [k, v] of Object.entries(earlier.meta.engines)) {
      const [pairName, engineName] = k.split(' / ');
      const used = spec.cells.some((c) => keptCells.has(c.name) && c.pair === pairName &&
                                         spec.engine_sets[c.engines].engines.some((e) => e.name === engineName));
      if (used && !commandLines.has(k)) commandLines.set(k, v);
    }
  }
  const rows = summarise(spec, results);
  console.log(tables(spec, rows));
  fs.mkdirSync(opt.out, { recursive: true });
  const extra = ['cells', 'runs', 'num-predict'].filter((k) => opt[k]).map((k) => ` --${k} ${opt[k]}`).join('');
  let command = `scripts/bench.sh${extra || path.basename(opt.spec) !== 'speculation.json' ? ` ${opt.spec}${extra}` : ''}`;
  if (earlier) command += ` --keep ${path.basename(opt.keep)}; ${[...keptCells].join(', ')} measured ${earlier.meta.date} by "${earlier.meta.command}"`;
  const meta = { machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}`, date: new Date().toISOString().slice(0, 10),
                 command, engines: Object.fromEntries(commandLines) };
  write(path.join(opt.out, `${spec.name}.md`), markdown(spec, rows, meta));
  write(path.join(opt.out, `${spec.name}.svg`), svg(spec, rows));
  write(path.join(opt.out, `${spec.name}.json`), JSON.stringify({ meta, results, rows }, null, 2));
  console.log(`\nwrote ${path.join(opt.out, spec.name)}.{md,svg,json}`);
}

main().catch((e) => { console.error(e.stack || e.message); process.exit(1); });
