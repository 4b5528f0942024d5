// A local OCI distribution registry for the pull and push tests (node http, or https with a
// given key and certificate; loopback only):
//   GET /v2/<repository>/manifests/<tag>   the manifest as stored (JSON, or raw text)
//   GET /v2/<repository>/blobs/<digest>    a blob, honouring "Range: bytes=N-" with a 206
//   HEAD /v2/<repository>/blobs/<digest>   200 when the registry has the blob, else 404
//   POST /v2/<repository>/blobs/uploads/   starts an upload: 202, Location with a state token
//   PUT <location>&digest=<digest>         the whole blob; stored only when its bytes have
//                                          that digest (400 DIGEST_INVALID otherwise)
//   PUT /v2/<repository>/manifests/<tag>   stored when every blob it names is here
// Every request is logged (method, path, Range header) so tests can assert what was fetched,
// and every upload that completed (or broke off) is recorded. Faults on demand: serve other
// bytes than a digest names, cut a blob's transfer short, break an upload after N bytes, and
// refuse pushes with an error status.

import crypto from 'node:crypto';
import http from 'node:http';
import https from 'node:https';

export const MANIFEST_TYPE = 'application/vnd.docker.distribution.manifest.v2+json';
export const CONFIG_TYPE = 'application/vnd.docker.container.image.v1+json';
export const MODEL_TYPE = 'application/vnd.ollama.image.model';
export const PARAMS_TYPE = 'application/vnd.ollama.image.params';
export const LICENSE_TYPE = 'application/vnd.ollama.image.license';

export function sha256(bytes) {
  return 'sha256:' + crypto.createHash('sha256').update(bytes).digest('hex');
}

