/**
 * Agent-side commands for our stack, run inside the bench's Agent process: connect Agents with the
 * real SDK (`@a2c-smcp/agent`, its built package), get handles through the SKILL channel, drive raw chunks
 * (`getBlobChunk`, for the sweep) and run the SDK's own pull loop (`readBlobWithInfo`, for the
 * default-settings goal, the many-Agents, rewrite and user-view sections) with per-chunk timing.
 */
import {
  AgentClient,
  type AgentClientOptions,
  ComputerPath,
  readBlobWithInfo,
  type Carriage,
  type ChunkFetcher,
  type PullOptions,
  uploadBlob,
  type ChunkUploader,
  type UploadOptions,
} from "@a2c-smcp/agent";
import type { Handler } from "../lib/ipc.ts";
import type { FetchChunk } from "../lib/driver.ts";
import { IntegrityError, sha256Hex } from "../lib/integrity.ts";
import { mbPerSec, summarize, type LatencySummary } from "../lib/stats.ts";

interface Seat {
  client: AgentClient;
  office: string;
  computer: string;
  /** Latencies of the chunk requests of the SDK reads in progress (see `timed`). */
  latencies: number[];
  /** The fetcher and path those reads share, as the client's own pulls share its path. */
  timed?: ChunkFetcher;
}

const seats: Seat[] = [];

function seat(i: number): Seat {
  const s = seats[i];
  if (!s) throw new Error(`no connected Agent #${i}`);
  return s;
}

/**
 * A ChunkFetcher that times every `client:get_blob` the SDK's pull sends, with one path of its own
 * per seat: every read of the seat shares it, as every pull through one client shares the
 * client's path (a read does not start again from the path's first estimates), and the path's
 * requests go through the timing. Chunks go back to the client's decode buffers as in a plain pull.
 */
function timed(s: Seat): ChunkFetcher {
  if (s.timed) return s.timed;
  const { client, latencies } = s;
  let path: ComputerPath | undefined;
  const fetcher: ChunkFetcher = {
    fetchChunk: async (computer, handle, req) => {
      const t0 = performance.now();
      const r = await client.fetchChunk(computer, handle, req);
      latencies.push(performance.now() - t0);
      return r;
    },
    waitForComputer: (computer, opts) => client.waitForComputer(computer, opts),
    pathTo: (computer) => (path ??= new ComputerPath(fetcher, computer)),
    releaseChunk: (bytes) => client.releaseChunk(bytes),
  };
  return (s.timed = fetcher);
}

export function stackFetcher(
  agent: number,
  handle: string,
  carriage: "base64" | "binary",
): FetchChunk {
  const s = seat(agent);
  return async (offset, size) => {
    const r = await s.client.getBlobChunk(s.computer, handle, {
      offset,
      maxChunkBytes: size,
      binary: carriage === "binary",
    });
    const bytes = typeof r.blob === "string" ? Buffer.from(r.blob, "base64") : r.blob;
    if (carriage === "binary" && typeof r.blob === "string") {
      throw new Error(
        "asked for binary carriage, got base64 (D19 says the Computer echoes blob_format when it honours it)",
      );
    }
    return { offset: r.chunk_offset, bytes, sha256: r.sha256, totalSize: r.total_size, eof: r.eof };
  };
}

export interface SdkReadResult {
  reads: number;
  bytes: number;
  seconds: number;
  mbps: number;
  latencyMs: LatencySummary;
  requests: number;
  restarts: number;
  /** MB/s of each whole read, in order (a median of these is robust to one slow read). */
  perReadMbps: number[];
  /** Every chunk latency (ms), when asked for (to merge percentiles across Agents). */
  samples?: number[];
}

export interface SdkReadArgs {
  agent: number;
  handle: string;
  sha256: string;
  totalSize: number;
  durationMs: number;
  /** Exactly this many whole reads (then `durationMs` is ignored). */
  reads?: number;
  options: Pick<PullOptions, "window" | "chunkBytes" | "binary">;
  raw?: boolean;
}

