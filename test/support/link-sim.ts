/**
 * A discrete-event simulation of bulk transfers on one bottleneck, for the path controller's
 * deterministic tests (agent/path-controller.ts). No clock, no timer, no socket: events run in
 * time order on a simulated clock, and the same spec always gives the same numbers.
 *
 * The model: each Agent (one controller, scheduling its flows as agent/path.ts does) sends chunk
 * requests that reach the Computer after half the base round trip; the Computer holds each answer
 * for its answer delay (a loaded Computer, a satellite hop) and then puts it, in packets, into one
 * FIFO of the link's rate (which may step); a packet that leaves the FIFO reaches its Agent half
 * a round trip later, and an answer counts when its last packet did. Small requests (a
 * `tool_call` beside the pull) are one small packet through the same FIFO. Answers may be scripted
 * lost (never answered) or `busy` (answered at once with no bytes).
 *
 * The FIFO may be finite (`bufferMs`, a router's drop-tail queue): a packet that finds it full is
 * lost on the wire, and the connection below the pull recovers it as TCP does: sent again a round
 * trip later (taking the link's time again), while its Agent's later answers wait for it, since a
 * TCP stream delivers in order.
 *
 * The Computer's socket may pace (`paceGain`): each Agent's answers leave it no faster than a
 * multiple of the most that Agent received in a round trip over its last ten (rounds counted by
 * arrivals, so an idle spell keeps it), as TCP BBR paces a connection whose transfer is the limit
 * (its bandwidth filter). On a long path a larger chunk then takes longer to leave, which a
 * delay-based law must not read as queue; after an idle spell a burst leaves at the old rate.
 */

import { UnsentBound, type UnsentBoundOptions } from "../../computer/chunk-scheduler.ts";

/** What the simulation drives: `PathController`'s shape (the tests also drive other laws). */
export interface SimController<T> {
  readonly budgetBytes: number;
  readonly state: string;
  chunkBytes(ceiling?: number): number;
  maySend(now: number, bytes: number): boolean;
  /** When the law's pace lets the next request leave (none: only the budget holds them). */
  readonly sendAtMs?: number;
  setLimit(bytes: number, window: number): void;
  onAppLimited(): void;
  onSend(now: number, bytes: number, opts?: { first?: boolean }): T;
  onAnswer(now: number, t: T, bytes: number, coded?: number): void;
  onBusy(now: number, t: T): void;
  onTimeout(now: number, t: T): void;
  nextDeadlineAt(): number | undefined;
  late(now: number): T | undefined;
}

export interface SimFlowSpec {
  /** When the flow starts asking (ms). Default 0. */
  startAt?: number;
  /** Instead: this long (ms) after the Agent's flow before it ended (an idle spell between). */
  afterPreviousMs?: number;
  /** Bytes to move; Infinity (default): until the end. */
  bytes?: number;
  /** The most requests in flight (the pull's `window`). Default 16. */
  window?: number;
  /** The largest chunk (the pull's `chunkBytes`). Default 512 KiB. */
  chunkCeiling?: number;
}

export interface SimAgentSpec<T> {
  controller: SimController<T>;
  flows: SimFlowSpec[];
  /** A small request every this many ms from this Agent (0: none). Default 0. */
  smallEveryMs?: number;
}

