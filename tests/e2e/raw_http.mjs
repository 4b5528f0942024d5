// HTTP over a bare socket, for what fetch and the clients cannot do: several requests written
// at once (pipelining), connections that send nothing or a byte at a time, any header.
import net from 'node:net';

/** Connects to 127.0.0.1:port; resolves the socket once connected. */
export function connect(port) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.off('error', reject);
      resolve(sock);
    });
    sock.once('error', reject);
  });
}

/**
 * Parses HTTP/1.1 answers from the bytes a socket receives, Content-Length and chunked bodies
 * both. next() resolves the next whole answer {status, headers (lower-case names), body
 * (string), json (parsed or null)}, or null when the connection closed first.
 */
export class ResponseReader {
  constructor(sock) {
    this.buf = Buffer.alloc(0);
    this.closed = false;
    this.wake = null;
    sock.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake?.();
    });
    sock.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
    sock.on('error', () => {}); // judged by what arrived
  }

  async next({ timeoutMs = 30_000 } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = this.parse();
      if (r) return r;
      if (this.closed) return null;
      if (Date.now() > deadline) throw new Error(`no whole answer within ${timeoutMs} ms: ${this.buf.toString('latin1').slice(0, 300)}`);
      await new Promise((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
      this.wake = null;
    }
  }

  parse() {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const head = this.buf.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0])?.[1] ?? 0);
    const headers = {};
    for (const line of head.slice(1)) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    let pos = end + 4;
    let body;
    if (status === 100) {
      this.buf = this.buf.subarray(pos);
      return { status, headers, body: '', json: null };
    }
    if (headers['transfer-encoding'] === 'chunked') {
      const parts = [];
      for (;;) {
        const lineEnd = this.buf.indexOf('\r\n', pos);
        if (lineEnd < 0) return null;
        const size = parseInt(this.buf.subarray(pos, lineEnd).toString('latin1'), 16);
        if (this.buf.length < lineEnd + 2 + size + 2) return null;
        parts.push(this.buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        pos = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (this.buf.length < pos + length) return null;
      body = this.buf.subarray(pos, pos + length);
      pos += length;
    }
    this.buf = this.buf.subarray(pos);
    const text = body.toString('utf8');
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status, headers, body: text, json };
  }
}

/** Writes `request` on a fresh connection and resolves its first answer (null: closed unanswered). */
export async function rawExchange(port, request, options) {
  const sock = await connect(port);
  try {
    const reader = new ResponseReader(sock);
    sock.write(request);
    return await reader.next(options);
  } finally {
    sock.destroy();
  }
}

/** The thread count of a process (Linux: /proc/<pid>/status). */
export async function threadCount(pid) {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^Threads:\s+(\d+)/m.exec(status)[1]);
}
