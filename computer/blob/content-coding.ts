/**
 * Compressed carriage at the Computer (docs/protocol.md §6.11; D63, D64): which content-coding a
 * chunk answer gets, and the compression, off the event loop and bounded.
 *
 * Per chunk and stateless (D63): each answer codes exactly its own decoded range, so offsets,
 * parallel pulls, resumes and the digest are untouched, and the Computer keeps nothing per Agent.
 * What it keeps is about content, not about who asks: a verdict per sha256 that stops paying for
 * compressions that do not shrink (D64).
 *
 * A chunk is coded only when that pays, else it goes `identity` at no or little cost:
 * - the request did not ask, or prefers nothing this Computer applies → no work at all;
 * - the chunk is tiny, or its MIME type is a compressed format (images, audio, video, archives,
 *   fonts) → no work at all;
 * - its content recently did not shrink (the verdict) → no work for the next 1, 2, 4, … 256
 *   chunks of it, then one more try (mixed content, such as a tar of text and images, gets
 *   its text parts coded); a content not known to shrink is tried on a 16 KiB sample at the
 *   cheap level first, so incompressible bytes cost a few samples per resource;
 * - compressions are bounded (`maxConcurrent` at once, a short wait line beyond): a chunk that
 *   finds the line full goes identity rather than waiting behind other Agents' compressions;
 * - a coded chunk that is not at least `PAYS` smaller than the chunk is sent identity (the bytes
 *   the Agent would have to decode are not worth a few percent).
 * Compression runs on libuv's thread pool (zlib's asynchronous API), with `maxOutputLength` at
 * the chunk's length, so a chunk that would grow never allocates more than itself.
 *
 * D16 holds without a second computation: the engine sizes every chunk for an answer that
 * carries both fields at their widest (`"identity"`, a `decoded_size` as long as `total_size`),
 * and a coded answer is sent only when its `blob` is smaller than the chunk, so it is never larger
 * than what was sized to fit; an identity answer carries neither field.
 */
import { availableParallelism } from "node:os";
import {
  brotliCompress,
  constants as zlibConstants,
  deflate,
  gzip,
  type BrotliOptions,
  type ZlibOptions,
} from "node:zlib";
import { CONTENT_CODINGS, IDENTITY, type ContentCoding } from "@a2c-smcp/protocol";
import type { ComputerMetrics } from "../metrics.ts";

/**
 * D64: the level of each coding while compressions run less than `BUSY_FRACTION` of the time
 * (`idle`: the links where bytes are dear, at most ~20 Mbit/s per Computer's uplink), and while
 * they run most of the time (`busy`: fast links and loopback, where a compression that takes
 * longer than the bytes it saves would take on the link makes the pull slower). The codecs
 * section of the bench has the table they were chosen from.
 */
export const DEFAULT_LEVELS: Readonly<Record<ContentCoding, CodingLevels>> = {
  br: { idle: 5, busy: 1 },
  gzip: { idle: 6, busy: 1 },
  deflate: { idle: 6, busy: 1 },
};
/** Above this fraction of the time with a compression running, the `busy` level is used… */
const BUSY_FRACTION = 0.5;
/** …until it falls below this one. */
const IDLE_FRACTION = 0.1;
/** The span (ms) over which that fraction is measured: the last second. */
export const LOAD_WINDOW_MS = 1000;
/** Compressions at once, each on one thread of libuv's pool (4 threads unless configured). */
export const DEFAULT_MAX_CONCURRENT = Math.max(1, Math.min(2, availableParallelism()));
/** Chunks waiting for a compression slot, over all Agents, before a chunk goes identity. */
const WAIT_LINE_PER_SLOT = 4;
/** A chunk shorter than this goes identity: a coding's framing takes most of what it saves. */
export const MIN_CODED_BYTES = 512;
/** A coded chunk is sent only at most this fraction of the chunk's length (saves >= 3 %). */
export const PAYS = 0.97;
/** A try that does not reach this (saves < 10 %) counts against the content's verdict. */
const SHRINKS = 0.9;
/** What a content not known to shrink is tried on first: the chunk's first bytes. */
const SAMPLE_BYTES = 16 * 1024;
/** Most chunks of a content skipped after tries that did not shrink (then one more try). */
const MAX_SKIP = 256;
/** Contents whose verdict is remembered (least recently used forgotten first). */
const VERDICTS = 4096;

/**
 * MIME essences whose bytes are already compressed (or are compressed containers): never tried.
 * Types not listed are tried and judged by their bytes (the verdict).
 */
const COMPRESSED_TYPES = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/heic",
  "application/zip",
  "application/gzip",
  "application/x-gzip",
  "application/x-bzip2",
  "application/x-xz",
  "application/x-7z-compressed",
  "application/zstd",
  "application/x-rar-compressed",
  "application/pdf",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  "font/woff",
  "font/woff2",
]);

