/**
 * The path controller's cases on the simulated link (test/support/link-sim.ts), each reduced to
 * the figures its goal is stated in (docs/decisions.md, D99..4). A case takes a
 * factory so the same case runs any law of the controller's shape.
 */
import {
  DEFAULT_MAX_UNSENT_BYTES,
  MIN_UNSENT_BYTES,
  UNSENT_TARGET_MS,
} from "../../computer/chunk-scheduler.ts";
import {
  goodput,
  perMs,
  quantile,
  simulate,
  jain,
  type SimController,
  type SimResult,
} from "./link-sim.ts";

export type MakeController = () => SimController<unknown>;

const MiB = 1024 * 1024;

/** The Computer's bound on its unsent answers, as a Computer starts with it. */
export const COMPUTER = {
  maxBytes: DEFAULT_MAX_UNSENT_BYTES,
  minBytes: MIN_UNSENT_BYTES,
  targetMs: UNSENT_TARGET_MS,
};

export interface FillFigures {
  /** Payload over (link rate × time to the last byte). */
  utilisation: number;
  /** The same from 3 s on (after the start, which a plain TCP flow pays too). */
  steadyUtilisation: number;
  doneMs: number;
  /** Small requests' p95 and the base round trip, ms. */
  smallP95: number;
  /** The least chunk asked after the first 5 s, and the budget then (bytes). */
  minChunkAfter5s: number;
  minBudgetAfter5s: number;
  timeouts: number;
  /** Packets a finite router queue dropped (TCP sent them again); from 5 s on. */
  drops: number;
  dropsAfter5s: number;
}

/** A router's drop-tail queue `bufferMs` deep, in packets of a real link's size. */
const router = (bufferMs: number): { bufferMs: number; packetBytes: number } => ({
  bufferMs,
  packetBytes: 1500,
});

export interface FillPath {
  /** Behind a router's drop-tail queue this deep (ms). Default: none. */
  bufferMs?: number;
  /** The Computer's socket paces as `pacedLongPath`'s. Default: no pacing. */
  paceGain?: number;
  /** The pull's window (`--window`). Default 16. */
  window?: number;
  /**
   * Who sends the chunks: the Computer (a download: its bound on unsent answers lets small ones
   * overtake) or the Agent (an upload: its socket holds nothing back). Default the Computer.
   */
  sender?: "computer" | "agent";
  /** The answers' bytes on the wire for `len` payload bytes (a content-coding). Default `len`. */
  coded?: (len: number) => number;
}

/**
 * Brotli (quality 5) on a 4 MiB Markdown asset, each chunk coded alone, as measured: the share of
 * a chunk's size it keeps at 8 / 12 / 16 / 24 / 32 / 64 KiB, between them by the log of the size.
 */
const MARKDOWN_BROTLI: ReadonlyArray<readonly [number, number]> = [
  [8192, 0.375],
  [12288, 0.354],
  [16384, 0.341],
  [24576, 0.323],
  [32768, 0.311],
  [65536, 0.287],
];

/** The bytes brotli makes of a Markdown chunk of `len` bytes (`MARKDOWN_BROTLI`). */
export function markdownBrotli(len: number): number {
  const at = MARKDOWN_BROTLI;
  let share = len <= at[0]![0] ? at[0]![1] : at[at.length - 1]![1];
  for (let i = 1; i < at.length; i++) {
    const [[a, sa], [b, sb]] = [at[i - 1]!, at[i]!];
    if (len > a && len <= b) share = sa + ((sb - sa) * Math.log(len / a)) / Math.log(b / a);
  }
  return Math.ceil(len * share);
}

/**
 * One download (an upload with `sender: "agent"`) of `mib` MiB at `mbit`, `rtt` ms base round
 * trip, small requests every 300 ms, on the path `path` describes.
 */
export function fill(
  make: MakeController,
  mbit: number,
  rtt: number,
  mib: number,
  path: FillPath = {},
): FillFigures {
  const r = simulate(
    {
      rates: [{ at: 0, mbit }],
      baseRttMs: rtt,
      until: 600_000,
      ...(path.sender === "agent" ? {} : { computer: COMPUTER }),
      ...(path.bufferMs === undefined ? {} : router(path.bufferMs)),
      ...(path.paceGain === undefined ? {} : { paceGain: path.paceGain }),
      ...(path.coded === undefined ? {} : { coded: path.coded }),
    },
    [
      {
        controller: make(),
        flows: [
          { bytes: mib * MiB, ...(path.window === undefined ? {} : { window: path.window }) },
        ],
        smallEveryMs: 300,
      },
    ],
  );
  const f = r.flows[0]![0]!;
  // A download that never finishes is judged over the whole simulated time (a trapped pull must
  // fail the figures, not loop over an endless window).
  const done = Math.min(f.doneAt ?? Number.POSITIVE_INFINITY, 600_000);
  const steady = r.traces[0]!.filter((t) => t.at >= 5000 && t.at < done);
  return {
    utilisation: f.delivered / (perMs(mbit) * done),
    steadyUtilisation:
      goodput([f], 3000, done) / (perMs(mbit) * (Math.floor(done / 100) * 100 - 3000)),
    doneMs: done,
    smallP95: quantile(
      r.small[0]!.filter(([at]) => at < done).map(([, took]) => took),
      0.95,
    ),
    minChunkAfter5s: Math.min(...steady.map((t) => t.chunk)),
    minBudgetAfter5s: Math.min(...steady.map((t) => t.budget)),
    timeouts: f.timeouts,
    drops: r.dropTimes.length,
    dropsAfter5s: r.dropTimes.filter((at) => at >= 5000).length,
  };
}

