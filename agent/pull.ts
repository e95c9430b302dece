/**
 * The pull loop: one routine behind every producer (get_skill handles, tool_call sideband, raw
 * handles; docs/protocol.md, "The blob transport"). It never trusts an echoed offset, never loops
 * on an empty chunk, runs a window of requests at different offsets, asks for binary carriage
 * (D19) and goes on in base64 when a Computer answers so, resumes after a Computer or a socket
 * comes back, and keeps memory bounded by decoding straight into its sink.
 *
 * This file holds the public forms (`pullBlob`, `readBlob`, `readBlobWithInfo`, `downloadBlob`,
 * `blobChunks`) and re-exports the loop's options and defaults, so every pull name is importable
 * from here. The loop itself is split by concern: `pull-run.ts` (one read: first chunk, plan,
 * restarts), `pull-window.ts` (window scheduling, resumes), `pull-reassembly.ts` (in-order
 * placement, hashing, commits), `pull-chunk.ts` (chunk validation, placement), `pull-resume.ts`
 * (resume / re-read policy), `pull-types.ts` (options, results, defaults).
 */
import { PullRun } from "./pull-run.ts";
import {
  DEFAULT_BASE64_CHUNK_BYTES,
  DEFAULT_BINARY_CHUNK_BYTES,
  DEFAULT_WINDOW,
  type ChunkFetcher,
  type PullInfo,
  type PullOptions,
} from "./pull-types.ts";
import { BufferSink, FileSink, StreamSink, type FileSinkResult, type Sink } from "./sinks.ts";

export {
  DEFAULT_BASE64_CHUNK_BYTES,
  DEFAULT_BINARY_CHUNK_BYTES,
  DEFAULT_REREADS,
  DEFAULT_RESUME_TIMEOUT_MS,
  DEFAULT_RETRIES,
  DEFAULT_WINDOW,
  type Carriage,
  type ChunkFetcher,
  type ChunkRequest,
  type PullInfo,
  type PullOptions,
  type PullProgress,
  type PullStats,
} from "./pull-types.ts";

/**
 * Pulls `handle` from `computer` into `sink`. The one loop behind `readBlob`, `downloadBlob`,
 * `blobChunks`, get_skill handles and tool_call sideband items.
 */
export async function pullBlob<R>(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  sink: Sink<R>,
  opts: PullOptions = {},
): Promise<{ value: R; info: PullInfo }> {
  const run = new PullRun(fetcher, computer, handle, sink, opts);
  let info: PullInfo;
  let value: R;
  try {
    info = await run.run();
    value = await sink.finish();
  } catch (err) {
    await sink.abort(err);
    throw err;
  }
  if (opts.cache && !info.stats.fromCache) await opts.cache.store(info.sha256, value);
  return { value, info };
}

// ---------------------------------------------------------------------------------------------
// The public forms

/** The size of a sink's scratch regions: the chunk size the read starts with. */
function scratchBytes(opts: PullOptions): number {
  if (opts.chunkBytes !== undefined) return opts.chunkBytes;
  return opts.binary === false ? DEFAULT_BASE64_CHUNK_BYTES : DEFAULT_BINARY_CHUNK_BYTES;
}

/** Reads a whole blob into memory (one Buffer allocated once the size is known). */
export async function readBlob(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  opts: PullOptions = {},
): Promise<Buffer> {
  return (await readBlobWithInfo(fetcher, computer, handle, opts)).value;
}

/** `readBlob` plus the read's metadata and statistics. */
export async function readBlobWithInfo(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  opts: PullOptions = {},
): Promise<{ value: Buffer; info: PullInfo }> {
  return pullBlob(fetcher, computer, handle, new BufferSink(), opts);
}

/**
 * Downloads a blob to `path`: a temp file next to it, written in large batches, fsynced once and
 * renamed onto `path` (which never holds a partial file).
 */
export async function downloadBlob(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  path: string,
  opts: PullOptions = {},
): Promise<PullInfo & FileSinkResult> {
  const sink = new FileSink(path, scratchBytes(opts));
  const { value, info } = await pullBlob(fetcher, computer, handle, sink, opts);
  return { ...info, ...value };
}

/**
 * The blob as an in-order async iterable of Buffers, with backpressure (at most about `window`
 * chunks wait for the consumer). Breaking out of the loop stops the pull.
 * `Readable.from(blobChunks(...))` gives a Node stream.
 */
export async function* blobChunks(
  fetcher: ChunkFetcher,
  computer: string,
  handle: string,
  opts: PullOptions = {},
): AsyncGenerator<Buffer, PullInfo | undefined, undefined> {
  const sink = new StreamSink(scratchBytes(opts), Math.max(1, opts.window ?? DEFAULT_WINDOW));
  const stop = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
  let info: PullInfo | undefined;
  const running = pullBlob(fetcher, computer, handle, sink, { ...opts, signal }).then(
    (r) => {
      info = r.info;
    },
    () => undefined, // the failure reaches the consumer through the sink
  );
  try {
    yield* sink.chunks();
  } finally {
    stop.abort();
    await running;
  }
  return info;
}
