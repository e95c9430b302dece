/**
 * The Computer's per-chunk cost and its event loop:
 * - per-chunk Computer time for a 1 MiB vs a 1 GiB resource, after the first hash, from the
 *   Computer's own chunk-time histogram (and its CPU per chunk) — D18 says a chunk costs the same
 *   whatever the resource size; and the same for SKILL.md bodies (served with their frontmatter
 *   stripped, a derived resource), 1 MiB vs 64 MiB, after the first derivation, measured in the
 *   same alternating rounds;
 * - event-loop delay p99 inside the Computer process (perf_hooks.monitorEventLoopDelay in the
 *   process that runs startComputer) while it hashes the 1 GiB file again (its mtime was bumped,
 *   so its content signature changed) and serves another pull at the same time.
 * `--quick` uses a 64 MiB file in place of 1 GiB (stated in the report).
 */
import { mkdirSync, readdirSync, readFileSync, utimesSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeContent } from "../lib/data.ts";
import { IntegrityError } from "../lib/integrity.ts";
import type { ProcStats } from "../lib/ipc.ts";
import { ELD_RESOLUTION_MS } from "../lib/eld.ts";
import { DEFAULT_HASH_NICE } from "../../computer/blob/hash-cache.ts";
import type { DriveResult } from "../lib/driver.ts";
import type { Ctx } from "../lib/context.ts";
import type { DriveArgs } from "../procs/agent.ts";
import { formatBytes, KiB } from "../lib/stats.ts";
import { getHandle, resourcePath, type Seat, type Stack, sharedStack } from "../stack/harness.ts";

interface PerChunk {
  /** Mean time inside the Computer per chunk (its histogram), ms. */
  computerMs: number;
  /** Computer process CPU per chunk, ms. */
  cpuMs: number;
  /** Agent-observed latency p50, ms. */
  p50Ms: number;
  chunks: number;
}

interface PerChunkPair {
  small: PerChunk;
  big: PerChunk;
  /** big / small Computer time per chunk (the goal's figure), and CPU per chunk. */
  ratio: number;
  cpuRatio: number;
}

export interface ComputerCostData {
  smallBytes: number;
  bigBytes: number;
  chunkBytes: number;
  firstHashSeconds: number;
  perChunk: PerChunkPair;
  /** The same measurement for SKILL.md bodies (derived resources), in the same rounds. */
  skillMd: PerChunkPair & {
    smallBytes: number;
    bigBytes: number;
    /** First get_skill of the big SKILL.md: its body derived (stripped, hashed, written). */
    firstDeriveSeconds: number;
  };
  eld: EldRun & {
    /** monitorEventLoopDelay resolution (ms); delays are beyond it (bench/lib/eld.ts). */
    resolutionMs: number;
    /** Every measurement, in run order: hash threads at nice offset 0 and at the default. */
    runs: EldRun[];
  };
  notes: string[];
}

/** One event-loop measurement: a baseline pull, then the same pull while the big file is hashed. */
export interface EldRun {
  /** Nice offset of the Computer's hash threads during this run. */
  hashNice: number;
  /** Nice values of the Computer process's threads after the hash (Linux /proc), value → count. */
  threadNices: Record<string, number>;
  /**
   * Delay beyond the sampling interval, ms, from the mtime bump to the first verified chunk of the
   * new content (the hash; `seconds` long) while the other pull runs.
   */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The raw histogram: whole timer interval (resolution + delay), ms. */
  intervalP99Ms: number;
  intervalMaxMs: number;
  seconds: number;
  /** From the bump to the first verified chunk of the new content. */
  hashSeconds: number;
  /** Of which get_skill (its answer carries the sha256). */
  mintSeconds: number;
  /** Delay p99 over the hash and the rest of the other pull (how reports before 2026-12-03 timed it). */
  wholeP99Ms: number;
  wholeSeconds: number;
  /** The same other pull with no hashing going on (delay beyond the interval). */
  baselineP99Ms: number;
  baselineMaxMs: number;
  baselineIntervalP99Ms: number;
  otherChunks: number;
  otherP50Ms: number;
  otherP99Ms: number;
  /** Hash computations during the window, by path (pool / inline). */
  hashes: Record<string, number>;
}