export interface LongAnswerFigures {
  /** Round trips (of the answer delay) until the budget first reached the window ceiling. */
  roundTripsToCeiling: number;
  /** When 2 MiB were done, ms. */
  twoMiBMs: number;
}

/**
 * A path of 1 ms whose Computer holds every answer `hold` ms; its bottleneck (1 Gbit/s unshaped, or
 * a hop that handles whole answers one after another at `mbit`) carries the window's ceiling.
 */
export function longAnswers(make: MakeController, hold: number, mbit = 1000): LongAnswerFigures {
  const ceiling = 16 * 512 * 1024;
  const spec = {
    rates: [{ at: 0, mbit }],
    baseRttMs: 1,
    answerDelay: () => hold,
    computer: COMPUTER,
  };
  const r = simulate({ ...spec, until: 30 * hold, traceEveryMs: 10 }, [
    { controller: make(), flows: [{}] },
  ]);
  const at = r.traces[0]!.find((t) => t.budget >= ceiling)?.at ?? Number.POSITIVE_INFINITY;
  const small = simulate({ ...spec, until: 100_000 }, [
    { controller: make(), flows: [{ bytes: 2 * MiB }] },
  ]);
  return {
    roundTripsToCeiling: at / (hold + 1),
    twoMiBMs: small.flows[0]![0]!.doneAt ?? Number.POSITIVE_INFINITY,
  };
}

/**
 * An unshaped path (1 Gbit/s) whose round trip is `rtt` ms for TCP too: the Computer's socket
 * paces each answer at `gain` × the most its Agent received in a round trip lately, from ten
 * packets a round trip (TCP BBR on a fresh connection, 2.89 in its startup). Round trips until
 * the budget first reached the window ceiling (Infinity: not in 40).
 */
export function pacedLongPath(make: MakeController, rtt: number, gain: number): number {
  const ceiling = 16 * 512 * 1024;
  const r = simulate(
    {
      rates: [{ at: 0, mbit: 1000 }],
      baseRttMs: rtt,
      paceGain: gain,
      until: 40 * rtt,
      traceEveryMs: 10,
      computer: COMPUTER,
    },
    [{ controller: make(), flows: [{}] }],
  );
  const at = r.traces[0]!.find((t) => t.budget >= ceiling)?.at ?? Number.POSITIVE_INFINITY;
  return at / rtt;
}

export interface RestartFigures {
  /** When the first read ended and the second began (ms): the idle spell between them. */
  firstDoneMs: number;
  secondStartMs: number;
  /** Packets the router's queue dropped from the second read's start on. */
  drops: number;
  /** The second read's bytes over its time, at the link's rate. */
  utilisation: number;
}

/**
 * Two reads of 10 s of the link one after the other on one path, the second at 13 s (after an
 * idle spell), through a relay whose TCP paces as BBR in its startup (2.89 × its bandwidth
 * filter, which the idle spell keeps) into a router's 100 ms drop-tail queue; nothing bounds what
 * the relay holds unsent (the Server's socket to an Agent). `first` sets the first read's size
 * (seconds of the link) and the second's start `gapMs` after the first ended instead.
 */
export function idleRestart(
  make: MakeController,
  mbit: number,
  rtt: number,
  first?: { seconds: number; gapMs: number },
): RestartFigures {
  const bytes = perMs(mbit) * 10_000;
  const firstBytes = perMs(mbit) * (first?.seconds ?? 10) * 1000;
  const second = first ? { afterPreviousMs: first.gapMs } : { startAt: 13_000 };
  const r = simulate(
    {
      rates: [{ at: 0, mbit }],
      baseRttMs: rtt,
      paceGain: 2.89,
      bufferMs: 100,
      packetBytes: 1500,
      until: 40_000,
    },
    [
      {
        controller: make(),
        flows: [{ bytes: firstBytes }, { bytes, ...second }],
        smallEveryMs: 300,
      },
    ],
  );
  const [a, b] = r.flows[0]!;
  const started = b!.startedAt ?? Number.POSITIVE_INFINITY;
  const done = b!.doneAt ?? Number.POSITIVE_INFINITY;
  return {
    firstDoneMs: a!.doneAt ?? Number.POSITIVE_INFINITY,
    secondStartMs: started,
    drops: r.dropTimes.filter((t) => t >= started).length,
    utilisation: b!.delivered / (perMs(mbit) * (done - started)),
  };
}

