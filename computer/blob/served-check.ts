/**
 * What the Computer served of one content, checked against what it hashed (D71).
 *
 * The hash cache trusts a file's timestamps: a write through a shared mmap to pages that are
 * already dirty moves neither mtime nor ctime, so the cached sha256 would name bytes the file no
 * longer holds, pull after pull. The Computer reads every byte it serves, so it can see this: the
 * hash records a CRC-32 of the whole content beside the sha256, and each chunk served adds the
 * CRC-32 of its bytes to a coverage of that content. Pieces that meet are joined with the CRC's
 * combine rule (the order chunks are served in does not matter); once the pieces cover the whole
 * content, their CRC must be the recorded one. A difference means the bytes changed under the
 * digest: the cache drops it, and the next request hashes the file again.
 *
 * CRC-32 and not sha256: it costs about a fourth of sha256 per byte (zlib.crc32, Node >= 20.15;
 * without it the check is off), and it only has to notice a change, not resist a forger: whoever
 * can write the file can serve anything anyway.
 */
import { crc32 } from "../workers/hash-file.ts";

export { crc32 };

const POLY = 0xedb88320;

/** a(x)·b(x) modulo the CRC-32 polynomial, bits reflected (zlib's multmodp); `a` is not 0. */
function multmodp(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0..31. */
const X2N: number[] = [];
for (let n = 0, p = 1 << 30; n < 32; n++) {
  X2N.push(p >>> 0);
  p = multmodp(p, p);
}

/** x^(n·2^k) modulo the polynomial (zlib's x2nmodp; n may exceed 2^32). */
function x2nmodp(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multmodp(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** CRC-32 of A followed by B, from CRC-32(A), CRC-32(B) and B's length (zlib's crc32_combine). */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multmodp(x2nmodp(lengthB, 3), crcA) ^ crcB) >>> 0;
}

interface Piece {
  start: number;
  end: number;
  crc: number;
}

/** Most disjoint pieces one coverage keeps; beyond it the coverage gives up (no check). */
const MAX_PIECES = 64;

/** The served pieces of one content of `total` bytes. */
export class Coverage {
  readonly #byStart = new Map<number, Piece>();
  readonly #byEnd = new Map<number, Piece>();

  constructor(readonly total: number) {}

  /**
   * Adds the `length` bytes served at `offset` (their CRC-32 `crc`). Returns the CRC-32 of the
   * whole content once the pieces cover it, `undefined` until then, `null` when this coverage
   * cannot go on (too many pieces). A piece that overlaps one already held is ignored, unless it
   * starts at 0 where one already did: another read of the content has begun, and the coverage
   * starts again with it.
   */
  add(offset: number, length: number, crc: number): number | null | undefined {
    const end = offset + length;
    if (length === 0 || end > this.total) return undefined;
    if (offset === 0 && this.#byStart.has(0)) this.#clear();
    for (const p of this.#byStart.values()) if (p.start < end && offset < p.end) return undefined;
    let piece: Piece = { start: offset, end, crc };
    const left = this.#byEnd.get(offset);
    if (left) {
      this.#remove(left);
      piece = { start: left.start, end, crc: crc32Combine(left.crc, crc, length) };
    }
    const right = this.#byStart.get(end);
    if (right) {
      this.#remove(right);
      piece = {
        start: piece.start,
        end: right.end,
        crc: crc32Combine(piece.crc, right.crc, right.end - right.start),
      };
    }
    if (piece.start === 0 && piece.end === this.total) return piece.crc;
    if (this.#byStart.size >= MAX_PIECES) return null;
    this.#byStart.set(piece.start, piece);
    this.#byEnd.set(piece.end, piece);
    return undefined;
  }

  #remove(p: Piece): void {
    this.#byStart.delete(p.start);
    this.#byEnd.delete(p.end);
  }

  #clear(): void {
    this.#byStart.clear();
    this.#byEnd.clear();
  }
}
