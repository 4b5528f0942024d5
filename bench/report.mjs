// The benchmark's outputs: tables on the terminal, a markdown file and an SVG bar chart,
// one section per engine set. Sets whose cells send a schema get a second table per answer:
// tokens, draft counters, and how many answers matched the schema.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { median } from './stats.mjs';

const fmtRatio = (x) => (Number.isFinite(x) ? x.toFixed(2) + 'x' : '-');
const fmtCount = (x) => (x === null || x === undefined ? '-' : Number.isInteger(x) ? String(x) : x.toFixed(1));
const ratioHead = (r) => (r.target !== undefined ? `${r.name} (>=${r.target})` : r.name);

// results: [{cell, engine, tps: [..], tokens, accept_rate, counters?, answers?}] -> one row
// per cell that ran, with medians and the set's ratios.
export function summarise(spec, results) {
  const rows = [];
  for (const cell of spec.cells) {
    const set = spec.engine_sets[cell.engines];
    const mine = results.filter((x) => x.cell === cell.name);
    if (mine.length === 0) continue;
    const row = { cell: cell.name, pair: cell.pair, agreement: spec.pairs[cell.pair].agreement, set: cell.engines,
                  format: cell.format ?? null, num_predict: cell.num_predict, engines: {}, ratios: {} };
    for (const e of set.engines) {
      const r = mine.find((x) => x.engine === e.name);
      if (r) {
        row.engines[e.name] = { tps: median(r.tps), tps_min: Math.min(...r.tps), tps_max: Math.max(...r.tps),
                                accept: r.accept_rate, tokens: r.tokens ? median(r.tokens) : null,
                                counters: r.counters ?? null, answers: r.answers ?? null,
                                vision: r.vision ? { images: r.vision.images, rss_mib: r.vision.rss_mib,
                                                     prompt_tps: median(r.vision.prompt_tps) ?? NaN,
                                                     encode_ms: median(r.vision.encode_ms) ?? NaN,
                                                     image_tokens: median(r.vision.image_tokens) ?? NaN } : null };
      }
    }
    // Ratios are medians of per-run ratios: the engines' runs interleave, so run i of each
    // engine saw the same minute of a shared machine. Against several engines: the best of them.
    const runs = (name) => mine.find((x) => x.engine === name)?.tps;
    const pairedRatios = (a, b) => {
      const x = runs(a), y = runs(b);
      return x && y ? x.map((v, i) => v / y[i]) : [];
    };
    row.ratio_spread = {};
    for (const q of set.ratios ?? []) {
      const vs = q.b.map((b) => pairedRatios(q.a, b)).filter((r) => r.length > 0 && Number.isFinite(median(r)));
      // Against several engines: the one with the lowest median ratio (the best of them).
      const worst = vs.reduce((w, r) => (w === null || median(r) < median(w) ? r : w), null);
      row.ratios[q.name] = worst ? median(worst) : NaN;
      row.ratio_spread[q.name] = worst ? [Math.min(...worst), Math.max(...worst)] : null;
    }
    rows.push(row);
  }
  return rows;
}

function answers(a, runs) {
  if (!a) return '-';
  const parts = [`${a.valid}/${runs} valid`];
  for (const k of ['length', 'invalid', 'unreadable']) if (a[k] > 0) parts.push(`${a[k]} ${k}`);
  return parts.join(', ');
}

