// The transport under clients that hold connections without finishing requests, and under
// requests framed in ways the server must refuse (docs/api.md, Connections): idle and
// slowloris connections do not starve it and are closed by the head deadline; the caps close
// waiting connections, oldest first, never a busy one; pipelined requests are all answered
// in order; malformed heads are a 400. After each case a normal request succeeds.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { openFlood, timedGenerate, timedVersion } from './connection_flood.mjs';
import { postRaw, runCli, sleep, test, useServer } from './harness.mjs';
import { connect, rawExchange, ResponseReader, threadCount } from './raw_http.mjs';

const MODEL = 'tiny';

async function assertHealthy(srv) {
  const r = await postRaw(`${srv.url}/api/generate`, {
    model: MODEL, prompt: 'hi', stream: false, options: { num_predict: 2, temperature: 0 },
  });
  assert.equal(r.status, 200, `the server must still answer a normal request: ${r.text}`);
  assert.equal(r.body.eval_count, 2);
}

/** Waits (at most `ms`) until `cond()` holds. */
async function waitFor(cond, ms) {
  for (const deadline = Date.now() + ms; !cond() && Date.now() < deadline;) await sleep(20);
  return cond();
}

describe('idle and slowloris connections', () => {
  // A short head deadline keeps the test short (the default is 10 s), with room to open
  // 1,200 connections on a busy machine before the first ones reach it.
  const HEAD_MS = 5000;
  const h = useServer({ env: { SPECD_HEAD_TIMEOUT: `${HEAD_MS}ms` } });

  test('200 idle + 1000 slowloris: /api/version under 1 s, a generate completes, threads bounded, all closed by the head deadline', async () => {
    const pid = h.srv.child.pid;
    await assertHealthy(h.srv); // the model is loaded: its threads are in the count before
    const threadsBefore = await threadCount(pid);

    const t0 = Date.now();
    const flood = await openFlood(h.srv.port, { idle: 200, slow: 1000, dripMs: 2000 });
    try {
      const openMs = Date.now() - t0;
      assert.ok(openMs < HEAD_MS - 2000, `opening 1200 connections took ${openMs} ms: too slow for this test`);
      assert.equal(flood.open(), 1200, 'every connection is open before its deadline');

      const latencies = [];
      let threadsMax = 0;
      for (let i = 0; i < 5; i++) {
        const v = await timedVersion(h.srv.port);
        assert.equal(v.status, 200);
        latencies.push(v.ms);
        threadsMax = Math.max(threadsMax, await threadCount(pid));
      }
      const g = await timedGenerate(h.srv.port, MODEL, 8);
      assert.equal(g.status, 200, JSON.stringify(g.json));
      assert.equal(g.json.done, true);
      assert.equal(g.json.eval_count, 8);
      threadsMax = Math.max(threadsMax, await threadCount(pid));
      const stillOpen = flood.open();

      assert.ok(Math.max(...latencies) < 1000, `/api/version took ${latencies.map((ms) => ms.toFixed(0)).join(', ')} ms`);
      // The flood holds no thread: at most a few handler threads come and go beside it.
      assert.ok(threadsMax <= threadsBefore + 8, `threads: ${threadsBefore} before, ${threadsMax} during the flood`);
      // The answers came while the flood was open, not after the deadline closed it.
      assert.ok(stillOpen > 1000, `only ${stillOpen} connections were still open after the requests`);

      // The deadline is for the whole head: a byte now and then does not extend it.
      assert.ok(await waitFor(() => flood.open() === 0, HEAD_MS + 5000), `${flood.open()} connections still open`);
      const lifetimes = flood.conns.map((c) => c.closedAt - c.openedAt);
      const early = lifetimes.filter((ms) => ms < HEAD_MS - 300);
      const late = lifetimes.filter((ms) => ms > HEAD_MS + 3000);
      assert.deepEqual(early, [], 'closed before the head deadline');
      assert.deepEqual(late, [], 'closed long after the head deadline');
    } finally {
      flood.stop();
    }
    await assertHealthy(h.srv);
  });
});

describe('connection caps', () => {
  // Per client address (the tests all come from 127.0.0.1).
  const CAP = 40;
  const h = useServer({ env: { SPECD_MAX_CONNECTIONS_PER_CLIENT: String(CAP) } });

  test('at the cap, waiting connections are closed oldest first; a busy one and a prompt new one are not', async () => {
    // A long streamed generate holds a connection whose request is being answered.
    const stream = await h.srv.client.generate({
      model: MODEL, prompt: 'Count to one million.', stream: true, options: { num_predict: 100_000, temperature: 0 },
    });
    const it = stream[Symbol.asyncIterator]();
    assert.equal((await it.next()).done, false);

    const waiting = [];
    for (let i = 0; i < CAP + 20; i++) {
      const sock = await connect(h.srv.port);
      const c = { i, closed: false };
      sock.on('close', () => { c.closed = true; });
      sock.on('error', () => {});
      waiting.push({ sock, c });
      await sleep(5); // distinct accept times: "oldest" is well defined
    }
    try {
      // Each connection past the cap closed one waiting connection, the oldest: at least the
      // 20 first (and one more for each other idle connection of this client, such as the
      // client's keep-alive ones).
      await waitFor(() => waiting.filter((w) => w.c.closed).length >= 20, 2000);
      const closed = waiting.filter((w) => w.c.closed).map((w) => w.c.i);
      assert.ok(closed.length >= 20 && closed.length <= 25, `closed: ${closed}`);
      assert.deepEqual(closed, closed.map((_, k) => k), `the oldest are closed first: ${closed}`);

      // New clients that send their head at once are served (each closes another waiting one).
      for (let i = 0; i < 5; i++) assert.equal((await timedVersion(h.srv.port)).status, 200);
      // The streaming answer was never closed for room.
      for (let i = 0; i < 3; i++) {
        const { done, value } = await it.next();
        assert.equal(done, false);
        assert.equal(value.done, false);
      }
    } finally {
      stream.abort();
      for (const w of waiting) w.sock.destroy();
    }
    await assertHealthy(h.srv);
  });
});