/** Whole reads with the SDK's pull loop until the time is up; each verified against `sha256`. */
async function sdkRead(args: SdkReadArgs): Promise<SdkReadResult> {
  const s = seat(args.agent);
  const fetcher = timed(s);
  const firstLatency = s.latencies.length;
  const start = performance.now();
  let reads = 0;
  let bytes = 0;
  let requests = 0;
  let restarts = 0;
  const perReadMbps: number[] = [];
  const more = (): boolean =>
    args.reads !== undefined ? reads < args.reads : performance.now() - start < args.durationMs;
  do {
    const r0 = performance.now();
    const { value, info } = await readBlobWithInfo(fetcher, s.computer, args.handle, args.options);
    // The read's own time (the SDK's pull and its final sha256), without the bench's check below.
    const readSeconds = (performance.now() - r0) / 1000;
    const digest = sha256Hex(value);
    if (digest !== args.sha256 || value.length !== args.totalSize) {
      throw new IntegrityError(
        `SDK read of ${args.totalSize} bytes gave sha256 ${digest}, expected ${args.sha256}`,
      );
    }
    perReadMbps.push(mbPerSec(value.length, readSeconds));
    reads++;
    bytes += value.length;
    requests += info.stats.requests;
    restarts += info.stats.restarts;
  } while (more());
  const seconds = (performance.now() - start) / 1000;
  // Taken out of the seat's list, so it does not grow with every read of a long run.
  const latencies = s.latencies.splice(firstLatency);
  return {
    reads,
    bytes,
    seconds,
    mbps: mbPerSec(bytes, seconds),
    latencyMs: summarize(latencies),
    requests,
    restarts,
    perReadMbps,
    ...(args.raw ? { samples: latencies } : {}),
  };
}

export interface SkillReadArgs {
  agent: number;
  skill: string;
  relPath: string;
  sha256: string;
  totalSize: number;
  /** Pull options: `{}` are the SDK defaults; `{binary: false}` is the spec's base64 mode. */
  options: Pick<PullOptions, "binary">;
}

export interface SkillReadResult {
  /** `getSkillRaw` + `readBlobWithInfo`, the bench's own check excluded. */
  seconds: number;
  mbps: number;
  /** The carriage the SDK reports the read used. */
  carriage: Carriage | null;
  requests: number;
}

/**
 * What an application does to get a skill's file into memory: `get_skill` for its handle, then
 * one whole read with the given options. Timed in this process; the bytes are then checked here.
 */
async function sdkSkillRead(args: SkillReadArgs): Promise<SkillReadResult> {
  const s = seat(args.agent);
  const t0 = performance.now();
  const ret = await s.client.getSkillRaw(s.computer, args.skill, args.relPath, {
    timeoutMs: 120_000,
  });
  if (!ret.blob_handle) throw new Error(`get_skill ${args.relPath} answered inline`);
  const { value, info } = await readBlobWithInfo(s.client, s.computer, ret.blob_handle, {
    ...args.options,
    expectedSha256: ret.sha256,
    expectedSize: ret.total_size,
  });
  const seconds = (performance.now() - t0) / 1000;
  const digest = sha256Hex(value);
  if (digest !== args.sha256 || value.length !== args.totalSize) {
    throw new IntegrityError(
      `SDK read of ${args.totalSize} bytes gave sha256 ${digest}, expected ${args.sha256}`,
    );
  }
  return {
    seconds,
    mbps: mbPerSec(value.length, seconds),
    carriage: info.carriage,
    requests: info.stats.requests,
  };
}

interface ChurnArgs {
  agent: number;
  handle: string;
  durationMs: number;
}

export interface Delivery {
  /** The sha256 the SDK verified the delivered bytes against (the Computer's report). */
  sha256: string;
  /** sha256 of the delivered bytes, computed here. */
  digest: string;
  seconds: number;
  restarts: number;
  requests: number;
}

export interface ChurnResult {
  deliveries: Delivery[];
  /** Reads the SDK gave up on, by error name. */
  gaveUp: Record<string, number>;
  firstError: string | null;
}

