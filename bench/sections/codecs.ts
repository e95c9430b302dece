/**
 * Section `codecs`: the content-codings Node ships (gzip at levels 1–9, brotli at qualities 1–9;
 * deflate is gzip's compressor in another frame) on the corpus of compressed carriage (D63, D64):
 * generated text assets (JSON, Markdown, CSV, logs; bench/lib/text-corpus.ts) and incompressible
 * bytes (the bench's keystream content). Each chunk is coded alone, as the wire does, at the
 * chunk sizes a pull uses; per codec and level: the ratio (decoded bytes per coded byte), and the
 * CPU one MB of resource bytes costs to compress and to decompress (this process's CPU time
 * around the synchronous call, one at a time, the median of the repetitions).
 *
 * From those figures, per link rate, what a pull of text would deliver: decoded MB/s = the least
 * of the link's bytes times the ratio, what `slots` compressions at once deliver, and what one
 * decompression delivers, against the link's rate without coding; and the cores its compressions
 * take at that rate. The pick at a rate is the codec that costs the least CPU per MB among those
 * within 10 % of the best speed-up. The Computer's levels (D64: one while compressions are idle,
 * one while they are busy) come from this table.
 */
import {
  brotliCompressSync,
  brotliDecompressSync,
  constants,
  gunzipSync,
  gzipSync,
} from "node:zlib";
import type { Ctx } from "../lib/context.ts";
import { contentAt } from "../lib/data.ts";
import { median, MiB } from "../lib/stats.ts";
import { TEXT_KINDS, textContent, type TextKind } from "../lib/text-corpus.ts";

export type CorpusKind = TextKind | "incompressible";

export interface CodecSpec {
  coding: "gzip" | "br";
  level: number;
}

export interface CodecRow extends CodecSpec {
  kind: CorpusKind;
  chunkBytes: number;
  /** Decoded bytes per coded byte. */
  ratio: number;
  /** CPU ms per MB (10^6 resource bytes), medians of the repetitions. */
  compressMsPerMb: number;
  decompressMsPerMb: number;
  /** Every repetition's compress figure, for the spread. */
  compressReps: number[];
}

export interface RateRow {
  rateMbit: number;
  /** Per codec (`br-5`): text MB/s delivered over the link's rate without coding (modelled). */
  speedup: Record<string, number>;
  /** Per codec: cores its compressions take while delivering that. */
  cores: Record<string, number>;
  /** The codec with the largest speed-up. */
  best: string;
  /** The one with the least compress CPU per MB among those within 10 % of the best. */
  pick: string;
}

export interface CodecsData {
  corpusBytesPerKind: number;
  chunkSizes: number[];
  reps: number;
  /** Compressions at once assumed by the rate model (the Computer's default). */
  slots: number;
  rows: CodecRow[];
  rates: RateRow[];
  notes: string[];
}

export const CODECS: readonly CodecSpec[] = [
  ...[1, 3, 6, 9].map((level) => ({ coding: "gzip" as const, level })),
  ...[1, 3, 4, 5, 6, 9].map((level) => ({ coding: "br" as const, level })),
];

export const codecName = (c: CodecSpec): string => `${c.coding}-${c.level}`;

function encoder(c: CodecSpec): (b: Buffer) => Buffer {
  if (c.coding === "gzip") return (b) => gzipSync(b, { level: c.level });
  return (b) =>
    brotliCompressSync(b, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: c.level,
        [constants.BROTLI_PARAM_SIZE_HINT]: b.length,
        [constants.BROTLI_PARAM_LGWIN]: Math.max(
          constants.BROTLI_MIN_WINDOW_BITS,
          Math.ceil(Math.log2(b.length)),
        ),
      },
    });
}

function decoder(c: CodecSpec): (b: Buffer) => Buffer {
  return c.coding === "gzip" ? (b) => gunzipSync(b) : (b) => brotliDecompressSync(b);
}

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

function corpus(kind: CorpusKind, bytes: number): Buffer {
  if (kind === "incompressible") return contentAt("codecs-incompressible", 0, Buffer.alloc(bytes));
  return textContent(kind, "codecs", bytes);
}

/** One codec on one content at one chunk size: every chunk coded alone, `reps` times. */
function measure(c: CodecSpec, content: Buffer, chunkBytes: number, reps: number) {
  const enc = encoder(c);
  const dec = decoder(c);
  const chunks: Buffer[] = [];
  for (let at = 0; at < content.length; at += chunkBytes) {
    chunks.push(content.subarray(at, at + chunkBytes));
  }
  const mb = content.length / 1e6;
  let coded: Buffer[] = [];
  const compress: number[] = [];
  const decompress: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = cpuMs();
    coded = chunks.map(enc);
    const t1 = cpuMs();
    for (let i = 0; i < coded.length; i++) {
      if (dec(coded[i]!).length !== chunks[i]!.length) throw new Error("codec round trip failed");
    }
    const t2 = cpuMs();
    compress.push((t1 - t0) / mb);
    decompress.push((t2 - t1) / mb);
  }
  const codedBytes = coded.reduce((a, b) => a + b.length, 0);
  return {
    ratio: content.length / codedBytes,
    compressMsPerMb: median(compress),
    decompressMsPerMb: median(decompress),
    compressReps: compress,
  };
}

