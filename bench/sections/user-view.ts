/**
 * The user view: one resource as a user gets it, measured side by side. The built Agent CLI
 * (the `a2c-agent` bin of agent/package.json, run with its shebang's node flags; its process
 * start included) downloads it to a file, and the SDK reads it into memory
 * (`get_skill` + `readBlobWithInfo` in a connected Agent process), each in both carriages:
 * binary (the default, D19) and base64 (the spec's mode). Beside them, the same file through the
 * bare socket.io relay and over plain HTTP Range requests (the SDK's default chunk size and
 * window). Cases are interleaved round by round, the order rotating; every figure is the median
 * of the rounds, and every ratio (the CLI against the bare relay, judged by a goal; the CLI against
 * the SDK, the defaults against spec mode) is the median of per-round pairs.
 */
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  DEFAULT_BASE64_CHUNK_BYTES,
  DEFAULT_BINARY_CHUNK_BYTES,
  DEFAULT_WINDOW,
} from "../../agent/pull.ts";
import type { Ctx } from "../lib/context.ts";
import { writeContent } from "../lib/data.ts";
import type { DriveResult } from "../lib/driver.ts";
import { CLI, ROOT, cliConnection, expectFileSha256, runCli, shebangFlags } from "../lib/cli.ts";
import { spawnChild, type Child } from "../lib/ipc.ts";
import { rotatingRounds } from "../lib/measure.ts";
import { formatBytes, mbPerSec, spreadOf, type Spread } from "../lib/stats.ts";
import type { DriveArgs } from "../procs/agent.ts";
import type { SkillReadArgs, SkillReadResult } from "../stack/agent-side.ts";
import { BENCH_TOKEN, SKILL, resourcePath, startStack, type Stack } from "../stack/harness.ts";
import { startBareRelay, type BareRelay } from "./ceiling.ts";
import { SAMPLE_ENVELOPE } from "./micro.ts";

export type Carriage = "base64" | "binary";
export type UserViewCaseId =
  | "cli-binary"
  | "sdk-binary"
  | "cli-base64"
  | "sdk-base64"
  | "bare-binary"
  | "bare-base64"
  | "http";

export interface UserViewRow {
  id: UserViewCaseId;
  /** What was timed, in words. */
  what: string;
  /** The carriage every round of the case reported using (`http`: plain bytes). */
  carriage: Carriage | "http";
  chunkBytes: number;
  window: number;
  seconds: Spread;
  mbps: Spread;
}

export interface UserViewData {
  fileBytes: number;
  rounds: number;
  /** Node flags the CLI ran with (its shebang's). */
  cliNodeFlags: string[];
  /** `a2c-agent --help` from spawn to exit: the process start alone, each round. */
  cliStartSeconds: Spread;
  rows: UserViewRow[];
  /**
   * Per-round MB/s of the CLI's default download to a file over the bare relay's binary read of
   * the same file into memory: what a user's command gets of what the transport alone moves.
   */
  cliVsBare: Spread;
  /** Per-round CLI-to-file MB/s over SDK in-memory MB/s, per carriage. */
  cliVsSdk: Record<Carriage, Spread>;
  /** Per-round SDK default-settings MB/s over the SDK in base64 spec mode. */
  defaultVsSpec: Spread;
  notes: string[];
}

const REL_PATH = "user-view.bin";

interface Setup {
  ctx: Ctx;
  stack: Stack;
  bare: BareRelay;
  path: string;
  sha256: string;
  flags: string[];
  /** The office without an Agent, where the CLI joins, and its Computer. */
  cliOffice: { office: string; computer: string };
}

interface Sample {
  seconds: number;
  carriage: Carriage | "http" | null;
}

