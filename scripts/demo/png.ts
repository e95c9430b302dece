/**
 * A tiny PNG encoder for the demo MCP server and the demo skill home, and the check the stack's
 * scenarios and the tests use on what they pulled: 8-bit RGB, no interlace, zlib-deflated scanlines,
 * CRC32 per chunk (Node 20 has no zlib.crc32, so the table is computed here). The picture is a
 * deterministic pattern plus, optionally, seeded noise so a "big" PNG stays big after deflate.
 */
import { deflateSync } from "node:zlib";

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(...parts: Uint8Array[]): number {
  let c = 0xffffffff;
  for (const bytes of parts) {
    for (let i = 0; i < bytes.length; i++) {
      c = (CRC_TABLE[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
    }
  }
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(head.subarray(4), data), 0);
  return Buffer.concat([head, data, crc]);
}

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export interface PngOptions {
  width: number;
  height: number;
  /** Fill with pseudo-random pixels from this seed (incompressible); else a smooth gradient. */
  noiseSeed?: number;
}

/** Encodes an RGB image; the pixels are a pure function of the options. */
export function encodePng(opts: PngOptions): Buffer {
  const { width, height } = opts;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new RangeError("width and height must be positive integers");
  }
  const stride = width * 3 + 1;
  const raw = Buffer.alloc(stride * height);
  let seed = (opts.noiseSeed ?? 0) >>> 0 || 0x9e3779b9;
  for (let y = 0; y < height; y++) {
    const row = y * stride;
    raw[row] = 0; // filter type: None
    for (let x = 0; x < width; x++) {
      const p = row + 1 + x * 3;
      if (opts.noiseSeed !== undefined) {
        // xorshift32: cheap, deterministic, incompressible enough for deflate.
        seed ^= seed << 13;
        seed ^= seed >>> 17;
        seed ^= seed << 5;
        seed >>>= 0;
        raw[p] = seed & 0xff;
        raw[p + 1] = (seed >>> 8) & 0xff;
        raw[p + 2] = (seed >>> 16) & 0xff;
      } else {
        raw[p] = (x * 255) / Math.max(1, width - 1);
        raw[p + 1] = (y * 255) / Math.max(1, height - 1);
        raw[p + 2] = 128;
      }
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: RGB
  ihdr[10] = 0; // compression
  ihdr[11] = 0; // filter
  ihdr[12] = 0; // interlace
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", new Uint8Array(0)),
  ]);
}

/** Minimal PNG check used by tests: signature, IHDR size, every chunk CRC, IDAT inflates. */
export function readPngHeader(png: Buffer): { width: number; height: number } {
  if (!png.subarray(0, 8).equals(PNG_SIGNATURE)) throw new Error("not a PNG");
  let off = 8;
  let dims: { width: number; height: number } | null = null;
  while (off < png.length) {
    const len = png.readUInt32BE(off);
    const type = png.subarray(off + 4, off + 8);
    const data = png.subarray(off + 8, off + 8 + len);
    if (png.readUInt32BE(off + 8 + len) !== crc32(type, data)) throw new Error("bad CRC");
    if (type.toString("latin1") === "IHDR") {
      dims = { width: data.readUInt32BE(0), height: data.readUInt32BE(4) };
    }
    off += 12 + len;
  }
  if (!dims) throw new Error("no IHDR");
  return dims;
}

/** A real, seeded-noise RGB PNG (incompressible, so the demo has real bytes to move). */
export function makePng(width: number, height: number, seed = 1): Buffer {
  return encodePng({ width, height, noiseSeed: seed });
}

/** Width and height when `buf` is a well-formed PNG (signature, chunk CRCs, IHDR); else `null`. */
export function pngSize(buf: Buffer): { width: number; height: number } | null {
  try {
    return readPngHeader(buf);
  } catch {
    return null;
  }
}
