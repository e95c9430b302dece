/**
 * What a run measures: the full plan (about 10 minutes on 2 cores) or `--quick` (a 1–2 minute
 * smoke run for CI that asserts correctness, not speed). Every knob of every section lives here.
 */
import { DEFAULT_BASE64_CHUNK_BYTES, DEFAULT_BINARY_CHUNK_BYTES } from "../../agent/pull.ts";
import { DEFAULT_BASE64_UPLOAD_CHUNK_BYTES } from "../../agent/upload.ts";
import { KiB, MiB } from "./stats.ts";
import type { TextKind } from "./text-corpus.ts";

export interface Plan {
  quick: boolean;
  micro: { sizes: number[]; timeMs: number };
  /** Chunk sizes of the sweep; the largest size that fits each buffer is added per carriage. */
  chunkSizes: number[];
  windows: number[];
  /** Windows of the 4 MB part of the sweep (the sizes that do not fit 1 MB). */
  bigBufferWindows: number[];
  carriages: Array<"base64" | "binary">;
  maxHttpBufferSizes: number[];
  /** Time per ceiling point (the ceiling section measures each point once). */
  pointMs: number;
  /**
   * Sweep and direct points are measured `pointReps` times, `repMs` each (the sweep pairs every
   * repetition with a bare-relay repetition next to it); the report keeps every repetition and
   * draws their range, since single points vary ±30–50% on a shared VM.
   */
  pointReps: number;
  repMs: number;
  /** Unreported pulls on each fresh set of ceiling / sweep processes first (lib/warmup.ts). */
  warmUpMs: number;
  /** The resource the sweep, ceiling and direct sections pull. */
  sweepFileBytes: number;
  manyAgents: number[];
  /** Time per many-Agents step and repetition; the steps run `manyAgentsReps` rounds. */
  manyAgentsMs: number;
  manyAgentsReps: number;
  rewriteRates: number[];
  rewriteMs: number;
  rewriteFileBytes: number;
  /** The "1 GiB" resource of the per-chunk-time and event-loop goals. */
  bigResourceBytes: number;
  smallResourceBytes: number;
  /** SKILL.md bodies (served with the frontmatter stripped) of the per-chunk-time goal. */
  skillMdBytes: { small: number; big: number };
  perChunkSamples: number;
  autocannonSec: number;
  /**
   * The default-settings goal: whole SDK reads per setting (interleaved; the median counts), and
   * how many of the best raw sweep points are re-measured as SDK whole reads.
   */
  sdkReads: number;
  sdkBestCandidates: number;
  /**
   * Section userView: one resource through the built CLI to a file and the SDK into memory, in
   * both carriages, beside the bare relay and HTTP Range; `rounds` interleaved rounds, medians.
   */
  userView: {
    fileBytes: number;
    rounds: number;
    /** One unreported round first (fresh Server, Computer and Agent processes). */
    warmUp: boolean;
  };
  /**
   * Section upload: the SDK's and the CLI's upload of one file beside their download of it,
   * upstream's pattern, a chunk sweep on a smaller file, the Computer's RSS while it stores one.
   */
  upload: {
    fileBytes: number;
    rounds: number;
    sweepBytes: number;
    /** Chunk sizes swept (the largest that fits the Server's buffer is added per carriage). */
    chunkSizes: number[];
  };
  /** Section twoNode: one node vs Agent and Computer on two nodes over Redis. */
  twoNode: {
    fileBytes: number;
    /** Interleaved repetitions of every point (one whole read each); the median counts. */
    reps: number;
    /** Unreported whole reads per placement first, so every Server is warm when measured. */
    warmUpReads: number;
    carriages: Array<"base64" | "binary">;
    /** Agents pulling at once in the concurrent case (0: not measured). */
    concurrent: number;
  };
  /**
   * Section transport: the SDK-default pull and upload through stacks that differ only in their
   * transport (bench/sections/transport.ts); every configuration reads (or uploads) `fileBytes`
   * once per round, after one unreported transfer when `warmUp`, at each of `cases`.
   */
  transport: {
    fileBytes: number;
    rounds: number;
    /** One unreported transfer per configuration and case first (fresh processes' JIT warm-up). */
    warmUp: boolean;
    cases: TransportCase[];
    /** Least time the probe Agent pulls beside each read, ms. */
    probeLeastMs: number;
  };
  /** Section links: our stack on shaped links (bench/sections/links.ts, scripts/links/). */
  links: LinksPlan;
  /** Section paths: long paths on the link harness (bench/sections/paths.ts). */
  paths: PathsPlan;
  /** Section codecs: content-codings on the text corpus (bench/sections/codecs.ts). */
  codecs: {
    bytesPerKind: number;
    chunkSizes: number[];
    reps: number;
    /** Compressions at once in the rate model (the Computer's default). */
    slots: number;
    rateMbits: number[];
  };
}