/** tls: {key, cert} (PEM) serves https instead of http. */
export async function startRegistry({ tls } = {}) {
  const manifests = new Map(); // "<repository>:<tag>" -> string body
  const blobs = new Map(); // digest -> Buffer
  const cuts = new Map(); // digest -> bytes to send before closing the connection (once)
  const requests = [];
  const sessions = new Map(); // upload id -> {repository, state}
  const uploads = []; // {repository, digest, size, complete}
  const uploadCuts = []; // byte counts: each next upload PUT breaks off after that many bytes
  let refusal = null; // {status, code, message}: uploads and manifest PUTs answered with it
  let nextId = 0;

  const readBody = async (req) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    return Buffer.concat(chunks);
  };

  const handler = (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://registry').pathname);
    requests.push({ method: req.method, path, range: req.headers.range ?? null });
    const notFound = (code, message) => {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ errors: [{ code, message }] }));
    };

    const refuse = () => {
      res.writeHead(refusal.status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ errors: [{ code: refusal.code, message: refusal.message }] }));
    };

    let m = /^\/v2\/(.+)\/blobs\/uploads\/$/.exec(path);
    if (m && req.method === 'POST') {
      if (refusal) return refuse();
      const id = `u${++nextId}`;
      // A state token with characters a client must not re-encode.
      const state = `${id}+st/ate=`;
      sessions.set(id, { repository: m[1], state });
      res.writeHead(202, {
        Location: `/v2/${m[1]}/blobs/uploads/${id}?_state=${encodeURIComponent(state)}`,
        'Docker-Upload-UUID': id,
        'Content-Length': 0,
      });
      return res.end();
    }
    m = /^\/v2\/(.+)\/blobs\/uploads\/([^/]+)$/.exec(path);
    if (m && req.method === 'PUT') {
      if (refusal) return refuse();
      const query = new URL(req.url, 'http://registry').searchParams;
      const session = sessions.get(m[2]);
      if (!session || session.repository !== m[1] || query.get('_state') !== session.state) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        return res.end(JSON.stringify({ errors: [{ code: 'BLOB_UPLOAD_UNKNOWN', message: 'blob upload unknown' }] }));
      }
      sessions.delete(m[2]);
      const digest = query.get('digest');
      const record = { repository: m[1], digest, size: 0, complete: false, cut: false };
      uploads.push(record);
      const cut = uploadCuts.shift();
      const chunks = [];
      req.on('data', (c) => {
        chunks.push(c);
        record.size += c.length;
        if (cut !== undefined && record.size >= cut && !record.cut) {
          record.cut = true;
          req.socket.destroy();
        }
      });
      req.on('end', () => {
        if (record.cut) return;
        const bytes = Buffer.concat(chunks);
        if (sha256(bytes) !== digest) {
          res.writeHead(400, { 'Content-Type': 'application/json' });
          return res.end(JSON.stringify({ errors: [{ code: 'DIGEST_INVALID', message: 'provided digest did not match uploaded content' }] }));
        }
        record.complete = true;
        blobs.set(digest, bytes);
        res.writeHead(201, { Location: `/v2/${m[1]}/blobs/${digest}`, 'Docker-Content-Digest': digest, 'Content-Length': 0 });
        res.end();
      });
      return undefined;
    }
    m = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(path);
    if (m && req.method === 'PUT') {
      return readBody(req).then((body) => {
        if (refusal) return refuse();
        let manifest;
        try {
          manifest = JSON.parse(body.toString());
        } catch {
          res.writeHead(400, { 'Content-Type': 'application/json' });
          return res.end(JSON.stringify({ errors: [{ code: 'MANIFEST_INVALID', message: 'manifest invalid' }] }));
        }
        for (const l of [manifest.config, ...(manifest.layers ?? [])]) {
          if (!blobs.has(l?.digest)) {
            res.writeHead(400, { 'Content-Type': 'application/json' });
            return res.end(JSON.stringify({ errors: [{ code: 'MANIFEST_BLOB_UNKNOWN', message: `blob unknown: ${l?.digest}` }] }));
          }
        }
        manifests.set(`${m[1]}:${m[2]}`, body.toString());
        res.writeHead(201, { 'Docker-Content-Digest': sha256(body), 'Content-Length': 0 });
        return res.end();
      });
    }
    m = /^\/v2\/(.+)\/blobs\/(.+)$/.exec(path);
    if (m && req.method === 'HEAD') {
      const bytes = blobs.get(m[2]);
      res.writeHead(bytes ? 200 : 404, bytes ? { 'Content-Length': bytes.length, 'Docker-Content-Digest': m[2] } : {});
      return res.end();
    }

    m = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(path);
    if (m && req.method === 'GET') {
      const body = manifests.get(`${m[1]}:${m[2]}`);
      if (body === undefined) return notFound('MANIFEST_UNKNOWN', 'manifest unknown');
      res.writeHead(200, { 'Content-Type': MANIFEST_TYPE, 'Content-Length': Buffer.byteLength(body) });
      return res.end(body);
    }
    m = /^\/v2\/(.+)\/blobs\/(.+)$/.exec(path);
    if (m && req.method === 'GET') {
      const bytes = blobs.get(m[2]);
      if (!bytes) return notFound('BLOB_UNKNOWN', 'blob unknown to registry');
      let start = 0;
      const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      if (range) {
        start = Number(range[1]);
        if (start >= bytes.length) {
          res.writeHead(416, { 'Content-Range': `bytes */${bytes.length}` });
          return res.end();
        }
        res.writeHead(206, {
          'Content-Type': 'application/octet-stream',
          'Content-Length': bytes.length - start,
          'Content-Range': `bytes ${start}-${bytes.length - 1}/${bytes.length}`,
        });
      } else {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': bytes.length });
      }
      const cut = cuts.get(m[2]);
      if (cut !== undefined) {
        cuts.delete(m[2]);
        // Part of the body, then the connection goes: the client sees a short transfer.
        return res.write(bytes.subarray(start, start + cut), () => setTimeout(() => req.socket.destroy(), 50));
      }
      return res.end(bytes.subarray(start));
    }
    notFound('NAME_UNKNOWN', 'not found');
  };
  const server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, handler) : http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  const scheme = tls ? 'https' : 'http';

  return {
    port,
    host: `127.0.0.1:${port}`,
    url: `${scheme}://127.0.0.1:${port}`,
    requests,
    /** Stores bytes under their digest (or under `digest` to serve bytes that do not match it). */
    putBlob(bytes, digest = sha256(bytes)) {
      blobs.set(digest, Buffer.from(bytes));
      return digest;
    },
    /** Serves a manifest: an object (sent as JSON) or a raw string. */
    putManifest(repository, tag, manifest) {
      manifests.set(`${repository}:${tag}`, typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
    },
    /**
     * Adds a model: layers [{mediaType, bytes, digest?, size?}] plus a config object; a layer's
     * digest and size default to those of its bytes. Returns the manifest.
     */
    addModel(repository, tag, { layers, config }) {
      const configBytes = Buffer.from(JSON.stringify(config));
      const layerOf = (l) => {
        const digest = this.putBlob(l.bytes, l.digest);
        return { mediaType: l.mediaType, digest, size: l.size ?? l.bytes.length };
      };
      const manifest = {
        schemaVersion: 2,
        mediaType: MANIFEST_TYPE,
        config: layerOf({ mediaType: CONFIG_TYPE, bytes: configBytes }),
        layers: layers.map(layerOf),
      };
      this.putManifest(repository, tag, manifest);
      return manifest;
    },
    /** The next GET of this blob sends `bytes` bytes and then closes the connection. */
    cutAfter(digest, bytes) {
      cuts.set(digest, bytes);
    },
    /** Uploads received, in order: {repository, digest, size, complete}. */
    uploads,
    /** A pushed (or added) manifest's bytes, or undefined. */
    manifest(repository, tag) {
      return manifests.get(`${repository}:${tag}`);
    },
    hasBlob(digest) {
      return blobs.has(digest);
    },
    /** The next upload PUT (one per call) breaks off once it has received `bytes` bytes. */
    cutUploadAfter(bytes) {
      uploadCuts.push(bytes);
    },
    /** Uploads and manifest PUTs are answered with this error (null: accepted again). */
    refusePushes(r) {
      refusal = r;
    },
    blobRequests(digest) {
      return requests.filter((r) => r.path.endsWith(`/blobs/${digest}`));
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
