#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=300
/**
 * The `a2c-agent` command: talk to an office as its Agent from a shell (from source:
 * `npm run agent -- ...`). `a2c-agent --server URL --office ID [--token T] <command> ...` (flags and commands:
 * cli-args.ts; how failures are reported: cli-report.ts).
 *
 * stdout carries the command's answer only (one JSON object with `--json`); progress, the final
 * line of a download, notes and errors go to stderr.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import type { CallToolResult } from "@a2c-smcp/protocol";
import { BlobCache } from "./cache.ts";
import {
  HELP,
  PROG,
  UsageError,
  checkServerFlag,
  parseCli,
  positiveInt,
  seconds,
  usageLine,
  type CliValues,
  type Command,
} from "./cli-args.ts";
import {
  EXIT,
  Interrupted,
  describeFailure,
  failureText,
  type FailureContext,
} from "./cli-report.ts";
import type { AgentClient } from "./client.ts";
import { SidebandRestoreError } from "./errors.ts";
import { checkPutFile, cmdPut, type PutRun } from "./cli-put.ts";
import { log, setLogName } from "./log.ts";
import { partialPath } from "./partial-file.ts";
import { downloadSummary, formatBytes, progressReporter, type ProgressMode } from "./progress.ts";
import type { Carriage, DownloadOptions, PullInfo, PullOptions, PullStats } from "./pull.ts";
import { parseRate } from "./rate-limit.ts";
import { findSidebandItems } from "./sideband.ts";
import { drainSkill } from "./skill.ts";
import { FileSink, type FileSinkResult, type ResumeEvent } from "./file-sink.ts";

export { EXIT };

/** Everything a command needs. */
interface Run {
  agent: AgentClient;
  values: CliValues;
  args: string[];
  office: string;
  json: boolean;
  quiet: boolean;
  pull: PullOptions;
  progress: ProgressMode;
  signal: AbortSignal;
  ctx: FailureContext;
}