/**
 * Decoded MB/s a pull of `ratio`-compressible text gets on a link of `rateMbit` with this codec,
 * over what the same link carries without coding: the pipeline runs at its slowest stage (the
 * link, the compressions, the decompression).
 */
export function modelSpeedup(
  rateMbit: number,
  ratio: number,
  compressMsPerMb: number,
  decompressMsPerMb: number,
  slots: number,
): number {
  const link = (rateMbit * 1e6) / 8 / 1e6; // MB/s of wire bytes
  const delivered = Math.min(
    link * ratio,
    (slots * 1000) / compressMsPerMb,
    1000 / decompressMsPerMb,
  );
  return delivered / link;
}

export async function runCodecs(ctx: Ctx): Promise<CodecsData> {
  const plan = ctx.plan.codecs;
  const kinds: CorpusKind[] = [...TEXT_KINDS, "incompressible"];
  const rows: CodecRow[] = [];
  for (const kind of kinds) {
    const content = corpus(kind, plan.bytesPerKind);
    for (const chunkBytes of plan.chunkSizes) {
      for (const c of CODECS) {
        rows.push({ ...c, kind, chunkBytes, ...measure(c, content, chunkBytes, plan.reps) });
        // One codec at a time, but never hold the event loop for the whole section.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    ctx.log(`codecs: ${kind} done`);
  }
  const rates: RateRow[] = plan.rateMbits.map((rateMbit) => {
    const speedup: Record<string, number> = {};
    const cores: Record<string, number> = {};
    const cpu: Record<string, number> = {};
    for (const c of CODECS) {
      // Text only, at the largest chunk: the harmonic mean over the kinds (time adds up).
      const text = rows.filter(
        (r) =>
          r.coding === c.coding &&
          r.level === c.level &&
          r.kind !== "incompressible" &&
          r.chunkBytes === Math.max(...plan.chunkSizes),
      );
      const times = text.map(
        (r) =>
          1 / modelSpeedup(rateMbit, r.ratio, r.compressMsPerMb, r.decompressMsPerMb, plan.slots),
      );
      const name = codecName(c);
      speedup[name] = times.length / times.reduce((a, b) => a + b, 0);
      cpu[name] = text.reduce((a, r) => a + r.compressMsPerMb, 0) / text.length;
      const delivered = speedup[name] * ((rateMbit * 1e6) / 8 / 1e6);
      cores[name] = (delivered * cpu[name]) / 1000;
    }
    const ranked = Object.entries(speedup).sort((a, b) => b[1] - a[1]);
    const top = ranked[0]!;
    const pick = ranked
      .filter(([, v]) => v >= 0.9 * top[1])
      .sort((a, b) => cpu[a[0]]! - cpu[b[0]]!)[0]!;
    return { rateMbit, speedup, cores, best: top[0], pick: pick[0] };
  });
  return {
    corpusBytesPerKind: plan.bytesPerKind,
    chunkSizes: plan.chunkSizes,
    reps: plan.reps,
    slots: plan.slots,
    rows,
    rates,
    notes: [
      `Corpus: ${(plan.bytesPerKind / MiB).toFixed(0)} MiB of each kind: generated JSON (pretty-printed records), Markdown (prose, lists, code, tables), CSV and service logs (bench/lib/text-corpus.ts: made-up words drawn Zipf-like from 4,000, entities that recur, random ids), and incompressible bytes (an AES keystream). Every chunk is coded alone, as each get_blob answer is.`,
      `CPU per MB is this process's CPU time around the synchronous calls, one at a time (the Computer runs them on libuv's thread pool; the cost per MB is the same), the median of ${plan.reps} repetitions; the machine is shared, so compare rows, not runs.`,
      `Speed-up per link rate is modelled from the table: decoded MB/s = min(link × ratio, ${plan.slots} compressions at once, one decompression), over the link's rate; text only, chunks of ${(Math.max(...plan.chunkSizes) / 1024).toFixed(0)} KiB, harmonic mean over the four kinds; cores are what the compressions take at that speed. The pick is the cheapest codec (compress CPU per MB) within 10 % of the best speed-up. The links section measures the real thing.`,
    ],
  };
}
