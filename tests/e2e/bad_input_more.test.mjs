// Limits on every input, against the real server (the first set of bad requests is in
// bad_input.test.mjs): each case checks the status and the JSON {"error"} message, then that
// a normal request still succeeds. Covered elsewhere and not repeated here: clients that
// disconnect mid-generation (streaming, non-streaming, raw fetch) and SIGTERM mid-stream
// exiting 0 within 10 s are in lifecycle.test.mjs; this file adds a disconnect during the
// prefill and what a request sent after SIGTERM gets.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe } from 'node:test';
import { postRaw, sleep, startServer, test, useServer } from './harness.mjs';
import { b64, jpeg, png } from './images.mjs';
import { ledgerViolations, readMemory } from './soak_workload.mjs';

/** Waits (up to 5 s) until no request owns memory; fails with what is still held. */
async function assertMemoryReleased(srv) {
  let mem;
  for (const deadline = Date.now() + 5000; Date.now() < deadline; await sleep(50)) {
    mem = await readMemory(srv.url);
    if (ledgerViolations(mem).length === 0) return mem;
  }
  assert.deepEqual(ledgerViolations(mem), [], 'the cancelled request\'s memory is released');
  return mem;
}

const h = useServer();
const MODEL = 'tiny';

/** A normal small generate must still succeed. */
async function assertHealthy(srv = h.srv) {
  const r = await postRaw(`${srv.url}/api/generate`, {
    model: MODEL, prompt: 'hi', stream: false, options: { num_predict: 2, temperature: 0 },
  });
  assert.equal(r.status, 200, `the server must still answer a normal request: ${r.text}`);
  assert.equal(r.body.done, true);
  assert.equal(r.body.eval_count, 2);
}

/** Checks a JSON error answer: status, {"error": string} matching `phrase`, JSON content type. */
function assertError(r, status, phrase, what) {
  const text = r.text ?? JSON.stringify(r.body);
  assert.equal(r.status, status, `${what}: got ${r.status} ${text.slice(0, 300)}`);
  assert.ok(r.body && typeof r.body === 'object', `${what}: the body must be JSON: ${text.slice(0, 300)}`);
  assert.equal(typeof r.body.error, 'string', `${what}: the body must have an error string: ${text.slice(0, 300)}`);
  assert.match(r.body.error, phrase, what);
  if (r.headers) assert.match(r.headers.get?.('content-type') ?? r.headers['content-type'] ?? '', /application\/json/);
  return r.body.error;
}

/** Sends `body` (object, string or bytes) to `path`, expects a JSON error, then a healthy server. */
async function expectError(path, body, status, phrase, { method = 'POST', srv = h.srv } = {}) {
  const r = await postRaw(`${srv.url}${path}`, body, { method });
  const error = assertError(r, status, phrase, `${method} ${path} ${typeof body === 'string' ? body.slice(0, 80) : JSON.stringify(body)?.slice(0, 80)}`);
  await assertHealthy(srv);
  return error;
}

/**
 * Writes `request` (text or bytes) on a fresh connection and reads one answer (its head, then
 * Content-Length bytes), or until the server closes the connection: for what fetch cannot
 * send (oversized headers, a body that never comes). Resolves {status, headers: {name:
 * value}, body (parsed or null), text}; status 0 when the connection closed unanswered.
 */
function rawRequest(port, request, { timeoutMs = 15_000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let done = false;
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      const text = buf.toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (!m || end < 0) return resolve({ status: 0, headers: {}, body: null, text });
      const headers = {};
      for (const line of text.slice(0, end).split('\r\n').slice(1)) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      let body = null;
      try {
        body = JSON.parse(buf.subarray(Buffer.byteLength(text.slice(0, end + 4))).toString('utf8'));
      } catch {
        /* not JSON */
      }
      resolve({ status: Number(m[1]), headers, body, text });
    };
    sock.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      // A refusal that closes the connection lingers a moment for unread input first: stop
      // at the answer's end.
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const len = /\r\ncontent-length: *(\d+)/i.exec(buf.subarray(0, end).toString('latin1'));
      if (buf.length >= end + 4 + (len ? Number(len[1]) : 0)) {
        buf = buf.subarray(0, end + 4 + (len ? Number(len[1]) : 0));
        finish();
      }
    });
    sock.on('error', () => {}); // a reset after the answer: judged by what arrived
    sock.on('close', finish);
    sock.write(request);
  });
}

