// The benchmark runner: reads a declarative cell file, runs every cell `runs` times on each
// engine of its set (the servers taking turns, one at a time: bench/turns.mjs), prints the
// tables and writes markdown + SVG + JSON.
//   node bench/run.mjs bench/speculation.json --specd build/bin/specd --llama-server PATH
//        --models DIR --out DIR [--cells NAME,NAME] [--runs N] [--num-predict N] [--together]
// --cells, --runs and --num-predict override the file, for smoke runs; --together keeps every
// server of a set up for the whole run (faster; the report says its ratios carry start-order
// bias). --keep EARLIER.json takes the cells this run does not measure from an earlier run's results (with their command
// lines and that run's date and command), so one report covers every cell after some cells
// were measured again.
//
// A cell names its engine set ("engines": "plain"); a set lists its engines and the ratios
// its table shows. An engine's "options" go into every specd request's options; a
// llama-server engine's "args" are added to its command line (both shown in the report).
// Engines with the same "server" share one process (otherwise each engine has its own). A cell with "format" (a key of "schemas") sends that schema to every engine
// of its set that is not "constrained": false, and each such answer is checked against it.
// A cell with "images" ([[width, height], ...]) sends that many generated PNGs to specd
// engines (new pixels every run, the same for every engine of a run unless engines share a
// server), whose model then has its pair's "projector" (or the file's); its table adds prompt
// tokens/s, tokens per image, encode time per image and resident memory. A pair's "num_ctx"
// overrides the file's.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSpecd, startLlamaServer, llamaServerOptions, generate, pairModels, residentMiB } from './servers.mjs';
import { threadChoices, turns, turnsSentence } from './turns.mjs';
import { b64, png } from '../tests/e2e/images.mjs';
import { summarise, tables, markdown, shortenPaths, specdCommit, svg, write } from './report.mjs';
import { check } from './schema.mjs';

function args() {
  const a = process.argv.slice(2);
  const out = { spec: a[0] };
  for (let i = 1; i < a.length; ++i) {
    const key = a[i].replace(/^--/, '');
    if (key === 'together') { out.together = true; continue; } // the only flag without a value
    out[key] = a[++i];
  }
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
    if (c.images && !(spec.pairs[c.pair].projector ?? spec.projector)) {
      throw new Error(`cell ${c.name}: images need a "projector"`);
    }
  }
  return spec;
}

// "pair / engine" -> the command line that started it (and the threads specd chose).
const commandLines = new Map();

// One server for `engine` (and the engines that share it).
function startServer(engine, opt, spec, pairName, storeDir) {
  const pair = spec.pairs[pairName];
  const { target, draft } = pairModels(opt.models, pairName, pair);
  const numCtx = pair.num_ctx ?? spec.num_ctx;
  const mmproj = pair.projector ? `${pairName}-mmproj.gguf` : spec.projector ? 'mmproj.gguf' : undefined;
  return engine.kind === 'specd'
    ? startSpecd({ bin: opt.specd, modelsDir: storeDir, name: `bench-${pairName}`, target, draft,
                   threads: engine.num_thread, numCtx, mmproj: mmproj && path.resolve(opt.models, mmproj) })
    : startLlamaServer({ bin: opt['llama-server'], target, draft, draftNMax: engine.draft_n_max,
                         draftNMin: engine.draft_n_min, specType: engine.spec_type, threads: spec.threads ?? os.cpus().length,
                         numCtx, extraArgs: engine.args ?? [],
                         // Its projector only where the engine set sends images (`"vision": true`).
                         mmproj: engine.vision && mmproj ? path.resolve(opt.models, mmproj) : undefined });
}

// The engines of a set by server process: engines with the same "server" share one, every
// other engine has its own. Returns lists of engine indices.
function serverGroups(engines) {
  const groups = [];
  const byName = new Map();
  engines.forEach((e, i) => {
    if (e.server === undefined) { groups.push([i]); return; }
    if (!byName.has(e.server)) { byName.set(e.server, groups.length); groups.push([]); }
    groups[byName.get(e.server)].push(i);
  });
  return groups;
}

