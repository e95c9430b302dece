/**
 * A full-run report built from realistic figures, for tests of the report's rendering: the
 * stack's MB/s and ratios of every point of the 1 MB sweep are those of the full run of
 * 2026-12-03 15:30 at commit c41acbb (docs/results.md, "Bench runs"), every point repeated with a
 * deterministic ±20% spread; the other sections are shaped the same way. The Computer sections
 * (rewrites, Computer cost, HTTP surface) have no charts and are left out (not run).
 */
import { makePlan } from "../../bench/lib/plan.ts";
import { sizePoints } from "../../bench/lib/points.ts";
import { spreadOf, KiB, MiB, type Spread } from "../../bench/lib/stats.ts";
import type { PointResult, RepeatedPoint } from "../../bench/lib/measure.ts";
import type { SectionId, SectionOutcome } from "../../bench/lib/context.ts";
import type { ProcCost } from "../../bench/lib/ipc.ts";
import { SAMPLE_ENVELOPE } from "../../bench/sections/micro.ts";
import type { MicroData, MicroRow } from "../../bench/sections/micro.ts";
import type { CeilingData } from "../../bench/sections/ceiling.ts";
import type { SdkRun, SweepBuffer, SweepData, SweepPoint } from "../../bench/sections/sweep.ts";
import type { DirectData } from "../../bench/sections/direct.ts";
import type { ManyAgentsData, ManyRow } from "../../bench/sections/many-agents.ts";
import type { TwoNodeData, TwoNodePoint } from "../../bench/sections/two-node.ts";
import type { UserViewData, UserViewRow } from "../../bench/sections/user-view.ts";
import { runCapacity } from "../../bench/sections/capacity.ts";
import { evaluateGoals } from "../../bench/goals.ts";
import { verdictOf } from "../../bench/report/verdict.ts";
import type { Report } from "../../bench/report/types.ts";
import { IntegrityLedger } from "../../bench/lib/integrity.ts";

type Carriage = "base64" | "binary";

/** Stack MB/s and ratio to the bare relay, 1 MB buffer, windows 1 2 4 8 16, by size (rows). */
const STACK_1MB: Record<Carriage, Array<Array<[number, number]>>> = {
  base64: [
    [
      [17.8, 0.633],
      [33.9, 0.785],
      [36.1, 0.697],
      [42.6, 0.757],
      [43.6, 0.755],
    ],
    [
      [36.0, 0.774],
      [48.1, 0.71],
      [53.2, 0.712],
      [61.2, 0.888],
      [66.8, 0.851],
    ],
    [
      [54.1, 0.883],
      [68.3, 0.883],
      [66.3, 0.816],
      [73.7, 1.002],
      [82.2, 1.189],
    ],
    [
      [19.3, 1.07],
      [25.8, 1.124],
      [29.4, 1.1],
      [30.0, 1.069],
      [32.0, 1.131],
    ],
    [
      [19.8, 1.048],
      [28.0, 1.111],
      [33.1, 1.159],
      [36.2, 1.188],
      [36.1, 1.148],
    ],
    [
      [25.1, 1.165],
      [35.4, 1.128],
      [39.3, 1.148],
      [43.7, 1.248],
      [39.5, 1.144],
    ],
    [
      [27.5, 1.098],
      [41.6, 1.208],
      [44.9, 1.198],
      [47.8, 1.233],
      [49.0, 1.215],
    ],
    [
      [27.7, 1.122],
      [43.0, 1.229],
      [44.6, 1.197],
      [46.2, 1.19],
      [47.8, 1.322],
    ],
  ],
  binary: [
    [
      [20.4, 0.492],
      [47.4, 0.717],
      [56.1, 0.676],
      [72.0, 0.642],
      [78.0, 0.598],
    ],
    [
      [65.5, 0.721],
      [89.4, 0.743],
      [102.0, 0.724],
      [120.9, 0.65],
      [132.5, 0.671],
    ],
    [
      [94.3, 0.926],
      [150.8, 0.874],
      [157.5, 0.752],
      [208.3, 0.876],
      [226.6, 0.869],
    ],
    [
      [123.2, 0.851],
      [197.3, 1.048],
      [230.6, 0.782],
      [267.2, 0.848],
      [279.1, 0.821],
    ],
    [
      [153.2, 0.839],
      [229.0, 0.874],
      [277.7, 0.906],
      [299.9, 0.926],
      [322.4, 0.897],
    ],
    [
      [261.3, 1.019],
      [324.1, 0.955],
      [366.5, 0.917],
      [400.1, 0.953],
      [435.1, 0.946],
    ],
    [
      [333.6, 1.003],
      [443.8, 1.003],
      [453.6, 0.924],
      [516.7, 1.02],
      [551.5, 1.178],
    ],
    [
      [424.1, 1.129],
      [544.0, 1.017],
      [573.6, 1.028],
      [587.7, 1.137],
      [543.5, 1.125],
    ],
  ],
};

