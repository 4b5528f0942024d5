// Pulling models from a registry (POST /api/pull, `specd pull`), against a local registry
// (registry_server.mjs) filled with the fixture GGUFs: progress lines, layers already in the
// store, tampered and oversized blobs, a traversal digest, a broken transfer resumed with a
// Range request, unknown models, hf.co names through SPECD_HF_ENDPOINT, and an https registry
// whose self-signed certificate is trusted only through SPECD_CA_FILE. (Real registries,
// registry.ollama.ai and hf.co, cannot be reached from the test machines.)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import { fixture, freePort, postRaw, readNdjson, runCli, startServer, test, useServer } from './harness.mjs';
import {
  CONFIG_TYPE, LICENSE_TYPE, MODEL_TYPE, PARAMS_TYPE, sha256, startRegistry,
} from './registry_server.mjs';

const env = {};
let reg;
before(async () => {
  reg = await startRegistry();
  env.SPECD_HF_ENDPOINT = reg.url; // read when the server starts, just after this
});
after(async () => {
  await reg?.close();
});
const h = useServer({ models: [], env });

const tinyGguf = fs.readFileSync(fixture('tiny.gguf'));
const spmGguf = fs.readFileSync(fixture('tiny-spm.gguf'));

function config(gguf) {
  return {
    model_format: 'gguf', model_family: 'llama', model_families: ['llama'], model_type: '4M', file_type: 'F32',
    rootfs: { type: 'layers', diff_ids: [sha256(gguf)] },
  };
}

/** Adds a model made of a GGUF and a params layer; returns the manifest. */
function addModel(repository, tag, { gguf = tinyGguf, params = { temperature: 0, num_predict: 4 }, extra = [] } = {}) {
  return reg.addModel(repository, tag, {
    layers: [
      { mediaType: MODEL_TYPE, bytes: gguf },
      { mediaType: PARAMS_TYPE, bytes: Buffer.from(JSON.stringify(params)) },
      ...extra,
    ],
    config: config(gguf),
  });
}

/** POST /api/pull; returns {status, lines} (NDJSON lines, or the one JSON object). */
async function pull(model, extra = {}) {
  const r = await fetch(`${h.srv.url}/api/pull`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, ...extra }),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: r.status, lines: await readNdjson(r) };
}

/** Every file under the store (relative paths), hidden temp files included. */
async function storeFiles(dir = h.srv.modelsDir) {
  const out = [];
  for (const e of await fsp.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.push(path.relative(dir, path.join(e.parentPath ?? e.path, e.name)));
  }
  return out.sort();
}

const tempFiles = (files) => files.filter((f) => path.basename(f).startsWith('.tmp-'));

function assertProgress(lines, manifest) {
  const statuses = lines.map((l) => l.status);
  assert.equal(statuses[0], 'pulling manifest', JSON.stringify(lines));
  assert.deepEqual(statuses.slice(-3), ['verifying sha256 digest', 'writing manifest', 'success']);
  for (const layer of [...manifest.layers, manifest.config]) {
    const mine = lines.filter((l) => l.digest === layer.digest);
    assert.ok(mine.length >= 1, `lines for ${layer.digest}`);
    for (const l of mine) {
      assert.ok(l.status === `pulling ${layer.digest.slice(7, 19)}` || l.status === `using existing layer ${layer.digest}`, l.status);
      assert.equal(l.total, layer.size);
      assert.ok((l.completed ?? 0) <= layer.size);
    }
    assert.equal(mine.at(-1).completed, layer.size, `${layer.digest} ends complete`);
  }
}