const counters = ['drafted', 'accepted', 'forced', 'forced_accepted', 'grammar_truncated', 'grammar_truncated_rounds', 'grammar_no_legal_draft'];

// One cell's requests and what they measured, engine by engine.
function cellRuns(spec, cell, engines) {
  const schema = cell.format !== undefined ? spec.schemas[cell.format] : undefined;
  const constrained = (e) => schema !== undefined && e.constrained !== false;
  // "{run}" in a prompt is replaced by the run's number: each run asks a different question
  // (all engines the same one), so nothing a server learned from an earlier run's identical
  // answer (specd's forced-text spelling, any prompt cache) makes a later run look faster.
  // Images are new pixels every run, the same for every engine of a run: how well a drafter
  // guesses a random-weight model's answer changes more from one image to the next than
  // between engines (the EAGLE3 pair at agreement 0.9 answered one scene request at 54-93
  // tok/s over eight images, spec-off at 37-52), so engines given different images compare
  // images. Engines that share a server get different pixels each (an image already in its
  // KV or prompt cache would not be evaluated again): engines compared on images get servers
  // of their own.
  const groups = serverGroups(engines);
  const widest = Math.max(...groups.map((g) => g.length));
  const inGroup = (e) => groups.find((g) => g.includes(engines.indexOf(e))).indexOf(engines.indexOf(e));
  const images = (run, e) => cell.images?.map(([w, h], k) => b64(png(w, h, (run * widest + inGroup(e)) * 16 + k)));
  const request = (e, run) => ({ prompt: cell.prompt.replaceAll('{run}', String(run)), numPredict: cell.num_predict,
                                 draft: e.draft, schema: constrained(e) ? schema : undefined, images: images(run, e),
                                 options: e.options });
  const acc = engines.map(() => ({ tps: [], tokens: [], sums: {}, answers: [], text: null, prompt_tps: [], encode_ms: [],
                                   image_tokens: [], rss: null }));
  return {
    // A freshly started server's first request (graph allocation, thread pools): run 0's
    // question, not measured.
    warmUp: (server, i) => generate(server, request(engines[i], 0)),
    async measure(server, i, run) {
      const r = await generate(server, request(engines[i], run + 1));
      const a = acc[i];
      a.tps.push(r.tps);
      a.tokens.push(r.tokens);
      // A counter the server does not report stays null (shown as "-").
      for (const k of counters) if (r[k] !== null && r[k] !== undefined) a.sums[k] = (a.sums[k] ?? 0) + r[k];
      a.text = r.text;
      if (cell.images) {
        // llama-server reports its prompt speed, not what its images cost (shown as "-").
        if (Number.isFinite(r.prompt_tps)) a.prompt_tps.push(r.prompt_tps);
        if (r.vision) {
          a.encode_ms.push(r.vision.encode_duration / 1e6 / r.vision.images);
          a.image_tokens.push(r.vision.image_tokens / r.vision.images);
        }
        a.rss = await residentMiB(server); // the last run's reading is reported
      }
      if (constrained(engines[i])) {
        a.answers.push(r.done_reason === 'length' ? { outcome: 'length' }
          : r.text === null ? { outcome: 'unreadable' }
          : ((err) => (err ? { outcome: 'invalid', error: err } : { outcome: 'valid' }))(check(schema, r.text)));
      }
    },
    results: () => engines.map((engine, i) => {
      const a = acc[i];
      const perRun = Object.fromEntries(counters.map((k) => [k, a.sums[k] !== undefined ? a.sums[k] / spec.runs : null]));
      const tally = (o) => a.answers.filter((x) => x.outcome === o).length;
      console.error(`${cell.name.padEnd(16)} ${engine.name.padEnd(24)} ${a.tps.map((t) => t.toFixed(1)).join(' ')} tok/s`);
      return {
        cell: cell.name, engine: engine.name, tps: a.tps, tokens: a.tokens,
        accept_rate: a.sums.drafted > 0 ? a.sums.accepted / a.sums.drafted : null,
        ...(cell.images ? { vision: { prompt_tps: a.prompt_tps, encode_ms: a.encode_ms, image_tokens: a.image_tokens,
                                      images: cell.images.length, rss_mib: a.rss } } : {}),
        ...(schema !== undefined ? {
          counters: perRun,
          answers: constrained(engine) ? { valid: tally('valid'), invalid: tally('invalid'), length: tally('length'),
                                           unreadable: tally('unreadable'),
                                           errors: [...new Set(a.answers.filter((x) => x.error).map((x) => x.error))] } : null,
          last_text: a.text,
        } : {}),
      };
    }),
  };
}

