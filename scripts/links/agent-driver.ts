/**
 * An Agent of the link harness: one process in an Agent namespace, holding one `AgentClient` of
 * the Agent SDK loaded from a build's `agent/dist` (ours, or a baseline checkout's: the SDK under
 * test, never its source), driven by the harness over IPC (`bench/lib/ipc.ts`). It downloads
 * skill files the way an application does (`getSkillRaw` for the handle, `downloadBlob` with the
 * SDK's defaults), uploads files (`uploadBlob`, defaults too) and times small requests (`tool_call` of a trivial MCP tool, `get_skills`) to a
 * Computer, alone or while downloads run, on the same client.
 *
 * What an honest client must never see is counted from the SDK's public surface, independently
 * of what its `PullStats` report: every chunk request the pull makes goes through this client
 * object, so its outcomes are observed there (busy answers by origin, local and relay timeouts),
 * and every line the SDK logs is kept by the logger it is given.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { serve } from "../launch/ipc.ts";
import type * as Sdk from "../../agent/index.ts";

type SdkModule = typeof Sdk;
type Client = InstanceType<SdkModule["AgentClient"]>;

export interface ConnectArgs {
  /** The checkout whose `agent/dist` is the SDK under test. */
  buildRoot: string;
  url: string;
  token: string;
  office: string;
  name: string;
  computers: string[];
  timeoutMs?: number;
}

export interface HandleArgs {
  computer: string;
  skill: string;
  relPath: string;
}

export interface HandleInfo {
  handle: string;
  sha256: string;
  totalSize: number;
}

export interface DownloadArgs extends HandleInfo {
  computer: string;
  /** Where the file goes: left for the caller to check and remove (removed on failure). */
  dest: string;
  /** `false`: the spec's base64 mode; absent: the SDK's default (binary carriage). */
  binary?: boolean;
  /** `false`: no `content_encoding` asked (D65); absent: the SDK's default. */
  compression?: boolean;
  /** The download is aborted after this long and reported incomplete. */
  deadlineMs: number;
}

/** Outcomes of the pull's chunk requests, as this client saw them. */
export interface ChunkOutcomes {
  requests: number;
  answered: number;
  /** Failures by kind: `busy:server:<limit>`, `busy:computer`, `request_timeout`, … */
  failures: Record<string, number>;
}

export interface DownloadResult {
  ok: boolean;
  error: string | null;
  /** Epoch ms (`performance.timeOrigin`-based, comparable across processes) of the call. */
  startedAt: number;
  seconds: number;
  totalSize: number;
  /** Bytes the SDK reported delivered (its progress), `totalSize` on success. */
  bytes: number;
  carriage: string | null;
  /** The SDK's `PullStats`, every numeric or boolean field it has. */
  stats: Record<string, number | boolean>;
  /** `PullStats.codings` (answers by content-coding, D63), when the SDK reports it. */
  codings: Record<string, number>;
  /** This process's CPU time (user + system, ms) during the download. */
  cpuMs: number;
  chunks: ChunkOutcomes;
  /** Lines the SDK logged during the download, by message (shared by concurrent downloads). */
  logs: Record<string, number>;
  /** [ms since startedAt, bytes delivered], at most every 50 ms. */
  progress: Array<[number, number]>;
}

export interface UploadArgs {
  computer: string;
  /** The file to upload (written by the caller). */
  source: string;
  nameHint: string;
  /** The upload is aborted after this long and reported incomplete. */
  deadlineMs: number;
}

export interface UploadRunResult {
  ok: boolean;
  error: string | null;
  /** Epoch ms of the call (as `DownloadResult.startedAt`). */
  startedAt: number;
  seconds: number;
  totalSize: number;
  /** Bytes the Computer acknowledged (the SDK's progress), `totalSize` on success. */
  bytes: number;
  landingPath: string | null;
  sha256: string | null;
  carriage: string | null;
  /** The SDK's `UploadStats`. */
  stats: Record<string, number | boolean>;
  /** [ms since startedAt, bytes acknowledged], at most every 50 ms. */
  progress: Array<[number, number]>;
}

export type ProbeKind = "tool_call" | "get_skills";

export interface ProbeArgs {
  computer: string;
  /** The tool `tool_call` calls (`<bundle>__<tool>`). */
  tool: string;
  kinds: ProbeKind[];
}

export interface ProbeSample {
  kind: ProbeKind;
  /** Epoch ms of the request. */
  at: number;
  ms: number;
  ok: boolean;
  error?: string;
}

const now = (): number => performance.timeOrigin + performance.now();

let sdk: SdkModule | undefined;
let client: Client | undefined;
const logs: Record<string, number> = {};
const chunks = new Map<string, ChunkOutcomes>();
const probes = new Map<number, { stop: () => Promise<ProbeSample[]> }>();
let nextProbe = 1;