const host = (srv) => `Host: 127.0.0.1:${srv.port}\r\nConnection: close\r\n`;
const gen = (extra) => JSON.stringify({ model: MODEL, prompt: 'hi', stream: false, ...extra });
const user = [{ role: 'user', content: 'hi' }];

describe('HTTP limits', () => {
  test('a body over the default limit (64 MiB by Content-Length) is 413 before it is sent', async () => {
    const r = await rawRequest(h.srv.port, `POST /api/generate HTTP/1.1\r\n${host(h.srv)}` +
      `Content-Type: application/json\r\nContent-Length: ${70 << 20}\r\n\r\n`);
    assertError(r, 413, /request body is larger than 67108864 bytes/, 'Content-Length 70 MiB');
    await assertHealthy();
  });

  test('Expect: 100-continue with an oversized body is refused before the upload', async () => {
    const r = await rawRequest(h.srv.port, `POST /api/chat HTTP/1.1\r\n${host(h.srv)}` +
      `Content-Length: 1000000000\r\nExpect: 100-continue\r\n\r\n`);
    assert.doesNotMatch(r.text, /^HTTP\/1\.1 100/, 'no 100 Continue for a body over the limit');
    assertError(r, 413, /larger than/, 'Expect: 100-continue, 1 GB');
    await assertHealthy();
  });

  test('more than 100 header fields: 400 with a JSON error naming the limit', async () => {
    let headers = '';
    for (let i = 0; i < 150; i++) headers += `X-Filler-${i}: x\r\n`;
    const r = await rawRequest(h.srv.port, `GET /api/version HTTP/1.1\r\n${host(h.srv)}${headers}\r\n`);
    assertError(r, 400, /at most 100 header fields/, '150 headers');
    await assertHealthy();
  });

  test('a header line over 8192 bytes (and one over 32 KiB): 400 with a JSON error', async () => {
    for (const size of [9000, 40_000]) {
      const r = await rawRequest(h.srv.port, `GET /api/tags HTTP/1.1\r\n${host(h.srv)}X-Big: ${'a'.repeat(size)}\r\n\r\n`);
      assertError(r, 400, /header.*8192 bytes/, `a ${size}-byte header`);
    }
    await assertHealthy();
  });

  test('a 30 kB URI is routed (404 JSON); one over 32 KiB is 414, a head over 64 KiB 431', async () => {
    const routed = await rawRequest(h.srv.port, `GET /api/${'a'.repeat(30_000)} HTTP/1.1\r\n${host(h.srv)}\r\n`);
    assertError(routed, 404, /^not found$/, 'a 30000-byte URI');
    const long = await rawRequest(h.srv.port, `GET /api/${'a'.repeat(40_000)} HTTP/1.1\r\n${host(h.srv)}\r\n`);
    assertError(long, 414, /longer than 32768 bytes/, 'a 40000-byte URI');
    const huge = await rawRequest(h.srv.port, `GET /api/${'a'.repeat(70_000)} HTTP/1.1\r\n${host(h.srv)}\r\n`);
    assertError(huge, 431, /larger than 65536 bytes/, 'a 70000-byte URI');
    await assertHealthy();
  });

  test('a chunked body on a GET route: 411 (it would be buffered without a limit)', async () => {
    const r = await rawRequest(h.srv.port, `GET /api/tags HTTP/1.1\r\n${host(h.srv)}` +
      `Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`);
    assertError(r, 411, /chunked/, 'GET with a chunked body');
    await assertHealthy();
  });

  test('an empty body, a JSON array and a JSON string are 400', async () => {
    await expectError('/api/generate', '', 400, /missing request body/);
    await expectError('/api/chat', '[1,2,3]', 400, /must be a JSON object/);
    await expectError('/api/show', '"tiny"', 400, /must be a JSON object/);
  });

  test('a lone surrogate escape (\\ud800) is invalid JSON: 400', async () => {
    await expectError('/api/generate', '{"model":"tiny","prompt":"a\\ud800b","stream":false}', 400, /invalid JSON/);
  });

  test('a NUL character in the prompt is served like any other', async () => {
    const r = await postRaw(`${h.srv.url}/api/generate`, {
      model: MODEL, prompt: 'a\u0000b', stream: false, options: { num_predict: 2, temperature: 0 },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.eval_count, 2);
  });
});

describe('SPECD_MAX_BODY', () => {
  const small = useServer({ env: { SPECD_MAX_BODY: '64K' } });
  const padded = (bytes) => {
    const base = { model: MODEL, prompt: 'hi', stream: false, options: { num_predict: 2, temperature: 0 } };
    const text = JSON.stringify(base);
    return text.slice(0, -1) + ',"pad":"' + 'x'.repeat(bytes - text.length - 9) + '"}';
  };

  test('a body just under the limit is served, one just over it is 413 (Content-Length)', async () => {
    const under = padded(65_536);
    assert.equal(Buffer.byteLength(under), 65_536);
    const ok = await postRaw(`${small.srv.url}/api/generate`, under);
    assert.equal(ok.status, 200, ok.text.slice(0, 300));
    await expectError('/api/generate', padded(65_537), 413, /request body is larger than 65536 bytes/, { srv: small.srv });
  });

  test('a chunked body over the limit is 413 as it arrives', async () => {
    const body = padded(100_000);
    let req = `POST /api/generate HTTP/1.1\r\n${host(small.srv)}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    for (let i = 0; i < body.length; i += 10_000) {
      const part = body.slice(i, i + 10_000);
      req += `${part.length.toString(16)}\r\n${part}\r\n`;
    }
    req += '0\r\n\r\n';
    const r = await rawRequest(small.srv.port, req);
    assertError(r, 413, /larger than 65536 bytes/, 'a chunked 100 kB body');
    await assertHealthy(small.srv);
  });

  test('a chunked body under the limit is served', async () => {
    const stream = new ReadableStream({
      start(c) {
        const text = padded(30_000);
        for (let i = 0; i < text.length; i += 7000) c.enqueue(new TextEncoder().encode(text.slice(i, i + 7000)));
        c.close();
      },
    });
    const r = await fetch(`${small.srv.url}/api/generate`, {
      method: 'POST', body: stream, duplex: 'half', headers: { 'Content-Type': 'application/json' },
    });
    const body = await r.json();
    assert.equal(r.status, 200, JSON.stringify(body));
    assert.equal(body.eval_count, 2);
  });
});

describe('absurd options are 400 and name the option', () => {
  // [options (object or raw JSON text), expected error]
  const cases = [
    [{ num_ctx: 1e9 }, /num_ctx/],
    [{ num_ctx: -1 }, /num_ctx/],
    [{ num_predict: 1e9 }, /num_predict must be at most/],
    [{ temperature: -1 }, /temperature/],
    ['{"temperature":1e999}', /invalid JSON.*overflow/],
    [{ temperature: 1e300 }, /temperature must be between 0 and 1000000/],
    [{ top_p: 2 }, /top_p/],
    [{ min_p: -0.5 }, /min_p/],
    [{ typical_p: 1.5 }, /typical_p/],
    [{ top_k: -1 }, /top_k/],
    [{ top_k: 2.5 }, /top_k.*integer/],
    [{ repeat_last_n: -5 }, /repeat_last_n/],
    [{ repeat_penalty: 0 }, /repeat_penalty must be greater than 0/],
    [{ repeat_penalty: 1e-40 }, /repeat_penalty must be at least 1e-06/],
    [{ presence_penalty: 1e30 }, /presence_penalty must be between -1000000 and 1000000/],
    [{ frequency_penalty: -1e30 }, /frequency_penalty must be between -1000000 and 1000000/],
    ['{"seed":10000000000000000000}', /seed: must be a 64-bit integer/],
    [{ seed: '42' }, /seed/],
    [{ num_thread: 5000 }, /num_thread/],
    [{ num_batch: 0 }, /num_batch/],
    [{ num_keep: -2 }, /num_keep/],
    [{ stop: [''] }, /stop/],
    [{ mirostat: 3 }, /mirostat: must be between 0 and 2/],
    [{ mirostat_tau: 'x' }, /mirostat_tau/],
  ];
  for (const [options, phrase] of cases) {
    const text = typeof options === 'string' ? options : JSON.stringify(options);
    test(`options ${text}`, async () => {
      await expectError('/api/generate', `{"model":"tiny","prompt":"hi","stream":false,"options":${text}}`, 400, phrase);
    });
  }

  test('chat: num_predict -5 and temperature -1 are 400 there too', async () => {
    const chat = (options) => JSON.stringify({ model: MODEL, messages: user, stream: false, options });
    await expectError('/api/chat', chat({ num_predict: -5 }), 400, /num_predict/);
    await expectError('/api/chat', chat({ temperature: -1 }), 400, /temperature/);
  });

  test('keep_alive "forever" and -5e-1s are 400', async () => {
    await expectError('/api/generate', gen({ keep_alive: 'forever' }), 400, /keep_alive/);
    await expectError('/api/generate', gen({ keep_alive: '5e-1s' }), 400, /keep_alive/);
  });

  test('a number that overflows a double (1e999) anywhere is 400 invalid JSON, not 500', async () => {
    await expectError('/api/generate', '{"model":"tiny","prompt":"hi","stream":false,"keep_alive":1e999}', 400, /invalid JSON.*overflow/);
    await expectError('/api/chat', '{"model":"tiny","messages":[],"stream":false,"options":{"seed":-1e400}}', 400, /invalid JSON.*overflow/);
    await expectError('/api/show', '{"model":"tiny","verbose":1e999}', 400, /invalid JSON.*overflow/);
  });

  test('extreme but valid options are served (top_k, repeat_last_n at 2^31-1, tiny and huge temperatures)', async () => {
    for (const options of [
      { top_k: 2147483647, repeat_last_n: 2147483647, repeat_penalty: 1.1, seed: -5, temperature: 1e-40 },
      { temperature: 1e6, presence_penalty: 1e6, frequency_penalty: -1e6, repeat_penalty: 1e-6, seed: 2 ** 53 },
      { top_k: 2147483647, temperature: 1.5, seed: 7 },
    ]) {
      for (const format of [undefined, 'json']) {
        const r = await postRaw(`${h.srv.url}/api/generate`, {
          model: MODEL, prompt: 'hi', stream: false, format, options: { num_predict: 8, ...options },
        });
        assert.equal(r.status, 200, `${JSON.stringify(options)} format ${format}: ${r.text}`);
        assert.equal(r.body.done, true);
      }
    }
    await assertHealthy();
  });
});

describe('context token ids', () => {
  test('an id outside the vocabulary is 400', async () => {
    await expectError('/api/generate', gen({ context: [1, 2000000000] }), 400, /outside the vocabulary/);
  });

  test('a negative or fractional id is 400', async () => {
    await expectError('/api/generate', gen({ context: [-1] }), 400, /context/);
    await expectError('/api/generate', gen({ context: [1.5] }), 400, /context/);
  });
});

describe('model names that are paths are 400, never 404 or 500', () => {
  const BAD_NAMES = [
    '../../etc/passwd', '/etc/passwd', '..\\..\\windows\\win.ini', 'a\u0000b', 'x'.repeat(400), 'x'.repeat(100),
    'a/../b', 'ns/..', 'tiny:../x', 'C:\\models\\x', '%2e%2e/x', ' tiny', 'a/b/c/d',
  ];
  const each = async (send) => {
    for (const name of BAD_NAMES) {
      const r = await send(name);
      assertError(r, 400, /invalid model name/, `name ${JSON.stringify(name).slice(0, 60)}`);
    }
    await assertHealthy();
  };
  const post = (path, body, method = 'POST') => postRaw(`${h.srv.url}${path}`, body, { method });

  test('generate', () => each((name) => post('/api/generate', { model: name, prompt: 'hi', stream: false })));
  test('chat', () => each((name) => post('/api/chat', { model: name, messages: user, stream: false })));
  test('show', () => each((name) => post('/api/show', { model: name })));
  test('delete', () => each((name) => post('/api/delete', { model: name }, 'DELETE')));
  test('copy: source', () => each((name) => post('/api/copy', { source: name, destination: 'copy-ok' })));
  test('copy: destination', () => each((name) => post('/api/copy', { source: MODEL, destination: name })));
  test('create: model', () => each((name) => post('/api/create', { model: name, from: MODEL, stream: false })));

  test('create: from and draft that are paths are 400', async () => {
    for (const name of ['../../etc/passwd', '/etc/passwd', 'a\\b']) {
      assertError(await post('/api/create', { model: 'ok-name', from: name, stream: false }), 400, /from must name a model/, `from ${name}`);
      assertError(await post('/api/create', { model: 'ok-name', from: MODEL, draft: name, stream: false }), 400, /draft must name a model/, `draft ${name}`);
    }
    const tags = await (await fetch(`${h.srv.url}/api/tags`)).json();
    assert.ok(!tags.models.some((m) => m.name.startsWith('ok-name')), 'nothing was created');
    await assertHealthy();
  });

  test('blob digests that are not sha256:<64 hex> are 400 (HEAD, GET, POST, create files)', async () => {
    const bad = ['sha256:' + 'g'.repeat(64), 'sha256-..%2F..%2F..%2Fetc%2Fpasswd', 'x'.repeat(200), 'sha256:' + 'a'.repeat(63)];
    for (const d of bad) {
      const head = await fetch(`${h.srv.url}/api/blobs/${d}`, { method: 'HEAD' });
      assert.equal(head.status, 400, `HEAD ${d}`);
      const get = await postRaw(`${h.srv.url}/api/blobs/${d}`, undefined, { method: 'GET' });
      assertError(get, 400, /invalid digest/, `GET ${d}`);
      const put = await postRaw(`${h.srv.url}/api/blobs/${d}`, 'data');
      assertError(put, 400, /invalid digest/, `POST ${d}`);
    }
    const r = await post('/api/create', { model: 'ok-name', files: { 'x.gguf': 'sha256:../../etc/passwd' }, stream: false });
    assertError(r, 400, /invalid digest/, 'create files');
    await assertHealthy();
  });
});

describe('images', () => {
  // Each is refused before the image is decoded (or while, for corrupt data) with a 400 that
  // names the problem, and the server goes on serving.
  test('invalid base64, in generate and in a chat message', async () => {
    await expectError('/api/generate', gen({ images: ['!!! not base64 !!!'] }), 400, /image 1 is not valid base64/);
    await expectError('/api/chat', JSON.stringify({
      model: MODEL, stream: false, messages: [{ role: 'user', content: 'hi', images: [b64(png(4, 4)), '%%%'] }],
    }), 400, /image 2 is not valid base64/);
  });

  test('a PNG header declaring 60000x60000 pixels is refused before decoding', async () => {
    const huge = png(8, 8, 0, { declare: { width: 60000, height: 60000 } });
    await expectError('/api/generate', gen({ images: [b64(huge)] }), 400, /60000x60000.*max_pixels/);
  });

  test('a truncated JPEG and a truncated PNG', async () => {
    const j = jpeg();
    await expectError('/api/generate', gen({ images: [b64(j.subarray(0, 40))] }), 400, /image 1/);
    const p = png(64, 64, 3);
    await expectError('/api/generate', gen({ images: [b64(p.subarray(0, p.length - 40))] }), 400, /image 1 could not be decoded/);
  });

  test('data that is no image, and an empty image', async () => {
    await expectError('/api/generate', gen({ images: [b64(Buffer.from('just some text, not pixels'))] }), 400,
      /not a recognised image format/);
    await expectError('/api/generate', gen({ images: [''] }), 400, /image 1/);
  });

  test('more images than max_images', async () => {
    const one = b64(png(4, 4));
    await expectError('/api/generate', gen({ images: Array(17).fill(one) }), 400, /max_images/);
    await expectError('/api/chat', JSON.stringify({ model: MODEL, stream: false, messages: [
      { role: 'user', content: 'a', images: Array(9).fill(one) }, { role: 'user', content: 'b', images: Array(8).fill(one) },
    ] }), 400, /max_images/);
  });

  test('a valid image to a model without a projector', async () => {
    await expectError('/api/generate', gen({ images: [b64(png(8, 8))] }), 400, /does not support images/);
  });
});

describe('schemas', () => {
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };

  test('an invalid schema, then a valid one: the valid one is served and followed', async () => {
    for (const bad of [{ type: 'nonsense' }, { type: 'object', properties: 5 }, { $ref: 'http://example.com/s.json' }]) {
      await expectError('/api/generate', gen({ format: bad }), 400, /./);
      const r = await postRaw(`${h.srv.url}/api/generate`, {
        model: MODEL, prompt: 'a number', stream: false, format: schema, options: { num_predict: 64, temperature: 0 },
      });
      assert.equal(r.status, 200, r.text);
      const value = JSON.parse(r.body.response);
      assert.ok(Number.isInteger(value.n), `the answer follows the schema: ${r.body.response}`);
    }
  });

  test('a schema over the limits (nesting, enum size) is 400 naming the limit', async () => {
    // 80 subschemas deep in 81 levels of JSON: under the body's 128, over the schema's 64.
    let deep = { type: 'integer' };
    for (let i = 0; i < 80; i++) deep = { type: 'array', items: deep };
    await expectError('/api/generate', gen({ format: deep }), 400, /max_depth \(64\)/);
    let deeper = { type: 'integer' };
    for (let i = 0; i < 100; i++) deeper = { type: 'object', properties: { a: deeper } };
    await expectError('/api/generate', gen({ format: deeper }), 400, /nests deeper than 128 levels/);
    const big = { enum: Array.from({ length: 20_000 }, (_, i) => `v${i}`) };
    await expectError('/api/generate', gen({ format: big }), 400, /max_enum/);
  });
});

describe('disconnects and shutdown', () => {
  test('a client that disconnects during the prefill does not keep the model busy', async () => {
    // num_batch 1: one decode per prompt token, so the prefill of a long prompt takes seconds.
    const options = { num_ctx: 4096, num_batch: 1, num_predict: 1, temperature: 0 };
    const prompt = (first) => `${first} ` + Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' ');
    const t0 = Date.now();
    const full = await postRaw(`${h.srv.url}/api/generate`, { model: MODEL, prompt: prompt('calibrate'), raw: true, stream: false, options });
    const fullMs = Date.now() - t0;
    assert.equal(full.status, 200, full.text.slice(0, 300));
    assert.ok(full.body.prompt_eval_count > 1000, `prompt_eval_count ${full.body.prompt_eval_count}`);

    const ac = new AbortController();
    const pending = fetch(`${h.srv.url}/api/generate`, {
      method: 'POST', signal: ac.signal,
      body: JSON.stringify({ model: MODEL, prompt: prompt('abandoned'), raw: true, stream: false, options }),
    });
    await sleep(Math.min(300, fullMs / 4));
    ac.abort();
    await assert.rejects(pending, { name: 'AbortError' });
    const t1 = Date.now();
    await assertHealthy();
    const ms = Date.now() - t1;
    // A prefill that kept running would hold the model for most of fullMs.
    assert.ok(ms < Math.max(fullMs * 0.6, 1000), `the request after the disconnect took ${ms} ms (a full prefill: ${fullMs} ms)`);
    await assertMemoryReleased(h.srv);
  });

  test('a client that disconnects during generation: cancelled, its memory released', async () => {
    const before = (await readMemory(h.srv.url)).owners.request.closed;
    const ac = new AbortController();
    const r = await fetch(`${h.srv.url}/api/generate`, {
      method: 'POST', signal: ac.signal,
      body: JSON.stringify({ model: MODEL, prompt: 'tell me a long story', stream: true,
        images: undefined, options: { num_predict: 100000, num_ctx: 8192, temperature: 0 } }),
    });
    const reader = r.body.getReader();
    await reader.read(); // the first chunk: generation is under way
    ac.abort();
    const mem = await assertMemoryReleased(h.srv);
    assert.ok(mem.owners.request.closed > before, 'the request was closed');
    await assertHealthy();
  });

  test('after SIGTERM a new request is refused (never served), and the server exits 0', async () => {
    const s = await startServer();
    try {
      await assertHealthy(s);
      const res = await fetch(`${s.url}/api/generate`, {
        method: 'POST',
        body: JSON.stringify({ model: MODEL, prompt: 'Count to one million.', options: { num_predict: 100_000, temperature: 0 } }),
      });
      assert.equal(res.status, 200);
      const reader = res.body.getReader();
      await reader.read();
      s.child.kill('SIGTERM');
      await sleep(50);
      const late = await postRaw(`${s.url}/api/generate`, {
        model: MODEL, prompt: 'hi', stream: false, options: { num_predict: 2, temperature: 0 },
      }, { timeoutMs: 10_000 }).catch((err) => ({ status: 0, error: err }));
      assert.ok(late.status === 0 || late.status === 503, `a request after SIGTERM got ${late.status} ${late.text ?? ''}`);
      if (late.status === 503) assert.match(late.body.error, /shutting down/);
      reader.cancel().catch(() => {});
      const exit = await Promise.race([s.exited, sleep(10_000).then(() => null)]);
      assert.ok(exit, 'the server exits within 10 s of SIGTERM');
      assert.equal(exit.signal, null);
      assert.equal(exit.code, 0);
    } finally {
      await s.stop();
    }
  });
});

describe('model output that is not valid UTF-8', () => {
  // Random weights at a high temperature emit byte tokens (<0x..>) in any order: partial and
  // invalid UTF-8 sequences. Every line must still be valid UTF-8 JSON without lone surrogates.
  const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  const check = (bytes, what) => {
    let text;
    assert.doesNotThrow(() => {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    }, `${what}: the response bytes are valid UTF-8`);
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    const parsed = lines.map((l) => {
      try {
        return JSON.parse(l);
      } catch (err) {
        assert.fail(`${what}: a line is not JSON (${err.message}): ${l.slice(0, 200)}`);
      }
    });
    const out = parsed.map((p) => p.response ?? p.message?.content ?? '').join('');
    assert.doesNotMatch(out, LONE_SURROGATE, `${what}: lone surrogate in the text`);
    assert.ok(parsed[parsed.length - 1].done, `${what}: the last line is the final object`);
    return out;
  };

  test('generate, streamed: several seeds at temperature 2', async () => {
    let nonAscii = 0;
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const r = await fetch(`${h.srv.url}/api/generate`, {
        method: 'POST',
        body: JSON.stringify({ model: MODEL, prompt: 'bytes', raw: true, options: { num_predict: 200, temperature: 2, top_k: 0, top_p: 1, seed } }),
      });
      assert.equal(r.status, 200);
      const out = check(new Uint8Array(await r.arrayBuffer()), `seed ${seed}`);
      nonAscii += [...out].filter((c) => c.codePointAt(0) > 127).length;
    }
    assert.ok(nonAscii > 0, 'the model produced some non-ASCII output (the test exercised byte tokens)');
    await assertHealthy();
  });

  test('chat, streamed and not: several seeds at temperature 2', async () => {
    for (const seed of [11, 12, 13]) {
      for (const stream of [true, false]) {
        const r = await fetch(`${h.srv.url}/api/chat`, {
          method: 'POST',
          body: JSON.stringify({ model: MODEL, messages: user, stream, options: { num_predict: 150, temperature: 2, top_k: 0, top_p: 1, seed } }),
        });
        assert.equal(r.status, 200);
        check(new Uint8Array(await r.arrayBuffer()), `chat seed ${seed} stream ${stream}`);
      }
    }
    await assertHealthy();
  });
});