// Every cell of one pair and engine set, `spec.runs` times. Runs interleave (run 1 of every
// engine, then run 2 ...), so a slow minute on a shared machine hits all engines alike, and
// the servers take turns (bench/turns.mjs): one at a time unless --together, in an order that
// rotates from run to run (an engine that always ran right after the same other one measured
// up to ~10% apart from its place in the order alone). Engines sharing a server rotate too.
async function measureSet(opt, spec, pairName, set, cells, storeDir) {
  const groups = serverGroups(set.engines);
  const t = turns(groups.map((g) => () => startServer(set.engines[g[0]], opt, spec, pairName, storeDir)),
                  { together: opt.together });
  const runsOf = cells.map((cell) => cellRuns(spec, cell, set.engines));
  try {
    for (let run = 0; run < spec.runs; ++run) {
      await t.visit(run, async (g, server, fresh) => {
        const members = groups[g];
        if (fresh) for (const i of members) await runsOf[0].warmUp(server, i);
        for (const c of runsOf) {
          for (let k = 0; k < members.length; ++k) await c.measure(server, members[(k + run) % members.length], run);
        }
      });
      console.error(`${pairName} / ${Object.keys(spec.engine_sets).find((n) => spec.engine_sets[n] === set)}: run ${run + 1}/${spec.runs}`);
    }
  } finally {
    await t.close();
  }
  groups.forEach((members, g) => {
    for (const i of members) {
      const engine = set.engines[i];
      commandLines.set(`${pairName} / ${engine.name}`, shortenPaths(t.starts[g][0].commandLine) +
        (engine.options ? `  (request options ${JSON.stringify(engine.options)})` : '') + threadChoices(t.starts[g]));
    }
  });
  return runsOf.flatMap((c) => c.results());
}

// How the engines were built and run, for the report's opening paragraph.
function howRun(opt) {
  return `specd at commit ${specdCommit()}, with its defaults: thread counts measured at load (shown after each command ` +
    'line, as /api/ps gave them after the load) and weights read into memory (Ollama\'s default for CPU loads). ' +
    `llama-server is built by \`scripts/llama.sh server\` from the same pinned tree with ${llamaServerOptions(opt['llama-server'])} ` +
    '(OpenMP on, shared libraries; only its tools narrowed to llama-server) and started as its users start it: ' +
    '`-t` the machine\'s CPU count (the count specd may use), draft threads, n-min and slots left at their defaults, ' +
    `weights mapped from the file (its default). ${turnsSentence(Boolean(opt.together))}`;
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
        results.push(...await measureSet(opt, spec, pairName, set, cells, storeDir));
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
                 command, how: howRun(opt), engines: Object.fromEntries(commandLines) };
  write(path.join(opt.out, `${spec.name}.md`), markdown(spec, rows, meta));
  write(path.join(opt.out, `${spec.name}.svg`), svg(spec, rows));
  write(path.join(opt.out, `${spec.name}.json`), JSON.stringify({ meta, results, rows }, null, 2));
  console.log(`\nwrote ${path.join(opt.out, spec.name)}.{md,svg,json}`);
}

main().catch((e) => { console.error(e.stack || e.message); process.exit(1); });