const CASES: Array<{
  id: UserViewCaseId;
  what: string;
  chunkBytes: number;
  run: (s: Setup, round: number) => Promise<Sample>;
}> = [
  {
    id: "cli-binary",
    what: "a2c-agent skill -o FILE (built CLI, process start included), defaults",
    chunkBytes: DEFAULT_BINARY_CHUNK_BYTES,
    run: (s, round) => cliDownload(s, round, []),
  },
  {
    id: "sdk-binary",
    what: "SDK get_skill + readBlob into memory, defaults",
    chunkBytes: DEFAULT_BINARY_CHUNK_BYTES,
    run: (s) => sdkRead(s, {}),
  },
  {
    id: "cli-base64",
    what: "a2c-agent skill -o FILE --base64 (built CLI, process start included)",
    chunkBytes: DEFAULT_BASE64_CHUNK_BYTES,
    run: (s, round) => cliDownload(s, round, ["--base64"]),
  },
  {
    id: "sdk-base64",
    what: "SDK get_skill + readBlob into memory, binary: false (spec mode)",
    chunkBytes: DEFAULT_BASE64_CHUNK_BYTES,
    run: (s) => sdkRead(s, { binary: false }),
  },
  {
    id: "bare-binary",
    what: "bare socket.io relay, whole file, in memory",
    chunkBytes: DEFAULT_BINARY_CHUNK_BYTES,
    run: (s) => drive(s, s.bare.agent, "bare", "binary", DEFAULT_BINARY_CHUNK_BYTES),
  },
  {
    id: "bare-base64",
    what: "bare socket.io relay, whole file, in memory",
    chunkBytes: DEFAULT_BASE64_CHUNK_BYTES,
    run: (s) => drive(s, s.bare.agent, "bare", "base64", DEFAULT_BASE64_CHUNK_BYTES),
  },
  {
    id: "http",
    what: "HTTP Range requests on loopback, whole file, in memory",
    chunkBytes: DEFAULT_BINARY_CHUNK_BYTES,
    run: (s) => drive(s, s.bare.agent, "http", "binary", DEFAULT_BINARY_CHUNK_BYTES),
  },
];

async function cliDownload(s: Setup, round: number, extra: string[]): Promise<Sample> {
  const out = join(s.ctx.dataDir, `user-view-cli-${round}.bin`);
  try {
    const r = await runCli(s.flags, [
      ...cliConnection(s.stack.url, s.cliOffice.office, BENCH_TOKEN),
      "--name=user-view-cli",
      "skill",
      s.cliOffice.computer,
      SKILL,
      REL_PATH,
      `--output=${out}`,
      ...extra,
    ]);
    await expectFileSha256("CLI download", out, s.sha256);
    s.ctx.ledger.add(0, s.ctx.plan.userView.fileBytes, 1);
    return { seconds: r.seconds, carriage: r.carriage };
  } finally {
    rmSync(out, { force: true });
  }
}

async function sdkRead(s: Setup, options: SkillReadArgs["options"]): Promise<Sample> {
  const seat = s.stack.seats[0]!;
  const r = await seat.child.call<SkillReadResult>("sdk-skill-read", {
    agent: seat.index,
    skill: SKILL,
    relPath: REL_PATH,
    sha256: s.sha256,
    totalSize: s.ctx.plan.userView.fileBytes,
    options,
  } satisfies SkillReadArgs);
  s.ctx.ledger.add(0, s.ctx.plan.userView.fileBytes, 1);
  return { seconds: r.seconds, carriage: r.carriage };
}

async function drive(
  s: Setup,
  agent: Child,
  carrier: "bare" | "http",
  carriage: Carriage,
  chunkBytes: number,
): Promise<Sample> {
  const size = s.ctx.plan.userView.fileBytes;
  const r = await agent.call<DriveResult>("drive", {
    carrier,
    path: s.path,
    chunkBytes,
    window: DEFAULT_WINDOW,
    durationMs: 0,
    carriage,
    maxChunks: Math.ceil(size / chunkBytes),
  } satisfies DriveArgs);
  s.ctx.ledger.add(r.chunks, r.bytes);
  return { seconds: r.seconds, carriage: carrier === "http" ? "http" : carriage };
}

function carriageWords(c: Sample["carriage"]): string {
  if (c === "http") return "plain HTTP, no carriage";
  return c === null ? "carriage not reported" : `${c} carriage`;
}

/** `a2c-agent --help`: the process start alone. */
async function cliStart(flags: string[]): Promise<number> {
  return (await runCli(flags, ["--help"])).seconds;
}

