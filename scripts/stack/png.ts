/**
 * PNGs for the demo data and the scenarios' checks, on top of the demo MCP server's encoder
 * (`computer/tools/png.ts`), so the stack and the tool produce and check PNGs the same way.
 */
import { encodePng, readPngHeader } from "../../computer/tools/png.ts";

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
