// Test images made in code: PNG (zlib from node), BMP, and the handful of malformed ones the
// bad-input cases need. Pixels are a deterministic pattern of (width, height, seed).
import fs from 'node:fs';
import zlib from 'node:zlib';

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

export function pixel(x, y, seed) {
  return [(x * 7 + y * 3 + seed * 13) & 255, (x + seed * 5) & 255, (y * 11 + seed) & 255];
}

/**
 * An 8-bit RGB PNG; `declare` overrides the size written in the header (and nothing else),
 * `color` ([r, g, b]) fills it with one colour instead of the pattern.
 */
export function png(width, height, seed = 0, { declare, color } = {}) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0, o = 0; y < height; ++y) {
    raw[o++] = 0; // filter: none
    for (let x = 0; x < width; ++x) {
      const [r, g, b] = color ?? pixel(x, y, seed);
      raw[o++] = r;
      raw[o++] = g;
      raw[o++] = b;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(declare?.width ?? width, 0);
  ihdr.writeUInt32BE(declare?.height ?? height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(raw, { level: 1 })), chunk('IEND', Buffer.alloc(0))]);
}

/** A 24-bit BMP of the same pixels as png(width, height, seed). */
export function bmp(width, height, seed = 0) {
  const row = Math.ceil((width * 3) / 4) * 4;
  const buf = Buffer.alloc(54 + row * height);
  buf.write('BM', 0, 'latin1');
  buf.writeUInt32LE(buf.length, 2);
  buf.writeUInt32LE(54, 10);
  buf.writeUInt32LE(40, 14);
  buf.writeInt32LE(width, 18);
  buf.writeInt32LE(height, 22);
  buf.writeUInt16LE(1, 26);
  buf.writeUInt16LE(24, 28);
  buf.writeUInt32LE(row * height, 34);
  for (let y = 0; y < height; ++y) {
    const o = 54 + (height - 1 - y) * row; // bottom-up
    for (let x = 0; x < width; ++x) {
      const [r, g, b] = pixel(x, y, seed);
      buf[o + x * 3] = b;
      buf[o + x * 3 + 1] = g;
      buf[o + x * 3 + 2] = r;
    }
  }
  return buf;
}

/** A small baseline JPEG from the fuzz corpus (8x8, every pixel grey 128; 141 bytes). */
export function jpeg() {
  return fs.readFileSync(new URL('../../fuzz/corpus/image/grey.jpg', import.meta.url));
}

export const b64 = (buf) => buf.toString('base64');
