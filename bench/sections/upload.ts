/**
 * Uploads (`client:put_blob`) beside downloads of the same file, through our Server and Computer:
 * the SDK's `uploadBlob` from the file against its `downloadBlob` to a file, in each carriage;
 * the built CLI's `put` against its `skill -o` (process start included); upstream's pattern (one
 * 256 KiB base64 chunk in flight, each waiting for the ack of the one before) beside ours; chunk
 * sizes swept up to the largest request the Server's `maxHttpBufferSize` takes; and how much the
 * Computer's RSS grows while it stores the file. Cases are interleaved round by round, the order
 * rotating; figures are medians, ratios the median of per-round pairs. Every stored file is
 * hashed where it landed and compared with the source, then removed.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  DEFAULT_BASE64_UPLOAD_CHUNK_BYTES,
  DEFAULT_BINARY_UPLOAD_CHUNK_BYTES,
  DEFAULT_UPLOAD_WINDOW,
} from "../../agent/upload.ts";
import type { Ctx } from "../lib/context.ts";
import { writeContent } from "../lib/data.ts";
import {
  CLI,
  cliConnection,
  expectFileSha256,
  expectLanded,
  runCli,
  shebangFlags,
} from "../lib/cli.ts";
import { rotatingRounds } from "../lib/measure.ts";
import { KiB, MiB, formatBytes, mbPerSec, spreadOf, type Spread } from "../lib/stats.ts";
import type { SdkDownloadArgs, SdkUploadArgs, SdkUploadResult } from "../stack/agent-side.ts";
import { BENCH_TOKEN, SKILL, resourcePath, startStack, type Stack } from "../stack/harness.ts";

export type UploadCaseId =
  | "sdk-put-binary"
  | "sdk-get-binary"
  | "sdk-put-base64"
  | "sdk-get-base64"
  | "upstream-put"
  | "cli-put"
  | "cli-get";

export interface UploadRow {
  id: UploadCaseId;
  what: string;
  carriage: string;
  seconds: Spread;
  mbps: Spread;
}

export interface UploadSweepPoint {
  carriage: "base64" | "binary";
  chunkBytes: number;
  mbps: number;
  requests: number;
  /** Chunks the Server refused as busy and the upload sent again. */
  rewinds: number;
}

export interface UploadData {
  fileBytes: number;
  rounds: number;
  maxHttpBufferSize: number;
  rows: UploadRow[];
  /** Per-round MB/s ratios (median and each round). */
  ratios: {
    sdkBinary: Spread;
    sdkBase64: Spread;
    cli: Spread;
    /** Our default upload over upstream's pattern. */
    oursVsUpstream: Spread;
  };
  sweep: {
    fileBytes: number;
    /** The largest chunk whose request fits `maxHttpBufferSize`, per carriage. */
    fits: { base64: number; binary: number };
    points: UploadSweepPoint[];
  };
  /** The Computer process's RSS before and at most during the first SDK binary upload. */
  rss: { fileBytes: number; beforeBytes: number; peakBytes: number; growthBytes: number };
  notes: string[];
}

const REL_PATH = "upload.bin";
const SWEEP_PATH = "upload-sweep.bin";
/** Room left in a request for its envelope (event name, routing fields, framing). */
const ENVELOPE_ROOM = 1024;
const UPSTREAM = { binary: false, window: 1, chunkBytes: 256 * KiB } as const;

interface Setup {
  ctx: Ctx;
  stack: Stack;
  path: string;
  sha256: string;
  flags: string[];
  cliOffice: { office: string; computer: string };
}

interface Sample {
  seconds: number;
  carriage: string;
}

async function sdkPut(
  s: Setup,
  options: SdkUploadArgs["options"],
  path = s.path,
  fixedChunks = false,
) {
  const seat = s.stack.seats[0]!;
  const r = await seat.child.call<SdkUploadResult>("sdk-upload", {
    agent: seat.index,
    path,
    options,
    fixedChunks,
  } satisfies SdkUploadArgs);
  await expectLanded(r.landingPath, path === s.path ? s.sha256 : r.sha256);
  s.ctx.ledger.add(0, r.totalSize, 1);
  return r;
}

async function sdkGet(s: Setup, round: number, binary: boolean): Promise<Sample> {
  const seat = s.stack.seats[0]!;
  const out = join(s.ctx.dataDir, `upload-get-${round}.bin`);
  try {
    const r = await seat.child.call<{ seconds: number; carriage: string | null }>("sdk-download", {
      agent: seat.index,
      skill: SKILL,
      relPath: REL_PATH,
      out,
      options: { binary },
    } satisfies SdkDownloadArgs);
    await expectFileSha256("SDK download", out, s.sha256);
    s.ctx.ledger.add(0, s.ctx.plan.upload.fileBytes, 1);
    return { seconds: r.seconds, carriage: r.carriage ?? "cache" };
  } finally {
    rmSync(out, { force: true });
  }
}