export interface SimSpec {
  /** The bottleneck's rate in Mbit/s from time `at` on, in order; the first at 0. */
  rates: { at: number; mbit: number }[];
  /** The base round trip (ms), half each way. */
  baseRttMs: number;
  /** The Computer's hold on an answer (ms) to the n-th request (0-based). Default none. */
  answerDelay?: (n: number, now: number) => number;
  /** Whether the n-th request's answer is lost / answered `busy`. */
  lost?: (n: number) => boolean;
  busy?: (n: number) => boolean;
  /** The FIFO's depth in ms at the rate of the moment (a drop-tail queue). Default: unbounded. */
  bufferMs?: number;
  /**
   * The Computer's socket paces each Agent's answers at this multiple of the most that Agent
   * received in a base round trip over its last ten (TCP BBR's pacing while the transfer is the
   * limit: 2.89 in its startup), from ten packets a round trip. Default: none (answers enter the
   * FIFO at once).
   */
  paceGain?: number;
  /**
   * Windows [from, to) in which the Agent reads nothing (its process paused: a loaded machine, a
   * collection): what arrives meanwhile is read at once at the window's end.
   */
  agentStallsMs?: Array<[number, number]>;
  /** The bytes an answer of `len` payload bytes takes on the wire (a content-coding). Default `len`. */
  coded?: (len: number) => number;
  /** Packet size in the FIFO. Default 16 KiB. */
  packetBytes?: number;
  /** Size of a small request's answer. Default 300. */
  smallBytes?: number;
  /** Simulate until (ms). */
  until: number;
  /** Sample the controllers' budgets and chunks every this many ms. Default 100. */
  traceEveryMs?: number;
  /**
   * The Computer's bound on its unsent answer bytes (computer/chunk-scheduler.ts `UnsentBound`): chunk answers
   * beyond it wait at the Computer, where small answers overtake them. Default: none (every
   * answer goes straight into the link's queue).
   */
  computer?: UnsentBoundOptions;
}

export interface SimFlowResult {
  /** Payload bytes answered, per 100 ms bin. */
  bins: number[];
  delivered: number;
  /** When it started asking, and when its last byte arrived (finite flows), ms. */
  startedAt: number | undefined;
  doneAt: number | undefined;
  timeouts: number;
  busy: number;
  /** Requests answered after they were declared late (their bytes crossed the link twice). */
  spurious: number;
  requests: number;
}

export interface SimTrace {
  at: number;
  budget: number;
  chunk: number;
  inflight: number;
  state: string;
}

export interface SimResult {
  flows: SimFlowResult[][];
  /** Small requests' round trips: [sent at, took ms] per Agent. */
  small: [number, number][][];
  traces: SimTrace[][];
  /** Bytes that crossed the link, coded (answers declared late included). */
  wireBytes: number;
  /** When the finite FIFO dropped a packet (ms; each sent again). */
  dropTimes: number[];
}

export const BIN_MS = 100;
/** Bytes a millisecond at `mbit` Mbit/s. */
export const perMs = (mbit: number): number => (mbit * 1e6) / 8 / 1000;

/** A min-heap of events by time, ties in insertion order (so runs are deterministic). */
class Events {
  private heap: { at: number; seq: number; run: () => void }[] = [];
  private seq = 0;
  push(at: number, run: () => void): void {
    const h = this.heap;
    h.push({ at, seq: this.seq++, run });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.less(h[p]!, h[i]!)) break;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
  }
  pop(): { at: number; run: () => void } | undefined {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i]!, h[m]!];
        i = m;
      }
    }
    return top;
  }
  private less(a: { at: number; seq: number }, b: { at: number; seq: number }): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }
}

interface Flow {
  spec: Required<Omit<SimFlowSpec, "afterPreviousMs">> & Pick<SimFlowSpec, "afterPreviousMs">;
  res: SimFlowResult;
  next: number;
  redo: { offset: number; len: number }[];
  inflight: number;
  asked: number;
  firstDone: boolean;
  firstOut: boolean;
  started: boolean;
}

