/**
 * The links section's compressed-carriage cases (docs/decisions.md D63–D66): on one direction,
 * a download with the SDK's default (content-codings asked) beside one with `compression: false`,
 * each on fresh processes of our build, the order alternating, `reps` pairs per case: generated
 * text of a kind (bench/lib/text-corpus.ts) at the rates where the goal is set, and incompressible
 * bytes at every rate. Per run: resource MB/s, wire bytes per payload byte from the shaped queue,
 * the codings the chunks came in, and CPU ms per MB of the Computer, the Agent and the Server.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import type { DownloadResult } from "../../scripts/links/agent-driver.ts";
import type { StackOnLinks } from "../../scripts/links/stack.ts";
import type { Direction, ShapeReport } from "../../scripts/links/topology.ts";
import { writeContent } from "../lib/data.ts";
import type { LinksPlan } from "../lib/plan.ts";
import { MiB, formatBytes, median } from "../lib/stats.ts";
import { TEXT_EXTENSION, writeText, type TextKind } from "../lib/text-corpus.ts";

export type CodingContent = TextKind | "incompressible";

export interface CodingRun {
  /** `on`: the SDK's default (codings asked); `off`: `compression: false`. */
  mode: "on" | "off";
  loadAvg: number[];
  ok: boolean;
  error: string | null;
  seconds: number;
  /** Resource bytes a second (10^6). */
  mbps: number;
  /** Everything that left through the shaped queue, per resource byte. */
  wirePerByte: number;
  /** Chunks by the content-coding they came in (the SDK's PullStats). */
  codings: Record<string, number>;
  /** CPU ms per MB of resource bytes, per role. */
  cpuMsPerMb: { computer: number; agent: number; server: number };
  /** Busy answers, timeouts and resumes the pull met (an honest client meets none). */
  setbacks: number;
}

export interface CodingCase {
  id: string;
  content: CodingContent;
  direction: Direction;
  /** Mbit/s; null: unshaped (the veth hosts of the harness, no shaping). */
  rateMbit: number | null;
  shape: ShapeReport;
  assetBytes: number;
  runs: CodingRun[];
  /** on/off MB/s of each pair, in run order. */
  ratios: number[];
}

/** What the coding cases need from the links section. */
export interface CodingHooks {
  plan: LinksPlan;
  home: string;
  skill: string;
  work: string;
  shape(direction: Direction, rateMbit: number | null): Promise<ShapeReport>;
  withStack<T>(label: string, fn: (s: StackOnLinks) => Promise<T>): Promise<T>;
  counters(): Promise<Record<Direction, { bytes: number }>>;
  /** Checks a finished download against the written content (and removes the file). */
  check(relPath: string, sha256: string, handleSha: string, dl: DownloadResult, dest: string): void;
  log(message: string): void;
}

/** The file of a case: clamp(rate × seconds, 1 MiB, 128 MiB) rounded up to a MiB. */
function bytesFor(plan: LinksPlan, rateMbit: number | null): number {
  if (rateMbit === null) return plan.coding.unshapedBytes;
  const raw = ((rateMbit * 1e6) / 8) * plan.coding.seconds;
  return Math.ceil(Math.min(128 * MiB, Math.max(MiB, raw)) / MiB) * MiB;
}

let clockTicks: number | undefined;
/** CPU time (ms) of process `pid` so far, from /proc (user + system). */
function cpuMsOf(pid: number): number {
  clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
}