/**
 * A direction, carriage and chunk size of section transport: `get` is an SDK pull (`readBlob`),
 * `put` an SDK upload (`uploadBlob`, `chunkBytes` its chunk ceiling).
 */
export interface TransportCase {
  direction: "get" | "put";
  carriage: "base64" | "binary";
  chunkBytes: number;
}

/**
 * The SDK's default pull chunk per carriage (what users run, where every fast path that acts
 * must pay; `raw_acks` was made for the base64 one), binary pulls at 16 KiB, where a chunk's fixed costs (writes, wake-ups) decide,
 * which both `batch_writes` are for (the small-chunk goals), and the SDK's default base64 upload,
 * which `raw_uploads` and the Agent's `upload_text` are for: the cases the fast-paths goal judges.
 */
const TRANSPORT_JUDGED: TransportCase[] = [
  { direction: "get", carriage: "binary", chunkBytes: DEFAULT_BINARY_CHUNK_BYTES },
  { direction: "get", carriage: "base64", chunkBytes: DEFAULT_BASE64_CHUNK_BYTES },
  { direction: "get", carriage: "binary", chunkBytes: 16 * KiB },
  { direction: "put", carriage: "base64", chunkBytes: DEFAULT_BASE64_UPLOAD_CHUNK_BYTES },
];

/**
 * Who holds a long answer's round trip: the Computer (`held`: a relay holds what the Server sends
 * it, TCP on both sides runs at the hosts' round trip: a loaded Computer) or the path (`packets`:
 * the delay line on the Computers' side, whose round trip TCP itself sees: a satellite hop).
 */
export type LongAnswerForm = "held" | "packets";

/** Section paths: round trips from the packet delay line, a rate step, a latecomer, long answers. */
export interface PathsPlan {
  roundTrips: {
    directions: Array<"uplink" | "downlink">;
    ratesMbit: number[];
    /** Base round trips, ms (half of it on each crossing of the case's router). */
    rttsMs: number[];
    /** Each download's file is clamp(rate × seconds, min, max). */
    seconds: number;
    minAssetBytes: number;
    maxAssetBytes: number;
    /** The plain TCP flow (the ceiling) carries rate × this many seconds. */
    ceilingSeconds: number;
    idleSamplesPerKind: number;
    /** Cells the goals judge get one run per entry (true: small requests every 300 ms during it). */
    goalRttsMs: number[];
    goalRatesMbit: number[];
    goalProbeModes: boolean[];
  };
  /** The link drops mid-download and comes back (null: not run). */
  step: {
    direction: "uplink" | "downlink";
    fromMbit: number;
    toMbit: number;
    rttMs: number;
    assetBytes: number;
    dropAtSeconds: number;
    holdSeconds: number;
  } | null;
  /** Two pulls on one uplink, the second `gapSeconds` later, judged over `windowSeconds`. */
  latecomer: {
    rateMbit: number;
    rttsMs: number[];
    gapSeconds: number;
    windowSeconds: number;
    firstBytes: number;
    secondBytes: number;
  } | null;
  /** Every answer a constant round trip later, unshaped, in each form. */
  longAnswers: {
    forms: LongAnswerForm[];
    rttsMs: number[];
    assetBytes: number;
    deadlineSeconds: number;
  } | null;
  /**
   * Uploads (bench/sections/paths-upload.ts): SDK uploads of clamp(rate × seconds, min, max) on a
   * shaped Agent uplink at each rate and round trip (the delay line on the Agents' side), the
   * same Agent's small requests every 300 ms during them; then one to a Computer behind a
   * `computerDownlinkMbit` downlink, what the Server holds sampled meanwhile.
   */
  uploads: {
    ratesMbit: number[];
    rttsMs: number[];
    seconds: number;
    minAssetBytes: number;
    maxAssetBytes: number;
    ceilingSeconds: number;
    idleSamplesPerKind: number;
    computerDownlinkMbit: number | null;
  } | null;
}