/** A deterministic generator (mulberry32), so the fixture is the same on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = random(20261203);

/** `n` repetitions around `median` (±20%), whose median is `median`. */
function reps(median: number, n = 3): number[] {
  const out = Array.from({ length: n }, (_, i) =>
    i === 0 ? median : median * (1 + (rnd() - 0.5) * 0.4),
  );
  // Keep `median` the middle value: one repetition below it, one above.
  if (n === 3) {
    out[1] = median * (1 - 0.2 * rnd());
    out[2] = median * (1 + 0.2 * rnd());
  }
  return out;
}

function costs(server: number, agent = 55, computer = 45): ProcCost[] {
  return [
    { name: "agent", cpuPercent: agent, rssBytes: 90 * MiB },
    { name: "server", cpuPercent: server, rssBytes: 120 * MiB },
    { name: "computer", cpuPercent: computer, rssBytes: 110 * MiB },
  ];
}

function point(carriage: Carriage, chunkBytes: number, window: number, mbps: number): PointResult {
  const seconds = 0.5;
  const bytes = mbps * 1e6 * seconds;
  return {
    carriage,
    chunkBytes,
    window,
    mbps,
    chunks: Math.max(1, Math.round(bytes / chunkBytes)),
    bytes,
    seconds,
    p50Ms: ((chunkBytes * window) / (mbps * 1e6)) * 1000,
    p99Ms: ((chunkBytes * window) / (mbps * 1e6)) * 2600,
    costs: costs(carriage === "base64" ? 55 : 45),
  };
}

function repeated(p: PointResult, spread: Spread): RepeatedPoint {
  return { ...p, mbps: spread.median, spread };
}

function sweepBuffer(
  buffer: number,
  windows: number[],
  sizes: number[],
  value: (c: Carriage, sizeIndex: number, windowIndex: number) => [number, number] | null,
): SweepBuffer {
  const out: SweepBuffer = {
    maxHttpBufferSize: buffer,
    windows,
    caps: { base64: 0, binary: 0 },
    sizes: { base64: [], binary: [] },
    points: [],
  };
  for (const carriage of ["base64", "binary"] as const) {
    const all = sizePoints(sizes, [buffer], carriage, SAMPLE_ENVELOPE);
    out.sizes[carriage] = all;
    const fit = all.filter((s) => s.fits[String(buffer)]);
    out.caps[carriage] = fit[fit.length - 1]?.bytes ?? 0;
    fit.forEach((s, si) => {
      windows.forEach((w, wi) => {
        const v = value(carriage, si, wi);
        if (!v) return;
        const [stackMbps, ratio] = v;
        const stack = spreadOf(reps(stackMbps));
        const bare = spreadOf(stack.reps.map((x) => (x / ratio) * (1 + (rnd() - 0.5) * 0.1)));
        const pairs = spreadOf(stack.reps.map((x, i) => x / (bare.reps[i] ?? 1)));
        const p: SweepPoint = {
          ...repeated(point(carriage, s.bytes, w, stackMbps), stack),
          buffer,
          bare,
          pairRatios: pairs,
          ratio: pairs.median,
          ceilingMbps: bare.median,
          sectionRatio: null,
        };
        out.points.push(p);
      });
    });
  }
  return out;
}

function sdkRun(label: string, carriage: Carriage, chunk: number, mbps: number): SdkRun {
  const perReadMbps = [mbps * 0.55, ...reps(mbps, 4)];
  const ms = carriage === "base64" ? 6.4 : 1.2;
  return {
    label,
    carriage,
    window: 16,
    chunkBytes: chunk,
    medianMbps: mbps,
    perReadMbps,
    result: {
      reads: 5,
      bytes: 5 * 32 * MiB,
      seconds: (5 * 32 * MiB) / (mbps * 1e6),
      mbps,
      latencyMs: { count: 512, mean: 9, p50: 8, p99: 18, max: 30 },
      requests: 5 * Math.ceil((32 * MiB) / chunk),
      restarts: 0,
      perReadMbps,
    },
    costs: costs((ms * mbps) / 10),
    serverCpuMsPerMb: spreadOf(reps(ms, 5)),
  };
}

