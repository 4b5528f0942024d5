// The memory soak's workload and measurements, shared by the short version in the default
// suite (memory.test.mjs) and the long one (soak.mjs, `scripts/soak.sh`).
//
// Each request is one of a fixed mix: generate or chat; answers that end on a stop string
// or on num_predict; speculation on (the model has a draft); format off, "json" or a schema;
// prompts from a few tokens to a few hundred, some continuing an earlier conversation (so
// the prompt cache is used, evicted and restored). After every request the server's ledger
// is read from /api/debug/memory. With a vision model, every third request goes to it with an
// image of its own size (over 60 sizes in 300 requests).
import { b64, png } from './images.mjs';

const WORDS = ['river', 'stone', 'lamp', 'orbit', 'maple', 'signal', 'copper', 'harbour', 'violet', 'engine',
  'paper', 'winter', 'falcon', 'garden', 'crystal', 'thunder'];

const SCHEMA = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 12 }, count: { type: 'integer', minimum: 0, maximum: 99 } },
  required: ['name', 'count'],
};

function words(seed, n) {
  const out = [];
  for (let i = 0; i < n; ++i) out.push(WORDS[(seed * 7 + i * 3 + ((i * i) % 5)) % WORDS.length]);
  return out.join(' ');
}

/** The size of the image request i carries: (16..215) x (16..165), rarely the same twice. */
export function soakImageSize(i) {
  return [16 + ((i * 37) % 200), 16 + ((i * 53) % 150)];
}

/** The i-th request of the mix, as [method, body] for the ollama client. */
export function soakRequest(i, model, visionModel) {
  const withImage = visionModel && i % 3 === 2;
  if (withImage) model = visionModel;
  const conversation = i % 5; // five recurring topics: shared prefixes across requests
  const length = [4, 40, 120, 260][i % 4];
  const stopped = i % 3 === 0;
  const format = [undefined, 'json', SCHEMA][Math.floor(i / 2) % 3];
  const options = { temperature: 0, num_predict: 8 + (i % 5) * 10, seed: i };
  // A stop string the random-weight fixtures produce within a few tokens.
  if (stopped) options.stop = ['e', 'a'];
  const body = { model, stream: i % 4 === 1, options };
  if (format) body.format = format;
  const prefix = `Topic ${conversation}: ${words(conversation, 60)}.`;
  const images = withImage ? [b64(png(...soakImageSize(i), i))] : undefined;
  if (i % 2 === 0) {
    return ['generate', { ...body, prompt: `${prefix} ${words(i, length)}`, ...(images ? { images } : {}) }];
  }
  const messages = [
    { role: 'system', content: prefix },
    { role: 'user', content: words(i, length), ...(images ? { images } : {}) },
  ];
  if (i % 4 === 3) messages.push({ role: 'assistant', content: words(i + 1, 12) }, { role: 'user', content: 'and then?' });
  return ['chat', { ...body, messages }];
}

/** The final part of an answer: the answer itself, or the last part of a stream. */
export async function drain(result) {
  if (result && typeof result[Symbol.asyncIterator] === 'function') {
    let last;
    for await (const part of result) last = part;
    return last;
  }
  return result;
}

export async function readMemory(url) {
  const r = await fetch(`${url}/api/debug/memory`);
  if (!r.ok) throw new Error(`GET /api/debug/memory: ${r.status}`);
  return r.json();
}

/**
 * Runs `n` requests of the mix against a server, `concurrency` at a time (a wave), calling
 * `onSample(i, memory, final)` for each with the ledger read once its wave has been answered
 * (so between requests: nothing of theirs may still be held).
 */
export async function runSoak({ client, url, model, visionModel, n, onSample, concurrency = 1 }) {
  for (let first = 0; first < n; first += concurrency) {
    const wave = [];
    for (let i = first; i < Math.min(n, first + concurrency); ++i) {
      const [method, body] = soakRequest(i, model, visionModel);
      wave.push((async () => {
        const final = await drain(await client[method](body));
        if (!final || final.done !== true) throw new Error(`request ${i}: no final response`);
        return final;
      })());
    }
    const finals = await Promise.all(wave);
    const mem = await readMemory(url);
    for (let j = 0; j < finals.length; ++j) await onSample(first + j, mem, finals[j]);
  }
}

/** Least-squares slope of ys over their indices (units of y per request). */
export function slope(ys) {
  const n = ys.length;
  if (n < 2) return 0;
  const mx = (n - 1) / 2;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; ++i) {
    sxy += (i - mx) * (ys[i] - my);
    sxx += (i - mx) * (i - mx);
  }
  return sxy / sxx;
}

/** Checks that hold after every request; returns the list of violations (empty: fine). */
export function ledgerViolations(mem) {
  const out = [];
  if (mem.request_buckets_zero !== true) out.push('request-owned reservations are alive between requests');
  for (const b of ['request', 'images']) {
    if (mem.buckets[b] !== 0) out.push(`bucket ${b} holds ${mem.buckets[b]} bytes between requests`);
  }
  const req = mem.owners.request;
  if (req.open !== 0) out.push(`${req.open} request owners still open`);
  const pc = mem.prompt_cache;
  if (pc.bytes > pc.budget_bytes) out.push(`prompt cache ${pc.bytes} bytes over its budget ${pc.budget_bytes}`);
  if (mem.buckets.prompt_cache !== pc.bytes) {
    out.push(`ledger prompt_cache ${mem.buckets.prompt_cache} != cache bytes ${pc.bytes}`);
  }
  for (const r of mem.reservations) {
    if (!r.owner.open) out.push(`reservation of a closed owner: ${JSON.stringify(r)}`);
  }
  return out;
}