// Both tables of a set as arrays of lines (header first).
function setTables(spec, setName, rows) {
  const set = spec.engine_sets[setName];
  const names = set.engines.map((e) => e.name);
  const ratios = set.ratios ?? [];
  const speed = [['cell', 'agree', ...names, ...ratios.map(ratioHead)]];
  for (const r of rows) {
    speed.push([r.cell, r.agreement.toFixed(2), ...names.map((n) => (r.engines[n] ? r.engines[n].tps.toFixed(1) : '-')),
      ...ratios.map((q) => fmtRatio(r.ratios[q.name]))]);
  }
  const vision = visionTable(rows, names);
  if (!rows.some((r) => r.format)) return { speed, detail: null, vision };
  const detail = [['cell', 'engine', 'tok/s', 'tokens', 'drafted', 'accepted', 'forced', 'forced accepted', 'grammar truncated',
                   'truncated rounds', 'no legal draft', 'answers']];
  for (const r of rows) {
    for (const n of names) {
      const e = r.engines[n];
      if (!e) continue;
      const c = e.counters ?? {};
      detail.push([r.cell, n, e.tps.toFixed(1), String(e.tokens), fmtCount(c.drafted), fmtCount(c.accepted),
        fmtCount(c.forced), fmtCount(c.forced_accepted), fmtCount(c.grammar_truncated), fmtCount(c.grammar_truncated_rounds),
        fmtCount(c.grammar_no_legal_draft), answers(e.answers, spec.runs)]);
    }
  }
  return { speed, detail, vision };
}

// Cells with images: per engine, prompt speed, the images' cost and the memory after the cell.
function visionTable(rows, names) {
  if (!rows.some((r) => Object.values(r.engines).some((e) => e.vision))) return null;
  const t = [['cell', 'engine', 'decode tok/s', 'prompt tok/s', 'images', 'tokens/image', 'encode ms/image', 'RSS after (MiB)']];
  for (const r of rows) {
    for (const n of names) {
      const v = r.engines[n]?.vision;
      if (!v) continue;
      const one = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-'); // a figure the engine does not report
      t.push([r.cell, n, r.engines[n].tps.toFixed(1), one(v.prompt_tps), String(v.images),
        Number.isFinite(v.image_tokens) ? fmtCount(v.image_tokens) : '-', one(v.encode_ms),
        v.rss_mib === null ? '-' : v.rss_mib.toFixed(0)]);
    }
  }
  return t;
}

const byset = (spec, rows) => Object.keys(spec.engine_sets)
  .map((name) => [name, rows.filter((r) => r.set === name)]).filter(([, rs]) => rs.length > 0);

function align(lines) {
  const widths = lines[0].map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
  return lines.map((l) => l.map((c, i) => String(c).padStart(widths[i])).join('  ')).join('\n');
}

export function tables(spec, rows) {
  return byset(spec, rows).map(([name, rs]) => {
    const { speed, detail, vision } = setTables(spec, name, rs);
    return `[${name}]\n${align(speed)}${detail ? `\n\n${align(detail)}` : ''}${vision ? `\n\n${align(vision)}` : ''}`;
  }).join('\n\n');
}

// Absolute paths of this machine stay out of the reports: a model file by its name.
// Paths of the machine that ran a benchmark down to their file names, for the reports.
export const shortenPaths = (line) => line.replace(/(^|[\s=])\/\S*\/([^/\s]+)/g, '$1$2');

function mdTable(lines) {
  return [`| ${lines[0].join(' | ')} |`, `|${'---|'.repeat(lines[0].length)}`,
    ...lines.slice(1).map((l) => `| ${l.join(' | ')} |`)].join('\n') + '\n';
}