/** True for a MIME type whose content is already compressed (by its essence, case-insensitive). */
export function isCompressedType(mime: string): boolean {
  const essence = (mime.split(";")[0] ?? "").trim().toLowerCase();
  if (COMPRESSED_TYPES.has(essence)) return true;
  // Audio and video are coded media, except uncompressed PCM.
  return (
    (essence.startsWith("audio/") && essence !== "audio/wav" && essence !== "audio/x-wav") ||
    essence.startsWith("video/")
  );
}

/**
 * The coding a request's `content_encoding` asks for, among those this Computer applies: the
 * first token it knows (case-insensitive, as HTTP's), `identity` when the first such token is
 * `identity` or none is known. `undefined` when the request did not ask (its answer then carries
 * neither field, exactly as before D63).
 */
export function negotiate(
  accepted: string | readonly string[] | undefined,
  enabled: readonly ContentCoding[] = CONTENT_CODINGS,
): ContentCoding | typeof IDENTITY | undefined {
  if (accepted === undefined) return undefined;
  for (const raw of typeof accepted === "string" ? [accepted] : accepted) {
    const token = raw.trim().toLowerCase();
    if (token === IDENTITY) return IDENTITY;
    const known = enabled.find((c) => c === token);
    if (known) return known;
  }
  return IDENTITY;
}

/** Why a chunk that asked for a coding went identity, or `coded` (the metric's label). */
export type CodingOutcome =
  "coded" | "not_offered" | "too_small" | "compressed_type" | "incompressible" | "no_gain" | "busy";

/** A coding's level (brotli quality 0–11, zlib level 1–9) when compressions are idle or busy. */
export interface CodingLevels {
  idle: number;
  busy: number;
}

export interface ChunkCoderOptions {
  /** Codings this Computer applies; `[]` answers every request `identity`. Default all. */
  codings?: readonly ContentCoding[];
  /** Levels per coding (DEFAULT_LEVELS for those not given). */
  levels?: Partial<Record<ContentCoding, CodingLevels>>;
  /** Compressions at once. */
  maxConcurrent?: number;
  metrics?: ComputerMetrics;
}

interface Verdict {
  /** Chunks of this content still to send identity without trying. */
  skip: number;
  /** Tries in a row that did not shrink (0: the last one did). */
  misses: number;
}

export class ChunkCoder {
  readonly codings: readonly ContentCoding[];
  readonly #levels: Readonly<Record<ContentCoding, CodingLevels>>;
  readonly #maxConcurrent: number;
  readonly #maxWaiting: number;
  readonly #metrics: ComputerMetrics | undefined;
  readonly #verdicts = new Map<string, Verdict>();
  readonly #waiting: Array<() => void> = [];
  #running = 0;
  /** Since when at least one compression runs (while `#running > 0`). */
  #activeSince = 0;
  /** Spans of the last LOAD_WINDOW_MS with a compression running (start, end), oldest first. */
  readonly #spans: Array<[number, number]> = [];
  #busy = false;

  constructor(o: ChunkCoderOptions = {}) {
    this.codings = o.codings ?? CONTENT_CODINGS;
    this.#levels = { ...DEFAULT_LEVELS, ...o.levels };
    this.#maxConcurrent = Math.max(1, Math.floor(o.maxConcurrent ?? DEFAULT_MAX_CONCURRENT));
    this.#maxWaiting = WAIT_LINE_PER_SLOT * this.#maxConcurrent;
    this.#metrics = o.metrics;
  }

  /** The coding to try for a request (see `negotiate`). */
  plan(accepted: string | readonly string[] | undefined): ContentCoding | "identity" | undefined {
    return negotiate(accepted, this.codings);
  }

