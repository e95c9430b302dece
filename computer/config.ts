/**
 * Flags and environment of `npm run computer` → `StartComputerOptions`. Flags win over env.
 */
import { isAbsolute } from "node:path";
import { parseArgs } from "node:util";
import { CONTENT_CODINGS, type ContentCoding } from "@a2c-smcp/protocol";
import type { StartComputerOptions } from "./computer.ts";
import type { ComputerHttpOptions } from "./http.ts";

/** What `npm run computer` runs: the Computer, plus its optional HTTP endpoint (http.ts). */
export type ComputerCliOptions = StartComputerOptions & { http?: ComputerHttpOptions };

export const USAGE = `usage: a2c-computer --server URL --office ID --name NAME [options]

  --server URL                 Server base URL (env A2C_SERVER_URL)
  --office ID                  office to join (env A2C_OFFICE_ID)
  --name NAME                  this Computer's name in the office (env A2C_COMPUTER_NAME)
  --token T                    bearer token (env A2C_TOKEN)
  --path P                     Engine.IO path, default /socket.io/ (env A2C_PATH)
  --skills DIR                 skill home (env A2C_SKILLS_DIR)
  --mcp-config FILE            MCP servers config (env A2C_MCP_CONFIG)
  --state-dir DIR              handle key and spool, default ~/.a2c/computers/<name> (env A2C_STATE_DIR)
  --max-http-buffer-size N     the Server's maxHttpBufferSize, default 1000000 (env A2C_MAX_HTTP_BUFFER_SIZE)
  --inline-budget N            inline text/binary budget in bytes, default 32768 (env A2C_INLINE_BUDGET)
  --max-size N                 hard cap on a resource, default 104857600 (env A2C_MAX_SIZE)
  --workers N                  hashing threads; 0 = hash inline (env A2C_WORKERS)
  --relay-timeout-ms N         the Server's relay timeout of client:get_*, default 30000: a chunk
                               request whose answer would arrive later is answered busy
                               (env A2C_RELAY_TIMEOUT_MS, as the Server's)
  --max-unsent-bytes N         answer bytes the socket may hold unsent before no further chunk is
                               read, default 262144 (env A2C_MAX_UNSENT_BYTES)
  --content-codings LIST       codings chunk answers may get when an Agent asks, default br,gzip,deflate;
                               none = always identity (env A2C_CONTENT_CODINGS)
  --hash-nice N                nice offset of the hashing threads, 0-19, default 10 (env A2C_HASH_NICE)
  --fd-cache-entries N         file descriptors kept open between chunks, default 16; 0 = none
                               (env A2C_FD_CACHE_ENTRIES)
  --skill-watch-entries N      entries of one skill package read per change scan, default
                               10000 (env A2C_SKILL_WATCH_ENTRIES)
  --landing-root DIR           absolute directory client:put_blob uploads land in; unset = every
                               upload is refused forbidden (env A2C_LANDING_ROOT)
  --upload-idle-timeout S      seconds an upload may sit idle before it is dropped, default 120
                               (env A2C_UPLOAD_IDLE_TIMEOUT)
  --upload-max-concurrent N    uploads open at once before a new one is busy, default 4
                               (env A2C_UPLOAD_MAX_CONCURRENT)
  --upload-max-bytes N         largest upload in bytes, default 104857600 (env A2C_UPLOAD_MAX_BYTES)
  --allow-hard-links           serve skill files that have more than one hard link (refused as
                               forbidden by default; env A2C_ALLOW_HARD_LINKS=1)
  --http-port P                serve GET /healthz and /metrics on this port; off when unset,
                               0 = any free port (env A2C_HTTP_PORT)
  --http-host H                interface of that endpoint, default 127.0.0.1 (env A2C_HTTP_HOST)
  --stock-transport            every transport fast path off: socket.io-client, engine.io-client
                               and ws as shipped (env A2C_COMPUTER_TRANSPORT=stock)
  -h, --help                   this text
Log level: A2C_LOG_LEVEL (default info).`;

export class UsageError extends Error {
  override readonly name = "UsageError";
}