const CHUNK = 64 * KiB;
const FRONTMATTER = "---\nname: bench-body\ndescription: A SKILL.md body of the benchmark\n---\n";

/**
 * A SKILL.md at `<name>/SKILL.md` whose served body is content `seed`, and a copy of that body
 * outside the skill home for the driver, which checks every chunk against a file's bytes.
 */
function writeSkillMd(
  ctx: Ctx,
  name: string,
  seed: string,
  bytes: number,
): { sha256: string; bodyPath: string } {
  const path = resourcePath(ctx, `${name}/SKILL.md`);
  mkdirSync(dirname(path), { recursive: true });
  const sha256 = writeContent(path, seed, bytes, "w", FRONTMATTER);
  const bodyPath = join(ctx.dataDir, `${name}.body`);
  writeContent(bodyPath, seed, bytes);
  return { sha256, bodyPath };
}

export async function runComputerCost(ctx: Ctx): Promise<ComputerCostData> {
  const { plan } = ctx;
  const smallPath = resourcePath(ctx, "small.bin");
  const bigPath = resourcePath(ctx, "big.bin");
  const smallSha = writeContent(smallPath, "small", plan.smallResourceBytes);
  ctx.log(`computer cost: writing ${formatBytes(plan.bigResourceBytes)}…`);
  const bigSha = writeContent(bigPath, "big", plan.bigResourceBytes);
  const mdSmallBody = writeSkillMd(ctx, "skillmd-small", "md-small", plan.skillMdBytes.small);
  const mdBigBody = writeSkillMd(ctx, "skillmd-big", "md-big", plan.skillMdBytes.big);
  const stack = await sharedStack(ctx, { maxHttpBufferSize: 1_000_000, offices: 1 });
  {
    const seat = stack.seats[0]!;
    const computer = stack.computers[0]!;
    const small = await getHandle(seat, "small.bin");
    const t0 = performance.now();
    const big = await getHandle(seat, "big.bin");
    const firstHashSeconds = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    const mdBig = await getHandle(seat, "skillmd-big/SKILL.md");
    const firstDeriveSeconds = (performance.now() - t1) / 1000;
    const mdSmall = await getHandle(seat, "skillmd-small/SKILL.md");
    if (
      small.sha256 !== smallSha ||
      big.sha256 !== bigSha ||
      mdSmall.sha256 !== mdSmallBody.sha256 ||
      mdBig.sha256 !== mdBigBody.sha256
    ) {
      throw new IntegrityError("get_skill reported a sha256 that is not the written content's");
    }

    // Alternate small and big in rounds so drift in machine load hits both alike.
    const drive = (path: string, handle: string, n: number): Promise<DriveResult> =>
      seat.child.call<DriveResult>("drive", {
        carrier: "stack",
        path,
        chunkBytes: CHUNK,
        window: 1,
        durationMs: 0,
        carriage: "base64",
        agent: seat.index,
        handle,
        maxChunks: n,
      } satisfies DriveArgs);
    const kinds = [
      ["small", smallPath, small.handle],
      ["big", bigPath, big.handle],
      ["mdSmall", mdSmallBody.bodyPath, mdSmall.handle],
      ["mdBig", mdBigBody.bodyPath, mdBig.handle],
    ] as const;
    type Kind = (typeof kinds)[number][0];
    const totals = Object.fromEntries(
      kinds.map(([k]) => [k, { time: 0, timed: 0, cpu: 0, chunks: 0, lat: [] as number[] }]),
    ) as Record<Kind, { time: number; timed: number; cpu: number; chunks: number; lat: number[] }>;
    // Warm: connection, caches, JIT, and each resource's first hash or derivation.
    for (const [, path, handle] of kinds) await drive(path, handle, 8);
    const rounds = 4;
    for (let round = 0; round < rounds; round++) {
      for (const [key, path, handle] of kinds) {
        const h0 = await computer.call<{ sum: number; count: number }>("chunk-time");
        const s0 = await computer.stats();
        const r = await drive(path, handle, Math.ceil(plan.perChunkSamples / rounds));
        const s1 = await computer.stats();
        const h1 = await computer.call<{ sum: number; count: number }>("chunk-time");
        ctx.ledger.add(r.chunks, r.bytes);
        const t = totals[key];
        t.time += h1.sum - h0.sum;
        t.timed += h1.count - h0.count;
        t.cpu += (s1.cpuMicros - s0.cpuMicros) / 1000;
        t.chunks += r.chunks;
        t.lat.push(r.latencyMs.p50);
      }
    }
    const perChunk = (t: (typeof totals)[Kind]): PerChunk => ({
      computerMs: t.timed > 0 ? (t.time / t.timed) * 1000 : NaN,
      cpuMs: t.cpu / t.chunks,
      p50Ms: [...t.lat].sort((a, b) => a - b)[Math.floor(t.lat.length / 2)] ?? NaN,
      chunks: t.chunks,
    });
    const pair = (smallKey: Kind, bigKey: Kind): PerChunkPair => {
      const [s, b] = [perChunk(totals[smallKey]), perChunk(totals[bigKey])];
      return { small: s, big: b, ratio: b.computerMs / s.computerMs, cpuRatio: b.cpuMs / s.cpuMs };
    };
    const raw = pair("small", "big");
    const md = pair("mdSmall", "mdBig");
    ctx.log(
      `computer cost: per chunk ${raw.small.computerMs.toFixed(3)} ms (small) vs ${raw.big.computerMs.toFixed(3)} ms (big); SKILL.md body ${md.small.computerMs.toFixed(3)} vs ${md.big.computerMs.toFixed(3)} ms`,
    );

    // Side by side: hash threads at nice offset 0 (as before the setting existed), then at the
    // default, alternating. Offset 0 comes first so that at least the first pair is right for an
    // unprivileged run too: such a thread cannot take a lowered priority back (RLIMIT_NICE), which
    // threadNices would show for later offset-0 runs.
    const runs: EldRun[] = [];
    const eldRounds = plan.quick ? 1 : 3;
    for (let round = 0; round < eldRounds; round++) {
      for (const hashNice of [0, DEFAULT_HASH_NICE]) {
        await computer.call("hash-nice", hashNice);
        runs.push(
          await eventLoopWhileHashing(ctx, stack, seat, hashNice, {
            smallPath,
            smallHandle: small.handle,
            bigPath,
            bigSha,
          }),
        );
      }
    }
    await computer.call("hash-nice", DEFAULT_HASH_NICE);
    // The goal is judged on the default setting, on its worse run.
    const judged = runs
      .filter((x) => x.hashNice === DEFAULT_HASH_NICE)
      .reduce((a, b) => (b.p99Ms > a.p99Ms ? b : a));
    const eld = { ...judged, resolutionMs: ELD_RESOLUTION_MS, runs };
    return {
      smallBytes: plan.smallResourceBytes,
      bigBytes: plan.bigResourceBytes,
      chunkBytes: CHUNK,
      firstHashSeconds,
      perChunk: raw,
      skillMd: {
        ...md,
        smallBytes: plan.skillMdBytes.small,
        bigBytes: plan.skillMdBytes.big,
        firstDeriveSeconds,
      },
      eld,
      notes: [
        `First get_skill of the ${formatBytes(plan.bigResourceBytes)} file (mint, including its first hash): ${firstHashSeconds.toFixed(2)} s; of the ${formatBytes(plan.skillMdBytes.big)} SKILL.md body (its derivation: read, stripped, hashed and written in the Computer's pool): ${firstDeriveSeconds.toFixed(2)} s.`,
        "Raw files and SKILL.md bodies are measured in the same rounds, alternating small, big, small body, big body (64 KiB chunks, window 1).",
        "Per-chunk time is the Computer's own a2c_computer_blob_chunk_seconds histogram (sum/count over the sample), read in the Computer's process; CPU per chunk includes its socket.io work.",
      ],
    };
  }
}