function out(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** A remark for the person at the terminal (not with --quiet). */
function note(run: Run, text: string): void {
  if (!run.quiet) process.stderr.write(`${PROG}: ${text}\n`);
}

/** `p`, or the abort reason as soon as `signal` fires (for steps that take no signal). */
function interruptible<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolvePromise, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolvePromise, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Pulls `handle` to `file` with progress and the final line; remembers it for a failure. */
async function download(
  run: Run,
  computer: string,
  handle: string,
  file: string,
  expected: Pick<PullOptions, "expectedSha256" | "expectedSize"> = {},
): Promise<PullInfo & FileSinkResult> {
  const path = resolve(file);
  const bar = progressReporter(basename(path), run.progress);
  const current = { file: path, partial: partialPath(path), bytes: 0, total: 0 };
  run.ctx.download = current;
  const started = performance.now();
  try {
    const info = await run.agent.downloadBlob(computer, handle, path, {
      ...run.pull,
      ...expected,
      resume: run.values.continue === true,
      onResume: (e) => note(run, resumeNote(path, e)),
      onProgress: (p) => {
        current.bytes = p.bytes;
        current.total = p.total;
        bar.update(p);
      },
    });
    bar.end();
    run.ctx.download = undefined;
    if (!run.quiet && !run.json) {
      const line = downloadSummary({
        file: path,
        size: info.totalSize,
        sha256: info.sha256,
        seconds: (performance.now() - started) / 1000,
        carriage: info.carriage,
        stats: info.stats,
      });
      process.stderr.write(`${line}\n`);
    }
    return info;
  } finally {
    bar.end();
  }
}

/** The one note `-c` prints about the partial file it found. */
function resumeNote(file: string, e: ResumeEvent): string {
  switch (e.kind) {
    case "resumed":
      return `resuming ${file} from ${formatBytes(e.offset)} of ${formatBytes(e.totalSize)} (${e.partial}, verified)`;
    case "changed":
      return (
        `${e.partial} holds other content (${e.was.totalSize} bytes, sha256 ` +
        `${e.was.sha256.slice(0, 12)}…): the source changed since; starting again from 0`
      );
    case "unusable":
      return `${e.partial} cannot be resumed (${e.why}); starting again from 0`;
  }
}

/**
 * Writes `bytes` to `file` as a download is written: a temp file next to it, fsynced and renamed,
 * so the path changes only when the whole content landed (D46).
 */
async function writeWhole(file: string, bytes: Buffer): Promise<void> {
  const sink = new FileSink(resolve(file));
  try {
    await sink.begin(bytes.length);
    await sink.commit(0, bytes);
    await sink.finish();
  } catch (err) {
    await sink.abort();
    throw err;
  }
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

/** A pull's statistics as `--json` prints them. */
function statsJson(s: PullStats): Record<string, unknown> {
  return {
    requests: s.requests,
    bytes_received: s.bytesReceived,
    wire_bytes: s.wireBytes,
    wire_bytes_per_byte: s.bytesReceived > 0 ? round3(s.wireBytes / s.bytesReceived) : null,
    codings: s.codings,
    busy: s.busy,
    timeouts: s.timeouts,
    resumes: s.resumes,
    restarts: s.restarts,
    rate_bytes_per_s: Math.round(s.rate),
    rtt_ms: Math.round(s.rttMs * 10) / 10,
    elapsed_ms: Math.round(s.elapsedMs),
    from_cache: s.fromCache,
    resumed_from: s.resumedFrom,
  };
}

function summarize(result: CallToolResult): Record<string, unknown> {
  // Human output: binary payloads are shown as their size, not as base64.
  return {
    ...result,
    content: result.content.map((raw) => {
      const item = { ...(raw as Record<string, unknown>) };
      if (typeof item.data === "string") {
        item.data = `<${formatBytes(Buffer.byteLength(item.data, "base64"))}>`;
      }
      const res = item.resource as Record<string, unknown> | undefined;
      if (res && typeof res.blob === "string") {
        item.resource = { ...res, blob: `<${formatBytes(Buffer.byteLength(res.blob, "base64"))}>` };
      }
      return item;
    }),
  };
}

const EXT: Record<string, string> = {
  "image/png": ".png",
  "image/jpeg": ".jpg",
  "image/gif": ".gif",
  "image/webp": ".webp",
  "audio/wav": ".wav",
  "audio/mpeg": ".mp3",
  "application/pdf": ".pdf",
  "application/zip": ".zip",
};

/** `call`'s JSON argument, checked before connecting. */
function toolParams(json: string | undefined): Record<string, unknown> {
  if (json === undefined) return {};
  let params: unknown;
  try {
    params = JSON.parse(json);
  } catch (err) {
    throw new UsageError(
      `tool arguments are not JSON: ${(err as Error).message}`,
      usageLine("call"),
    );
  }
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    throw new UsageError("tool arguments must be a JSON object", usageLine("call"));
  }
  return params as Record<string, unknown>;
}

async function cmdCall(run: Run): Promise<void> {
  const [computer, tool, json] = run.args as [string, string, string | undefined];
  const params = toolParams(json);
  const timeout = positiveInt(run.values.timeout, "--timeout", "call");
  const dir = run.values.out;
  const result = await run.agent.callTool(computer, tool, params, {
    ...(timeout !== undefined ? { timeout } : {}),
    restore: dir === undefined,
    pull: run.pull,
    signal: run.signal,
  });
  if (run.signal.aborted) throw run.signal.reason as Error;
  if (dir === undefined) {
    out(JSON.stringify(run.json ? result : summarize(result), null, run.json ? 0 : 2));
    return;
  }
  // --out: every binary item goes to a file; sidebanded ones are pulled straight to disk.
  await mkdir(dir, { recursive: true });
  const sideband = new Map(findSidebandItems(result).map((s) => [s.index, s]));
  const files: {
    index: number;
    file: string;
    bytes: number;
    carriage: Carriage | null;
    stats?: Record<string, unknown>;
  }[] = [];
  const content = [...result.content];
  for (const [i, raw] of result.content.entries()) {
    const item = raw as Record<string, unknown>;
    const res = item.resource as Record<string, unknown> | undefined;
    const mime = (item.mimeType ?? res?.mimeType) as string | undefined;
    const file = resolve(join(dir, `item-${i}${EXT[mime ?? ""] ?? ".bin"}`));
    const sb = sideband.get(i);
    if (sb) {
      let info: PullInfo;
      try {
        info = await download(run, computer, sb.handle, file, {
          expectedSha256: sb.sha256,
          expectedSize: sb.totalSize,
        });
      } catch (err) {
        throw new SidebandRestoreError(i, (err as Error).message, { cause: err });
      }
      const stats = statsJson(info.stats);
      files.push({ index: i, file, bytes: sb.totalSize, carriage: info.carriage, stats });
    } else if (typeof item.data === "string" || typeof res?.blob === "string") {
      // Inline in the tool result: no pull, so no carriage of ours.
      const bytes = Buffer.from((item.data ?? res?.blob) as string, "base64");
      await writeWhole(file, bytes);
      files.push({ index: i, file, bytes: bytes.length, carriage: null });
    } else continue;
    content[i] = { type: item.type, mimeType: mime, file } as never;
  }
  if (run.json) out(JSON.stringify({ ...result, content, files }));
  else out(JSON.stringify({ ...summarize({ ...result, content }), files }, null, 2));
}

/**
 * `skill`: text to stdout (drained into memory, bounded by D45's default), or with `-o` any
 * resource to the file, streamed (a text handle too: `-o` never holds a resource in memory).
 */
async function cmdSkill(run: Run): Promise<void> {
  const [computer, name, relPath] = run.args as [string, string, string | undefined];
  const file = run.values.output;
  const raw = await run.agent.getSkillRaw(computer, name, relPath, { signal: run.signal });
  const meta = {
    name: raw.name,
    rel_path: raw.rel_path,
    mime_type: raw.mime_type,
    total_size: raw.total_size,
    sha256: raw.sha256,
  };
  if (file && raw.blob_handle !== undefined) {
    const info = await download(run, computer, raw.blob_handle, file, {
      expectedSha256: raw.sha256,
      expectedSize: raw.total_size,
    });
    if (run.json) {
      out(
        JSON.stringify({
          ...meta,
          file: resolve(file),
          carriage: info.carriage,
          stats: statsJson(info.stats),
        }),
      );
    }
    return;
  }
  // Inline bodies are verified here; a text handle is drained (and verified) into the body.
  const ret = await drainSkill(raw, (handle, po) =>
    run.agent.readBlob(computer, handle, { ...run.pull, ...po }),
  );
  if (ret.body !== undefined) {
    if (file) await writeWhole(file, Buffer.from(ret.body, "utf8"));
    if (run.json) {
      out(JSON.stringify({ ...meta, ...(file ? { file: resolve(file) } : { body: ret.body }) }));
    } else if (!file) process.stdout.write(ret.body);
    return;
  }
  throw new UsageError(
    `'${ret.rel_path}' is ${ret.mime_type}, not text: add -o FILE`,
    usageLine("skill"),
  );
}

async function cmdBlob(run: Run): Promise<void> {
  const [computer, handle] = run.args as [string, string];
  const info = await download(run, computer, handle, run.values.output!);
  if (run.json) {
    out(
      JSON.stringify({
        file: info.path,
        total_size: info.totalSize,
        sha256: info.sha256,
        mime_type: info.mimeType,
        requests: info.stats.requests,
        from_cache: info.stats.fromCache,
        carriage: info.carriage,
        stats: statsJson(info.stats),
      }),
    );
  }
}

/** A list command's answer: one line per entry, or a note on stderr when there is none. */
function printList(run: Run, key: string, lines: string[], items: unknown[], empty: string): void {
  if (run.json) out(JSON.stringify({ [key]: items }));
  else if (lines.length > 0) out(lines.join("\n"));
  if (items.length === 0) note(run, empty);
}

async function runCommand(run: Run, command: Command): Promise<void> {
  const computer = run.args[0] ?? "";
  const signal = run.signal;
  switch (command) {
    case "computers": {
      const list = [...run.agent.computers].sort();
      const empty = `no Computers in office '${run.office}' (an empty office, or a mistyped --office)`;
      return printList(run, "computers", list, list, empty);
    }
    case "skills": {
      const skills = await run.agent.getSkills(computer, { signal });
      const lines = skills.map((s) => `${s.name}\t${s.source}\t${s.description}`);
      return printList(run, "skills", lines, skills, `Computer '${computer}' has no skills`);
    }
    case "tools": {
      const tools = await run.agent.getTools(computer, { signal });
      const lines = tools.map((t) => `${t.name}\t${t.description}`);
      return printList(run, "tools", lines, tools, `Computer '${computer}' has no tools`);
    }
    case "skill":
      return cmdSkill(run);
    case "blob":
      return cmdBlob(run);
    case "call":
      return cmdCall(run);
    case "put":
      return cmdPut({ ...run, upload: uploadOptions(run) });
  }
}

/** `put`'s upload options from the flags (`--name` is its name hint there). */
function uploadOptions(run: Run): PutRun["upload"] {
  const { values } = run;
  return {
    binary: values.base64 !== true,
    ...(values.name !== undefined ? { nameHint: values.name } : {}),
    ...(run.pull.chunkBytes !== undefined ? { chunkBytes: run.pull.chunkBytes } : {}),
    ...(run.pull.window !== undefined ? { window: run.pull.window } : {}),
  };
}

/** Flags and environment → the client and pull options; usage errors before any connect. */
function settings(values: CliValues, command: Command, args: string[]) {
  const usage = usageLine(command);
  const server = values.server ?? process.env.A2C_SERVER_URL;
  const office = values.office ?? process.env.A2C_OFFICE_ID;
  if (!server) throw new UsageError("--server URL (or A2C_SERVER_URL) is required", usage);
  checkServerFlag(server, command);
  if (!office) throw new UsageError("--office ID (or A2C_OFFICE_ID) is required", usage);
  if (command === "blob" && !values.output) throw new UsageError("blob needs -o FILE", usage);
  if (values.continue && !values.output && !values.out) {
    throw new UsageError("-c resumes a download to a file: it needs -o FILE (or --out DIR)", usage);
  }
  if (command === "call") toolParams(args[2]);
  const pull: PullOptions = {};
  const window = positiveInt(values.window, "--window", command);
  const chunkBytes = positiveInt(values["chunk-bytes"], "--chunk-bytes", command);
  const targetDelay = positiveInt(values["target-delay"], "--target-delay", command);
  positiveInt(values.timeout, "--timeout", command);
  const connectTimeout = positiveInt(values["connect-timeout"], "--connect-timeout", command);
  if (window !== undefined) pull.window = window;
  Object.assign(pull, pullBounds(values, command));
  if (chunkBytes !== undefined) pull.chunkBytes = chunkBytes;
  if (values.binary && values.base64) {
    throw new UsageError("--binary and --base64 exclude each other", usage);
  }
  // Binary carriage is asked by default (D19); --base64 is the spec's mode.
  pull.binary = values.base64 !== true;
  // Compressed chunks are asked by default (D65); --no-compress sends no content_encoding.
  if (values["no-compress"] === true) pull.compression = false;
  if (values.cache) pull.cache = new BlobCache(values.cache, { logger: log });
  const token = values.token ?? process.env.A2C_TOKEN;
  const own = command === "put" ? undefined : values.name;
  const name = own ?? process.env.A2C_AGENT_NAME ?? `cli-${Math.random().toString(36).slice(2, 8)}`;
  return { server, office, token, name, pull, connectTimeout, targetDelay };
}

/** A rate flag (`--limit-rate`, `--speed-limit`) in curl's syntax, or undefined when absent. */
function rateFlag(values: CliValues, flag: "limit-rate" | "speed-limit", command: Command) {
  const text = values[flag];
  if (text === undefined) return undefined;
  if (flag === "speed-limit" && /^\s*0+\s*$/.test(text)) return 0;
  const rate = parseRate(text);
  if (rate === undefined) {
    throw new UsageError(
      `--${flag} must be bytes a second, as 500k, 2M or 1G (got '${text}')`,
      usageLine(command),
    );
  }
  return rate;
}

/** The pull's rate cap and progress bounds from the flags. */
function pullBounds(values: CliValues, command: Command): DownloadOptions {
  const o: DownloadOptions = {};
  const maxRate = rateFlag(values, "limit-rate", command);
  const speedLimit = rateFlag(values, "speed-limit", command);
  const speedTime = seconds(values["speed-time"], "--speed-time", command);
  const maxTime = seconds(values["max-time"], "--max-time", command);
  if (maxRate !== undefined) o.maxRate = maxRate;
  if (speedLimit !== undefined) o.speedLimit = speedLimit;
  if (speedTime !== undefined) o.speedTimeMs = speedTime * 1000;
  if (maxTime !== undefined) o.maxTimeMs = maxTime * 1000;
  return o;
}

/** Runs the command line; resolves with the exit code (it never rejects). */
async function main(argv: string[]): Promise<number> {
  const ctx: FailureContext = { stage: "setup", args: [] };
  let json = argv.includes("--json");
  const stop = new AbortController();
  let signals = 0;
  const onSignal = (signal: "SIGINT" | "SIGTERM"): void => {
    // A second Ctrl-C does not wait for the clean-up of the first.
    if (++signals > 1) process.exit(signal === "SIGTERM" ? EXIT.terminated : EXIT.interrupted);
    stop.abort(new Interrupted(signal));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  let agent: AgentClient | undefined;
  try {
    const { values, command, args } = parseCli(argv);
    if (values.help || !command) {
      out(HELP);
      return EXIT.ok;
    }
    json = values.json ?? false;
    Object.assign(ctx, { command, args });
    const s = settings(values, command, args);
    if (command === "put") await checkPutFile(args[1]!);
    Object.assign(ctx, { url: s.server, office: s.office, token: s.token !== undefined });
    setLogName(s.name);
    // Loaded once the command line is known good: usage errors and --help answer at once.
    const { AgentClient } = await import("./client.ts");
    agent = new AgentClient({
      url: s.server,
      name: s.name,
      logger: log,
      ...(s.token !== undefined ? { token: s.token } : {}),
      ...(values.path !== undefined ? { path: values.path } : {}),
      ...(s.connectTimeout !== undefined ? { connectTimeoutMs: s.connectTimeout * 1000 } : {}),
      ...(s.targetDelay !== undefined ? { targetDelayMs: s.targetDelay } : {}),
      ...(values["stock-transport"] === true ? { transport: "stock" as const } : {}),
    });
    const quiet = values.quiet ?? false;
    const run: Run = {
      agent,
      values,
      args,
      office: s.office,
      json,
      quiet,
      pull: { ...s.pull, signal: stop.signal },
      progress: json || quiet ? "off" : process.stderr.isTTY ? "tty" : "lines",
      signal: stop.signal,
      ctx,
    };
    ctx.stage = "connect";
    await interruptible(agent.connect(), stop.signal);
    ctx.stage = "join";
    await interruptible(agent.joinOffice(s.office), stop.signal);
    ctx.stage = "command";
    await runCommand(run, command);
    return EXIT.ok;
  } catch (err) {
    if (ctx.download) ctx.download.kept = existsSync(ctx.download.partial);
    const failure = describeFailure(err, ctx);
    if (json) out(JSON.stringify({ error: failure.json, exit_code: failure.exit }));
    process.stderr.write(failureText(failure));
    return failure.exit;
  } finally {
    await agent?.close();
  }
}

const code = await main(process.argv.slice(2));
// Exit once stdout is flushed (a pipe may still hold the answer).
process.stdout.write("", () => process.exit(code));
