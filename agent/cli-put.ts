/**
 * `a2c-agent put <computer> <FILE> [--name HINT]`: uploads FILE to the Computer's landing root
 * (`client:put_blob`). stdout is the stored file's absolute path on the Computer (one JSON object
 * with `--json`), ready to pass to a tool; progress and the final line go to stderr. For `put`,
 * `--name` is the name hint (default FILE's base name); the Agent's own name then comes from
 * A2C_AGENT_NAME.
 */
import { stat } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { UsageError, usageLine } from "./cli-args.ts";
import type { FailureContext } from "./cli-report.ts";
import type { AgentClient } from "./client.ts";
import { formatBytes, formatRate, formatSeconds, progressReporter } from "./progress.ts";
import type { ProgressMode } from "./progress.ts";
import type { UploadOptions, UploadResult, UploadStats } from "./upload.ts";

/** What `put` needs of the command's run. */
export interface PutRun {
  agent: AgentClient;
  args: string[];
  json: boolean;
  quiet: boolean;
  progress: ProgressMode;
  signal: AbortSignal;
  ctx: FailureContext;
  /** `--name` (the hint), `--base64`, `--chunk-bytes`, `--window`. */
  upload: Pick<UploadOptions, "nameHint" | "binary" | "chunkBytes" | "window">;
}

/**
 * FILE must be a regular file this process can open: checked before connecting, so a mistyped
 * path is a usage error (exit 2), not a failed upload.
 */
export async function checkPutFile(file: string): Promise<void> {
  const usage = usageLine("put");
  let st;
  try {
    st = await stat(file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === "ENOENT" ? "no such file" : (e.code ?? e.message);
    throw new UsageError(`cannot read '${file}': ${why}`, usage);
  }
  if (!st.isFile()) throw new UsageError(`'${file}' is not a regular file`, usage);
  if (st.size === 0) {
    throw new UsageError(`'${file}' is empty: an upload carries at least one byte`, usage);
  }
}

function statsJson(s: UploadStats): Record<string, unknown> {
  return {
    requests: s.requests,
    bytes_sent: s.bytesSent,
    wire_bytes: s.wireBytes,
    busy: s.busy,
    rewinds: s.rewinds,
    restarts: s.restarts,
    rate_bytes_per_s: Math.round(s.rate),
    rtt_ms: Math.round(s.rttMs * 10) / 10,
    elapsed_ms: Math.round(s.elapsedMs),
  };
}

/** `uploaded /x/y.bin to /landing/<id>_y.bin: 1.0 MiB (1048576 bytes), sha256 ..., ...`. */
function summary(file: string, r: UploadResult): string {
  const s = r.stats;
  const secs = s.elapsedMs / 1000;
  const again = [
    s.busy > 0 ? `${s.busy} busy` : "",
    s.rewinds > 0 ? `${s.rewinds} ${s.rewinds === 1 ? "rewind" : "rewinds"}` : "",
    s.restarts > 0 ? `${s.restarts} ${s.restarts === 1 ? "restart" : "restarts"}` : "",
  ].filter((x) => x !== "");
  return (
    `uploaded ${file} to ${r.landingPath}: ${formatBytes(r.totalSize)} (${r.totalSize} bytes), ` +
    `sha256 ${r.sha256} verified, ${r.carriage} carriage, ${formatSeconds(secs)}, ` +
    `${formatRate(r.totalSize, secs)}${again.length > 0 ? ` (${again.join(", ")})` : ""}`
  );
}

export async function cmdPut(run: PutRun): Promise<void> {
  const [computer, file] = run.args as [string, string];
  const path = resolve(file);
  const bar = progressReporter(basename(path), run.progress);
  const current = { file: path, bytes: 0, total: 0 };
  run.ctx.upload = current;
  let result: UploadResult;
  try {
    result = await run.agent.uploadBlob(computer, path, {
      ...run.upload,
      nameHint: run.upload.nameHint ?? basename(path),
      signal: run.signal,
      onProgress: (p) => {
        current.bytes = p.bytes;
        current.total = p.total;
        bar.update(p);
      },
    });
  } finally {
    bar.end();
  }
  run.ctx.upload = undefined;
  if (run.json) {
    const r = result;
    const out = {
      landing_path: r.landingPath,
      file: path,
      total_size: r.totalSize,
      sha256: r.sha256,
      carriage: r.carriage,
      stats: statsJson(r.stats),
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return;
  }
  if (!run.quiet) process.stderr.write(`${summary(path, result)}\n`);
  process.stdout.write(`${result.landingPath}\n`);
}
