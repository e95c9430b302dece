/**
 * Section 1, micro (tinybench): the per-chunk primitives. sha256 and base64 inline against the
 * piscina pool (cloned Buffer, and SharedArrayBuffer with no copy) at 16 KiB–1 MiB; the handle
 * codec; the size math of D16; JSON encode/parse of a chunk ack; the Server's work to relay a
 * base64 chunk ack, with its raw acks and with socket.io-parser's stock decode and encode.
 * Mean, p99 and margin of error.
 * Each primitive's output is checked once against an inline reference before it is timed.
 */
import { createHash, randomBytes } from "node:crypto";
import { availableParallelism } from "node:os";
import { pathToFileURL } from "node:url";
import { Piscina } from "piscina";
import { Bench } from "tinybench";
import { largestAckMessage, maxChunkBytes, type ChunkEnvelope } from "../../protocol/index.ts";
import { HandleCodec } from "../../computer/blob/handle.ts";
import { RawTextDecoder, RawTextEncoder } from "../../server/transport/raw-text.ts";
import { Decoder, Encoder, type Packet } from "socket.io-parser";
import { compileScript } from "../../scripts/launch/compile.ts";
import { IntegrityError } from "../lib/integrity.ts";
import type { MicroTask } from "../lib/micro-worker.ts";
import { formatBytes, KiB } from "../lib/stats.ts";
import type { Ctx } from "../lib/context.ts";

export interface MicroRow {
  group: string;
  name: string;
  /** Payload bytes per operation (for MB/s), or null. */
  bytes: number | null;
  meanMs: number;
  p99Ms: number;
  /** Margin of error of the mean (95%), ms, and relative to the mean, %. */
  moeMs: number;
  rmePercent: number;
  samples: number;
  mbps: number | null;
}

export interface MicroData {
  rows: MicroRow[];
  poolThreads: number;
}

/** A representative envelope: a SKILL handle of our codec's typical length (~130 chars). */
export const SAMPLE_ENVELOPE: ChunkEnvelope = {
  blob_handle: "A".repeat(140),
  mime_type: "application/octet-stream",
  total_size: 1024 * 1024 * 1024,
  sha256: "0".repeat(64),
  chunk_offset: 1024 * 1024 * 1023,
  req_id: "00000000-0000-4000-8000-000000000000",
};

