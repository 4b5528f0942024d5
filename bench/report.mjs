// The benchmark's outputs: a table on the terminal, a markdown file and an SVG bar chart.
import fs from 'node:fs';

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

// results: [{cell, engine, tps: [..], accept_rate}] -> rows with medians and ratios.
export function summarise(spec, results) {
  const rows = [];
  for (const cell of spec.cells) {
    const row = { cell: cell.name, pair: cell.pair, agreement: spec.pairs[cell.pair].agreement, engines: {} };
    for (const e of spec.engines) {
      const r = results.find((x) => x.cell === cell.name && x.engine === e.name);
      if (r) row.engines[e.name] = { tps: median(r.tps), accept: r.accept_rate };
    }
    // Ratios are medians of per-run ratios: the engines' runs interleave, so run i of each
    // engine saw the same minute of a shared machine.
    const runs = (name) => results.find((x) => x.cell === cell.name && x.engine === name)?.tps;
    const pairedRatio = (a, b) => {
      const x = runs(a), y = runs(b);
      return x && y ? median(x.map((v, i) => v / y[i])) : NaN;
    };
    row.on_vs_off = pairedRatio('specd spec-on', 'specd spec-off');
    const vsLlama = spec.engines.filter((e) => e.kind === 'llama-server' && e.draft_n_max > 0)
      .map((e) => pairedRatio('specd spec-on', e.name)).filter(Number.isFinite);
    row.on_vs_llama_best = vsLlama.length ? Math.min(...vsLlama) : NaN;
    rows.push(row);
  }
  return rows;
}

export function table(spec, rows) {
  const names = spec.engines.map((e) => e.name);
  const head = ['cell', 'agree', ...names, 'on/off', 'on/llama-best'];
  const lines = [head];
  for (const r of rows) {
    lines.push([r.cell, r.agreement.toFixed(2),
      ...names.map((n) => r.engines[n] ? r.engines[n].tps.toFixed(1) : '-'),
      r.on_vs_off.toFixed(2) + 'x', Number.isFinite(r.on_vs_llama_best) ? r.on_vs_llama_best.toFixed(2) + 'x' : '-']);
  }
  const widths = head.map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
  return lines.map((l) => l.map((c, i) => String(c).padStart(widths[i])).join('  ')).join('\n');
}

export function markdown(spec, rows, meta) {
  const names = spec.engines.map((e) => e.name);
  let md = `# Benchmark: ${spec.name}\n\n${spec.about}\n\n`;
  md += `Decode tokens/s (median of ${spec.runs} interleaved runs; in brackets the draft acceptance rate). ` +
        `Ratios are medians of per-run ratios; "on/llama best" compares with the better of llama-server's fixed depths.\n`;
  md += `Machine: ${meta.machine}. Date: ${meta.date}. Command: \`${meta.command}\`.\n\n`;
  md += `| cell | agreement | ${names.join(' | ')} | on/off | on/llama best |\n`;
  md += `|${'---|'.repeat(names.length + 4)}\n`;
  for (const r of rows) {
    const cells = names.map((n) => {
      const e = r.engines[n];
      if (!e) return '-';
      return e.accept !== undefined && e.accept !== null ? `${e.tps.toFixed(1)} (${(e.accept * 100).toFixed(0)}%)` : e.tps.toFixed(1);
    });
    md += `| ${r.cell} | ${r.agreement.toFixed(2)} | ${cells.join(' | ')} | ${r.on_vs_off.toFixed(2)}x | ` +
          `${Number.isFinite(r.on_vs_llama_best) ? r.on_vs_llama_best.toFixed(2) + 'x' : '-'} |\n`;
  }
  return md;
}

// Grouped bars: one group per cell, one bar per engine.
export function svg(spec, rows) {
  const names = spec.engines.map((e) => e.name);
  const colors = ['#1b7837', '#a6dba0', '#2166ac', '#67a9cf', '#bababa', '#d6604d'];
  const max = Math.max(...rows.flatMap((r) => names.map((n) => r.engines[n]?.tps ?? 0)));
  const W = 160 * rows.length + 220, H = 320, base = 270, scale = 220 / max, bw = 22;
  let s = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">\n`;
  s += `<text x="10" y="16" font-size="13">${spec.name}: decode tokens/s</text>\n`;
  rows.forEach((r, gi) => {
    const x0 = 40 + gi * 160;
    names.forEach((n, i) => {
      const v = r.engines[n]?.tps ?? 0;
      const h = v * scale;
      s += `<rect x="${x0 + i * bw}" y="${base - h}" width="${bw - 3}" height="${h}" fill="${colors[i % colors.length]}"><title>${n}: ${v.toFixed(1)}</title></rect>\n`;
    });
    s += `<text x="${x0}" y="${base + 16}">${r.cell}</text>\n`;
  });
  names.forEach((n, i) => {
    s += `<rect x="${W - 170}" y="${30 + i * 16}" width="10" height="10" fill="${colors[i % colors.length]}"/>` +
         `<text x="${W - 155}" y="${39 + i * 16}">${n}</text>\n`;
  });
  return s + '</svg>\n';
}

export function write(path, text) { fs.writeFileSync(path, text); }
