/**
 * `npm run bench [-- --quick] [--out DIR] [--only a,b] [--baseline DIR] [--congestion NAME]`:
 * runs the sections in order, writes {report.md, report.json, *.svg, index.html} into
 * docs/bench/latest/ for a full run and into reports/<timestamp>/ for a quick or partial one
 * (D68), and ends with one verdict line
 * (bench/report/verdict.ts): `bench: PASS|PARTIAL|MISSED|FAIL (…)`. It exits 1 only on FAIL, when a
 * section failed or any byte failed its sha256 (the report is written first, then the run fails
 * loudly); a partial run or a missed goal exits 0 and says so. `--quick` is the CI smoke run:
 * correctness asserted, speed not.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, homedir, loadavg, release, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { IntegrityError, IntegrityLedger } from "./lib/integrity.ts";
import { SkipSection, type Ctx, type SectionId, type SectionOutcome } from "./lib/context.ts";
import { makePlan } from "./lib/plan.ts";
import { benchNodeFlags, mallocEnv } from "./lib/ipc.ts";
import { commitOf } from "./lib/git.ts";
import { CONGESTION_NAME } from "../scripts/links/topology.ts";
import { runMicro } from "./sections/micro.ts";
import { runCeiling } from "./sections/ceiling.ts";
import { runSweep } from "./sections/sweep.ts";
import { runDirect } from "./sections/direct.ts";
import { runUserView } from "./sections/user-view.ts";
import { runUpload } from "./sections/upload.ts";
import { runManyAgents } from "./sections/many-agents.ts";
import { runRewrites } from "./sections/rewrites.ts";
import { runComputerCost } from "./sections/computer-cost.ts";
import { runHttpSurface } from "./sections/http-surface.ts";
import { runCapacity } from "./sections/capacity.ts";
import { runTwoNode } from "./sections/two-node.ts";
import { runLinks } from "./sections/links.ts";
import { runPaths } from "./sections/paths.ts";
import { runTransport } from "./sections/transport.ts";
import { runCodecs } from "./sections/codecs.ts";
import { evaluateGoals } from "./goals.ts";
import { closeSharedStacks } from "./stack/harness.ts";
import { buildBlocks } from "./report/build.ts";
import { redactPaths, writeReport } from "./report/write.ts";
import type { Report } from "./report/types.ts";
import { verdictLine, verdictOf } from "./report/verdict.ts";

const SECTIONS: Array<[SectionId, (ctx: Ctx) => Promise<unknown>]> = [
  ["micro", runMicro],
  ["codecs", runCodecs],
  ["ceiling", runCeiling],
  ["sweep", runSweep],
  ["direct", runDirect],
  ["userView", runUserView],
  ["upload", runUpload],
  ["manyAgents", runManyAgents],
  ["rewrites", runRewrites],
  ["computerCost", runComputerCost],
  ["http", runHttpSurface],
  ["twoNode", runTwoNode],
  ["transport", runTransport],
  ["capacity", runCapacity],
  ["links", runLinks],
  ["paths", runPaths],
];

interface Args {
  quick: boolean;
  out: string | null;
  only: SectionId[] | null;
  baseline: string | null;
  congestion: string | null;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, out: null, only: null, baseline: null, congestion: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--quick") args.quick = true;
    else if (a === "--out") args.out = argv[++i] ?? null;
    else if (a === "--only")
      args.only = (argv[++i] ?? "").split(",").filter(Boolean) as SectionId[];
    else if (a === "--baseline") {
      const dir = argv[++i];
      if (!dir) {
        console.error("--baseline needs a directory (a built checkout)");
        process.exit(2);
      }
      args.baseline = resolve(dir);
    } else if (a === "--congestion") {
      const name = argv[++i];
      if (!name || !CONGESTION_NAME.test(name)) {
        console.error("--congestion needs a TCP congestion control's name (reno, cubic, bbr…)");
        process.exit(2);
      }
      args.congestion = name;
    } else if (a === "--help" || a === "-h") {
      console.log(
        "usage: npm run bench -- [--quick] [--out DIR] [--only micro,codecs,ceiling,sweep,direct,userView,upload,manyAgents,rewrites,computerCost,http,twoNode,transport,capacity,links,paths] [--baseline DIR] [--congestion NAME]",
      );
      process.exit(0);
    } else {
      console.error(`unknown argument ${String(a)}`);
      process.exit(2);
    }
  }
  const known = new Set(SECTIONS.map(([id]) => id));
  for (const id of args.only ?? []) {
    if (!known.has(id)) {
      console.error(`unknown section ${id}; known: ${[...known].join(", ")}`);
      process.exit(2);
    }
  }
  return args;
}

function versions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of [
    "socket.io",
    "socket.io-client",
    "engine.io",
    "ws",
    "piscina",
    "tinybench",
    "autocannon",
    "zod",
  ]) {
    try {
      const pkg = readFileSync(
        new URL(`../node_modules/${p}/package.json`, import.meta.url),
        "utf8",
      );
      out[p] = (JSON.parse(pkg) as { version: string }).version;
    } catch {
      out[p] = "?";
    }
  }
  return out;
}

function hasBufferutil(): boolean {
  try {
    createRequire(import.meta.url)("bufferutil");
    return true;
  } catch {
    return false;
  }
}

/**
 * The kernel's transparent-huge-page mode (`always`, `madvise`, `never`), or null where the
 * kernel does not say. With `madvise`, huge pages reach a process only through
 * `glibc.malloc.hugetlb=1` in its GLIBC_TUNABLES (docs/configuration.md, "Process tuning").
 */
