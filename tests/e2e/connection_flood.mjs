// Idle and slowloris connections against a server, and how it answers meanwhile: used by
// connections.test.mjs, and runnable against any server to measure it (docs/api.md):
//
//   node tests/e2e/connection_flood.mjs --port 11434 --pid <server pid> [--idle 200] [--slow 1000]
//        [--hold-ms 6000] [--model tiny]
//
// prints the latency of GET /api/version on fresh connections while the flood is open, the
// time a small generate takes (with --model), the server's thread count before and during,
// and when the flood's connections were closed by the server.
import { connect, rawExchange, threadCount } from './raw_http.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Opens `idle` connections that send nothing and `slow` ones that send a request line and
 * then one header byte every `dripMs`, never finishing the head. Returns {conns, stop()}:
 * each conn {slow, openedAt, closedAt (null while open)}; stop() ends the drip and closes
 * what is still open.
 */
export async function openFlood(port, { idle = 200, slow = 1000, dripMs = 2000, batch = 100 } = {}) {
  const conns = [];
  const open = async (n, isSlow) => {
    for (let i = 0; i < n; i += batch) {
      await Promise.all(Array.from({ length: Math.min(batch, n - i) }, async () => {
        const sock = await connect(port);
        const c = { sock, slow: isSlow, openedAt: Date.now(), closedAt: null };
        sock.on('close', () => { c.closedAt = Date.now(); });
        sock.on('error', () => {});
        sock.on('data', () => {}); // nothing is expected; an answer would not be a head's
        if (isSlow) sock.write('GET /api/version HTTP/1.1\r\n');
        conns.push(c);
      }));
    }
  };
  await open(idle, false);
  await open(slow, true);
  const drip = setInterval(() => {
    for (const c of conns) if (c.slow && c.closedAt === null) c.sock.write('X');
  }, dripMs);
  return {
    conns,
    open: () => conns.filter((c) => c.closedAt === null).length,
    stop() {
      clearInterval(drip);
      for (const c of conns) c.sock.destroy();
    },
  };
}

/** GET /api/version on a fresh connection; resolves {ms, status}. */
export async function timedVersion(port) {
  const t0 = performance.now();
  const r = await rawExchange(port, 'GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    { timeoutMs: 60_000 });
  return { ms: performance.now() - t0, status: r?.status ?? 0 };
}

/** A small non-streamed generate on a fresh connection; resolves {ms, status, json}. */
export async function timedGenerate(port, model, numPredict = 8) {
  const body = JSON.stringify({ model, prompt: 'hi', stream: false, options: { num_predict: numPredict, temperature: 0 } });
  const t0 = performance.now();
  const r = await rawExchange(port, `POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, { timeoutMs: 120_000 });
  return { ms: performance.now() - t0, status: r?.status ?? 0, json: r?.json ?? null };
}

async function main() {
  const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
    return acc;
  }, []));
  const port = Number(args.port);
  const pid = args.pid ? Number(args.pid) : null;
  const holdMs = Number(args['hold-ms'] ?? 6000);
  if (!port) throw new Error('usage: node connection_flood.mjs --port P [--pid PID] [--idle N] [--slow N] [--hold-ms MS] [--model NAME]');
  const before = pid ? await threadCount(pid) : null;
  const t0 = Date.now();
  const flood = await openFlood(port, { idle: Number(args.idle ?? 200), slow: Number(args.slow ?? 1000) });
  console.log(`opened ${flood.conns.length} connections in ${Date.now() - t0} ms`);
  const latencies = [];
  let maxThreads = before;
  while (Date.now() - t0 < holdMs) {
    const v = await Promise.race([timedVersion(port), sleep(10_000).then(() => ({ ms: 10_000, status: 'no answer in 10 s' }))]);
    latencies.push(v.ms);
    if (pid) maxThreads = Math.max(maxThreads, await threadCount(pid).catch(() => 0));
    console.log(`t=${Date.now() - t0} ms: /api/version ${v.status} in ${v.ms.toFixed(1)} ms; open ${flood.open()}` +
      (pid ? `; server threads ${await threadCount(pid).catch(() => '?')}` : ''));
    await sleep(250);
  }
  if (args.model) {
    const g = await Promise.race([timedGenerate(port, args.model), sleep(60_000).then(() => ({ ms: 60_000, status: 'no answer in 60 s' }))]);
    console.log(`generate: ${g.status} in ${g.ms.toFixed(0)} ms, eval_count ${g.json?.eval_count}`);
  }
  const closed = flood.conns.filter((c) => c.closedAt !== null).map((c) => c.closedAt - c.openedAt).sort((a, b) => a - b);
  latencies.sort((a, b) => a - b);
  console.log(`/api/version: ${latencies.length} requests, median ${latencies[latencies.length >> 1].toFixed(1)} ms, ` +
    `max ${latencies[latencies.length - 1].toFixed(1)} ms`);
  if (pid) console.log(`server threads: ${before} before, at most ${maxThreads} during`);
  console.log(`closed by the server: ${closed.length} of ${flood.conns.length}` +
    (closed.length ? ` (after ${closed[0]} to ${closed[closed.length - 1]} ms)` : ''));
  flood.stop();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(() => process.exit(0), (err) => {
    console.error(err);
    process.exit(1);
  });
}
