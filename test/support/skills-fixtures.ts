/**
 * Helpers for the SKILL channel tests: real temp skill homes with real packages, a real handle
 * codec + blob engine (the production minter and get_blob pipeline), and a pino logger whose lines
 * the test can read.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import pino, { type Logger } from "pino";
import { BlobEngine } from "../../computer/blob/engine.ts";
import { HandleCodec } from "../../computer/blob/handle.ts";
import { HashCache } from "../../computer/blob/hash-cache.ts";
import type { ComputerConfig } from "../../computer/contracts.ts";
import { createComputerMetrics, type ComputerMetrics } from "../../computer/metrics.ts";
import {
  createSkillService,
  type SkillService,
  type SkillServiceOptions,
} from "../../computer/skills/index.ts";
import { isErrorPayload, type GetBlobRet } from "../../protocol/index.ts";

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A pino logger at debug level that keeps every line as parsed JSON. */
export function captureLogger(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString("utf8").split("\n"))
        if (l) lines.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  return { log: pino({ level: "debug" }, sink), lines };
}

export const PINO_ERROR = 50;

export async function tempDir(
  prefix = "a2c-skills-",
): Promise<{ dir: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export async function writeFileDeep(path: string, data: string | Buffer): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, data);
}

/** SKILL.md text with a frontmatter block (`fm` lines are written verbatim). */
export function skillMd(name: string, body: string, fm: string[] = []): string {
  return ["---", `name: ${name}`, `description: The ${name} skill`, ...fm, "---", body].join("\n");
}

/** Writes `<home>/<dir>/SKILL.md` and optional extra files; returns the package root. */
export async function writePackage(
  home: string,
  dir: string,
  skillMdText: string,
  files: Record<string, string | Buffer> = {},
): Promise<string> {
  const root = join(home, dir);
  await writeFileDeep(join(root, "SKILL.md"), skillMdText);
  for (const [rel, data] of Object.entries(files)) await writeFileDeep(join(root, rel), data);
  return root;
}

export function testConfig(over: Partial<ComputerConfig> = {}): ComputerConfig {
  return {
    name: "pc-test",
    stateDir: "/nonexistent",
    inlineBudget: 32 * 1024,
    maxSize: 100 * 1024 * 1024,
    maxHttpBufferSize: 1_000_000,
    ...over,
  };
}

export interface SkillRig {
  home: string;
  service: SkillService;
  engine: BlobEngine;
  hashCache: HashCache;
  /** The metrics the service and the hash cache report to. */
  metrics: ComputerMetrics;
  /** Whole-resource hashes computed so far (`a2c_computer_hash_computations_total`, every path). */
  hashComputations(): Promise<number>;
  lines: LogLine[];
  /** Drains a handle through the real engine from offset 0 to eof. */
  drain(handle: string, maxChunk?: number): Promise<{ bytes: Buffer; chunks: GetBlobRet[] }>;
  close(): Promise<void>;
}

/** A skill service on a temp home wired to a real engine, the way the Computer core wires it. */
export async function startSkillRig(
  setup: (home: string) => Promise<void> = async () => {},
  over: Partial<Omit<SkillServiceOptions, "config">> & {
    config?: Partial<ComputerConfig>;
    /** Wire the engine's HashCache into the service, as the Computer core can. */
    shareHashes?: boolean;
  } = {},
): Promise<SkillRig> {
  const tmp = await tempDir();
  const home = join(tmp.dir, "home");
  await mkdir(home);
  await setup(home);
  const { log, lines } = captureLogger();
  const metrics = createComputerMetrics("pc-test");
  const hashCache = new HashCache({ pool: null, metrics });
  const engine = new BlobEngine({
    codec: new HandleCodec(randomBytes(32)),
    hashCache,
    maxHttpBufferSize: over.config?.maxHttpBufferSize ?? 1_000_000,
  });
  const { shareHashes, ...rest } = over;
  const service = await createSkillService({
    watch: false,
    sandboxChecks: metrics.sandboxChecks,
    ...rest,
    ...(shareHashes ? { fileHasher: hashCache } : {}),
    config: testConfig({ stateDir: join(tmp.dir, "state"), ...over.config }),
    home,
    minter: engine,
    log,
  });
  for (const p of service.producers) engine.register(p);
  let seq = 0;
  return {
    home,
    service,
    engine,
    hashCache,
    metrics,
    hashComputations: () => hashComputations(metrics),
    lines,
    async drain(handle, maxChunk) {
      const parts: Buffer[] = [];
      const chunks: GetBlobRet[] = [];
      let offset = 0;
      for (;;) {
        const req = {
          agent: "a",
          req_id: `r${++seq}`,
          computer: "pc-test",
          blob_handle: handle,
          chunk_offset: offset,
          ...(maxChunk ? { max_chunk_bytes: maxChunk } : {}),
        };
        const ret = await engine.getBlob(req);
        if (isErrorPayload(ret)) throw new Error(`get_blob failed: ${JSON.stringify(ret)}`);
        const r: GetBlobRet = ret;
        chunks.push(r);
        const b = Buffer.from(r.blob as string, "base64");
        parts.push(b);
        offset += b.length;
        if (r.eof) break;
      }
      return { bytes: Buffer.concat(parts), chunks };
    },
    async close() {
      await service.close();
      await engine.close();
      await tmp.cleanup();
    },
  };
}

let reqSeq = 0;
/** A `client:get_skill` payload. */
export function skillReq(name: string, relPath?: string) {
  return {
    agent: "agent-1",
    req_id: `q${++reqSeq}`,
    computer: "pc-test",
    name,
    ...(relPath !== undefined ? { rel_path: relPath } : {}),
  };
}

const ctx = { signal: new AbortController().signal, log: pino({ level: "silent" }) };

/** Calls the service's `client:get_skill` handler the way the dispatcher does. */
export async function callGetSkill(service: SkillService, name: string, relPath?: string) {
  const handler = service.handlers["client:get_skill"];
  if (!handler) throw new Error("no client:get_skill handler");
  return handler(skillReq(name, relPath), ctx);
}

/** Calls the service's `client:get_skills` handler. */
export async function callGetSkills(service: SkillService) {
  const handler = service.handlers["client:get_skills"];
  if (!handler) throw new Error("no client:get_skills handler");
  return handler({ agent: "agent-1", req_id: `q${++reqSeq}`, computer: "pc-test" }, ctx);
}

/** Whole-resource hashes `metrics`' cache computed, on every path (inline, pool, bytes). */
export async function hashComputations(metrics: ComputerMetrics): Promise<number> {
  const m = await metrics.hashComputations.get();
  return m.values.reduce((sum, v) => sum + v.value, 0);
}