function microRows(sizes: number[]): MicroRow[] {
  const rate: Record<string, (bytes: number) => number> = {
    "sha256 inline": () => 1700,
    "sha256 pool (clone)": (b) => 220 + (b / MiB) * 900,
    "sha256 pool (SharedArrayBuffer)": (b) => 240 + (b / MiB) * 1000,
    "base64 inline": (b) => (b < 96 * KiB ? 12000 : 200),
    "base64 pool": (b) => 250 + (b / MiB) * 500,
    "base64 decode inline": () => 5000,
  };
  return Object.entries(rate).flatMap(([name, f]) =>
    sizes.map((bytes) => {
      const mbps = f(bytes);
      const meanMs = bytes / 1e6 / mbps / 1e-3;
      const name2 = `${name} ${bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`}`;
      return {
        group: name.split(" ")[0] ?? name,
        name: name2,
        bytes,
        meanMs,
        p99Ms: meanMs * 2.5,
        moeMs: meanMs * 0.06,
        rmePercent: 6,
        samples: 2000,
        mbps,
      };
    }),
  );
}

function manyRows(): ManyRow[] {
  const at: Array<[number, number, number]> = [
    [1, 73.1, 51],
    [4, 88.0, 46],
    [16, 84.6, 53],
    [64, 74.1, 60],
  ];
  return at.map(([agents, mbps, cpu]) => {
    const aggregate = spreadOf(reps(mbps));
    const serverCpu = spreadOf(aggregate.reps.map((x) => (cpu * x) / mbps));
    return {
      agents,
      aggregateMbps: aggregate.median,
      aggregate,
      perAgentMbps: { min: (mbps / agents) * 0.9, max: (mbps / agents) * 1.1 },
      reads: agents * 3,
      p50Ms: 11 * agents,
      p99Ms: 30 * agents,
      serverCpuPercent: cpu,
      serverCpu,
      serverCpuMsPerMb: spreadOf(serverCpu.reps.map((c, i) => (c * 10) / (aggregate.reps[i] ?? 1))),
      serverRssBytes: (130 + agents) * MiB,
      costs: costs(cpu),
    };
  });
}

function twoNodePoints(): TwoNodePoint[] {
  const rows: Array<[TwoNodePoint["placement"], Carriage, number, number, number, number | null]> =
    [
      ["memory", "base64", 1, 78.4, 7.72, 0],
      ["redisOne", "base64", 1, 69.3, 7.91, 0.89],
      ["cross", "base64", 1, 49.3, 16.37, 2.09],
      ["memory", "binary", 1, 163.0, 1.98, 0],
      ["redisOne", "binary", 1, 150.8, 1.88, 0.3],
      ["cross", "binary", 1, 118.7, 3.82, 0.6],
      ["memory", "base64", 4, 85.3, 5.55, 0.07],
      ["redisOne", "base64", 4, 77.2, 7.81, 0.45],
      ["cross", "base64", 4, 62.7, 12.68, 1.86],
    ];
  return rows.map(([placement, carriage, agents, mbps, ms, redis]) => ({
    placement,
    carriage,
    chunkBytes: carriage === "base64" ? 64 * KiB : 512 * KiB,
    window: 16,
    agents,
    perRoundMbps: [mbps * 0.7, ...reps(mbps, 4)],
    medianMbps: mbps,
    p50Ms: 12,
    p99Ms: 40,
    cpu: { serverMem: placement === "memory" ? 50 : 0, redis: 5 },
    serverCpuMsPerMb: ms,
    redisCpuMsPerMb: redis,
    serverCpuMsPerMbRounds: spreadOf(reps(ms, 5)),
    redisCpuMsPerMbRounds: redis === null ? null : spreadOf(reps(redis, 5)),
    verifiedReads: 5 * agents,
  }));
}

function done(data: unknown, seconds: number): SectionOutcome {
  return { status: "done", seconds, data, notes: [] };
}

/** The user view: one 256 MiB file, five rounds (the MB/s of a run of 2026-12-04). */
function userView(): UserViewData {
  const fileBytes = 256 * MiB;
  const cases: Array<[UserViewRow["id"], UserViewRow["carriage"], number, number[]]> = [
    ["cli-binary", "binary", 512 * KiB, [182, 156, 146, 154, 151]],
    ["sdk-binary", "binary", 512 * KiB, [214, 214, 194, 182, 176]],
    ["cli-base64", "base64", 64 * KiB, [86, 86, 77, 74, 75]],
    ["sdk-base64", "base64", 64 * KiB, [105, 119, 89, 93, 103]],
    ["bare-binary", "binary", 512 * KiB, [377, 420, 361, 382, 418]],
    ["bare-base64", "base64", 64 * KiB, [65, 63, 60, 60, 60]],
    ["http", "http", 512 * KiB, [488, 484, 474, 523, 482]],
  ];
  const rows = cases.map(([id, carriage, chunkBytes, mbps]): UserViewRow => ({
    id,
    what: id,
    carriage,
    chunkBytes,
    window: 16,
    seconds: spreadOf(mbps.map((x) => fileBytes / 1e6 / x)),
    mbps: spreadOf(mbps),
  }));
  const ratio = (a: number, b: number): ReturnType<typeof spreadOf> =>
    spreadOf(rows[a]!.mbps.reps.map((x, i) => x / rows[b]!.mbps.reps[i]!));
  return {
    fileBytes,
    rounds: 5,
    cliNodeFlags: ["--max-semi-space-size=4", "--heap-growing-percent=300"],
    cliStartSeconds: spreadOf([0.2, 0.21, 0.27, 0.24, 0.29]),
    rows,
    cliVsBare: ratio(0, 4),
    cliVsSdk: { binary: ratio(0, 1), base64: ratio(2, 3) },
    defaultVsSpec: ratio(1, 3),
    notes: [],
  };
}

/** The fixture report, with its capacity model, goals and verdict computed by the bench's code. */
export async function fixtureReport(): Promise<Report> {
  const plan = makePlan(false);
  const b1 = sweepBuffer(1_000_000, plan.windows, plan.chunkSizes, (c, si, wi) => {
    return STACK_1MB[c][si]?.[wi] ?? null;
  });
  const b4 = sweepBuffer(4_000_000, plan.bigBufferWindows, plan.chunkSizes, (c, si) =>
    si >= 6 ? [c === "base64" ? 45 : 500, c === "base64" ? 1.25 : 1.05] : null,
  );
  const sweep: SweepData = {
    fileBytes: plan.sweepFileBytes,
    handleLength: 98,
    serverEntry: "server/server.ts startServer",
    computerEntry: "computer/computer.ts startComputer",
    buffers: [b1, b4],
    sdk: [
      sdkRun("SDK defaults in spec mode (binary: false, base64)", "base64", 64 * KiB, 91.6),
      sdkRun("SDK defaults (binary carriage)", "binary", 512 * KiB, 178.2),
    ],
    sdkAtBest: [sdkRun("SDK at sweep point base64 64 KiB w16", "base64", 64 * KiB, 87.3)],
  };
  const ceilingPoints = b1.points.map((p) =>
    point(p.carriage, p.chunkBytes, p.window, p.bare.median),
  );
  const ceiling: CeilingData = {
    fileBytes: plan.sweepFileBytes,
    sizes: b1.sizes,
    points: ceilingPoints,
  };
  const direct: DirectData = {
    points: b1.sizes.base64
      .filter((s) => s.fits["1000000"])
      .flatMap((s) =>
        plan.windows.map((w) => {
          const mbps = Math.min(900, 40 * Math.log2(s.bytes / 8192) * Math.sqrt(w));
          return repeated(point("binary", s.bytes, w, mbps), spreadOf(reps(mbps)));
        }),
      ),
  };
  const many: ManyAgentsData = {
    fileBytes: 8 * MiB,
    totalOffices: 64,
    rows: manyRows(),
    notes: [],
  };
  const two: TwoNodeData = {
    fileBytes: 32 * MiB,
    rounds: 5,
    adapter: "@socket.io/redis-adapter, classic Pub/Sub, publishOnSpecificResponseChannel",
    points: twoNodePoints(),
    ratios: [],
    notes: [],
  };
  const micro: MicroData = { rows: microRows(plan.micro.sizes), poolThreads: 2 };
  const sections: Partial<Record<SectionId, SectionOutcome>> = {
    micro: done(micro, 30),
    ceiling: done(ceiling, 126),
    sweep: done(sweep, 420),
    direct: done(direct, 57),
    userView: done(userView(), 95),
    manyAgents: done(many, 40),
    twoNode: done(two, 45),
  };
  const capacity = await runCapacity({
    plan,
    ledger: new IntegrityLedger(),
    dataDir: "",
    results: sections,
    log: () => {},
  });
  sections.capacity = done(capacity, 0);
  const report: Report = {
    meta: {
      title: "A2C-SMCP blob transport: benchmark and capacity report",
      startedAt: "2026-12-03T15:30:23.192Z",
      finishedAt: "2026-12-03T15:45:10.000Z",
      commit: "c41acbb",
      quick: false,
      argv: [],
      node: "v20.20.2",
      cpus: 2,
      cpuModel: "AMD EPYC",
      totalMemGiB: 24,
      kernel: "6.18.44",
      loadAvgStart: [1.95, 4.35, 4.63],
      loadAvgEnd: [3.73, 3.16, 3.74],
      versions: { "socket.io": "4.8.4" },
      bufferutil: true,
      mallocTunables: null,
      nodeFlags: ["--max-semi-space-size=4", "--heap-growing-percent=300"],
      plan,
    },
    sections,
    goals: [],
    integrity: {
      verifiedChunks: 756004,
      verifiedBytes: 100 * 1024 * MiB,
      verifiedResources: 431,
      failures: [],
    },
    ok: true,
    verdict: { status: "FAIL", detail: "", exitCode: 1 },
  };
  report.goals = evaluateGoals(report);
  report.verdict = verdictOf({
    goals: report.goals,
    failedSections: [],
    integrityFailures: 0,
    quick: false,
  });
  return report;
}