describe('pipelining and keep-alive', () => {
  const h = useServer({ env: { SPECD_IDLE_TIMEOUT: '1s' } });

  test('10 requests written at once on one connection are all answered, in order', async () => {
    const gen = (n) => JSON.stringify({ model: MODEL, prompt: 'hi', stream: n < 0, options: { num_predict: Math.abs(n), temperature: 0 } });
    const post = (path, body) => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const get = (path, extra = '') => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;
    const requests = [
      [get('/api/version'), (r) => assert.equal(r.json.version.length > 0, true)],
      [post('/api/generate', gen(3)), (r) => assert.equal(r.json.eval_count, 3)],
      [get('/api/tags'), (r) => assert.match(r.json.models[0].name, /^tiny/)],
      [get('/no/such/route'), (r) => assert.equal(r.status, 404)],
      [post('/api/show', JSON.stringify({ model: MODEL })), (r) => assert.ok(r.json.details)],
      [post('/api/generate', gen(-4)), (r) => {
        // Streamed (chunked): NDJSON lines, the last one done with 4 tokens.
        const lines = r.body.trim().split('\n').map((l) => JSON.parse(l));
        assert.equal(lines.at(-1).eval_count, 4);
      }],
      [post('/api/show', JSON.stringify({ model: 'nope' })), (r) => assert.equal(r.status, 404)],
      [post('/api/generate', gen(1)), (r) => assert.equal(r.json.eval_count, 1)],
      [get('/api/ps'), (r) => assert.equal(r.json.models.length, 1)],
      [get('/api/version', 'Connection: close\r\n'), (r) => assert.equal(r.headers.connection, 'close')],
    ];
    const sock = await connect(h.srv.port);
    try {
      const reader = new ResponseReader(sock);
      sock.write(requests.map(([text]) => text).join(''));
      for (const [i, [, check]] of requests.entries()) {
        const r = await reader.next();
        assert.ok(r, `answer ${i + 1} of ${requests.length} is missing`);
        check(r);
      }
      assert.equal(await reader.next({ timeoutMs: 3000 }), null, 'the connection closes after "Connection: close"');
    } finally {
      sock.destroy();
    }
  });

  test('a keep-alive connection is closed after the idle timeout (SPECD_IDLE_TIMEOUT)', async () => {
    const sock = await connect(h.srv.port);
    try {
      const reader = new ResponseReader(sock);
      sock.write('GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      assert.equal((await reader.next()).status, 200);
      const t0 = Date.now();
      assert.equal(await reader.next({ timeoutMs: 5000 }), null);
      const ms = Date.now() - t0;
      assert.ok(ms > 700 && ms < 3000, `closed after ${ms} ms idle`);
    } finally {
      sock.destroy();
    }
  });
});

describe('malformed request heads', () => {
  const h = useServer();
  const head = (port) => `POST /api/show HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n`;

  test('a bad, negative or conflicting Content-Length, two Host fields, Transfer-Encoding beside Content-Length: 400', async () => {
    const cases = [
      ['Content-Length: -1\r\n\r\n', /Content-Length/],
      ['Content-Length: abc\r\n\r\n', /Content-Length/],
      ['Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}', /Content-Length/],
      ['Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', /Transfer-Encoding/],
      ['Host: evil.example\r\nContent-Length: 2\r\n\r\n{}', /more than one Host/],
    ];
    for (const [rest, phrase] of cases) {
      const r = await rawExchange(h.srv.port, head(h.srv.port) + rest);
      assert.equal(r?.status, 400, `${JSON.stringify(rest)}: ${r?.body}`);
      assert.match(r.json.error, phrase, JSON.stringify(rest));
      assert.match(r.headers['content-type'], /application\/json/);
    }
    await assertHealthy(h.srv);
  });

  test('a head deadline above 15 s is refused at start', async () => {
    const r = await runCli(['serve'], { env: { SPECD_HEAD_TIMEOUT: '20s', SPECD_HOST: '127.0.0.1:1' }, timeoutMs: 10_000 });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /HEAD_TIMEOUT must be above 0 and at most 15s/);
  });
});