/** Fairness: two pulls sharing one shaped bottleneck. */
export type LinksFairnessKind = "same-agent" | "two-agents" | "binary-base64";

export interface LinksPlan {
  /** Link rates in Mbit/s; null: unshaped (counted, not limited). */
  rates: Array<number | null>;
  directions: Array<"uplink" | "downlink">;
  /**
   * Each download's asset is clamp(rate × `caseSeconds`, `minAssetBytes`, `maxAssetBytes`), so a
   * case lasts about `caseSeconds` whatever the rate (the floor and the ceiling aside);
   * unshaped cases use the ceiling.
   */
  caseSeconds: number;
  minAssetBytes: number;
  maxAssetBytes: number;
  /** Small requests of each kind (tool_call, get_skills) timed on idle links, one after another. */
  idleSamplesPerKind: number;
  /** Small requests of each kind aimed for during a download (sent open loop, spread over it). */
  duringSamplesPerKind: number;
  /** Two pulls sharing one bottleneck at this rate, each of clamp(rate × caseSeconds / 2, …). */
  fairness: {
    rateMbit: number;
    directions: Array<"uplink" | "downlink">;
    kinds: LinksFairnessKind[];
  };
  /**
   * Cases beside the rate matrix: a fixed file size (one that outlasts a fixed window's drain
   * time at a slow rate) or a round trip from the harness's packet delay line between the
   * Computers and the Server (each packet delayed by `oneWayMs`; section paths runs the round-trip
   * matrix).
   */
  extraCases: Array<{
    direction: "uplink" | "downlink";
    rateMbit: number;
    assetBytes?: number;
    oneWayMs?: number;
  }>;
  /** How often the Server's largest outbound queue is read from /metrics during a download. */
  queueSampleMs: number;
  /**
   * Every run (download, fairness, coding) on fresh processes; false: a build's runs share its
   * stack (the quick plan's smoke run of every case; links-workspace.ts `withBuildStack`).
   */
  freshStacks: boolean;
  /**
   * Compressed carriage (D63–D66): downloads with the SDK's default (compression on) beside
   * `compression: false`, each on fresh processes, the order alternating, `reps` pairs per case:
   * generated text of a kind at a rate, and incompressible bytes at each rate. A case's file is
   * clamp(rate × `seconds`, 1 MiB, 128 MiB); unshaped: `unshapedBytes`, with twice the pairs (a
   * run of about a second, which the machine's noise moves most).
   */
  coding: {
    direction: "uplink" | "downlink";
    seconds: number;
    reps: number;
    text: Array<{ rateMbit: number; kind: TextKind }>;
    incompressibleRates: Array<number | null>;
    unshapedBytes: number;
  };
}

