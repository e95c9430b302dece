#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=300
/**
 * The `a2c-agent` command: talk to an office as its Agent from a shell.
 * `a2c-agent --server URL --office ID [--token T] <command> ...` (see HELP below); from source,
 * `npm run agent -- ...`.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { CallToolResult } from "@a2c-smcp/protocol";
import { BlobCache } from "./cache.ts";
import { AgentClient } from "./client.ts";
import {
  AgentError,
  ConnectError,
  DisconnectedError,
  IntegrityError,
  ProtocolError,
  RequestTimeoutError,
  SidebandRestoreError,
} from "./errors.ts";
import { log } from "./log.ts";
import { progressReporter, formatBytes } from "./progress.ts";
import type { PullOptions } from "./pull.ts";
import { findSidebandItems } from "./sideband.ts";

export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  protocol: 3,
  transport: 4,
  integrity: 5,
  interrupted: 130,
  terminated: 143,
};

const HELP = `Usage: a2c-agent [options] <command> [args]

Commands:
  computers                                   Computers in the office
  skills <computer>                           the Computer's skills
  skill <computer> <name> [rel_path] [-o FILE]
                                              a skill resource (text to stdout; binary needs -o)
  tools <computer>                            the Computer's tools
  call <computer> <tool> [JSON] [--out DIR] [--timeout S]
                                              call a tool; --out writes binary items to DIR
  blob <computer> <handle> -o FILE [--window N] [--chunk-bytes N] [--binary]
                                              download a blob handle to FILE

Options (flags win over env):
  --server URL        Server base URL                 (env A2C_SERVER_URL)
  --office ID         office to join                  (env A2C_OFFICE_ID)
  --token T           auth token                      (env A2C_TOKEN)
  --name N            Agent name (default cli-<random>) (env A2C_AGENT_NAME)
  --path P            Engine.IO path (default /socket.io/)
  --json              machine-readable output on stdout, no progress
  --window N          chunks in flight (default 16)
  --chunk-bytes N     max_chunk_bytes per request
  --binary            ask for binary carriage (blob_format "binary")
  --cache DIR         content-addressed cache directory
  -o, --output FILE   output file
  --out DIR           output directory for call
  --timeout S         tool timeout in seconds (default 60)
  -h, --help          this text

Exit codes:
  0  success
  1  unexpected failure
  2  usage error (bad flags, arguments or JSON)
  3  protocol error (the Server or Computer refused: 4xxx / 40x codes, join refused,
     a Computer breaking the get_blob contract)
  4  transport failure (cannot connect, disconnected, no answer in time)
  5  integrity failure (sha256 / size mismatch, content changed under the read)
  130 interrupted (Ctrl-C); a partial download leaves no file behind
  143 terminated (SIGTERM); the same
`;

class UsageError extends Error {}
/** A stop signal: the command ends with 128 + the signal's number, as shells report it. */
class Interrupted extends Error {
  constructor(readonly exitCode: number) {
    super(exitCode === EXIT.interrupted ? "interrupted" : "terminated");
  }
}

/** After a stop signal, how long the command may take to clean up (a pull removes its file). */
const STOP_GRACE_MS = 3_000;

/**
 * SIGINT and SIGTERM abort a pull in flight; whatever else is running (a connect, a request) gets
 * STOP_GRACE_MS before the process exits with the signal's code anyway.
 */
function stopOnSignals(stop: AbortController): void {
  const signals = { SIGINT: EXIT.interrupted, SIGTERM: EXIT.terminated };
  for (const [signal, code] of Object.entries(signals)) {
    process.once(signal, () => {
      if (stop.signal.aborted) return;
      stop.abort(new Interrupted(code));
      setTimeout(() => process.exit(code), STOP_GRACE_MS).unref();
    });
  }
}

interface Ctx {
  agent: AgentClient;
  json: boolean;
  pull: PullOptions;
  values: Record<string, string | boolean | undefined>;
  progressMode: "tty" | "lines" | "off";
}