export async function runUserView(ctx: Ctx): Promise<UserViewData> {
  // The bundle must be newer than every module tsc wrote, or it would run older code.
  const dist = join(ROOT, "agent/dist");
  const newest = Math.max(
    ...readdirSync(dist)
      .filter((f) => f.endsWith(".js") && join(dist, f) !== CLI)
      .map((f) => statSync(join(dist, f)).mtimeMs),
  );
  if (!existsSync(CLI) || statSync(CLI).mtimeMs < newest) {
    throw new Error(
      `${CLI.slice(ROOT.length)} is missing or older than the build: run \`npm run build\` first`,
    );
  }
  const { fileBytes, rounds, warmUp } = ctx.plan.userView;
  const path = resourcePath(ctx, REL_PATH);
  const sha256 = writeContent(path, "user-view", fileBytes);
  const flags = shebangFlags(CLI);
  // Office 0 holds the SDK's Agent; office 1 has none, so the CLI can join it.
  const stack = await startStack(ctx, {
    maxHttpBufferSize: 1_000_000,
    offices: 2,
    agentOffices: 1,
  });
  const closers: Array<() => Promise<void>> = [() => stack.close()];
  try {
    const bare = await startBareRelay(path, SAMPLE_ENVELOPE.blob_handle.length);
    closers.unshift(() => bare.close());
    const http = await spawnChild("range-server", "bench/procs/http-range-server.ts");
    closers.unshift(() => http.close());
    const { url } = await http.call<{ url: string }>("start", { path });
    await bare.agent.call("http-setup", { url });
    const setup: Setup = {
      ctx,
      stack,
      bare,
      path,
      sha256,
      flags,
      cliOffice: stack.offices[1]!,
    };
    if (warmUp) {
      ctx.log(`user view: warm-up round (${formatBytes(fileBytes)})`);
      for (const c of CASES) await c.run(setup, -1);
    }
    const starts: number[] = [];
    const samples = await rotatingRounds(rounds, CASES, (i, round) => CASES[i]!.run(setup, round), {
      beforeRound: async () => void starts.push(await cliStart(flags)),
      onSample: (id, sample, round) =>
        ctx.log(
          `user view round ${round + 1} ${id}: ${mbPerSec(fileBytes, sample.seconds).toFixed(1)} MB/s (${sample.seconds.toFixed(2)} s, ${carriageWords(sample.carriage)})`,
        ),
    });
    return summarize(ctx, flags, starts, samples);
  } finally {
    for (const close of closers) await close();
  }
}

function summarize(
  ctx: Ctx,
  flags: string[],
  starts: number[],
  samples: Map<UserViewCaseId, Sample[]>,
): UserViewData {
  const { fileBytes, rounds } = ctx.plan.userView;
  const mbps = (id: UserViewCaseId): number[] =>
    samples.get(id)!.map((x) => mbPerSec(fileBytes, x.seconds));
  const rows = CASES.map((c): UserViewRow => {
    const got = new Set(samples.get(c.id)!.map((x) => x.carriage));
    if (got.size !== 1 || got.has(null)) {
      throw new Error(`${c.id}: the runs reported carriages ${[...got].join(", ")}, not one`);
    }
    return {
      id: c.id,
      what: c.what,
      carriage: [...got][0]!,
      chunkBytes: c.chunkBytes,
      window: DEFAULT_WINDOW,
      seconds: spreadOf(samples.get(c.id)!.map((x) => x.seconds)),
      mbps: spreadOf(mbps(c.id)),
    };
  });
  const ratio = (a: UserViewCaseId, b: UserViewCaseId): Spread => {
    const xs = mbps(a);
    const ys = mbps(b);
    return spreadOf(xs.map((x, i) => x / ys[i]!));
  };
  const notes = [
    `The CLI runs as \`node ${flags.join(" ")} ${CLI.slice(ROOT.length)}\` (the a2c-agent bin and its shebang's flags) with the environment of every bench process; its time runs from spawn to exit: process start, connect, join, get_skill, the download, the fsync and the rename. The SDK's time runs from get_skill to the end of readBlob in an Agent process already connected.`,
    "The bare relay and HTTP Range rows read the file into memory through the bench's chunk driver (every chunk checked against its own sha256), at the SDK's default chunk size and window of the carriage; HTTP Range has no carriage, its bytes travel as they are.",
  ];
  const defaults = rows.find((r) => r.id === "sdk-binary");
  if (defaults && defaults.carriage !== "binary") {
    notes.push(
      `The SDK's default read reported ${defaults.carriage} carriage: the Computer did not honour binary carriage.`,
    );
  }
  return {
    fileBytes,
    rounds,
    cliNodeFlags: flags,
    cliStartSeconds: spreadOf(starts),
    rows,
    cliVsBare: ratio("cli-binary", "bare-binary"),
    cliVsSdk: {
      binary: ratio("cli-binary", "sdk-binary"),
      base64: ratio("cli-base64", "sdk-base64"),
    },
    defaultVsSpec: ratio("sdk-binary", "sdk-base64"),
    notes,
  };
}