const STRING_FLAGS = {
  server: "A2C_SERVER_URL",
  office: "A2C_OFFICE_ID",
  name: "A2C_COMPUTER_NAME",
  token: "A2C_TOKEN",
  path: "A2C_PATH",
  skills: "A2C_SKILLS_DIR",
  "mcp-config": "A2C_MCP_CONFIG",
  "state-dir": "A2C_STATE_DIR",
  "http-host": "A2C_HTTP_HOST",
  "content-codings": "A2C_CONTENT_CODINGS",
  "landing-root": "A2C_LANDING_ROOT",
} as const;

const INT_FLAGS = {
  "max-http-buffer-size": { env: "A2C_MAX_HTTP_BUFFER_SIZE", min: 1024 },
  "inline-budget": { env: "A2C_INLINE_BUDGET", min: 0 },
  "max-size": { env: "A2C_MAX_SIZE", min: 0 },
  workers: { env: "A2C_WORKERS", min: 0 },
  "relay-timeout-ms": { env: "A2C_RELAY_TIMEOUT_MS", min: 1 },
  "max-unsent-bytes": { env: "A2C_MAX_UNSENT_BYTES", min: 1 },
  "hash-nice": { env: "A2C_HASH_NICE", min: 0, max: 19 },
  "fd-cache-entries": { env: "A2C_FD_CACHE_ENTRIES", min: 0, max: 4096 },
  "http-port": { env: "A2C_HTTP_PORT", min: 0, max: 65535 },
  "skill-watch-entries": { env: "A2C_SKILL_WATCH_ENTRIES", min: 1 },
  "upload-idle-timeout": { env: "A2C_UPLOAD_IDLE_TIMEOUT", min: 1 },
  "upload-max-concurrent": { env: "A2C_UPLOAD_MAX_CONCURRENT", min: 1 },
  "upload-max-bytes": { env: "A2C_UPLOAD_MAX_BYTES", min: 1 },
} as const;

/** `null` when `--help` was asked for. Throws `UsageError` on bad input. */
export function parseComputerArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): ComputerCliOptions | null {
  const options: Record<string, { type: "string" } | { type: "boolean"; short?: string }> = {
    help: { type: "boolean", short: "h" },
    "allow-hard-links": { type: "boolean" },
    "stock-transport": { type: "boolean" },
  };
  for (const k of [...Object.keys(STRING_FLAGS), ...Object.keys(INT_FLAGS)]) {
    options[k] = { type: "string" };
  }
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args: [...argv], options, allowPositionals: false, strict: true }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help === true) return null;
  const str = (flag: keyof typeof STRING_FLAGS): string | undefined => {
    const v = values[flag];
    const out = typeof v === "string" ? v : env[STRING_FLAGS[flag]];
    return out === undefined || out === "" ? undefined : out;
  };
  const int = (flag: keyof typeof INT_FLAGS): number | undefined => {
    const v = values[flag];
    const raw = typeof v === "string" ? v : env[INT_FLAGS[flag].env];
    if (raw === undefined || raw === "") return undefined;
    if (!/^\d+$/.test(raw.trim()))
      throw new UsageError(`--${flag} must be an integer, got ${JSON.stringify(raw)}`);
    const n = Number(raw);
    const spec: { min: number; max?: number } = INT_FLAGS[flag];
    if (!Number.isSafeInteger(n) || n < spec.min) {
      throw new UsageError(`--${flag} must be >= ${spec.min}`);
    }
    if (spec.max !== undefined && n > spec.max) {
      throw new UsageError(`--${flag} must be <= ${spec.max}`);
    }
    return n;
  };
  const server = str("server");
  const office = str("office");
  const name = str("name");
  const missing = [
    server === undefined && "--server",
    office === undefined && "--office",
    name === undefined && "--name",
  ].filter(Boolean);
  if (missing.length > 0) throw new UsageError(`missing ${missing.join(", ")}`);
  try {
    new URL(server!);
  } catch {
    throw new UsageError(`--server is not a URL: ${JSON.stringify(server)}`);
  }
  const out: ComputerCliOptions = { server: server!, office: office!, name: name! };
  const assign = <K extends keyof ComputerCliOptions>(
    key: K,
    v: ComputerCliOptions[K] | undefined,
  ): void => {
    if (v !== undefined) out[key] = v;
  };
  assign("token", str("token"));
  assign("path", str("path"));
  assign("skills", str("skills"));
  assign("mcpConfig", str("mcp-config"));
  assign("stateDir", str("state-dir"));
  assign("maxHttpBufferSize", int("max-http-buffer-size"));
  assign("inlineBudget", int("inline-budget"));
  assign("maxSize", int("max-size"));
  assign("workers", int("workers"));
  assign("relayTimeoutMs", int("relay-timeout-ms"));
  const maxUnsentBytes = int("max-unsent-bytes");
  if (maxUnsentBytes !== undefined) out.blob = { maxUnsentBytes };
  assign("skillWatchEntries", int("skill-watch-entries"));
  const fdCacheEntries = int("fd-cache-entries");
  if (fdCacheEntries !== undefined) out.blob = { ...out.blob, fdCacheEntries };
  const codings = str("content-codings");
  if (codings !== undefined)
    out.blob = { ...out.blob, compression: { codings: codingList(codings) } };
  const hardLinks = env.A2C_ALLOW_HARD_LINKS;
  if (
    values["allow-hard-links"] === true ||
    (hardLinks !== undefined && /^(1|true|yes|on)$/i.test(hardLinks.trim()))
  ) {
    out.allowHardLinks = true;
  }
  assign("hashNice", int("hash-nice"));
  assign("landingRoot", landingRoot(str("landing-root")));
  const upload = {
    idleTimeoutMs: seconds(int("upload-idle-timeout")),
    maxConcurrent: int("upload-max-concurrent"),
    maxBytes: int("upload-max-bytes"),
  };
  const given = Object.entries(upload).filter(([, v]) => v !== undefined);
  if (given.length > 0) out.upload = Object.fromEntries(given);
  assign("transport", transportMode(values["stock-transport"] === true, env));
  const httpPort = int("http-port");
  const httpHost = str("http-host");
  if (httpPort !== undefined) {
    out.http = { port: httpPort, ...(httpHost !== undefined ? { host: httpHost } : {}) };
  } else if (httpHost !== undefined) {
    throw new UsageError("--http-host needs --http-port");
  }
  return out;
}