function out(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

function intFlag(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

function need(args: string[], n: number, usage: string): void {
  if (args.length < n) throw new UsageError(`usage: ${usage}`);
}

function withProgress(ctx: Ctx, label: string): PullOptions {
  const rep = progressReporter(label, ctx.progressMode);
  return { ...ctx.pull, onProgress: (p) => rep.update(p) };
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

async function cmdCall(ctx: Ctx, args: string[]): Promise<void> {
  need(args, 2, "call <computer> <tool> [JSON]");
  const [computer, tool, json] = args as [string, string, string | undefined];
  let params: Record<string, unknown> = {};
  if (json !== undefined) {
    try {
      params = JSON.parse(json) as Record<string, unknown>;
    } catch {
      throw new UsageError("tool arguments must be a JSON object");
    }
    if (typeof params !== "object" || params === null || Array.isArray(params)) {
      throw new UsageError("tool arguments must be a JSON object");
    }
  }
  const timeout = intFlag(ctx.values.timeout, "timeout");
  const dir = ctx.values.out as string | undefined;
  const result = await ctx.agent.callTool(computer, tool, params, {
    ...(timeout !== undefined ? { timeout } : {}),
    restore: dir === undefined,
    pull: ctx.pull,
  });
  if (dir === undefined) {
    out(JSON.stringify(ctx.json ? result : summarize(result), null, ctx.json ? 0 : 2));
    return;
  }
  // --out: every binary item goes to a file; sidebanded ones are pulled straight to disk.
  await mkdir(dir, { recursive: true });
  const sideband = new Map(findSidebandItems(result).map((s) => [s.index, s]));
  const files: { index: number; file: string; bytes: number }[] = [];
  const content = [...result.content];
  for (const [i, raw] of result.content.entries()) {
    const item = raw as Record<string, unknown>;
    const res = item.resource as Record<string, unknown> | undefined;
    const mime = (item.mimeType ?? res?.mimeType) as string | undefined;
    const file = resolve(join(dir, `item-${i}${EXT[mime ?? ""] ?? ".bin"}`));
    const sb = sideband.get(i);
    if (sb) {
      try {
        await ctx.agent.downloadBlob(computer, sb.handle, file, {
          ...withProgress(ctx, `item ${i}`),
          expectedSha256: sb.sha256,
          expectedSize: sb.totalSize,
        });
      } catch (err) {
        throw new SidebandRestoreError(i, (err as Error).message, { cause: err });
      }
      files.push({ index: i, file, bytes: sb.totalSize });
    } else if (typeof item.data === "string" || typeof res?.blob === "string") {
      const bytes = Buffer.from((item.data ?? res?.blob) as string, "base64");
      await writeFile(file, bytes);
      files.push({ index: i, file, bytes: bytes.length });
    } else continue;
    content[i] = { type: item.type, mimeType: mime, file } as never;
  }
  if (ctx.json) out(JSON.stringify({ ...result, content, files }));
  else {
    out(JSON.stringify({ ...summarize({ ...result, content }), files }, null, 2));
  }
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      server: { type: "string" },
      office: { type: "string" },
      token: { type: "string" },
      name: { type: "string" },
      path: { type: "string" },
      json: { type: "boolean", default: false },
      window: { type: "string" },
      "chunk-bytes": { type: "string" },
      binary: { type: "boolean", default: false },
      cache: { type: "string" },
      output: { type: "string", short: "o" },
      out: { type: "string" },
      timeout: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    out(HELP);
    return EXIT.ok;
  }
  const [command, ...args] = positionals;
  const server = values.server ?? process.env.A2C_SERVER_URL;
  const office = values.office ?? process.env.A2C_OFFICE_ID;
  if (!command) throw new UsageError("missing command (see --help)");
  if (!server) throw new UsageError("--server (or A2C_SERVER_URL) is required");
  if (!office) throw new UsageError("--office (or A2C_OFFICE_ID) is required");
  const known = ["computers", "skills", "skill", "tools", "call", "blob"];
  if (!known.includes(command)) throw new UsageError(`unknown command '${command}'`);

  const pull: PullOptions = {};
  const window = intFlag(values.window, "window");
  const chunkBytes = intFlag(values["chunk-bytes"], "chunk-bytes");
  if (window !== undefined) pull.window = window;
  if (chunkBytes !== undefined) pull.chunkBytes = chunkBytes;
  if (values.binary) pull.binary = true;
  if (values.cache) pull.cache = new BlobCache(values.cache, { logger: log });
  const stop = new AbortController();
  stopOnSignals(stop);
  pull.signal = stop.signal;

  const token = values.token ?? process.env.A2C_TOKEN;
  const agent = new AgentClient({
    url: server,
    logger: log,
    name:
      values.name ?? process.env.A2C_AGENT_NAME ?? `cli-${Math.random().toString(36).slice(2, 8)}`,
    ...(token !== undefined ? { token } : {}),
    ...(values.path !== undefined ? { path: values.path } : {}),
  });
  const json = values.json ?? false;
  const ctx: Ctx = {
    agent,
    json,
    pull,
    values,
    progressMode: json ? "off" : process.stderr.isTTY ? "tty" : "lines",
  };
  try {
    await agent.connect();
    await agent.joinOffice(office);
    switch (command) {
      case "computers": {
        const list = agent.computers.sort();
        out(json ? JSON.stringify({ computers: list }) : list.join("\n"));
        break;
      }
      case "skills": {
        need(args, 1, "skills <computer>");
        const skills = await agent.getSkills(args[0]!);
        out(
          json
            ? JSON.stringify({ skills })
            : skills.map((s) => `${s.name}\t${s.source}\t${s.description}`).join("\n"),
        );
        break;
      }
      case "tools": {
        need(args, 1, "tools <computer>");
        const tools = await agent.getTools(args[0]!);
        out(
          json
            ? JSON.stringify({ tools })
            : tools.map((t) => `${t.name}\t${t.description}`).join("\n"),
        );
        break;
      }
      case "skill": {
        need(args, 2, "skill <computer> <name> [rel_path] [-o FILE]");
        const [computer, name, relPath] = args as [string, string, string | undefined];
        const file = values.output;
        const ret = await agent.getSkill(computer, name, relPath, { pull });
        const meta = {
          name: ret.name,
          rel_path: ret.rel_path,
          mime_type: ret.mime_type,
          total_size: ret.total_size,
          sha256: ret.sha256,
        };
        if (ret.body !== undefined) {
          if (file) await writeFile(file, ret.body, "utf8");
          if (json)
            out(
              JSON.stringify({ ...meta, ...(file ? { file: resolve(file) } : { body: ret.body }) }),
            );
          else if (!file) process.stdout.write(ret.body);
          break;
        }
        if (!file) throw new UsageError(`${ret.mime_type} is binary: use -o FILE`);
        await agent.downloadBlob(computer, ret.blob_handle!, file, {
          ...withProgress(ctx, ret.rel_path),
          expectedSha256: ret.sha256,
          expectedSize: ret.total_size,
        });
        if (json) out(JSON.stringify({ ...meta, file: resolve(file) }));
        break;
      }
      case "blob": {
        need(args, 2, "blob <computer> <handle> -o FILE");
        const file = values.output;
        if (!file) throw new UsageError("blob needs -o FILE");
        const info = await agent.downloadBlob(args[0]!, args[1]!, file, withProgress(ctx, "blob"));
        const summary = {
          file: resolve(info.path),
          total_size: info.totalSize,
          sha256: info.sha256,
          mime_type: info.mimeType,
          requests: info.stats.requests,
          from_cache: info.stats.fromCache,
        };
        out(
          json
            ? JSON.stringify(summary)
            : `${summary.file} ${formatBytes(info.totalSize)} sha256 ${info.sha256}`,
        );
        break;
      }
      case "call":
        await cmdCall(ctx, args);
        break;
    }
    return EXIT.ok;
  } finally {
    await agent.close();
  }
}

/** Maps an error to the documented exit code. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof Interrupted) return err.exitCode;
  if (err instanceof SidebandRestoreError)
    return err.cause ? exitCodeFor(err.cause) : EXIT.protocol;
  if (err instanceof IntegrityError) return EXIT.integrity;
  if (
    err instanceof ConnectError ||
    err instanceof DisconnectedError ||
    err instanceof RequestTimeoutError
  ) {
    return EXIT.transport;
  }
  if (err instanceof ProtocolError || err instanceof AgentError) return EXIT.protocol;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS")) return EXIT.usage;
  return EXIT.failure;
}

function describe(err: unknown): Record<string, unknown> {
  const e = err as Error & { code?: unknown; reason?: unknown };
  const o: Record<string, unknown> = { type: e.name ?? "Error", message: e.message ?? String(err) };
  if (e.code !== undefined) o.code = e.code;
  if (err instanceof ProtocolError && err.reason) o.reason = err.reason;
  if (err instanceof SidebandRestoreError && err.cause) o.cause = describe(err.cause);
  return o;
}

const argv = process.argv.slice(2);
run(argv).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const code = exitCodeFor(err);
    if (argv.includes("--json")) out(JSON.stringify({ error: describe(err), exit_code: code }));
    const d = describe(err);
    process.stderr.write(`agent: ${String(d.type)}: ${String(d.message)}\n`);
    if (code === EXIT.usage) process.stderr.write("(see --help)\n");
    process.exitCode = code;
    process.stdout.write("", () => process.exit(code));
  },
);