async function codingRun(
  h: CodingHooks,
  c: Omit<CodingCase, "runs" | "ratios">,
  relPath: string,
  sha256: string,
  mode: "on" | "off",
  seq: number,
): Promise<CodingRun> {
  const loadAvg = loadavg();
  return h.withStack(`${c.id}-${mode}`, async (stack) => {
    const agent = stack.agents[0]!;
    const computerPid = stack.computers[0]!.pid;
    const serverPid = stack.server.pid;
    const info = await agent.handle({ skill: h.skill, relPath });
    const dest = join(h.work, `coding-${seq}.out`);
    const expected = c.rateMbit === null ? 5 : (c.assetBytes * 8) / (c.rateMbit * 1e6);
    const q0 = await h.counters();
    const cpu0 = { computer: cpuMsOf(computerPid), server: cpuMsOf(serverPid) };
    const dl = await agent.download({
      ...info,
      dest,
      deadlineMs: Math.round((3 * expected + 60) * 1000),
      ...(mode === "off" ? { compression: false } : {}),
    });
    const cpu1 = { computer: cpuMsOf(computerPid), server: cpuMsOf(serverPid) };
    const q1 = await h.counters();
    h.check(relPath, sha256, info.sha256, dl, dest);
    const mb = dl.totalSize / 1e6;
    const stat = (k: string): number => (typeof dl.stats[k] === "number" ? dl.stats[k] : 0);
    return {
      mode,
      loadAvg,
      ok: dl.ok,
      error: dl.error,
      seconds: dl.seconds,
      mbps: dl.ok ? mb / dl.seconds : 0,
      wirePerByte: (q1[c.direction].bytes - q0[c.direction].bytes) / dl.totalSize,
      codings: dl.codings,
      cpuMsPerMb: {
        computer: (cpu1.computer - cpu0.computer) / mb,
        agent: dl.cpuMs / mb,
        server: (cpu1.server - cpu0.server) / mb,
      },
      setbacks: stat("busy") + stat("timeouts") + stat("resumes"),
    };
  });
}

/** Runs every coding case of the plan; `seq` numbers the files. */
export async function runCodingCases(h: CodingHooks): Promise<CodingCase[]> {
  const p = h.plan.coding;
  const wanted: Array<{ content: CodingContent; rateMbit: number | null }> = [
    ...p.text.map((t) => ({ content: t.kind, rateMbit: t.rateMbit })),
    ...p.incompressibleRates.map((rateMbit) => ({
      content: "incompressible" as const,
      rateMbit,
    })),
  ];
  const out: CodingCase[] = [];
  let seq = 0;
  for (const w of wanted) {
    const assetBytes = bytesFor(h.plan, w.rateMbit);
    const ext = w.content === "incompressible" ? "bin" : TEXT_EXTENSION[w.content];
    const relPath = `coding-${w.content}-${assetBytes}.${ext}`;
    const path = join(h.home, "user", h.skill, relPath);
    const sha256 =
      w.content === "incompressible"
        ? writeContent(path, `coding-${assetBytes}`, assetBytes)
        : writeText(path, w.content, "links", assetBytes);
    const rateWord = w.rateMbit === null ? "unshaped" : String(w.rateMbit);
    const c: CodingCase = {
      id: `coding-${w.content}-${p.direction}-${rateWord}`,
      content: w.content,
      direction: p.direction,
      rateMbit: w.rateMbit,
      shape: await h.shape(p.direction, w.rateMbit),
      assetBytes,
      runs: [],
      ratios: [],
    };
    // An unshaped run lasts about a second: twice the pairs for the same confidence.
    const reps = w.rateMbit === null ? 2 * p.reps : p.reps;
    for (let rep = 0; rep < reps; rep++) {
      const order: Array<"on" | "off"> =
        (out.length + rep) % 2 === 0 ? ["on", "off"] : ["off", "on"];
      const pair: Partial<Record<"on" | "off", CodingRun>> = {};
      for (const mode of order) {
        h.log(`links: ${c.id} (${formatBytes(assetBytes)}), compression ${mode}…`);
        const run = await codingRun(h, c, relPath, sha256, mode, seq++);
        pair[mode] = run;
        c.runs.push(run);
        h.log(
          `links: ${c.id} ${mode}: ${run.ok ? `${run.mbps.toFixed(2)} MB/s, ${run.wirePerByte.toFixed(3)} wire B/B, ${JSON.stringify(run.codings)}` : `FAILED ${run.error ?? ""}`}`,
        );
      }
      if (pair.on?.ok && pair.off?.ok) c.ratios.push(pair.on.mbps / pair.off.mbps);
    }
    out.push(c);
  }
  return out;
}

/** The median on/off ratio of a case, NaN when no pair completed. */
export function codingRatio(c: CodingCase): number {
  return c.ratios.length > 0 ? median(c.ratios) : NaN;
}