describe('pull', () => {
  test('a model from a local registry: progress lines, stored, listed, and it answers', async () => {
    const manifest = addModel('ns/tiny', 'v1');
    const name = `${reg.host}/ns/tiny:v1`;
    const { status, lines } = await pull(name);
    assert.equal(status, 200);
    assertProgress(lines, manifest);
    assert.ok(lines.some((l) => l.status.startsWith('pulling ') && l.digest), 'download lines');

    // The store has the manifest under the name and every blob under its digest.
    const files = await storeFiles();
    assert.ok(files.includes(path.join('manifests', reg.host, 'ns', 'tiny', 'v1')), files.join('\n'));
    for (const l of [...manifest.layers, manifest.config]) {
      assert.ok(files.includes(path.join('blobs', l.digest.replace(':', '-'))), l.digest);
    }
    assert.deepEqual(tempFiles(files), []);
    const stored = fs.readFileSync(path.join(h.srv.modelsDir, 'blobs', manifest.layers[0].digest.replace(':', '-')));
    assert.ok(stored.equals(tinyGguf));

    const list = await h.srv.client.list();
    const entry = list.models.find((m) => m.name === name);
    assert.ok(entry, JSON.stringify(list.models.map((m) => m.name)));
    assert.equal(entry.details.family, 'llama');

    // The params layer applies: temperature 0, num_predict 4.
    const g = await h.srv.client.generate({ model: name, prompt: 'Count to ten.' });
    assert.equal(g.done, true);
    assert.equal(g.eval_count, 4);
    const again = await h.srv.client.generate({ model: name, prompt: 'Count to ten.', options: { seed: 7 } });
    assert.equal(again.response, g.response);
  });

  test('pulling again: every layer already exists, no blob is downloaded', async () => {
    const manifest = addModel('ns/tiny', 'v1');
    const before = reg.requests.length;
    const { status, lines } = await pull(`${reg.host}/ns/tiny:v1`);
    assert.equal(status, 200);
    assertProgress(lines, manifest);
    for (const layer of [...manifest.layers, manifest.config]) {
      const mine = lines.filter((l) => l.digest === layer.digest);
      assert.deepEqual(mine, [{ status: `using existing layer ${layer.digest}`, digest: layer.digest, total: layer.size, completed: layer.size }]);
    }
    const fetched = reg.requests.slice(before);
    assert.deepEqual(fetched.map((r) => r.path), ['/v2/ns/tiny/manifests/v1'], 'only the manifest');

    // stream: false, through the official client: one object.
    const r = await h.srv.client.pull({ model: `${reg.host}/ns/tiny:v1`, stream: false });
    assert.deepEqual(r, { status: 'success' });
  });

  test('the official client streams the progress of a new tag', async () => {
    const manifest = addModel('ns/tiny', 'v2', { params: { temperature: 0, num_predict: 3 } });
    const parts = [];
    for await (const p of await h.srv.client.pull({ model: `${reg.host}/ns/tiny:v2`, stream: true })) parts.push(p);
    assertProgress(parts, manifest);
    // The GGUF is shared with v1: existing; the new params layer is downloaded.
    assert.ok(parts.some((p) => p.status === `using existing layer ${manifest.layers[0].digest}`));
    assert.ok(parts.some((p) => p.status === `pulling ${manifest.layers[1].digest.slice(7, 19)}`));
    const g = await h.srv.client.generate({ model: `${reg.host}/ns/tiny:v2`, prompt: 'hi' });
    assert.equal(g.eval_count, 3);
  });

  test('a tampered or oversized blob is an error and leaves nothing behind', async () => {
    const before = await storeFiles();
    const license = Buffer.from('the license, as signed');
    const forged = Buffer.from('the license, as served'); // same length, other bytes
    const digest = sha256(license);
    addModel('ns/tampered', 'v1', {
      params: { num_predict: 5 }, // a new blob, downloaded before the failure
      extra: [{ mediaType: LICENSE_TYPE, bytes: forged, digest }],
    });
    const { status, lines } = await pull(`${reg.host}/ns/tampered:v1`);
    assert.equal(status, 200, 'the stream had started');
    assert.match(lines.at(-1).error ?? '', /digest mismatch/, JSON.stringify(lines.at(-1)));
    assert.ok(!lines.some((l) => l.status === 'success'));
    assert.deepEqual(await storeFiles(), before, 'no blob, manifest or temp file left');

    // More bytes than the manifest declares: refused as they arrive.
    addModel('ns/oversized', 'v1', {
      params: { num_predict: 6 },
      extra: [{ mediaType: LICENSE_TYPE, bytes: Buffer.from('a longer license than declared'), size: 10 }],
    });
    const o = await pull(`${reg.host}/ns/oversized:v1`);
    assert.match(o.lines.at(-1).error ?? '', /larger than the 10 bytes its manifest declares/, JSON.stringify(o.lines.at(-1)));
    assert.deepEqual(await storeFiles(), before);

    // stream: false: the error is the HTTP answer.
    const r = await postRaw(`${h.srv.url}/api/pull`, { model: `${reg.host}/ns/tampered:v1`, stream: false });
    assert.ok(r.status >= 400, `status ${r.status}`);
    assert.match(r.body.error, /digest mismatch/);
    assert.deepEqual(await storeFiles(), before);
  });

  test('a traversal digest in a manifest is refused before any file is touched', async () => {
    const before = await storeFiles();
    for (const bad of ['sha256:../../etc/passwd', 'sha256-../../../../tmp/x', `sha256:${'g'.repeat(64)}`, `sha256:${'a'.repeat(63)}`]) {
      const good = addModel('ns/evil', 'v1');
      good.layers.push({ mediaType: LICENSE_TYPE, digest: bad, size: 4 });
      reg.putManifest('ns/evil', 'v1', good);
      const seen = reg.requests.length;
      const r = await postRaw(`${h.srv.url}/api/pull`, { model: `${reg.host}/ns/evil:v1` });
      assert.ok(r.status >= 400 && r.status < 600, `${bad}: status ${r.status}`);
      assert.match(r.body.error, /invalid digest/, bad);
      assert.deepEqual(reg.requests.slice(seen).map((q) => q.path), ['/v2/ns/evil/manifests/v1'], `${bad}: no blob fetched`);
      assert.deepEqual(await storeFiles(), before, bad);
    }
    // An invalid config digest too, and a manifest that is not one.
    reg.putManifest('ns/evil', 'v2', { schemaVersion: 2, config: { mediaType: CONFIG_TYPE, digest: '../x', size: 1 }, layers: [] });
    const c = await postRaw(`${h.srv.url}/api/pull`, { model: `${reg.host}/ns/evil:v2` });
    assert.match(c.body.error, /invalid digest/);
    reg.putManifest('ns/evil', 'v3', '<html>not a manifest</html>');
    const n = await postRaw(`${h.srv.url}/api/pull`, { model: `${reg.host}/ns/evil:v3` });
    assert.match(n.body.error, /manifest/);
    assert.deepEqual(await storeFiles(), before);
  });

  test('an oversized manifest is refused', async () => {
    reg.putManifest('ns/huge', 'v1', JSON.stringify({ schemaVersion: 2, padding: 'x'.repeat(5 << 20) }));
    const r = await postRaw(`${h.srv.url}/api/pull`, { model: `${reg.host}/ns/huge:v1` });
    assert.ok(r.status >= 400);
    assert.match(r.body.error, /larger than 4194304 bytes/);
  });

  test('a broken transfer is an error; the next pull resumes with a Range request', async () => {
    const manifest = addModel('ns/spm', 'v1', { gguf: spmGguf });
    const gguf = manifest.layers[0];
    const cut = 4 << 20;
    reg.cutAfter(gguf.digest, cut);
    const before = await storeFiles();
    const first = await pull(`${reg.host}/ns/spm:v1`);
    assert.equal(first.status, 200);
    assert.match(first.lines.at(-1).error ?? '', /pull again to resume/, JSON.stringify(first.lines.at(-1)));
    // No manifest and no blob under its final name; the partial download is kept.
    const files = await storeFiles();
    assert.ok(!files.some((f) => f.startsWith(path.join('manifests', reg.host, 'ns', 'spm'))));
    assert.ok(!files.includes(path.join('blobs', gguf.digest.replace(':', '-'))));
    const partial = path.join('blobs', `.tmp-partial-${gguf.digest.replace(':', '-')}`);
    assert.ok(files.includes(partial), files.join('\n'));
    const kept = fs.statSync(path.join(h.srv.modelsDir, partial)).size;
    assert.ok(kept > 0 && kept <= cut, `kept ${kept}`);
    assert.deepEqual(files.filter((f) => !before.includes(f) && f !== partial).filter((f) => f.startsWith('manifests')), []);

    const second = await pull(`${reg.host}/ns/spm:v1`);
    assert.equal(second.status, 200, JSON.stringify(second.lines.at(-1)));
    assertProgress(second.lines, manifest);
    const ranged = reg.blobRequests(gguf.digest).at(-1);
    assert.equal(ranged.range, `bytes=${kept}-`);
    // The resumed download starts from what was kept.
    const firstLine = second.lines.find((l) => l.digest === gguf.digest);
    assert.equal(firstLine.completed, kept);
    assert.deepEqual(tempFiles(await storeFiles()), []);
    const stored = fs.readFileSync(path.join(h.srv.modelsDir, 'blobs', gguf.digest.replace(':', '-')));
    assert.ok(stored.equals(spmGguf));
    const g = await h.srv.client.generate({ model: `${reg.host}/ns/spm:v1`, prompt: 'hi', options: { num_predict: 2 } });
    assert.equal(g.done, true);
  });

  test('an unknown model or an unreachable registry is an error status', async () => {
    await assert.rejects(h.srv.client.pull({ model: `${reg.host}/ns/nope:v1` }), (err) => {
      assert.equal(err.status_code, 404, `${err.status_code} ${err.error}`);
      assert.match(err.error, /not found/);
      return true;
    });
    const s = await postRaw(`${h.srv.url}/api/pull`, { model: `${reg.host}/ns/tiny:nope`, stream: true });
    assert.equal(s.status, 404);
    const port = await freePort();
    const u = await postRaw(`${h.srv.url}/api/pull`, { model: `127.0.0.1:${port}/ns/x:v1` });
    assert.equal(u.status, 500);
    assert.match(u.body.error, /127\.0\.0\.1/);
  });

  test('bad requests are 400 before anything is fetched', async () => {
    const seen = reg.requests.length;
    const cases = [
      [{}, /model is required/],
      [{ model: '../../etc/passwd' }, /invalid model name/],
      [{ model: 'a/b/c/d' }, /invalid model name/],
      [{ model: 'http://registry.example/ns/m:t' }, /insecure/],
      [{ model: `${reg.host}/ns/tiny:v1`, insecure: 'yes' }, /insecure/],
    ];
    for (const [body, why] of cases) {
      const r = await postRaw(`${h.srv.url}/api/pull`, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.body.error, why, JSON.stringify(body));
    }
    assert.equal(reg.requests.length, seen);
  });

  test('https: a registry with a self-signed certificate, trusted only through SPECD_CA_FILE', async () => {
    // A CA-less self-signed certificate for 127.0.0.1, made now with the openssl CLI.
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'specd-e2e-tls-'));
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    ], { stdio: 'ignore' });
    const secure = await startRegistry({ tls: { key: fs.readFileSync(key), cert: fs.readFileSync(cert) } });
    try {
      secure.addModel('ns/tls', 'v1', {
        layers: [
          { mediaType: MODEL_TYPE, bytes: tinyGguf },
          { mediaType: PARAMS_TYPE, bytes: Buffer.from(JSON.stringify({ num_predict: 2 })) },
        ],
        config: config(tinyGguf),
      });
      const name = `https://${secure.host}/ns/tls:v1`;
      const direct = { SPECD_HOST: `127.0.0.1:${await freePort()}`, SPECD_MODELS: path.join(dir, 'models') };

      // Not trusted by default: verification is never skipped.
      const refused = await runCli(['pull', name], { env: direct });
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, /certificate is not trusted.*SPECD_CA_FILE/);
      assert.equal(secure.requests.length, 0, 'no request got past the handshake');

      const pulled = await runCli(['pull', name], { env: { ...direct, SPECD_CA_FILE: cert } });
      assert.equal(pulled.code, 0, pulled.stderr);
      assert.match(pulled.stderr, /success/);
      assert.deepEqual(secure.requests.map((r) => r.path).slice(0, 1), ['/v2/ns/tls/manifests/v1']);
      const ls = await runCli(['list'], { env: direct });
      assert.match(ls.stdout, new RegExp(`${secure.host.replace(/[.]/g, '\\.')}/ns/tls:v1`));

      // A CA file that does not exist is said plainly, not a handshake failure.
      const missing = await runCli(['pull', name], { env: { ...direct, SPECD_CA_FILE: path.join(dir, 'nope.pem') } });
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /SPECD_CA_FILE names no readable file \(nope\.pem\)/);
    } finally {
      await secure.close();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });

  test('hf.co/USER/REPO:QUANT goes to the Hugging Face endpoint (SPECD_HF_ENDPOINT)', async () => {
    const manifest = addModel('someuser/Tiny-GGUF', 'Q8_0', { params: { temperature: 0, num_predict: 2 } });
    for (const name of ['hf.co/someuser/Tiny-GGUF:Q8_0', 'huggingface.co/someuser/Tiny-GGUF:Q8_0']) {
      const seen = reg.requests.length;
      const { status, lines } = await pull(name);
      assert.equal(status, 200, JSON.stringify(lines.at(-1)));
      assertProgress(lines, manifest);
      assert.equal(reg.requests[seen].path, '/v2/someuser/Tiny-GGUF/manifests/Q8_0');
      // Names are case-insensitive; the store keeps them lowercased.
      const list = await h.srv.client.list();
      assert.ok(list.models.some((m) => m.name === name.toLowerCase()), JSON.stringify(list.models.map((m) => m.name)));
      const g = await h.srv.client.generate({ model: name, prompt: 'hi' });
      assert.equal(g.eval_count, 2);
    }
  });

  test('specd pull through the running server, and into the store without one', async () => {
    addModel('ns/cli', 'v1', { params: { num_predict: 3 } });
    const name = `${reg.host}/ns/cli:v1`;
    const viaServer = await runCli(['pull', name], { env: h.srv.env });
    assert.equal(viaServer.code, 0, viaServer.stderr);
    assert.match(viaServer.stderr, /pulling manifest/);
    assert.match(viaServer.stderr, /success/);
    assert.ok((await h.srv.client.list()).models.some((m) => m.name === name));

    const missing = await runCli(['pull', `${reg.host}/ns/nope:v1`], { env: h.srv.env });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /Error: .*not found/);

    // No server at SPECD_HOST: the CLI pulls into SPECD_MODELS itself.
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'specd-e2e-pull-'));
    try {
      const direct = { SPECD_HOST: `127.0.0.1:${await freePort()}`, SPECD_MODELS: dir };
      const r = await runCli(['pull', name], { env: direct });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /success/);
      const ls = await runCli(['list'], { env: direct });
      assert.match(ls.stdout, new RegExp(name.replace(/[.]/g, '\\.')));
      const again = await runCli(['pull', name], { env: direct });
      assert.match(again.stderr, /using existing layer/);
      // Served afterwards by a server on that store.
      const srv = await startServer({ models: [], env: { SPECD_MODELS: dir } });
      try {
        const g = await srv.client.generate({ model: name, prompt: 'hi' });
        assert.equal(g.eval_count, 3);
      } finally {
        await srv.stop();
      }
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