function cliCommon(s: Setup): string[] {
  return cliConnection(s.stack.url, s.cliOffice.office, BENCH_TOKEN);
}

async function cliPut(s: Setup): Promise<Sample> {
  const r = await runCli(s.flags, [...cliCommon(s), "put", s.cliOffice.computer, s.path]);
  await expectLanded(r.stdout.trim(), s.sha256);
  s.ctx.ledger.add(0, s.ctx.plan.upload.fileBytes, 1);
  return { seconds: r.seconds, carriage: r.carriage ?? "?" };
}

async function cliGet(s: Setup, round: number): Promise<Sample> {
  const out = join(s.ctx.dataDir, `upload-cli-get-${round}.bin`);
  try {
    const r = await runCli(s.flags, [
      ...cliCommon(s),
      "skill",
      s.cliOffice.computer,
      SKILL,
      REL_PATH,
      `--output=${out}`,
    ]);
    await expectFileSha256("CLI download", out, s.sha256);
    s.ctx.ledger.add(0, s.ctx.plan.upload.fileBytes, 1);
    return { seconds: r.seconds, carriage: r.carriage ?? "?" };
  } finally {
    rmSync(out, { force: true });
  }
}

/** A case's run: one SDK upload of the file with `options` (`fixedChunks`: no path controller). */
function sdkPutCase(options: SdkUploadArgs["options"], fixedChunks = false) {
  return async (s: Setup): Promise<Sample> => {
    const r = await sdkPut(s, options, s.path, fixedChunks);
    return { seconds: r.seconds, carriage: r.carriage };
  };
}

const CASES: Array<{
  id: UploadCaseId;
  what: string;
  run: (s: Setup, round: number) => Promise<Sample>;
}> = [
  {
    id: "sdk-put-binary",
    what: "SDK uploadBlob(file), defaults (hash first, binary when offered)",
    run: sdkPutCase({}),
  },
  {
    id: "sdk-get-binary",
    what: "SDK get_skill + downloadBlob(file), defaults",
    run: (s, round) => sdkGet(s, round, true),
  },
  {
    id: "sdk-put-base64",
    what: "SDK uploadBlob(file), binary: false",
    run: sdkPutCase({ binary: false }),
  },
  {
    id: "sdk-get-base64",
    what: "SDK get_skill + downloadBlob(file), binary: false",
    run: (s, round) => sdkGet(s, round, false),
  },
  {
    id: "upstream-put",
    what: "upstream's pattern: one 256 KiB base64 chunk in flight, ack-paced (SDK, fixed chunks, window 1)",
    run: sdkPutCase(UPSTREAM, true),
  },
  {
    id: "cli-put",
    what: "a2c-agent put (built CLI, process start included)",
    run: (s) => cliPut(s),
  },
  {
    id: "cli-get",
    what: "a2c-agent skill -o FILE (built CLI, process start included)",
    run: (s, round) => cliGet(s, round),
  },
];