// The commit this checkout is at, for a report's "specd at commit ..." line (reports already
// written by this bench run do not count as local changes).
export function specdCommit() {
  try {
    const git = (...a) => execFileSync('git', a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/results') ? ' with local changes' : '');
  } catch {
    return 'unknown (not a git checkout)';
  }
}

export function markdown(spec, rows, meta) {
  let md = `# Benchmark: ${spec.name}\n\n${spec.about}\n\n`;
  md += `Machine: ${meta.machine}. Date: ${meta.date}. Command: \`${meta.command}\`.\n`;
  if (meta.how) md += `\n${meta.how}\n`;
  if (meta.engines && Object.keys(meta.engines).length) {
    md += '\nEngines, exactly as started (model paths shortened to their file names):\n\n';
    for (const [name, line] of Object.entries(meta.engines)) md += `- ${name}: \`${shortenPaths(line)}\`\n`;
  }
  for (const [name, rs] of byset(spec, rows)) {
    const set = spec.engine_sets[name];
    const names = set.engines.map((e) => e.name);
    const { speed, detail, vision } = setTables(spec, name, rs);
    md += `\n## ${name}\n\n${set.about ?? ''}\n\n`;
    md += `Decode tokens/s (median of ${spec.runs} interleaved runs after a warm-up; in brackets the draft ` +
          'acceptance rate, then the slowest and fastest run). Ratios are medians of per-run ratios, with their ' +
          'range; a ratio against several engines is against the best of them; a target in brackets is the least ' +
          'the ratio should be.\n\n';
    // The speed table with acceptance rates and spreads in the engine columns.
    rs.forEach((r, i) => {
      names.forEach((n, j) => {
        const e = r.engines[n];
        if (!e) return;
        if (e.accept !== null && e.accept !== undefined) speed[i + 1][2 + j] += ` (${(e.accept * 100).toFixed(0)}%)`;
        speed[i + 1][2 + j] += ` [${e.tps_min.toFixed(1)}-${e.tps_max.toFixed(1)}]`;
      });
      (set.ratios ?? []).forEach((q, k) => {
        const sp = r.ratio_spread?.[q.name];
        if (sp) speed[i + 1][2 + names.length + k] += ` (${sp[0].toFixed(2)}-${sp[1].toFixed(2)})`;
      });
    });
    md += mdTable(speed);
    if (detail) {
      md += `\nPer answer, mean over the runs: generated tokens (median), draft counters as each server reports ` +
            `them ("-": not reported), and the answers checked against the cell's schema ("length": ran into ` +
            `num_predict, ${rs.map((r) => `${r.cell} ${r.num_predict}`).join(', ')}).\n\n`;
      md += mdTable(detail);
      const errors = rs.flatMap((r) => names.flatMap((n) => (r.engines[n]?.answers?.errors ?? [])
        .map((e) => `- ${r.cell}, ${n}: ${e}`)));
      if (errors.length) md += `\nSchema mismatches:\n${errors.join('\n')}\n`;
    }
    if (vision) {
      md += '\nImages (medians): prompt tokens/s over the evaluated prompt (images included), tokens and vision-encoder ' +
            'time per image, and the server\'s resident memory after the cell.\n\n';
      md += mdTable(vision);
    }
  }
  return md;
}

// Grouped bars, one chart per engine set: one group per cell, one bar per engine.
export function svg(spec, rows) {
  const colors = ['#1b7837', '#a6dba0', '#2166ac', '#67a9cf', '#bababa', '#d6604d'];
  const sets = byset(spec, rows);
  const W = 160 * Math.max(...sets.map(([, rs]) => rs.length)) + 220, H = 320;
  let s = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H * sets.length}" font-family="sans-serif" font-size="11">\n`;
  sets.forEach(([name, rs], si) => {
    const names = spec.engine_sets[name].engines.map((e) => e.name);
    const top = si * H, base = top + 270, bw = 22;
    const max = Math.max(...rs.flatMap((r) => names.map((n) => r.engines[n]?.tps ?? 0)));
    const scale = 220 / max;
    s += `<text x="10" y="${top + 16}" font-size="13">${spec.name} (${name}): decode tokens/s</text>\n`;
    rs.forEach((r, gi) => {
      const x0 = 40 + gi * 160;
      names.forEach((n, i) => {
        const v = r.engines[n]?.tps ?? 0;
        const h = v * scale;
        s += `<rect x="${x0 + i * bw}" y="${base - h}" width="${bw - 3}" height="${h}" fill="${colors[i % colors.length]}"><title>${n}: ${v.toFixed(1)}</title></rect>\n`;
      });
      s += `<text x="${x0}" y="${base + 16}">${r.cell}</text>\n`;
    });
    names.forEach((n, i) => {
      s += `<rect x="${W - 170}" y="${top + 30 + i * 16}" width="10" height="10" fill="${colors[i % colors.length]}"/>` +
           `<text x="${W - 155}" y="${top + 39 + i * 16}">${n}</text>\n`;
    });
  });
  return s + '</svg>\n';
}

export function write(path, text) { fs.writeFileSync(path, text); }