function hugePageMode(): string | null {
  try {
    const text = readFileSync("/sys/kernel/mm/transparent_hugepage/enabled", "utf8");
    return /\[(\w+)\]/.exec(text)?.[1] ?? null;
  } catch {
    return null;
  }
}

/** The committed report of the latest full run (its dated predecessors live in git's history). */
const LATEST_REPORT = "docs/bench/latest";

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const plan = makePlan(args.quick);
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, "-");
  const root = fileURLToPath(new URL("..", import.meta.url));
  // A full run replaces the one report the repository keeps; a smoke or partial run must not (D68).
  const full = !args.quick && !args.only;
  const outDir = resolve(args.out ?? (full ? join(root, LATEST_REPORT) : join("reports", stamp)));
  const dataDir = mkdtempSync(join(tmpdir(), "a2c-bench-"));
  const ledger = new IntegrityLedger();
  const t0 = performance.now();
  const ctx: Ctx = {
    plan,
    ledger,
    dataDir,
    results: {},
    ...(args.baseline ? { baseline: args.baseline } : {}),
    ...(args.congestion ? { congestion: args.congestion } : {}),
    log: (msg) =>
      process.stderr.write(
        `[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${msg}\n`,
      ),
  };
  const loadAvgStart = loadavg();
  const commit = commitOf(root);
  try {
    for (const [id, run] of SECTIONS) {
      if (args.only && !args.only.includes(id)) continue;
      const s0 = performance.now();
      const seconds = (): number => (performance.now() - s0) / 1000;
      let outcome: SectionOutcome;
      ctx.log(`section ${id}…`);
      try {
        const data = await run(ctx);
        const notes = (data as { notes?: string[] } | null)?.notes ?? [];
        outcome = { status: "done", seconds: seconds(), data, notes };
      } catch (err) {
        if (err instanceof SkipSection) {
          outcome = { status: "skipped", seconds: seconds(), reason: err.message };
        } else {
          const integrity = err instanceof IntegrityError;
          const message = err instanceof Error ? err.message : String(err);
          if (integrity) ledger.fail(`${id}: ${message}`);
          outcome = { status: "failed", seconds: seconds(), error: message, integrity };
          console.error(
            `\n*** section ${id} FAILED${integrity ? " — INTEGRITY" : ""}: ${message}\n`,
          );
          if (err instanceof Error && err.stack && process.env.A2C_BENCH_VERBOSE)
            console.error(err.stack);
        }
      }
      ctx.results[id] = outcome;
      ctx.log(`section ${id}: ${outcome.status} in ${outcome.seconds.toFixed(1)} s`);
    }
  } finally {
    await closeSharedStacks();
    rmSync(dataDir, { recursive: true, force: true });
  }

  const failed = Object.entries(ctx.results).filter(([, o]) => o.status === "failed");
  const raw: Report = {
    meta: {
      title: "A2C-SMCP blob transport: benchmark and capacity report",
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      commit,
      quick: args.quick,
      argv: publicArgv(process.argv.slice(2)),
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? "?",
      totalMemGiB: Math.round(totalmem() / 2 ** 30),
      kernel: release(),
      loadAvgStart,
      loadAvgEnd: loadavg(),
      versions: versions(),
      bufferutil: hasBufferutil(),
      mallocTunables: mallocEnv().GLIBC_TUNABLES ?? null,
      hugePages: hugePageMode(),
      nodeFlags: benchNodeFlags(),
      plan,
    },
    sections: ctx.results,
    goals: [],
    integrity: {
      verifiedChunks: ledger.verifiedChunks,
      verifiedBytes: ledger.verifiedBytes,
      verifiedResources: ledger.verifiedResources,
      failures: ledger.failures,
    },
    ok: failed.length === 0 && ledger.failures.length === 0,
    verdict: { status: "FAIL", detail: "", exitCode: 1 },
  };
  raw.goals = evaluateGoals(raw);
  raw.verdict = verdictOf({
    goals: raw.goals,
    failedSections: failed.map(([id]) => id),
    integrityFailures: ledger.failures.length,
    quick: args.quick,
  });
  // No machine paths in a report that may be committed.
  const report = redactPaths(raw, [
    [dataDir, "<bench data>"],
    [outDir, "<report folder>"],
    ...(args.baseline ? ([[args.baseline, "<baseline>"]] as Array<[string, string]>) : []),
    [root, ""],
    [root.replace(/\/$/, ""), "."],
    [tmpdir(), "<tmp>"],
    [homedir(), "~"],
  ]);
  // The previous report goes only now, so a run that stops early leaves it in place.
  if (full && !args.out) rmSync(outDir, { recursive: true, force: true });
  await writeReport(outDir, report, buildBlocks(report));
  console.log(`report: ${join(outDir, "index.html")}`);
  for (const g of report.goals)
    console.log(`goal ${g.status.toUpperCase().padEnd(12)} ${g.text} — ${g.measured}`);
  if (ledger.failures.length > 0) {
    console.error("\n!!! INTEGRITY FAILURE: a byte did not match its sha256. The run FAILS.");
    for (const f of ledger.failures) console.error(`!!! ${f}`);
  }
  if (failed.length > 0) console.error(`FAILED sections: ${failed.map(([id]) => id).join(", ")}`);
  console.log(verdictLine(report.verdict));
  return report.verdict.exitCode;
}

/**
 * The arguments without machine paths: `--out DIR` is dropped (not part of what was measured),
 * `--baseline DIR` kept as `--baseline <baseline>` (the links section names its commit).
 */
function publicArgv(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--out") i++;
    else if (argv[i] === "--baseline") {
      out.push("--baseline", "<baseline>");
      i++;
    } else out.push(argv[i] ?? "");
  }
  return out;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
