// Grammar cost per operation: runs specd-grammar-cost for every schema of a cell file on
// each vocabulary, and prints (and writes) a table of mean microseconds per operation.
//   node bench/grammar_cost.mjs CELLS.json ANSWERS.json --tool BIN --models DIR --out DIR
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [cellsFile, answersFile, ...rest] = process.argv.slice(2);
const opt = {};
for (let i = 0; i < rest.length; i += 2) opt[rest[i].replace(/^--/, '')] = rest[i + 1];
const cells = JSON.parse(fs.readFileSync(cellsFile, 'utf8'));
const answers = JSON.parse(fs.readFileSync(answersFile, 'utf8'));
const vocabs = ['ggml-vocab-phi-3.gguf', 'ggml-vocab-qwen2.gguf'];
const ops = ['check', 'accept', 'validate4', 'forced_text', 'clone', 'greedy_pick', 'mask'];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'specd-grammar-cost-'));
const rows = [];
for (const [name, schema] of Object.entries(cells.schemas)) {
  if (!(name in answers)) continue;
  const schemaFile = path.join(tmp, `${name}.schema.json`);
  const answerFile = path.join(tmp, `${name}.answer.json`);
  fs.writeFileSync(schemaFile, JSON.stringify(schema));
  fs.writeFileSync(answerFile, JSON.stringify(answers[name]));
  for (const vocab of vocabs) {
    const out = execFileSync(opt.tool, [path.join(opt.models, vocab), schemaFile, answerFile], { encoding: 'utf8' });
    rows.push({ schema: name, vocab, ...JSON.parse(out) });
  }
}
fs.rmSync(tmp, { recursive: true });

const us = (x) => (x < 10 ? x.toFixed(1) : x.toFixed(0));
const lines = [
  '# Grammar cost (µs per operation, mean over every position of a valid answer)',
  '',
  'greedy_pick: the sampler\'s greedy choice under the grammar on random logits (check the best token, search for the best legal one when it is illegal); mask: the full-vocabulary mask it avoids.',
  '',
  `| schema | vocabulary | tokens | grammar bytes | forced positions | ${ops.join(' | ')} | picks searched |`,
  `|---|---|---|---|---|${ops.map(() => '---').join('|')}|---|`,
  ...rows.map((r) => `| ${r.schema} | ${r.vocab.replace('ggml-vocab-', '').replace('.gguf', '')} (${r.n_vocab}) | ${r.positions} | ${r.grammar_bytes} | ${r.forced_positions} | ${ops.map((o) => us(r[o].mean_us)).join(' | ')} | ${r.greedy_picks_searched} |`),
];
console.log(lines.join('\n'));
if (opt.out) {
  fs.mkdirSync(opt.out, { recursive: true });
  fs.writeFileSync(path.join(opt.out, 'grammar-cost.md'), lines.join('\n') + '\n');
  fs.writeFileSync(path.join(opt.out, 'grammar-cost.json'), JSON.stringify(rows, null, 1) + '\n');
}