/** Runs `agents` on the link `spec` describes; see the file's comment. */
export function simulate(spec: SimSpec, agents: SimAgentSpec<unknown>[]): SimResult {
  const ev = new Events();
  const pkt = spec.packetBytes ?? 16 * 1024;
  const half = spec.baseRttMs / 2;
  const nBins = Math.ceil(spec.until / BIN_MS);
  let now = 0;
  let nReq = 0;
  let wire = 0;
  const result: SimResult = {
    flows: agents.map((a) =>
      a.flows.map(() => ({
        bins: new Array<number>(nBins).fill(0),
        delivered: 0,
        startedAt: undefined,
        doneAt: undefined,
        timeouts: 0,
        busy: 0,
        spurious: 0,
        requests: 0,
      })),
    ),
    small: agents.map(() => []),
    traces: agents.map(() => []),
    wireBytes: 0,
    dropTimes: [],
  };

  // --- the bottleneck: a FIFO of packets, served at the rate of the moment a packet starts
  interface Packet {
    bytes: number;
    /** Its Agent's stream and its place in it. */
    agent: number;
    seq: number;
    done?: () => void;
  }
  const fifo: Packet[] = [];
  /** Per Agent: the next place in its stream, the first not yet delivered, and what arrived. */
  const streams = agents.map(() => ({ next: 0, delivered: 0, arrived: new Map<number, Packet>() }));
  /**
   * Per Agent: what arrived in the last round trip [at, bytes] and its sum, the round count (a
   * round ends at the first arrival a round trip after it began), the most a round trip brought
   * in each of the last ten rounds (the pacing's rate), and when its pacer is free.
   */
  const pacing = agents.map(() => ({
    got: [] as [number, number][],
    sum: 0,
    round: 0,
    roundAt: Number.NEGATIVE_INFINITY,
    best: [] as [number, number][],
    free: 0,
  }));
  const paceWindow = Math.max(1, spec.baseRttMs);
  const paceRate = (agent: number): number => {
    const a = pacing[agent]!;
    const best = a.best.reduce((m, [r, v]) => (r > a.round - 10 ? Math.max(m, v) : m), 0);
    return (spec.paceGain! * Math.max(best, 10 * 1500)) / paceWindow;
  };
  /** When a packet that reaches the Agent at `at` is read: at the end of a stall it falls in. */
  const stalled = (at: number): number => {
    for (const [from, to] of spec.agentStallsMs ?? []) if (at >= from && at < to) return to;
    return at;
  };
  const arrive = (p: Packet): void => {
    if (spec.paceGain !== undefined) {
      const a = pacing[p.agent]!;
      a.got.push([now, p.bytes]);
      a.sum += p.bytes;
      while (a.got.length > 0 && a.got[0]![0] <= now - paceWindow) a.sum -= a.got.shift()![1];
      if (now - a.roundAt >= paceWindow) [a.round, a.roundAt] = [a.round + 1, now];
      const last = a.best[a.best.length - 1];
      if (last?.[0] === a.round) last[1] = Math.max(last[1], a.sum);
      else a.best.push([a.round, a.sum]);
      if (a.best[0]![0] <= a.round - 10) a.best.shift();
    }
    const s = streams[p.agent]!;
    s.arrived.set(p.seq, p);
    for (let q = s.arrived.get(s.delivered); q; q = s.arrived.get(s.delivered)) {
      s.arrived.delete(s.delivered++);
      q.done?.();
    }
  };
  let serving = false;
  /** Bytes in the FIFO (the packet in service included), and all that ever entered it. */
  let fifoBytes = 0;
  let handed = 0;
  /** Chunk answers the Computer holds back (its bound), oldest first. */
  const held: { agent: number; bytes: number; done: () => void }[] = [];
  const bound = spec.computer ? new UnsentBound(spec.computer) : undefined;
  const admit = (): void => {
    if (!bound) return;
    bound.look(now, handed, fifoBytes);
    while (held.length > 0 && fifoBytes < bound.limitBytes) {
      const a = held.shift()!;
      enqueue(a.agent, a.bytes, a.done);
    }
  };
  const rateAt = (t: number): number => {
    let r = spec.rates[0]!.mbit;
    for (const s of spec.rates) if (s.at <= t) r = s.mbit;
    return perMs(r);
  };
  const serve = (): void => {
    const p = fifo.shift();
    if (!p) {
      serving = false;
      return;
    }
    serving = true;
    ev.push(now + p.bytes / rateAt(now), () => {
      fifoBytes -= p.bytes;
      ev.push(stalled(now + half), () => arrive(p));
      serve();
      admit();
    });
  };
  const put = (p: Packet): void => {
    if (spec.bufferMs !== undefined && fifoBytes + p.bytes > rateAt(now) * spec.bufferMs) {
      result.dropTimes.push(now);
      // The sender learns of the loss a round trip later (at least a millisecond: time must move).
      ev.push(now + Math.max(1, spec.baseRttMs), () => put(p));
      return;
    }
    fifo.push(p);
    fifoBytes += p.bytes;
    if (!serving) serve();
  };
  const enqueue = (agent: number, bytes: number, done: () => void): void => {
    for (let left = bytes; left > 0 || bytes === 0; left -= pkt) {
      const last = left <= pkt;
      const b = Math.max(1, Math.min(left, pkt));
      // What the Computer hands its socket: a packet sent again is TCP's, not handed twice.
      handed += b;
      const p = { bytes: b, agent, seq: streams[agent]!.next++, ...(last ? { done } : {}) };
      if (spec.paceGain === undefined) put(p);
      else {
        const a = pacing[agent]!;
        const at = Math.max(now, a.free);
        a.free = at + b / paceRate(agent);
        if (at === now) put(p);
        else ev.push(at, () => put(p));
      }
      if (last) break;
    }
  };

  // --- the Agents: each schedules its flows through its controller, as agent/path.ts does
  agents.forEach((agent, ai) => {
    const ctl = agent.controller;
    const flows: Flow[] = agent.flows.map((f, fi) => ({
      spec: {
        startAt: f.startAt ?? 0,
        bytes: f.bytes ?? Number.POSITIVE_INFINITY,
        window: f.window ?? 16,
        chunkCeiling: f.chunkCeiling ?? 512 * 1024,
        afterPreviousMs: f.afterPreviousMs,
      },
      res: result.flows[ai]![fi]!,
      next: 0,
      redo: [],
      inflight: 0,
      asked: 0,
      firstDone: false,
      firstOut: false,
      started: false,
    }));
    const live = (): Flow[] =>
      flows.filter((f) => f.started && (f.next < f.spec.bytes || f.redo.length > 0));
    let pumping = false;
    const work = (f: Flow, len: number): { offset: number; len: number; first: boolean } | null => {
      if (!f.firstDone) {
        if (f.firstOut) return null;
        f.firstOut = true;
        f.next = Math.min(len, f.spec.bytes);
        return { offset: 0, len: f.next, first: true };
      }
      const r = f.redo.shift();
      if (r) return { ...r, first: false };
      if (f.next >= f.spec.bytes) return null;
      const l = Math.min(len, f.spec.bytes - f.next);
      f.next += l;
      return { offset: f.next - l, len: l, first: false };
    };
    const pump = (): void => {
      if (pumping) return;
      pumping = true;
      const ls = live();
      if (ls.length > 0) {
        ctl.setLimit(
          Math.max(...ls.map((f) => f.spec.window * f.spec.chunkCeiling)),
          Math.max(...ls.map((f) => f.spec.window)),
        );
        const chunk = ctl.chunkBytes(Math.max(...ls.map((f) => f.spec.chunkCeiling)));
        const idle = new Set<Flow>();
        let waiting = false;
        while (idle.size < ls.length) {
          const cands = ls.filter((f) => !idle.has(f) && f.inflight < f.spec.window);
          if (cands.length === 0) break;
          const f = cands.reduce((a, b) => (b.asked < a.asked ? b : a));
          const len = Math.min(chunk, f.spec.chunkCeiling);
          if (!ctl.maySend(now, len)) {
            waiting = true;
            break;
          }
          const w = work(f, len);
          if (!w) {
            idle.add(f);
            continue;
          }
          send(f, w);
        }
        if (!waiting) ctl.onAppLimited();
        // The law's pace, not an answer, holds the next request: wake when it lets one go.
        const at = ctl.sendAtMs;
        if (waiting && at !== undefined && at > now && at < paceAt) {
          paceAt = at;
          ev.push(at, () => {
            paceAt = Number.POSITIVE_INFINITY;
            pump();
          });
        }
      }
      pumping = false;
      armTimer();
    };
    let timerAt = Number.POSITIVE_INFINITY;
    let paceAt = Number.POSITIVE_INFINITY;
    const armTimer = (): void => {
      const at = ctl.nextDeadlineAt();
      if (at === undefined || at >= timerAt) return;
      timerAt = at;
      ev.push(at, () => {
        timerAt = Number.POSITIVE_INFINITY;
        for (let t = ctl.late(now); t !== undefined; t = ctl.late(now)) {
          const s = pending.get(t);
          ctl.onTimeout(now, t);
          if (!s) continue;
          pending.delete(t);
          s.flow.inflight--;
          s.flow.res.timeouts++;
          s.flow.redo.push({ offset: s.offset, len: s.len });
          if (s.first) s.flow.firstOut = false;
        }
        pump();
      });
    };
    const pending = new Map<unknown, { flow: Flow; offset: number; len: number; first: boolean }>();
    const send = (f: Flow, w: { offset: number; len: number; first: boolean }): void => {
      const t = ctl.onSend(now, w.len, { first: w.first });
      const n = nReq++;
      // What its answer takes on the wire (coded), reported with it.
      const sent = spec.coded?.(w.len) ?? w.len;
      f.inflight++;
      f.asked += w.len;
      f.res.requests++;
      pending.set(t, { flow: f, ...w });
      const answered = (bytes: number, busy: boolean) => (): void => {
        const s = pending.get(t);
        if (!s) {
          f.res.spurious++;
          return;
        }
        pending.delete(t);
        f.inflight--;
        if (busy) {
          f.res.busy++;
          f.redo.push({ offset: w.offset, len: w.len });
          if (w.first) f.firstOut = false;
          ctl.onBusy(now, t);
        } else {
          if (w.first) f.firstDone = true;
          f.res.delivered += bytes;
          f.res.bins[Math.min(nBins - 1, Math.floor(now / BIN_MS))]! += bytes;
          if (f.res.delivered >= f.spec.bytes) {
            // The flow after it, if it waits for this one's end, starts its idle spell now.
            const next = f.res.doneAt === undefined ? flows[flows.indexOf(f) + 1] : undefined;
            if (next?.spec.afterPreviousMs !== undefined)
              ev.push(now + next.spec.afterPreviousMs, start(next));
            f.res.doneAt = now;
          }
          ctl.onAnswer(now, t, bytes, sent);
        }
        pump();
      };
      ev.push(now + half, () => {
        if (spec.lost?.(n)) return;
        if (spec.busy?.(n)) return ev.push(now + half, answered(0, true));
        const hold = spec.answerDelay?.(n, now) ?? 0;
        ev.push(now + hold, () => {
          wire += sent;
          if (!bound) return enqueue(ai, sent, answered(w.len, false));
          held.push({ agent: ai, bytes: sent, done: answered(w.len, false) });
          admit();
        });
      });
    };
    function start(f: Flow): () => void {
      return () => {
        [f.started, f.res.startedAt] = [true, now];
        pump();
      };
    }
    for (const f of flows)
      if (f.spec.afterPreviousMs === undefined) ev.push(f.spec.startAt, start(f));
    const every = agent.smallEveryMs ?? 0;
    if (every > 0) {
      const small = (): void => {
        const sent = now;
        ev.push(now + half, () =>
          enqueue(ai, spec.smallBytes ?? 300, () => result.small[ai]!.push([sent, now - sent])),
        );
        ev.push(now + every, small);
      };
      ev.push(every / 2, small);
    }
    const traceEvery = spec.traceEveryMs ?? 100;
    const trace = (): void => {
      result.traces[ai]!.push({
        at: now,
        budget: ctl.budgetBytes,
        chunk: ctl.chunkBytes(Math.max(1, ...flows.map((f) => f.spec.chunkCeiling))),
        inflight: [...pending.values()].reduce((a, s) => a + s.len, 0),
        state: ctl.state,
      });
      ev.push(now + traceEvery, trace);
    };
    ev.push(0, trace);
  });

  for (let e = ev.pop(); e && e.at <= spec.until; e = ev.pop()) {
    now = e.at;
    e.run();
  }
  result.wireBytes = wire;
  return result;
}

/** Link utilisation of `flows` from `from` to `to` (ms), against the rate of `mbit`. */
export function utilisation(
  flows: SimFlowResult[],
  from: number,
  to: number,
  mbit: number,
): number {
  return goodput(flows, from, to) / (perMs(mbit) * (to - from));
}

/** Payload bytes `flows` received from `from` to `to` (ms, whole bins). */
export function goodput(flows: SimFlowResult[], from: number, to: number): number {
  let sum = 0;
  for (const f of flows) {
    for (let b = Math.floor(from / BIN_MS); b < Math.floor(to / BIN_MS); b++) sum += f.bins[b] ?? 0;
  }
  return sum;
}

/** Jain's fairness index of the throughputs `xs`. */
export function jain(xs: number[]): number {
  const s = xs.reduce((a, b) => a + b, 0);
  const q = xs.reduce((a, b) => a + b * b, 0);
  return q === 0 ? 1 : (s * s) / (xs.length * q);
}

/** The `p`-quantile (0..1) of `xs`. */
export function quantile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}