function theClient(): Client {
  if (!client) throw new Error("not connected (send connect first)");
  return client;
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** The kind of a failed chunk request, by the SDK's typed errors (never by message text). */
function failureKind(err: unknown): string {
  const e = err as { name?: string; details?: { reason?: unknown; limit?: unknown } };
  if (e.details?.reason === "busy") {
    return typeof e.details.limit === "string" ? `busy:server:${e.details.limit}` : "busy:computer";
  }
  switch (e.name) {
    case "RequestTimeoutError":
      return "request_timeout";
    case "RelayTimeoutError":
      return "relay_timeout";
    case "AbortError":
      return "aborted";
    default:
      return e.name ?? "unknown";
  }
}

function outcomesOf(handle: string): ChunkOutcomes {
  let o = chunks.get(handle);
  if (!o) {
    o = { requests: 0, answered: 0, failures: {} };
    chunks.set(handle, o);
  }
  return o;
}

function countLog(level: string, obj: object, msg: string): void {
  const key = `${level}: ${msg}`;
  logs[key] = (logs[key] ?? 0) + 1;
  const err = (obj as { err?: unknown }).err;
  if (typeof err === "string") {
    const why = err.split(":")[0] ?? err;
    const k = `${key} (${why})`;
    logs[k] = (logs[k] ?? 0) + 1;
  }
}

function logDelta(before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(logs))
    if (v !== (before[k] ?? 0)) out[k] = v - (before[k] ?? 0);
  return out;
}

async function connectClient(a: ConnectArgs): Promise<null> {
  const entry = join(a.buildRoot, "agent", "dist", "index.js");
  sdk = (await import(pathToFileURL(entry).href)) as SdkModule;
  const c = new sdk.AgentClient({
    url: a.url,
    token: a.token,
    name: a.name,
    logger: {
      info: (obj, msg) => countLog("info", obj, msg),
      warn: (obj, msg) => countLog("warn", obj, msg),
    },
  });
  // The pull's requests: `fetchChunk` since the pull checks and decodes answers in the client
  // (D44); a build from before that pulled through `getBlobChunk`.
  const method =
    typeof (c as Partial<Client>).fetchChunk === "function" ? "fetchChunk" : "getBlobChunk";
  const send = (c[method] as (...args: unknown[]) => Promise<unknown>).bind(c);
  (c as unknown as Record<string, unknown>)[method] = async (
    computer: string,
    handle: string,
    req: unknown,
  ): Promise<unknown> => {
    const o = outcomesOf(handle);
    o.requests++;
    try {
      const ret = await send(computer, handle, req);
      o.answered++;
      return ret;
    } catch (err) {
      const kind = failureKind(err);
      o.failures[kind] = (o.failures[kind] ?? 0) + 1;
      throw err;
    }
  };
  const timeoutMs = a.timeoutMs ?? 60_000;
  await c.connect();
  await c.joinOffice(a.office);
  for (const computer of a.computers) await c.waitForComputer(computer, { timeoutMs });
  client = c;
  return null;
}

async function handleOf(a: HandleArgs): Promise<HandleInfo> {
  const ret = await theClient().getSkillRaw(a.computer, a.skill, a.relPath, {
    timeoutMs: 120_000,
  });
  if (!ret.blob_handle) throw new Error(`get_skill ${a.skill}/${a.relPath} answered inline`);
  return { handle: ret.blob_handle, sha256: ret.sha256, totalSize: ret.total_size };
}

function statsOf(stats: object | undefined): Record<string, number | boolean> {
  const out: Record<string, number | boolean> = {};
  for (const [k, v] of Object.entries(stats ?? {})) {
    if (typeof v === "number" || typeof v === "boolean") out[k] = v;
  }
  return out;
}

async function download(a: DownloadArgs): Promise<DownloadResult> {
  const c = theClient();
  const before = { ...logs };
  const outcomes = outcomesOf(a.handle);
  const o0 = { ...outcomes, failures: { ...outcomes.failures } };
  const progress: Array<[number, number]> = [[0, 0]];
  const startedAt = now();
  const cpu0 = process.cpuUsage();
  let lastMark = 0;
  let bytes = 0;
  const signal = AbortSignal.timeout(a.deadlineMs);
  const result = (ok: boolean, error: string | null, info?: Sdk.PullInfo): DownloadResult => {
    const seconds = (now() - startedAt) / 1000;
    progress.push([seconds * 1000, ok ? a.totalSize : bytes]);
    const failures: Record<string, number> = {};
    for (const [k, v] of Object.entries(outcomes.failures)) {
      const d = v - (o0.failures[k] ?? 0);
      if (d > 0) failures[k] = d;
    }
    return {
      ok,
      error,
      startedAt,
      seconds,
      totalSize: a.totalSize,
      bytes: ok ? a.totalSize : bytes,
      carriage: info?.carriage ?? null,
      stats: statsOf(info?.stats),
      codings: { ...(info?.stats as { codings?: Record<string, number> } | undefined)?.codings },
      cpuMs: (() => {
        const d = process.cpuUsage(cpu0);
        return (d.user + d.system) / 1000;
      })(),
      chunks: {
        requests: outcomes.requests - o0.requests,
        answered: outcomes.answered - o0.answered,
        failures,
      },
      logs: logDelta(before),
      progress,
    };
  };
  try {
    const info = await c.downloadBlob(a.computer, a.handle, a.dest, {
      expectedSha256: a.sha256,
      expectedSize: a.totalSize,
      ...(a.binary === false ? { binary: false } : {}),
      ...(a.compression === false ? { compression: false } : {}),
      signal,
      onProgress: (p) => {
        bytes = p.bytes;
        const t = now() - startedAt;
        if (t - lastMark >= 50) {
          lastMark = t;
          progress.push([t, p.bytes]);
        }
      },
    });
    if (info.sha256 !== a.sha256 || info.totalSize !== a.totalSize) {
      return result(false, `delivered ${info.totalSize} bytes with sha256 ${info.sha256}`, info);
    }
    return result(true, null, info);
  } catch (err) {
    rmSync(a.dest, { force: true });
    const why = signal.aborted
      ? `not complete after ${(a.deadlineMs / 1000).toFixed(0)} s (${describe(err)})`
      : describe(err);
    return result(false, why);
  }
}