/**
 * `--landing-root`: an absolute path (after trimming), or a usage error: a relative one would
 * depend on the directory the Computer happens to start in.
 */
function landingRoot(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  if (!isAbsolute(trimmed)) {
    throw new UsageError(`--landing-root must be an absolute path, got ${JSON.stringify(raw)}`);
  }
  return trimmed;
}

function seconds(n: number | undefined): number | undefined {
  return n === undefined ? undefined : n * 1000;
}

/** `--content-codings`: a comma-separated list of codings this Computer applies, or `none`. */
function codingList(raw: string): ContentCoding[] {
  const tokens = raw
    .split(",")
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);
  if (tokens.length === 1 && tokens[0] === "none") return [];
  const out: ContentCoding[] = [];
  for (const t of tokens) {
    const known = CONTENT_CODINGS.find((c) => c === t);
    if (!known) {
      throw new UsageError(
        `--content-codings takes none or a list of ${CONTENT_CODINGS.join(", ")}; got ${JSON.stringify(t)}`,
      );
    }
    if (!out.includes(known)) out.push(known);
  }
  if (out.length === 0) throw new UsageError("--content-codings is empty (none turns them off)");
  return out;
}

/**
 * `--stock-transport` or `A2C_COMPUTER_TRANSPORT=stock`: every fast path off. Undefined: the
 * default (`fast`). The Server reads its own switch the same way.
 */
function transportMode(stockFlag: boolean, env: NodeJS.ProcessEnv): "stock" | undefined {
  const mode = env.A2C_COMPUTER_TRANSPORT?.trim() || undefined;
  if (mode !== undefined && mode !== "stock" && mode !== "fast") {
    throw new UsageError(
      `A2C_COMPUTER_TRANSPORT must be stock or fast, got ${JSON.stringify(mode)}`,
    );
  }
  return stockFlag || mode === "stock" ? "stock" : undefined;
}
