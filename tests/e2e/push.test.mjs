// Pushing models to a registry (POST /api/push), against the local registry of the pull tests
// (registry_server.mjs), which records every upload: progress lines, a model pushed and
// pulled back into a second store where it answers the same, blobs the registry has never
// sent again, an upload whose connection breaks started over, a corrupted local blob refused
// before the registry has it, and the error statuses (unknown model, bad input, a registry
// that cannot be reached or refuses).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe } from 'node:test';
import { freePort, postRaw, readNdjson, runCli, startServer, test, useServer } from './harness.mjs';
import { sha256, startRegistry } from './registry_server.mjs';

let reg;
before(async () => {
  reg = await startRegistry();
});
after(async () => {
  await reg?.close();
});
const h = useServer({ models: [{ name: 'tiny', lines: ['PARAMETER num_predict 6', 'PARAMETER temperature 0'] }] });

/** POST /api/push; returns {status, lines} (NDJSON lines, or the one JSON object). */
async function push(model, extra = {}) {
  const r = await fetch(`${h.srv.url}/api/push`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, ...extra }),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: r.status, lines: await readNdjson(r) };
}

/** The stored manifest of `host/ns/model:tag` (its bytes, and parsed). */
function localManifest(name, dir = h.srv.modelsDir) {
  const [, host, repo, tag] = /^([^/]+)\/(.+):([^:]+)$/.exec(name);
  const bytes = fs.readFileSync(path.join(dir, 'manifests', host, ...repo.split('/'), tag), 'utf8');
  return { bytes, manifest: JSON.parse(bytes) };
}

const blobsOf = (m) => [...m.layers, m.config];

function assertProgress(lines, manifest) {
  const statuses = lines.map((l) => l.status);
  assert.equal(statuses[0], 'retrieving manifest', JSON.stringify(lines));
  assert.deepEqual(statuses.slice(-2), ['pushing manifest', 'success'], JSON.stringify(lines.slice(-3)));
  for (const b of blobsOf(manifest)) {
    const mine = lines.filter((l) => l.digest === b.digest);
    assert.ok(mine.length >= 1, `lines for ${b.digest}`);
    for (const l of mine) {
      assert.equal(l.status, `pushing ${b.digest.slice(7, 19)}`);
      assert.equal(l.total, b.size);
      assert.ok((l.completed ?? 0) <= b.size);
    }
    assert.equal(mine.at(-1).completed, b.size, `${b.digest} ends complete`);
  }
}

/** Creates `name` from tiny with its own params layer (a blob no other model has). */
async function createFromTiny(name, parameters) {
  const r = await postRaw(`${h.srv.url}/api/create`, { model: name, from: 'tiny', parameters, stream: false });
  assert.equal(r.status, 200, r.text);
}

