/**
 * Deterministic content of the demo MCP server, shared with the tests that check what they pull
 * (importing `mcp-server.ts` itself would start a server on stdin).
 */
import { encodePng } from "./png.ts";

/** Deterministic bytes for `resource_blob`, so tests can compare what they pull. */
export function patternBytes(size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + 7) & 0xff;
  return out;
}

/** A noisy PNG of roughly `bytes` bytes (noise keeps deflate from shrinking it). */
export function pngOfAbout(bytes: number, seed: number): Buffer {
  const width = 256;
  const height = Math.max(1, Math.ceil(bytes / (width * 3)));
  return encodePng({ width, height, noiseSeed: seed });
}