export async function runMicro(ctx: Ctx): Promise<MicroData> {
  const { sizes, timeMs } = ctx.plan.micro;
  const threads = Math.min(2, availableParallelism());
  const pool = new Piscina<MicroTask, string>({
    filename: pathToFileURL(await compileScript("bench/lib/micro-worker.ts")).href,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: 60_000,
  });
  const bench = new Bench({
    time: timeMs,
    warmupTime: Math.min(50, timeMs),
    iterations: 8,
    throws: true,
  });
  const meta = new Map<string, { group: string; bytes: number | null }>();
  const add = (group: string, name: string, bytes: number | null, fn: () => unknown): void => {
    meta.set(name, { group, bytes });
    bench.add(name, fn);
  };

  try {
    for (const size of sizes) {
      const data = randomBytes(size);
      const shared = new SharedArrayBuffer(size);
      new Uint8Array(shared).set(data);
      const label = formatBytes(size);
      const digest = createHash("sha256").update(data).digest("hex");
      const b64 = data.toString("base64");
      // Correctness first: each variant must produce the inline answer.
      const viaClone = await pool.run({ op: "sha256", data });
      const viaShared = await pool.run({ op: "sha256", shared, offset: 0, length: size });
      const b64Pool = await pool.run({ op: "base64", data });
      if (viaClone !== digest || viaShared !== digest || b64Pool !== b64) {
        throw new IntegrityError(`micro: pool result differs from inline at ${label}`);
      }
      ctx.ledger.add(3, 3 * size);
      add("sha256", `sha256 inline ${label}`, size, () =>
        createHash("sha256").update(data).digest("hex"),
      );
      add("sha256", `sha256 pool (clone) ${label}`, size, () => pool.run({ op: "sha256", data }));
      add("sha256", `sha256 pool (SharedArrayBuffer) ${label}`, size, () =>
        pool.run({ op: "sha256", shared, offset: 0, length: size }),
      );
      add("base64", `base64 inline ${label}`, size, () => data.toString("base64"));
      add("base64", `base64 pool ${label}`, size, () => pool.run({ op: "base64", data }));
      add("base64", `base64 decode inline ${label}`, size, () => Buffer.from(b64, "base64"));
    }

    addHandleCodec(add);

    add("sizing", "maxChunkBytes base64", null, () =>
      maxChunkBytes({
        maxHttpBufferSize: 1_000_000,
        envelope: SAMPLE_ENVELOPE,
        carriage: "base64",
      }),
    );
    add("sizing", "maxChunkBytes binary (polling)", null, () =>
      maxChunkBytes({
        maxHttpBufferSize: 1_000_000,
        envelope: SAMPLE_ENVELOPE,
        carriage: "binary",
        transport: "polling",
      }),
    );
    add("sizing", "largestAckMessage base64 64 KiB", null, () =>
      largestAckMessage(SAMPLE_ENVELOPE, 64 * KiB, false, "base64"),
    );

    const fit = maxChunkBytes({
      maxHttpBufferSize: 1_000_000,
      envelope: SAMPLE_ENVELOPE,
      carriage: "base64",
    });
    for (const size of [64 * KiB, fit]) {
      const ack = { ...SAMPLE_ENVELOPE, eof: false, blob: randomBytes(size).toString("base64") };
      const text = JSON.stringify([ack]);
      const parsed = JSON.parse(text) as [{ blob: string }];
      if (parsed[0].blob !== ack.blob)
        throw new IntegrityError("micro: JSON round trip changed the blob");
      const label = formatBytes(size);
      add("json", `JSON.stringify chunk ack ${label}`, size, () => JSON.stringify([ack]));
      add("json", `JSON.parse chunk ack ${label}`, size, () => JSON.parse(text) as unknown);
    }
    for (const size of [64 * KiB, 256 * KiB, fit]) addAckRelay(add, size);

    ctx.log(`micro: ${bench.tasks.length} tasks, ${timeMs} ms each`);
    await bench.run();
  } finally {
    await pool.destroy();
  }

  const rows: MicroRow[] = [];
  for (const task of bench.tasks) {
    const r = task.result;
    if (r.state !== "completed") {
      throw new Error(
        `micro task ${task.name} ended ${r.state}${"error" in r ? `: ${String(r.error)}` : ""}`,
      );
    }
    const m = meta.get(task.name);
    const bytes = m?.bytes ?? null;
    rows.push({
      group: m?.group ?? "",
      name: task.name,
      bytes,
      meanMs: r.latency.mean,
      p99Ms: r.latency.p99,
      moeMs: r.latency.moe,
      rmePercent: r.latency.rme,
      samples: r.latency.samplesCount,
      mbps: bytes !== null && r.latency.mean > 0 ? bytes / 1e6 / (r.latency.mean / 1000) : null,
    });
  }
  return { rows, poolThreads: threads };
}

type AddFn = (group: string, name: string, bytes: number | null, fn: () => unknown) => void;

/** The Computer's handle codec (computer/blob/handle.ts): seal, open, reject a forgery. */
function addHandleCodec(add: AddFn): void {
  const codec = new HandleCodec(randomBytes(32));
  const fields = { skill: "bench-data", rel_path: "data/resource-0001.bin" };
  const handle = codec.seal("skill", fields);
  const opened = codec.open(handle);
  if (opened?.fields.rel_path !== fields.rel_path)
    throw new IntegrityError("micro: handle did not round-trip");
  const forged = handle.slice(0, -2) + (handle.endsWith("A") ? "BA" : "AA");
  if (codec.open(forged) !== null) throw new IntegrityError("micro: a forged handle authenticated");
  add("handle", `handle seal (${handle.length} chars)`, null, () => codec.seal("skill", fields));
  add("handle", "handle open (valid)", null, () => codec.open(handle));
  add("handle", "handle open (forged, rejected)", null, () => codec.open(forged));
}

/**
 * What the Server does with one base64 chunk ack between engine.io's message and the Agent's
 * packet: with raw acks (read the header, check the JSON, write the text under the Agent's id)
 * and stock (socket.io-parser's JSON.parse and JSON.stringify). Both must write the same packet.
 */
function addAckRelay(add: AddFn, size: number): void {
  const ack = { ...SAMPLE_ENVELOPE, eof: false, blob: randomBytes(size).toString("base64") };
  const message = `3/smcp,7${JSON.stringify([ack])}`;
  const relay = (decoder: Decoder, encoder: Encoder) => (): unknown => {
    let out: unknown;
    decoder.on("decoded", (p: Packet) => {
      out = (encoder.encode({ ...p, id: 12 }) as unknown[])[0];
    });
    decoder.add(message);
    decoder.off("decoded");
    return out;
  };
  const raw = relay(new RawTextDecoder(), new RawTextEncoder());
  const stock = relay(new Decoder(), new Encoder());
  if (raw() !== stock()) throw new IntegrityError("micro: raw and stock acks differ");
  const label = formatBytes(size);
  add("relay", `relay chunk ack, raw ${label}`, size, raw);
  add("relay", `relay chunk ack, stock parser ${label}`, size, stock);
}