describe('push', () => {
  test('a model to a registry: progress, every blob uploaded, and pulled back into another store it answers the same', async () => {
    const name = `${reg.host}/ns/tiny:v1`;
    await h.srv.client.copy({ source: 'tiny', destination: name });
    const { bytes, manifest } = localManifest(name);

    const { status, lines } = await push(name);
    assert.equal(status, 200);
    assertProgress(lines, manifest);
    const gguf = manifest.layers.find((l) => l.mediaType === 'application/vnd.ollama.image.model');
    assert.equal(lines.find((l) => l.digest === gguf.digest).completed, undefined, 'a line before the upload');

    // Each blob uploaded once, whole; the manifest byte for byte as stored.
    assert.deepEqual(reg.uploads.map((u) => u.digest).sort(), blobsOf(manifest).map((b) => b.digest).sort());
    assert.ok(reg.uploads.every((u) => u.complete && u.repository === 'ns/tiny'), JSON.stringify(reg.uploads));
    assert.equal(reg.manifest('ns/tiny', 'v1'), bytes);
    assert.deepEqual(reg.requests.filter((r) => r.method === 'PUT' && r.path.includes('/manifests/')).map((r) => r.path),
      ['/v2/ns/tiny/manifests/v1']);

    // Pulled into a second store (the CLI, no server there), it is the same model.
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'specd-e2e-push-'));
    try {
      const direct = { SPECD_HOST: `127.0.0.1:${await freePort()}`, SPECD_MODELS: dir };
      const pulled = await runCli(['pull', name], { env: direct });
      assert.equal(pulled.code, 0, pulled.stderr);
      assert.equal(localManifest(name, dir).bytes, bytes);
      for (const b of blobsOf(manifest)) {
        const file = (d) => path.join(d, 'blobs', b.digest.replace(':', '-'));
        assert.ok(fs.readFileSync(file(dir)).equals(fs.readFileSync(file(h.srv.modelsDir))), b.digest);
      }
      const other = await startServer({ models: [], env: { SPECD_MODELS: dir } });
      try {
        const prompt = { model: name, prompt: 'Count to ten.' };
        const [here, there] = [await h.srv.client.generate(prompt), await other.client.generate(prompt)];
        assert.equal(there.eval_count, 6);
        assert.equal(there.response, here.response);
        const tags = await other.client.list();
        assert.equal(tags.models.find((m) => m.name === name)?.digest, (await h.srv.client.list()).models.find((m) => m.name === name).digest);
      } finally {
        await other.stop();
      }
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });

  test('pushing again sends no blob; a new tag sends only its new blobs; stream false and the official client', async () => {
    const name = `${reg.host}/ns/tiny:v1`;
    const { manifest } = localManifest(name);
    const seen = reg.requests.length;
    const uploaded = reg.uploads.length;
    const { status, lines } = await push(name);
    assert.equal(status, 200);
    assertProgress(lines, manifest);
    for (const b of blobsOf(manifest)) {
      assert.deepEqual(lines.filter((l) => l.digest === b.digest),
        [{ status: `pushing ${b.digest.slice(7, 19)}`, digest: b.digest, total: b.size, completed: b.size }]);
    }
    assert.equal(reg.uploads.length, uploaded, 'no upload');
    const methods = reg.requests.slice(seen).map((r) => `${r.method} ${r.path}`);
    assert.deepEqual(methods, [...blobsOf(manifest).map((b) => `HEAD /v2/ns/tiny/blobs/${b.digest}`), 'PUT /v2/ns/tiny/manifests/v1']);

    // The same GGUF under a new tag with other parameters: only the params and config go.
    const v2 = `${reg.host}/ns/tiny:v2`;
    await createFromTiny(v2, { num_predict: 3 });
    const m2 = localManifest(v2).manifest;
    const r = await h.srv.client.push({ model: v2, stream: false });
    assert.deepEqual(r, { status: 'success' });
    const fresh = blobsOf(m2).filter((b) => !blobsOf(manifest).some((o) => o.digest === b.digest)).map((b) => b.digest);
    assert.ok(fresh.length >= 1 && fresh.length < blobsOf(m2).length, JSON.stringify(fresh));
    assert.deepEqual(reg.uploads.slice(uploaded).map((u) => u.digest).sort(), fresh.sort());
    assert.equal(reg.manifest('ns/tiny', 'v2'), localManifest(v2).bytes);
  });

  test('an upload whose connection breaks starts over once; breaking twice is an error, and the next push sends only what is missing', async () => {
    const name = `${reg.host}/ns/cut:v1`;
    await h.srv.client.copy({ source: 'tiny', destination: name });
    const { manifest } = localManifest(name);
    // A repository the registry has none of: the GGUF is already there from ns/tiny, so
    // the cut falls on a blob that is sent. (The stand-in's blobs are shared by repositories.)
    const gguf = manifest.layers[0];
    assert.ok(reg.hasBlob(gguf.digest));
    const big = `${reg.host}/ns/big:v1`;
    await createFromTiny(big, { num_predict: 2, stop: ['a much longer stop string to make a larger params blob'] });
    const m = localManifest(big).manifest;
    const sent = blobsOf(m).filter((b) => !reg.hasBlob(b.digest));
    assert.ok(sent.length >= 1);

    reg.cutUploadAfter(1);
    const before = reg.uploads.length;
    const once = await push(big);
    assert.equal(once.status, 200);
    assertProgress(once.lines, m);
    const tries = reg.uploads.slice(before);
    assert.equal(tries.filter((u) => !u.complete).length, 1, JSON.stringify(tries));
    assert.deepEqual(tries.filter((u) => u.complete).map((u) => u.digest).sort(), sent.map((b) => b.digest).sort());

    // Twice in a row: the push fails after its one retry, with no manifest in the registry.
    const big2 = `${reg.host}/ns/big2:v1`;
    await createFromTiny(big2, { num_predict: 2, stop: ['another stop string', 'and one more'] });
    const m2 = localManifest(big2).manifest;
    const missing = blobsOf(m2).filter((b) => !reg.hasBlob(b.digest));
    assert.equal(missing.length, 2, 'params and config are new');
    reg.cutUploadAfter(1);
    reg.cutUploadAfter(1);
    const failed = await push(big2);
    assert.equal(failed.status, 200, 'the stream had started');
    assert.match(failed.lines.at(-1).error ?? '', /upload of sha256:[0-9a-f]{64} to http:\/\/127\.0\.0\.1:\d+ failed/, JSON.stringify(failed.lines.at(-1)));
    assert.equal(reg.manifest('ns/big2', 'v1'), undefined);
    const stored = missing.filter((b) => reg.hasBlob(b.digest));
    assert.ok(stored.length < missing.length, 'at least one blob is still missing');

    // The next push HEADs every blob and sends only those still missing.
    const at = reg.uploads.length;
    const again = await push(big2);
    assertProgress(again.lines, m2);
    assert.deepEqual(reg.uploads.slice(at).map((u) => u.digest).sort(),
      missing.filter((b) => !stored.includes(b)).map((b) => b.digest).sort());
    assert.ok(reg.manifest('ns/big2', 'v1'));
  });

  test('a corrupted blob in the store is an error, and the registry never gets it whole', async () => {
    const name = `${reg.host}/ns/corrupt:v1`;
    await createFromTiny(name, { num_predict: 9, temperature: 0.5 });
    const { manifest } = localManifest(name);
    const params = manifest.layers.find((l) => l.mediaType === 'application/vnd.ollama.image.params');
    assert.ok(!reg.hasBlob(params.digest));
    const file = path.join(h.srv.modelsDir, 'blobs', params.digest.replace(':', '-'));
    const good = fs.readFileSync(file);
    const bad = Buffer.from(good);
    bad[bad.length - 2] ^= 0x01; // same size, other bytes
    fs.writeFileSync(file, bad);
    try {
      const { status, lines } = await push(name);
      assert.equal(status, 200);
      assert.match(lines.at(-1).error ?? '', new RegExp(`blob ${params.digest} in the model store is corrupt`), JSON.stringify(lines.at(-1)));
      assert.ok(!reg.hasBlob(params.digest));
      assert.ok(!reg.uploads.some((u) => u.digest === params.digest && u.complete));
      assert.equal(reg.manifest('ns/corrupt', 'v1'), undefined);

      const r = await postRaw(`${h.srv.url}/api/push`, { model: name, stream: false });
      assert.equal(r.status, 500);
      assert.match(r.body.error, /is corrupt/);

      // A blob of the wrong size is found before anything is sent.
      fs.writeFileSync(file, Buffer.concat([good, Buffer.from(' ')]));
      // The refused upload above may reach the registry after its 500 did the client: count
      // from once the registry has been quiet for a moment.
      let seen = -1;
      for (let i = 0; i < 50 && seen !== reg.requests.length; ++i) {
        seen = reg.requests.length;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const s = await postRaw(`${h.srv.url}/api/push`, { model: name });
      assert.equal(s.status, 500);
      assert.match(s.body.error, new RegExp(`${good.length + 1} bytes where its manifest says ${good.length}`));
      assert.equal(reg.requests.length, seen, 'the registry was not asked');
    } finally {
      fs.writeFileSync(file, good);
    }
  });

  test('unknown models, bad input, a registry that cannot be reached or refuses: error statuses', async () => {
    const seen = reg.requests.length;
    const unknown = await postRaw(`${h.srv.url}/api/push`, { model: `${reg.host}/ns/nope:v1` });
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.error, /model "127\.0\.0\.1:\d+\/ns\/nope:v1" not found/);
    await assert.rejects(h.srv.client.push({ model: `${reg.host}/ns/nope:v1` }), (err) => err.status_code === 404);
    const cases = [
      [{}, /model is required/],
      [{ model: '../../etc/passwd' }, /invalid model name/],
      [{ model: 'http://registry.example/ns/m:t' }, /insecure/],
      [{ model: `${reg.host}/ns/tiny:v1`, insecure: 'yes' }, /insecure/],
      [{ model: `${reg.host}/ns/tiny:v1`, stream: 3 }, /stream/],
    ];
    for (const [body, why] of cases) {
      const r = await postRaw(`${h.srv.url}/api/push`, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.body.error, why, JSON.stringify(body));
    }
    assert.equal(reg.requests.length, seen, 'nothing reached the registry');

    // No registry on that port: 502 before the stream starts, naming it.
    const port = await freePort();
    const down = `127.0.0.1:${port}/ns/down:v1`;
    await h.srv.client.copy({ source: 'tiny', destination: down });
    for (const stream of [true, false]) {
      const r = await postRaw(`${h.srv.url}/api/push`, { model: down, stream });
      assert.equal(r.status, 502, r.text);
      assert.match(r.body.error, new RegExp(`cannot reach the registry at http://127\\.0\\.0\\.1:${port}`));
    }

    // A registry that refuses the upload: its own words, after the stream started or as a 502.
    const name = `${reg.host}/ns/refused:v1`;
    await createFromTiny(name, { num_predict: 11 });
    reg.refusePushes({ status: 401, code: 'UNAUTHORIZED', message: 'authentication required' });
    try {
      const { status, lines } = await push(name);
      assert.equal(status, 200);
      assert.match(lines.at(-1).error, /HTTP 401: authentication required \(specd does not authenticate to registries\)/);
      const r = await postRaw(`${h.srv.url}/api/push`, { model: name, stream: false });
      assert.equal(r.status, 502);
      assert.match(r.body.error, /refused to start an upload.*HTTP 401: authentication required/);
      assert.equal(reg.manifest('ns/refused', 'v1'), undefined);
    } finally {
      reg.refusePushes(null);
    }
  });
});