/** Whole reads with the SDK defaults while writers rewrite the resource; nothing is assumed. */
async function sdkChurn(args: ChurnArgs): Promise<ChurnResult> {
  const s = seat(args.agent);
  const end = performance.now() + args.durationMs;
  const deliveries: Delivery[] = [];
  const gaveUp: Record<string, number> = {};
  let firstError: string | null = null;
  while (performance.now() < end) {
    const t0 = performance.now();
    try {
      const { value, info } = await readBlobWithInfo(s.client, s.computer, args.handle, {});
      deliveries.push({
        sha256: info.sha256,
        digest: sha256Hex(value),
        seconds: (performance.now() - t0) / 1000,
        restarts: info.stats.restarts,
        requests: info.stats.requests,
      });
    } catch (err) {
      const name = err instanceof Error ? err.name : "Error";
      gaveUp[name] = (gaveUp[name] ?? 0) + 1;
      firstError ??= err instanceof Error ? err.message : String(err);
    }
  }
  return { deliveries, gaveUp, firstError };
}

interface AuditArgs {
  agent: number;
  handle: string;
  durationMs: number;
  chunkBytes: number;
  totalSize: number;
  window: number;
}

/** One served chunk, as the auditor saw it: where, how long, under which sha256, its digest. */
export type AuditRecord = [offset: number, length: number, sha256: string, digest: string];

export interface AuditResult {
  records: AuditRecord[];
  /** Refused requests by error and 4018 reason (e.g. `BlobGoneError:gone`); the auditor goes on. */
  errors: Record<string, number>;
}

