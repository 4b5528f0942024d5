// A local OCI distribution registry for the pull tests (node http, or https with a given key
// and certificate; loopback only):
//   GET /v2/<repository>/manifests/<tag>   the manifest as stored (JSON, or raw text)
//   GET /v2/<repository>/blobs/<digest>    a blob, honouring "Range: bytes=N-" with a 206
// Every request is logged (method, path, Range header) so tests can assert what was fetched.
// Faults on demand: serve other bytes than a digest names, and cut a blob's transfer short.

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

  const handler = (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://registry').pathname);
    requests.push({ method: req.method, path, range: req.headers.range ?? null });
    const notFound = (code, message) => {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ errors: [{ code, message }] }));
    };

    let m = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(path);
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
    blobRequests(digest) {
      return requests.filter((r) => r.path.endsWith(`/blobs/${digest}`));
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