export function makePlan(quick: boolean): Plan {
  if (quick) {
    return {
      quick,
      micro: { sizes: [16 * KiB, 256 * KiB, MiB], timeMs: 40 },
      // One small chunk size (the small-chunk goals) besides the largest that fits each buffer.
      chunkSizes: [32 * KiB],
      windows: [1, 4],
      bigBufferWindows: [1],
      carriages: ["base64", "binary"],
      maxHttpBufferSizes: [1_000_000, 4_000_000],
      pointMs: 150,
      pointReps: 2,
      repMs: 100,
      warmUpMs: 200,
      // Still more than the largest chunk that fits 4 MB (3.81 MiB binary); the SDK reads halve.
      sweepFileBytes: 4 * MiB,
      manyAgents: [1, 4],
      manyAgentsMs: 300,
      manyAgentsReps: 2,
      rewriteRates: [5],
      rewriteMs: 1000,
      rewriteFileBytes: 2 * MiB,
      bigResourceBytes: 64 * MiB,
      smallResourceBytes: MiB,
      skillMdBytes: { small: MiB, big: 64 * MiB },
      perChunkSamples: 40,
      autocannonSec: 0.5,
      // Two reads per setting (still interleaved, the median their mean): the smoke test of it.
      sdkReads: 2,
      sdkBestCandidates: 1,
      // Every case of the view still runs (the CLI's process start included) on a smaller file.
      userView: { fileBytes: 4 * MiB, rounds: 1, warmUp: false },
      upload: { fileBytes: 8 * MiB, rounds: 1, sweepBytes: 4 * MiB, chunkSizes: [] },
      // CI exercises the section (three placements, Redis, CPU sampling); speed is not judged.
      twoNode: {
        fileBytes: 2 * MiB,
        reps: 2,
        warmUpReads: 1,
        carriages: ["base64"],
        concurrent: 0,
      },
      // Every configuration at each judged case (not the 64 KiB pull between them), one round on
      // a file of a few chunks: the section's code paths and its tables, not figures to read.
      // No warm-up transfer: it runs the same code as the round, for figures a smoke run does not judge.
      transport: {
        fileBytes: 2 * MiB,
        rounds: 1,
        warmUp: false,
        cases: TRANSPORT_JUDGED,
        probeLeastMs: 50,
      },
      // One rate in each direction and one fairness case: the harness and the section run.
      links: {
        rates: [20],
        directions: ["uplink", "downlink"],
        caseSeconds: 1,
        minAssetBytes: 2 * MiB,
        maxAssetBytes: 4 * MiB,
        idleSamplesPerKind: 5,
        duringSamplesPerKind: 5,
        fairness: { rateMbit: 20, directions: ["uplink"], kinds: ["same-agent"] },
        extraCases: [],
        queueSampleMs: 100,
        // Seven runs on fresh processes were most of the section's time: one stack runs them all.
        freshStacks: false,
        coding: {
          direction: "uplink",
          seconds: 1,
          reps: 1,
          text: [{ rateMbit: 20, kind: "json" }],
          incompressibleRates: [20],
          unshapedBytes: 4 * MiB,
        },
      },
      // Long paths take minutes each: the quick run has none (--only paths runs the full plan).
      paths: {
        roundTrips: {
          directions: [],
          ratesMbit: [],
          rttsMs: [],
          seconds: 1,
          minAssetBytes: MiB,
          maxAssetBytes: MiB,
          ceilingSeconds: 1,
          idleSamplesPerKind: 5,
          goalRttsMs: [],
          goalRatesMbit: [],
          goalProbeModes: [],
        },
        step: null,
        latecomer: null,
        longAnswers: null,
        uploads: null,
      },
      codecs: {
        bytesPerKind: MiB,
        chunkSizes: [64 * KiB, 512 * KiB],
        reps: 1,
        slots: 2,
        rateMbits: [2, 20, 200],
      },
    };
  }
  return {
    quick,
    micro: { sizes: [16, 64, 96, 128, 256, 512, 1024].map((k) => k * KiB), timeMs: 250 },
    chunkSizes: [16, 32, 64, 96, 128, 256, 512, 1024, 2048].map((k) => k * KiB),
    windows: [1, 2, 4, 8, 16],
    bigBufferWindows: [1, 4, 8, 16],
    carriages: ["base64", "binary"],
    maxHttpBufferSizes: [1_000_000, 4_000_000],
    pointMs: 1000,
    pointReps: 3,
    repMs: 500,
    warmUpMs: 2000,
    sweepFileBytes: 32 * MiB,
    manyAgents: [1, 4, 16, 64],
    manyAgentsMs: 2000,
    manyAgentsReps: 3,
    rewriteRates: [2, 10, 50],
    rewriteMs: 5000,
    rewriteFileBytes: 4 * MiB,
    bigResourceBytes: 1024 * MiB,
    smallResourceBytes: MiB,
    skillMdBytes: { small: MiB, big: 64 * MiB },
    perChunkSamples: 300,
    autocannonSec: 4,
    sdkReads: 5,
    sdkBestCandidates: 3,
    userView: { fileBytes: 256 * MiB, rounds: 5, warmUp: true },
    upload: {
      fileBytes: 256 * MiB,
      rounds: 3,
      sweepBytes: 64 * MiB,
      chunkSizes: [64, 128, 256, 512].map((k) => k * KiB),
    },
    twoNode: {
      fileBytes: 32 * MiB,
      reps: 5,
      warmUpReads: 2,
      carriages: ["base64", "binary"],
      concurrent: 4,
    },
    transport: {
      fileBytes: 64 * MiB,
      rounds: 9,
      warmUp: true,
      // Binary at 64 KiB, between the two defaults, beside the judged cases.
      cases: [...TRANSPORT_JUDGED, { direction: "get", carriage: "binary", chunkBytes: 64 * KiB }],
      probeLeastMs: 200,
    },
    links: {
      rates: [1, 2, 5, 20, 200, null],
      directions: ["uplink", "downlink"],
      caseSeconds: 25,
      minAssetBytes: 4 * MiB,
      maxAssetBytes: 128 * MiB,
      idleSamplesPerKind: 20,
      duringSamplesPerKind: 30,
      fairness: {
        rateMbit: 20,
        directions: ["uplink", "downlink"],
        kinds: ["same-agent", "two-agents", "binary-base64"],
      },
      // 16 MiB at 2 Mbit/s: 67 s, more than a 16 x 512 KiB window takes to drain (34 s).
      extraCases: [
        { direction: "uplink", rateMbit: 2, assetBytes: 16 * MiB },
        { direction: "downlink", rateMbit: 2, assetBytes: 16 * MiB },
      ],
      queueSampleMs: 100,
      freshStacks: true,
      // Text where the issue sets its goal (<= 20 Mbit/s; Markdown, the kind that shrinks
      // least, at the slow rates), incompressible bytes at every rate.
      coding: {
        direction: "uplink",
        seconds: 15,
        reps: 2,
        text: [
          { rateMbit: 2, kind: "markdown" },
          { rateMbit: 5, kind: "markdown" },
          { rateMbit: 20, kind: "json" },
          { rateMbit: 20, kind: "markdown" },
          { rateMbit: 20, kind: "csv" },
          { rateMbit: 20, kind: "log" },
        ],
        incompressibleRates: [1, 2, 5, 20, 200, null],
        unshapedBytes: 256 * MiB,
      },
    },
    // About 45 minutes on a loaded 2-core machine (32 on the idle one): 32 round-trip cases of
    // 45–60 s (a 10 s plain flow, fresh stack, a 10 s download), 4 more downloads in each of the 8
    // cells the goals judge,
    // the step (1 min), two latecomers (3–5 min each), four long-answer cases (1–3 min each).
    paths: {
      roundTrips: {
        directions: ["uplink", "downlink"],
        ratesMbit: [2, 20, 50, 200],
        rttsMs: [0, 50, 100, 200],
        seconds: 10,
        minAssetBytes: 4 * MiB,
        maxAssetBytes: 256 * MiB,
        // As long as a download, so its whole time (slow start included) is a download's yardstick.
        ceilingSeconds: 10,
        idleSamplesPerKind: 10,
        goalRttsMs: [100, 200],
        goalRatesMbit: [20, 50],
        goalProbeModes: [true, false, true, false, true],
      },
      step: {
        direction: "uplink",
        fromMbit: 50,
        toMbit: 2,
        rttMs: 0,
        assetBytes: 64 * MiB,
        dropAtSeconds: 3,
        holdSeconds: 10,
      },
      latecomer: {
        rateMbit: 20,
        rttsMs: [0, 100],
        gapSeconds: 10,
        windowSeconds: 20,
        // The first alone for 10 s, then both for 20 s: 24 + 24 MB at 20 Mbit/s; the second 24.
        firstBytes: 56 * MiB,
        secondBytes: 32 * MiB,
      },
      longAnswers: {
        forms: ["held", "packets"],
        rttsMs: [600, 1800],
        assetBytes: 48 * MiB,
        deadlineSeconds: 120,
      },
      // About 5 minutes: 6 uploads of about 10 s (the largest 239 MiB, as the downloads' cap) and
      // one of 4 MiB at 2 Mbit/s.
      uploads: {
        ratesMbit: [2, 20, 200],
        rttsMs: [0, 100],
        seconds: 10,
        minAssetBytes: 4 * MiB,
        maxAssetBytes: 256 * MiB,
        ceilingSeconds: 6,
        idleSamplesPerKind: 10,
        computerDownlinkMbit: 2,
      },
    },
    codecs: {
      bytesPerKind: 4 * MiB,
      chunkSizes: [16 * KiB, 64 * KiB, 512 * KiB],
      reps: 3,
      slots: 2,
      rateMbits: [1, 2, 5, 20, 50, 100, 200, 1000, 4000],
    },
  };
}