async function eventLoopWhileHashing(
  ctx: Ctx,
  stack: Stack,
  seat: Seat,
  hashNice: number,
  r: { smallPath: string; smallHandle: string; bigPath: string; bigSha: string },
): Promise<EldRun> {
  const computer = stack.computers[0]!;
  // Long enough to outlast the hash (1 GiB: 0.8–3.5 s on the shared 2-core box), so the hash
  // window is all "while serving".
  const otherMs = ctx.plan.quick ? 1000 : 5000;
  const pull = (): Promise<DriveResult> =>
    seat.child.call<DriveResult>("drive", {
      carrier: "stack",
      path: r.smallPath,
      chunkBytes: CHUNK,
      window: 4,
      durationMs: otherMs,
      carriage: "base64",
      agent: seat.index,
      handle: r.smallHandle,
    } satisfies DriveArgs);
  // Baseline: the same other pull without any hashing, so contention on a shared machine is told
  // apart from what hashing adds.
  await computer.call("eld-reset");
  const base = await pull();
  ctx.ledger.add(base.chunks, base.bytes);
  const baseline = (await computer.stats()).eld;
  // A new mtime is a new content signature: the next read must hash the big file again.
  const later = new Date(Date.now() + 5000);
  utimesSync(r.bigPath, later, later);
  const hashesBefore = await computer.call<Record<string, number>>("hash-computations");
  await computer.call("eld-reset");
  const s0: ProcStats = await computer.stats();
  const t0 = performance.now();
  const other = pull();
  // get_skill hashes the file for its answer's sha256; the first get_blob of the new content
  // hashes it through the engine's hash cache. Both are Computer work on the 1 GiB file.
  let mintSeconds = 0;
  const hashing = getHandle(seat, "big.bin").then(async (h) => {
    if (h.sha256 !== r.bigSha)
      throw new IntegrityError("the re-hashed big file reported a different sha256");
    mintSeconds = (performance.now() - t0) / 1000;
    const first = await seat.child.call<DriveResult>("drive", {
      carrier: "stack",
      path: r.bigPath,
      chunkBytes: CHUNK,
      window: 1,
      durationMs: 0,
      carriage: "base64",
      agent: seat.index,
      handle: h.handle,
      maxChunks: 1,
    } satisfies DriveArgs);
    ctx.ledger.add(first.chunks, first.bytes);
    const seconds = (performance.now() - t0) / 1000;
    // The event loop over exactly the hash (the other pull is still running): the window the
    // goal is about. The pull's remaining seconds without hashing would dilute the p99.
    return { seconds, stats: await computer.stats() };
  });
  const [o, hashed] = await Promise.all([other, hashing]);
  const hashSeconds = hashed.seconds;
  const s1 = hashed.stats;
  const whole = (await computer.stats()).eld;
  const threadNices = threadNiceCounts(computer.pid);
  const hashesAfter = await computer.call<Record<string, number>>("hash-computations");
  ctx.ledger.add(o.chunks, o.bytes);
  const hashes: Record<string, number> = {};
  for (const [k, v] of Object.entries(hashesAfter)) {
    const d = v - (hashesBefore[k] ?? 0);
    if (d > 0) hashes[k] = d;
  }
  if (Object.keys(hashes).length === 0)
    throw new Error("bumping the big file's mtime did not make the Computer hash it again");
  ctx.log(
    `computer cost: hash nice +${hashNice}: event-loop delay p99 ${s1.eld.p99.toFixed(1)} ms beyond the ${s1.eld.resolutionMs} ms interval while hashing (${hashSeconds.toFixed(2)} s), baseline ${baseline.p99.toFixed(1)} ms`,
  );
  return {
    hashNice,
    threadNices,
    p50Ms: s1.eld.p50,
    p99Ms: s1.eld.p99,
    maxMs: s1.eld.max,
    intervalP99Ms: s1.eld.intervalP99,
    intervalMaxMs: s1.eld.intervalMax,
    seconds: (s1.wallMs - s0.wallMs) / 1000,
    hashSeconds,
    mintSeconds,
    baselineP99Ms: baseline.p99,
    baselineMaxMs: baseline.max,
    baselineIntervalP99Ms: baseline.intervalP99,
    wholeP99Ms: whole.p99,
    wholeSeconds: (performance.now() - t0) / 1000,
    otherChunks: o.chunks,
    otherP50Ms: o.latencyMs.p50,
    otherP99Ms: o.latencyMs.p99,
    hashes,
  };
}

/** Nice value → number of threads of process `pid` (Linux /proc; empty elsewhere). */
function threadNiceCounts(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      // Fields after "(comm) ": state is field 3, nice is field 19.
      const nice = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16];
      if (nice !== undefined) out[nice] = (out[nice] ?? 0) + 1;
    }
  } catch {
    // not Linux, or the process is gone: no thread listing
  }
  return out;
}