/** Resident set of `pid` from /proc (0 where there is none). */
function rssOf(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The first SDK binary upload, with the Computer's RSS sampled every 20 ms while it runs. */
async function measureRss(s: Setup): Promise<UploadData["rss"]> {
  const pid = s.stack.computers[0]!.proc.pid;
  const before = rssOf(pid);
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
  try {
    await sdkPut(s, {});
  } finally {
    clearInterval(timer);
  }
  peak = Math.max(peak, rssOf(pid));
  return {
    fileBytes: s.ctx.plan.upload.fileBytes,
    beforeBytes: before,
    peakBytes: peak,
    growthBytes: peak - before,
  };
}

async function sweep(s: Setup, maxHttpBufferSize: number): Promise<UploadData["sweep"]> {
  const { sweepBytes, chunkSizes } = s.ctx.plan.upload;
  const path = resourcePath(s.ctx, SWEEP_PATH);
  writeContent(path, "upload-sweep", sweepBytes);
  const page = (n: number): number => Math.floor(n / (4 * KiB)) * 4 * KiB;
  const fits = {
    base64: page(((maxHttpBufferSize - ENVELOPE_ROOM) * 3) / 4),
    binary: page(maxHttpBufferSize - ENVELOPE_ROOM),
  };
  const points: UploadSweepPoint[] = [];
  for (const carriage of ["binary", "base64"] as const) {
    const sizes = [...new Set([...chunkSizes.filter((c) => c < fits[carriage]), fits[carriage]])];
    for (const chunkBytes of sizes) {
      const r = await sdkPut(s, { binary: carriage === "binary", chunkBytes }, path, true);
      points.push({
        carriage,
        chunkBytes,
        mbps: mbPerSec(sweepBytes, r.seconds),
        requests: r.requests,
        rewinds: r.rewinds,
      });
      s.ctx.log(
        `upload sweep ${carriage} ${formatBytes(chunkBytes)}: ${mbPerSec(sweepBytes, r.seconds).toFixed(1)} MB/s (${r.requests} chunks, ${r.rewinds} rewinds)`,
      );
    }
  }
  rmSync(path, { force: true });
  return { fileBytes: sweepBytes, fits, points };
}

export async function runUpload(ctx: Ctx): Promise<UploadData> {
  const { fileBytes, rounds } = ctx.plan.upload;
  const maxHttpBufferSize = 1_000_000;
  const path = resourcePath(ctx, REL_PATH);
  const sha256 = writeContent(path, "upload", fileBytes);
  const stack = await startStack(ctx, {
    maxHttpBufferSize,
    offices: 2,
    agentOffices: 1,
    landingRoot: join(ctx.dataDir, "landing"),
    uploadMaxBytes: 4 * 1024 * MiB,
  });
  try {
    const s: Setup = {
      ctx,
      stack,
      path,
      sha256,
      flags: shebangFlags(CLI),
      cliOffice: stack.offices[1]!,
    };
    const rss = await measureRss(s);
    ctx.log(
      `upload: Computer RSS ${formatBytes(rss.beforeBytes)} → peak ${formatBytes(rss.peakBytes)} during a ${formatBytes(fileBytes)} upload`,
    );
    const samples = await rotatingRounds(rounds, CASES, (i, round) => CASES[i]!.run(s, round), {
      onSample: (id, sample, round) =>
        ctx.log(
          `upload round ${round + 1} ${id}: ${mbPerSec(fileBytes, sample.seconds).toFixed(1)} MB/s (${sample.seconds.toFixed(2)} s, ${sample.carriage})`,
        ),
    });
    const swept = await sweep(s, maxHttpBufferSize);
    return summarize(ctx, samples, rss, swept, maxHttpBufferSize);
  } finally {
    await stack.close();
    rmSync(path, { force: true });
  }
}

function summarize(
  ctx: Ctx,
  samples: Map<UploadCaseId, Sample[]>,
  rss: UploadData["rss"],
  swept: UploadData["sweep"],
  maxHttpBufferSize: number,
): UploadData {
  const { fileBytes, rounds } = ctx.plan.upload;
  const mbps = (id: UploadCaseId): number[] =>
    samples.get(id)!.map((x) => mbPerSec(fileBytes, x.seconds));
  const ratio = (a: UploadCaseId, b: UploadCaseId): Spread => {
    const ys = mbps(b);
    return spreadOf(mbps(a).map((x, i) => x / ys[i]!));
  };
  const rows = CASES.map((c): UploadRow => ({
    id: c.id,
    what: c.what,
    carriage: [...new Set(samples.get(c.id)!.map((x) => x.carriage))].join(" + "),
    seconds: spreadOf(samples.get(c.id)!.map((x) => x.seconds)),
    mbps: spreadOf(mbps(c.id)),
  }));
  return {
    fileBytes,
    rounds,
    maxHttpBufferSize,
    rows,
    ratios: {
      sdkBinary: ratio("sdk-put-binary", "sdk-get-binary"),
      sdkBase64: ratio("sdk-put-base64", "sdk-get-base64"),
      cli: ratio("cli-put", "cli-get"),
      oursVsUpstream: ratio("sdk-put-binary", "upstream-put"),
    },
    sweep: swept,
    rss,
    notes: [
      `Upload times run from the uploadBlob call (the file is hashed first: its sha256 is declared on the first chunk) to the final ack; download times from get_skill to the renamed file. The CLI runs from spawn to exit. Default chunk ceilings: ${formatBytes(DEFAULT_BINARY_UPLOAD_CHUNK_BYTES)} binary, ${formatBytes(DEFAULT_BASE64_UPLOAD_CHUNK_BYTES)} base64.`,
      `The sweep uploads a ${formatBytes(swept.fileBytes)} file once per point, every chunk of exactly the given size (no path controller), ${DEFAULT_UPLOAD_WINDOW} in flight; the largest point of each carriage is the largest request a Server with maxHttpBufferSize ${maxHttpBufferSize} takes (a larger one drops the connection).`,
    ],
  };
}