/** Raw chunks at random offsets while the resource is rewritten, recorded for checking later. */
async function audit(args: AuditArgs): Promise<AuditResult> {
  const s = seat(args.agent);
  const end = performance.now() + args.durationMs;
  const records: AuditRecord[] = [];
  const errors: Record<string, number> = {};
  const chunks = Math.max(1, Math.ceil(args.totalSize / args.chunkBytes));
  const loop = async (): Promise<void> => {
    while (performance.now() < end) {
      const offset = Math.floor(Math.random() * chunks) * args.chunkBytes;
      try {
        const r = await s.client.getBlobChunk(s.computer, args.handle, {
          offset,
          maxChunkBytes: args.chunkBytes,
          binary: false,
        });
        const bytes = typeof r.blob === "string" ? Buffer.from(r.blob, "base64") : r.blob;
        records.push([r.chunk_offset, bytes.length, r.sha256, sha256Hex(bytes)]);
      } catch (err) {
        const e = err as { name?: string; details?: { reason?: unknown } };
        const key = `${e.name ?? "Error"}${typeof e.details?.reason === "string" ? `:${e.details.reason}` : ""}`;
        errors[key] = (errors[key] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: args.window }, () => loop()));
  return { records, errors };
}

export interface SdkUploadArgs {
  agent: number;
  /** The file to upload (hashed first, then read chunk by chunk, as `uploadBlob` does). */
  path: string;
  options: Pick<UploadOptions, "binary" | "window" | "chunkBytes">;
  /** Every chunk exactly `chunkBytes` (no path controller): upstream's pattern. */
  fixedChunks?: boolean;
}

export interface SdkUploadResult {
  /** `uploadBlob` from its call to the final ack, the hash of the file included. */
  seconds: number;
  carriage: Carriage;
  landingPath: string;
  sha256: string;
  totalSize: number;
  requests: number;
  rewinds: number;
  restarts: number;
  busy: number;
}

/** One upload of a file with the SDK (`uploadBlob`), timed in this process. */
async function sdkUpload(args: SdkUploadArgs): Promise<SdkUploadResult> {
  const s = seat(args.agent);
  // Without `uploadPacer` the upload keeps `window` chunks of the ceiling in flight.
  const fixed: ChunkUploader = {
    putBlobChunk: (computer, chunk, opts) => s.client.putBlobChunk(computer, chunk, opts),
    waitForComputer: (computer, opts) => s.client.waitForComputer(computer, opts),
  };
  const t0 = performance.now();
  const r = await uploadBlob(args.fixedChunks ? fixed : s.client, s.computer, args.path, {
    ...args.options,
    nameHint: "bench.bin",
  });
  const { requests, rewinds, restarts, busy } = r.stats;
  return {
    seconds: (performance.now() - t0) / 1000,
    carriage: r.carriage,
    landingPath: r.landingPath,
    sha256: r.sha256,
    totalSize: r.totalSize,
    requests,
    rewinds,
    restarts,
    busy,
  };
}

export interface SdkDownloadArgs {
  agent: number;
  skill: string;
  relPath: string;
  /** Where the file is written (temp, fsync, rename: `downloadBlob`). */
  out: string;
  options: Pick<PullOptions, "binary">;
}

/** `get_skill` + `downloadBlob` to a file: the download an upload of the same file mirrors. */
async function sdkDownload(
  args: SdkDownloadArgs,
): Promise<{ seconds: number; carriage: Carriage | null }> {
  const s = seat(args.agent);
  const t0 = performance.now();
  const ret = await s.client.getSkillRaw(s.computer, args.skill, args.relPath, {
    timeoutMs: 120_000,
  });
  if (!ret.blob_handle) throw new Error(`get_skill ${args.relPath} answered inline`);
  const info = await s.client.downloadBlob(s.computer, ret.blob_handle, args.out, {
    ...args.options,
    expectedSha256: ret.sha256,
    expectedSize: ret.total_size,
  });
  return { seconds: (performance.now() - t0) / 1000, carriage: info.carriage };
}

export const stackHandlers: Record<string, Handler> = {
  "stack-connect": async (raw) => {
    const { url, token, agents, transport } = raw as {
      url: string;
      token: string;
      agents: Array<{ office: string; computer: string }>;
      /** The clients' transport (section transport); the SDK's default when absent. */
      transport?: AgentClientOptions["transport"];
    };
    for (const a of agents) {
      const client = new AgentClient({
        url,
        token,
        name: `bench-agent-${seats.length}`,
        transport,
      });
      await client.connect();
      await client.joinOffice(a.office);
      await client.waitForComputer(a.computer, { timeoutMs: 30_000 });
      seats.push({ client, office: a.office, computer: a.computer, latencies: [] });
    }
    return { agents: seats.length, fastPaths: seats.at(-1)?.client.fastPaths ?? null };
  },
  "stack-handle": async (raw) => {
    const { agent, skill, relPath } = raw as { agent: number; skill: string; relPath: string };
    const s = seat(agent);
    const ret = await s.client.getSkillRaw(s.computer, skill, relPath, { timeoutMs: 120_000 });
    if (!ret.blob_handle)
      throw new Error(`get_skill ${skill}/${relPath} answered inline, expected a handle`);
    return {
      handle: ret.blob_handle,
      sha256: ret.sha256,
      totalSize: ret.total_size,
      mimeType: ret.mime_type,
    };
  },
  /** Asks for far more than any buffer allows: the answer's length is the Computer's clamp. */
  "stack-probe-cap": async (raw) => {
    const { agent, handle, carriage } = raw as {
      agent: number;
      handle: string;
      carriage: "base64" | "binary";
    };
    const s = seat(agent);
    const r = await s.client.getBlobChunk(s.computer, handle, {
      offset: 0,
      maxChunkBytes: 64 * 1024 * 1024,
      binary: carriage === "binary",
    });
    return typeof r.blob === "string" ? Buffer.from(r.blob, "base64").length : r.blob.byteLength;
  },
  "sdk-read": async (raw) => sdkRead(raw as SdkReadArgs),
  "sdk-skill-read": async (raw) => sdkSkillRead(raw as SkillReadArgs),
  "sdk-upload": async (raw) => sdkUpload(raw as SdkUploadArgs),
  "sdk-download": async (raw) => sdkDownload(raw as SdkDownloadArgs),
  "sdk-churn": async (raw) => sdkChurn(raw as ChurnArgs),
  audit: async (raw) => audit(raw as AuditArgs),
  "stack-close": async () => {
    await Promise.all(seats.map((s) => s.client.close()));
    seats.length = 0;
    return null;
  },
};