/** `uploadBlob` of a file with the SDK's defaults, as an application would call it. */
async function upload(a: UploadArgs): Promise<UploadRunResult> {
  const c = theClient();
  const progress: Array<[number, number]> = [[0, 0]];
  const startedAt = now();
  let bytes = 0;
  let total = 0;
  let lastMark = 0;
  const signal = AbortSignal.timeout(a.deadlineMs);
  const seconds = (): number => (now() - startedAt) / 1000;
  try {
    const r = await c.uploadBlob(a.computer, a.source, {
      nameHint: a.nameHint,
      signal,
      onProgress: (p) => {
        bytes = p.bytes;
        total = p.total;
        const t = now() - startedAt;
        if (t - lastMark >= 50) {
          lastMark = t;
          progress.push([t, p.bytes]);
        }
      },
    });
    progress.push([seconds() * 1000, r.totalSize]);
    return {
      ok: true,
      error: null,
      startedAt,
      seconds: seconds(),
      totalSize: r.totalSize,
      bytes: r.totalSize,
      landingPath: r.landingPath,
      sha256: r.sha256,
      carriage: r.carriage,
      stats: statsOf(r.stats),
      progress,
    };
  } catch (err) {
    const why = signal.aborted
      ? `not complete after ${(a.deadlineMs / 1000).toFixed(0)} s (${describe(err)})`
      : describe(err);
    return {
      ok: false,
      error: why,
      startedAt,
      seconds: seconds(),
      totalSize: total,
      bytes,
      landingPath: null,
      sha256: null,
      carriage: null,
      stats: {},
      progress,
    };
  }
}

async function once(kind: ProbeKind, a: ProbeArgs): Promise<ProbeSample> {
  const c = theClient();
  const at = now();
  try {
    if (kind === "tool_call") {
      const r = await c.callTool(a.computer, a.tool, {}, { timeout: 60 });
      if (r.isError) throw new Error(`tool error: ${JSON.stringify(r.content).slice(0, 200)}`);
    } else {
      await c.getSkills(a.computer, { timeoutMs: 60_000 });
    }
    return { kind, at, ms: now() - at, ok: true };
  } catch (err) {
    return { kind, at, ms: now() - at, ok: false, error: describe(err) };
  }
}

/**
 * Small requests sent on a fixed schedule (open loop: one every `intervalMs`, the kinds taking
 * turns, whether or not earlier ones were answered), so a queue that holds answers for seconds is
 * sampled all along instead of a handful of times.
 */
function startProbe(a: ProbeArgs & { intervalMs: number }): number {
  const id = nextProbe++;
  const pending: Array<Promise<ProbeSample>> = [];
  let turn = 0;
  const fire = (): void => {
    pending.push(once(a.kinds[turn++ % a.kinds.length]!, a));
  };
  fire();
  const timer = setInterval(fire, a.intervalMs);
  probes.set(id, {
    stop: async () => {
      clearInterval(timer);
      return Promise.all(pending);
    },
  });
  return id;
}

/** `perKind` requests of each kind, one after the other (the idle figures). */
async function runProbe(a: ProbeArgs & { perKind: number }): Promise<ProbeSample[]> {
  const out: ProbeSample[] = [];
  for (let i = 0; i < a.perKind * a.kinds.length; i++) {
    out.push(await once(a.kinds[i % a.kinds.length]!, a));
  }
  return out;
}

serve({
  connect: async (raw) => connectClient(raw as ConnectArgs),
  handle: async (raw) => handleOf(raw as HandleArgs),
  download: async (raw) => download(raw as DownloadArgs),
  upload: async (raw) => upload(raw as UploadArgs),
  "probe-start": async (raw) => startProbe(raw as ProbeArgs & { intervalMs: number }),
  "probe-stop": async (raw) => {
    const p = probes.get(raw as number);
    if (!p) throw new Error(`no probe ${String(raw)}`);
    probes.delete(raw as number);
    return p.stop();
  },
  "probe-run": async (raw) => runProbe(raw as ProbeArgs & { perKind: number }),
  close: async () => {
    await client?.close();
    client = undefined;
    return null;
  },
});
