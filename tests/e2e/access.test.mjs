// Who may call the server: the DNS-rebinding defence on a loopback-bound server, and the
// optional API key (also used by the CLI).
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe } from 'node:test';
import { runCli, startServer, test, useServer } from './harness.mjs';

// node's fetch will not send a custom Host header; http.request does.
function get(url, path, headers) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ host: u.hostname, port: u.port, path, headers }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('host header', () => {
  const h = useServer({});

  test('a foreign Host is refused with 403, local names pass', async () => {
    // What follows a local name must be a port: "[::1]evil.com" names evil.com.
    for (const host of ['evil.example:11434', '[::1]evil.com', '[::1]:11434.evil.com', 'localhost:evil.com']) {
      const bad = await get(h.srv.url, '/api/version', { Host: host });
      assert.equal(bad.status, 403, host);
      assert.match(JSON.parse(bad.body).error, /Host header/);
    }
    for (const host of [`localhost:${h.srv.port}`, `127.0.0.1:${h.srv.port}`, 'app.localhost', `[::1]:${h.srv.port}`]) {
      const ok = await get(h.srv.url, '/api/version', { Host: host });
      assert.equal(ok.status, 200, host);
    }
  });
});

describe('api key', () => {
  test('SPECD_API_KEY: 401 without it, 200 with it, and the CLI sends it', async () => {
    const srv = await startServer({ env: { SPECD_API_KEY: 'k3y' } });
    try {
      const none = await fetch(`${srv.url}/api/tags`);
      assert.equal(none.status, 401);
      assert.match((await none.json()).error, /API key/);
      const wrong = await fetch(`${srv.url}/api/tags`, { headers: { Authorization: 'Bearer nope' } });
      assert.equal(wrong.status, 401);
      const right = await fetch(`${srv.url}/api/tags`, { headers: { Authorization: 'Bearer k3y' } });
      assert.equal(right.status, 200);
      const gen = await fetch(`${srv.url}/api/generate`, { method: 'POST', body: JSON.stringify({ model: 'tiny' }) });
      assert.equal(gen.status, 401);
      assert.equal((await fetch(`${srv.url}/api/version`)).status, 200); // health stays open
      const cli = await runCli(['list'], { env: { ...srv.env, SPECD_API_KEY: 'k3y' } });
      assert.equal(cli.code, 0, cli.stderr);
      assert.match(cli.stdout, /tiny:latest/);
    } finally {
      const s = await srv.stop();
      assert.equal(s.code, 0);
    }
  });
});