export interface StepFigures {
  timeouts: number;
  spurious: number;
  /** Bytes that crossed the link per payload byte. */
  wireRatio: number;
  /** Small requests sent from 3 s after the drop to the rise: p95 above the base, ms. */
  smallP95After3s: number;
  /** From the drop / the rise until a 500 ms window moves >= 90 % of the new rate, ms. */
  dropTo90Ms: number;
  riseTo90Ms: number;
  /** The budget 4 round trips (of the new rate's path) after the drop, over rate × (base + target). */
  budgetAfterDrop: number;
}

/** A long download, 50 -> 2 Mbit/s at 10 s, back to 50 at 30 s, base round trip `rtt`. */
export function rateStep(make: MakeController, rtt: number): StepFigures {
  const drop = 10_000;
  const rise = 30_000;
  const r = simulate(
    {
      rates: [
        { at: 0, mbit: 50 },
        { at: drop, mbit: 2 },
        { at: rise, mbit: 50 },
      ],
      baseRttMs: rtt,
      until: 60_000,
      traceEveryMs: 50,
      computer: COMPUTER,
    },
    [{ controller: make(), flows: [{}], smallEveryMs: 100 }],
  );
  const f = r.flows[0]![0]!;
  const after = r.small[0]!.filter(([at]) => at >= drop + 3000 && at < rise).map(([, d]) => d);
  const budgetAt = r.traces[0]!.find((t) => t.at >= drop + 4 * (rtt + 100) + 1000);
  return {
    timeouts: f.timeouts,
    spurious: f.spurious,
    wireRatio: r.wireBytes / f.delivered,
    smallP95After3s: quantile(after, 0.95) - rtt,
    dropTo90Ms: reach(r, drop, rise, 2),
    riseTo90Ms: reach(r, rise, 60_000, 50),
    budgetAfterDrop: (budgetAt?.budget ?? 0) / (perMs(2) * (rtt + 100)),
  };
}

/** From `from` until a 500 ms window moves >= 90 % of `mbit` (ms; Infinity if never). */
function reach(r: SimResult, from: number, to: number, mbit: number): number {
  const flows = r.flows.flat();
  for (let t = from; t + 500 <= to; t += 100) {
    if (goodput(flows, t, t + 500) >= 0.9 * perMs(mbit) * 500) return t + 500 - from;
  }
  return Number.POSITIVE_INFINITY;
}

export interface ShareFigures {
  /** Jain's index of the two Agents' bytes over the 20 s after the second started. */
  jain: number;
  /** The second's share of the bytes then. */
  second: number;
  utilisation: number;
  /** The first Agent's small requests: p95 then, ms. */
  smallP95: number;
}

/** Two Agents (one controller each) on one `mbit` link, the second `later` ms after. */
export function shares(make: MakeController, rtt: number, later: number, mbit = 20): ShareFigures {
  const from = later;
  const to = later + 20_000;
  const r = simulate({ rates: [{ at: 0, mbit }], baseRttMs: rtt, until: to, computer: COMPUTER }, [
    { controller: make(), flows: [{}], smallEveryMs: 300 },
    { controller: make(), flows: [{ startAt: later }] },
  ]);
  const a = goodput(r.flows[0]!, from, to);
  const b = goodput(r.flows[1]!, from, to);
  return {
    jain: jain([a, b]),
    second: b / (a + b),
    utilisation: (a + b) / (perMs(mbit) * (to - from)),
    smallP95: quantile(
      r.small[0]!.filter(([at]) => at >= from).map(([, took]) => took),
      0.95,
    ),
  };
}

/**
 * A 32 MiB download at `mbit` and `rtt` (small requests every 300 ms, a router's 100 ms queue) by
 * a pull whose window is `window`: how long past startup the window's chunks asked meanwhile held
 * less than the budget by a chunk or more (the window, not the budget, stopped the sending), in ms
 * of 10 ms samples.
 */
