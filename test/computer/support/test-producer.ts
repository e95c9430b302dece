/**
 * A small, real producer for the engine's tests (kind `tool`): it serves registered temp files
 * (`file` sources) and in-memory byte strings (`bytes` sources), re-authorizes on every pull
 * (a revoked entry is `forbidden`, a removed one `gone`) and counts resolves so tests can prove
 * that a bad handle never reaches it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type {
  BlobSource,
  HandleFields,
  Producer,
  ResolveResult,
} from "../../../computer/contracts.ts";
import { HandleCodec } from "../../../computer/blob/handle.ts";
import { HashCache } from "../../../computer/blob/hash-cache.ts";
import { BlobEngine, type BlobEngineOptions } from "../../../computer/blob/engine.ts";
import type { HashPool } from "../../../computer/workers/pool.ts";
import { createComputerMetrics, type ComputerMetrics } from "../../../computer/metrics.ts";
import { randomBytes } from "node:crypto";

type Entry = { source: BlobSource; revoked: boolean };

export class TestProducer implements Producer {
  readonly kind = "tool" as const;
  readonly #entries = new Map<string, Entry>();
  resolves = 0;
  #next = 0;

  addFile(path: string, mimeType = "application/octet-stream"): string {
    return this.#add({ type: "file", path, mimeType });
  }

  addBytes(bytes: Buffer, mimeType = "application/octet-stream"): string {
    return this.#add({ type: "bytes", bytes, mimeType });
  }

  revoke(id: string): void {
    this.#entries.get(id)!.revoked = true;
  }

  remove(id: string): void {
    this.#entries.delete(id);
  }

  async resolve(fields: HandleFields): Promise<ResolveResult | null> {
    this.resolves++;
    const id = fields.id;
    if (typeof id !== "string" || Object.keys(fields).length !== 1) return null;
    const entry = this.#entries.get(id);
    if (!entry) return { ok: false, reason: "gone" };
    if (entry.revoked) return { ok: false, reason: "forbidden" };
    return { ok: true, source: entry.source };
  }

  #add(source: BlobSource): string {
    const id = `r${this.#next++}`;
    this.#entries.set(id, { source, revoked: false });
    return id;
  }
}

export interface EngineFixture {
  engine: BlobEngine;
  producer: TestProducer;
  codec: HandleCodec;
  cache: HashCache;
  dir: string;
  /** The engine's metrics (a registry of its own). */
  metrics: ComputerMetrics;
  /** Files the engine has opened to serve chunks so far (its metric). */
  fileOpens(): Promise<number>;
  /** Registers a file and mints its handle. */
  fileHandle(path: string, mime?: string): string;
  bytesHandle(bytes: Buffer, mime?: string): string;
  close(): void;
}

export function engineFixture(
  opts: Partial<BlobEngineOptions> & { pool?: HashPool | null } = {},
): EngineFixture {
  const dir = mkdtempSync(join(tmpdir(), "a2c-engine-"));
  const codec = opts.codec ?? new HandleCodec(randomBytes(32));
  const cache = opts.hashCache ?? new HashCache({ pool: opts.pool ?? null });
  const metrics = opts.metrics ?? createComputerMetrics("pc-1");
  // settleMs 0: unit tests read files they just wrote; the snapshot test sets its own window.
  const engine = new BlobEngine({
    maxHttpBufferSize: 1_000_000,
    settleMs: 0,
    ...opts,
    codec,
    hashCache: cache,
    metrics,
  });
  const producer = new TestProducer();
  engine.register(producer);
  return {
    engine,
    producer,
    codec,
    cache,
    dir,
    metrics,
    fileOpens: async () => (await metrics.blobFileOpens.get()).values[0]?.value ?? 0,
    fileHandle: (path, mime) => engine.mint("tool", { id: producer.addFile(path, mime) }),
    bytesHandle: (bytes, mime) => engine.mint("tool", { id: producer.addBytes(bytes, mime) }),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

let reqCounter = 0;
/** A well-formed GetBlobReq for `handle` (fresh req_id each time). */
export function blobReq(handle: string, extra: Record<string, unknown> = {}) {
  return {
    agent: "agent-1",
    req_id: `req-${++reqCounter}`,
    computer: "pc-1",
    blob_handle: handle,
    ...extra,
  } as {
    agent: string;
    req_id: string;
    computer: string;
    blob_handle: string;
    chunk_offset?: number;
    max_chunk_bytes?: number;
    blob_format?: "base64" | "binary";
  };
}
