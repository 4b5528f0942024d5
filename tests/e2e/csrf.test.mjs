// Cross-site requests: a page on any site can make the user's browser send a text/plain POST
// to 127.0.0.1 without a preflight. A request whose Origin is not allowed is refused (403)
// before routing, whatever its method, and changes nothing; allowed origins and requests
// without an Origin (curl, SDKs) are served (docs/api.md, Browsers and origins).
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { describe } from 'node:test';
import { startServer, test, useServer } from './harness.mjs';

const FOREIGN = 'https://evil.example';

/** Any request with any headers (fetch would not send an Origin of our choosing). */
function request(url, method, pathname, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ host: u.hostname, port: u.port, path: pathname, method, headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json = null;
        try {
          json = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Every file under the store with its content's hash: tags, manifests and blobs. */
async function storeState(dir) {
  const state = {};
  async function walk(d) {
    for (const e of await fs.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else state[path.relative(dir, p)] = crypto.createHash('sha256').update(await fs.readFile(p)).digest('hex');
    }
  }
  await walk(dir);
  return state;
}

describe('cross-site requests', () => {
  const h = useServer();
  const blob = Buffer.from('not a model, just bytes a page would like to store');
  const blobDigest = `sha256:${crypto.createHash('sha256').update(blob).digest('hex')}`;

  // Every route that changes something, as a page would send it: text/plain, no preflight.
  const writes = [
    ['POST', '/api/create', JSON.stringify({ model: 'evil', from: 'tiny', system: 'pwned' })],
    ['POST', '/api/copy', JSON.stringify({ source: 'tiny', destination: 'evil' })],
    ['DELETE', '/api/delete', JSON.stringify({ model: 'tiny' })],
    ['POST', '/api/pull', JSON.stringify({ model: '127.0.0.1:9/evil/model:latest', insecure: true })],
    ['POST', '/api/generate', JSON.stringify({ model: 'tiny', prompt: 'hi' })],
    ['POST', '/api/chat', JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] })],
    ['POST', '/api/embed', JSON.stringify({ model: 'tiny', input: 'hi' })],
    ['POST', '/v1/chat/completions', JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] })],
    ['POST', `/api/blobs/${blobDigest}`, blob],
  ];

  test('a foreign Origin is 403 on every state-changing route, and nothing changes', async () => {
    const before = await storeState(h.srv.modelsDir);
    assert.ok(Object.keys(before).some((p) => p.startsWith('manifests')), 'the store has the tiny model');
    for (const [method, route, body] of writes) {
      const r = await request(h.srv.url, method, route, {
        headers: { Origin: FOREIGN, 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) },
        body,
      });
      assert.equal(r.status, 403, `${method} ${route}: ${r.text}`);
      const message = route.startsWith('/v1/') ? r.json?.error?.message : r.json?.error;
      assert.match(message ?? '', /origin not allowed/, `${method} ${route}: ${r.text}`);
      assert.equal(r.headers['access-control-allow-origin'], undefined);
    }
    assert.deepEqual(await storeState(h.srv.modelsDir), before, 'tags, manifests and blobs are unchanged');
    // Nothing ran either: no model was loaded by the refused generations.
    assert.deepEqual((await h.srv.client.ps()).models, []);
    // GET and preflights too: the origin is refused whatever the method.
    for (const method of ['GET', 'OPTIONS', 'HEAD']) {
      const r = await request(h.srv.url, method, '/api/tags', { headers: { Origin: FOREIGN } });
      assert.equal(r.status, 403, method);
    }
  });

  test('no Origin (curl, SDKs) and allowed origins are served, with CORS headers for the latter', async () => {
    const copy = (destination, headers = {}) => request(h.srv.url, 'POST', '/api/copy', {
      headers: { 'Content-Type': 'text/plain', ...headers }, body: JSON.stringify({ source: 'tiny', destination }),
    });
    assert.equal((await copy('plain')).status, 200);
    for (const [origin, name] of [['http://localhost:3000', 'local'], ['https://127.0.0.1:8443', 'loop'],
      ['http://0.0.0.0:11434', 'any'], ['app://obsidian.md', 'app'], ['file://', 'file'], ['tauri://localhost', 'tauri'],
      ['vscode-webview://abc123', 'webview'], ['vscode-file://vscode-app', 'vsfile']]) {
      const r = await copy(name, { Origin: origin });
      assert.equal(r.status, 200, `${origin}: ${r.text}`);
      assert.equal(r.headers['access-control-allow-origin'], origin);
    }
    const tags = (await h.srv.client.list()).models.map((m) => m.name).sort();
    assert.deepEqual(tags, ['any', 'app', 'file', 'local', 'loop', 'plain', 'tauri', 'tiny', 'vsfile', 'webview']
      .map((n) => `${n}:latest`));
  });

  test('a preflight allows the headers the official clients send from a browser', async () => {
    const r = await request(h.srv.url, 'OPTIONS', '/v1/chat/completions', { headers: {
      Origin: 'http://localhost:5173', 'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization,content-type,openai-beta,x-stainless-os,x-stainless-retry-count',
    } });
    assert.equal(r.status, 204);
    assert.equal(r.headers['access-control-allow-origin'], 'http://localhost:5173');
    const allowed = r.headers['access-control-allow-headers'].toLowerCase().split(/,\s*/);
    for (const name of ['authorization', 'content-type', 'user-agent', 'accept', 'x-requested-with', 'openai-beta',
      'x-stainless-os', 'x-stainless-retry-count']) {
      assert.ok(allowed.includes(name), `${name} in ${allowed}`);
    }
    assert.match(r.headers['access-control-allow-methods'], /POST/);
  });
});

describe('SPECD_ORIGINS', () => {
  test('adds origins to the defaults; "*" allows every origin', async () => {
    const listed = await startServer({ models: [], env: { SPECD_ORIGINS: 'https://ui.example.com, https://*.corp.example' } });
    try {
      for (const [origin, status] of [['https://ui.example.com', 200], ['https://a.corp.example', 200],
        ['http://localhost:3000', 200], [FOREIGN, 403]]) {
        const r = await request(listed.url, 'GET', '/api/tags', { headers: { Origin: origin } });
        assert.equal(r.status, status, origin);
      }
    } finally {
      await listed.stop();
    }
    const any = await startServer({ models: [], env: { OLLAMA_ORIGINS: '*' } });
    try {
      const r = await request(any.url, 'GET', '/api/tags', { headers: { Origin: FOREIGN } });
      assert.equal(r.status, 200);
      assert.equal(r.headers['access-control-allow-origin'], FOREIGN);
    } finally {
      await any.stop();
    }
  });
});