export function windowShortMs(
  make: MakeController,
  mbit: number,
  rtt: number,
  window = 16,
): number {
  const r = simulate(
    {
      rates: [{ at: 0, mbit }],
      baseRttMs: rtt,
      until: 20_000,
      traceEveryMs: 10,
      computer: COMPUTER,
      ...router(100),
    },
    [{ controller: make(), flows: [{ bytes: 32 * MiB, window }], smallEveryMs: 300 }],
  );
  const short = r.traces[0]!.filter(
    (t) => t.state !== "startup" && t.budget >= (window + 1) * t.chunk,
  );
  return short.length * 10;
}

/**
 * A long download at `mbit` and `rtt` whose Computer holds every answer it would send in the
 * `hold` ms from 6 s on to the end of that window (a busy Computer or Server, a sender waiting
 * out a retransmission), then sends them at the link's rate. The link's time lost in the 3 s
 * from 6 s on, less the stall itself, in ms.
 */
export function senderStall(make: MakeController, mbit: number, rtt: number, hold: number): number {
  const at = 6000;
  const r = simulate(
    {
      rates: [{ at: 0, mbit }],
      baseRttMs: rtt,
      until: at + 3000,
      computer: COMPUTER,
      answerDelay: (_n, now) => (now >= at && now < at + hold ? at + hold - now : 0),
    },
    [{ controller: make(), flows: [{}] }],
  );
  const moved = goodput(r.flows[0]!, at, at + 3000);
  return 3000 - moved / perMs(mbit) - hold;
}

export interface PauseFigures {
  /** Payload over the link's capacity from 2 s to 20 s. */
  utilisation: number;
  /** The least budget from 3 s on, over rate × (base + target). */
  leastBudget: number;
}

/**
 * A long download on a loaded machine: from 2 s on the Agent reads nothing for 50–350 ms every
 * 0.3–1.2 s (the same pauses every run), then reads what arrived meanwhile at once; the
 * Computer's socket paces as BBR, behind a router's 100 ms queue.
 */
export function pauses(make: MakeController, mbit: number, rtt: number): PauseFigures {
  let seed = 7;
  const random = (): number => (seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32;
  const stalls: Array<[number, number]> = [];
  for (let t = 2000; t < 20_000; t += 300 + random() * 900)
    stalls.push([t, t + 50 + random() * 300]);
  const r = simulate(
    {
      rates: [{ at: 0, mbit }],
      baseRttMs: rtt,
      until: 20_000,
      computer: COMPUTER,
      ...router(100),
      paceGain: 2.89,
      agentStallsMs: stalls,
      traceEveryMs: 100,
    },
    [{ controller: make(), flows: [{}], smallEveryMs: 300 }],
  );
  const budgets = r.traces[0]!.filter((t) => t.at >= 3000).map((t) => t.budget);
  return {
    utilisation: goodput(r.flows[0]!, 2000, 20_000) / (perMs(mbit) * 18_000),
    leastBudget: Math.min(...budgets) / (perMs(mbit) * (rtt + 60)),
  };
}

export interface RampFigures {
  /** The share of the link each of the first three seconds moved. */
  perSecond: number[];
  /** The controller's states in order, each once per spell (sampled every 10 ms). */
  states: string[];
  /** When startup first ended, and when it came back (ms; Infinity: not within 8 s). */
  endedMs: number;
  backMs: number;
}

/**
 * A transfer of 239 MiB at `mbit`, `rtt` ms, small requests every 300 ms, from a socket pacing
 * as BBR restarting from ten packets a round trip (its TCP after an idle spell): an upload from
 * the Agent's own socket (a window of 15, as uploads keep), or a download from the Computer's.
 * The pace ends startup, then grows 2.89× a round trip while the link does not.
 */
export function ramp(
  make: MakeController,
  mbit: number,
  rtt: number,
  sender: "agent" | "computer" = "agent",
): RampFigures {
  const upload = sender === "agent";
  const r = simulate(
    {
      rates: [{ at: 0, mbit }],
      baseRttMs: rtt,
      until: 8000,
      paceGain: 2.89,
      traceEveryMs: 10,
      ...(upload ? {} : { computer: COMPUTER }),
    },
    [
      {
        controller: make(),
        flows: [{ bytes: 239 * MiB, ...(upload ? { window: 15 } : {}) }],
        smallEveryMs: 300,
      },
    ],
  );
  const [f, t] = [r.flows[0]!, r.traces[0]!];
  const states: string[] = [];
  for (const x of t) if (states[states.length - 1] !== x.state) states.push(x.state);
  const ended = t.find((x) => x.state !== "startup")?.at ?? Number.POSITIVE_INFINITY;
  return {
    perSecond: [0, 1, 2].map((s) => goodput(f, s * 1000, (s + 1) * 1000) / (perMs(mbit) * 1000)),
    states,
    endedMs: ended,
    backMs: t.find((x) => x.at > ended && x.state === "startup")?.at ?? Number.POSITIVE_INFINITY,
  };
}