  /**
   * `bytes` (one chunk of the content `sha256`) coded with `coding`, or null when the chunk goes
   * identity. Never throws; `bytes` must stay unchanged until it settles.
   */
  async encode(
    coding: ContentCoding | typeof IDENTITY,
    bytes: Buffer,
    mime: string,
    sha256: string,
  ): Promise<Buffer | null> {
    const n = bytes.length;
    const skipped = this.#skip(coding, n, mime, sha256);
    if (skipped) return this.#count(coding, skipped, n, null);
    const known = this.#verdicts.get(sha256)?.misses === 0;
    if (this.#running >= this.#maxConcurrent) {
      if (this.#waiting.length >= this.#maxWaiting) return this.#count(coding, "busy", n, null);
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else if (this.#running++ === 0) this.#activeSince = performance.now();
    let coded: Buffer | null = null;
    const started = performance.now();
    const levels = this.#levels[coding as ContentCoding];
    const level = this.#isBusy(started) ? levels.busy : levels.idle;
    try {
      const promising =
        known || n <= SAMPLE_BYTES || (await shrinks(coding as ContentCoding, bytes, levels.busy));
      if (promising) coded = await compress(coding as ContentCoding, bytes, level);
    } finally {
      const now = performance.now();
      this.#metrics?.codingSeconds.inc({ coding }, (now - started) / 1000);
      const next = this.#waiting.shift();
      if (next)
        next(); // the slot passes to the next in line
      else if (--this.#running === 0) this.#spans.push([this.#activeSince, now]);
    }
    this.#judge(sha256, coded !== null && coded.length <= SHRINKS * n);
    if (coded === null || coded.length > PAYS * n) return this.#count(coding, "no_gain", n, null);
    return this.#count(coding, "coded", n, coded);
  }

  /**
   * Whether compressions ran most of the time lately (then the cheap level is used): the fraction
   * of the last LOAD_WINDOW_MS with at least one running, with hysteresis (BUSY_FRACTION up,
   * IDLE_FRACTION down: the busy level costs several times less, so the same load reads lower).
   */
  #isBusy(now: number): boolean {
    const from = now - LOAD_WINDOW_MS;
    let old = 0;
    while (old < this.#spans.length && this.#spans[old]![1] <= from) old++;
    if (old > 0) this.#spans.splice(0, old);
    let active = this.#running > 0 ? now - Math.max(from, this.#activeSince) : 0;
    for (const [start, end] of this.#spans) active += end - Math.max(from, start);
    const fraction = active / LOAD_WINDOW_MS;
    if (this.#busy ? fraction < IDLE_FRACTION : fraction > BUSY_FRACTION) this.#busy = !this.#busy;
    return this.#busy;
  }

  /** Why this chunk is not tried, or null to try it. */
  #skip(coding: string, n: number, mime: string, sha256: string): CodingOutcome | null {
    if (coding === IDENTITY) return "not_offered";
    if (n < MIN_CODED_BYTES) return "too_small";
    if (isCompressedType(mime)) return "compressed_type";
    const v = this.#verdicts.get(sha256);
    if (v && v.skip > 0) {
      v.skip--;
      return "incompressible";
    }
    return null;
  }

  /** Records a try: a miss skips the next 1, 2, 4, … chunks of the content; a hit clears that. */
  #judge(sha256: string, shrank: boolean): void {
    const misses = shrank ? 0 : (this.#verdicts.get(sha256)?.misses ?? 0) + 1;
    this.#verdicts.delete(sha256); // re-inserted last: the most recently used
    this.#verdicts.set(sha256, { misses, skip: misses && Math.min(MAX_SKIP, 2 ** (misses - 1)) });
    if (this.#verdicts.size > VERDICTS) {
      this.#verdicts.delete(this.#verdicts.keys().next().value!);
    }
  }

  #count(coding: string, outcome: CodingOutcome, n: number, coded: Buffer | null): Buffer | null {
    const m = this.#metrics;
    if (m) {
      const applied = coded ? coding : IDENTITY;
      m.codedChunks.inc({ coding: applied, outcome });
      m.codedBytes.inc({ coding: applied, side: "decoded" }, n);
      m.codedBytes.inc({ coding: applied, side: "encoded" }, coded ? coded.length : n);
    }
    return coded;
  }
}

/** Whether the first SAMPLE_BYTES of `bytes` shrink below SHRINKS of their length. */
async function shrinks(coding: ContentCoding, bytes: Buffer, level: number): Promise<boolean> {
  const sample = await compress(coding, bytes.subarray(0, SAMPLE_BYTES), level);
  return sample !== null && sample.length <= SHRINKS * SAMPLE_BYTES;
}

/**
 * `bytes` coded with `coding` on the thread pool, or null when the result would not be smaller
 * than the input (`maxOutputLength` stops the codec there) or the codec failed.
 */
function compress(coding: ContentCoding, bytes: Buffer, level: number): Promise<Buffer | null> {
  const n = bytes.length;
  // One output buffer of the input's size: no growing, and the bound stops a chunk that expands.
  const common = { maxOutputLength: n, chunkSize: Math.max(16 * 1024, n) };
  return new Promise((resolve) => {
    const done = (err: Error | null, out: Buffer): void => resolve(err ? null : out);
    if (coding === "br") {
      const options: BrotliOptions = {
        ...common,
        params: {
          [zlibConstants.BROTLI_PARAM_QUALITY]: level,
          [zlibConstants.BROTLI_PARAM_SIZE_HINT]: n,
          // A window about the chunk's size: less memory per compression, the same ratio.
          [zlibConstants.BROTLI_PARAM_LGWIN]: Math.min(
            zlibConstants.BROTLI_MAX_WINDOW_BITS,
            Math.max(zlibConstants.BROTLI_MIN_WINDOW_BITS, Math.ceil(Math.log2(n))),
          ),
        },
      };
      brotliCompress(bytes, options, done);
      return;
    }
    const options: ZlibOptions = { ...common, level };
    if (coding === "gzip") gzip(bytes, options, done);
    else deflate(bytes, options, done);
  });
}
