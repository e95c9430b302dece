/**
 * When chunk answers leave (D47, D48): every answer shares this Computer's one socket, so a chunk
 * answer handed to it sits in front of everything after it. Non-chunk answers (`tool_call`,
 * `get_skill(s)`, `get_tools`, ...) are handed to the socket the moment they are ready. Chunk
 * requests wait in the `ChunkScheduler`: one queue per flow (requesting Agent + handle), served
 * deficit round robin on the bytes each answer puts on the wire, and read only while what the
 * socket holds unsent plus the chunks being read stays below `maxUnsentBytes` and below what the
 * socket drains in `UNSENT_TARGET_MS` at its measured rate (D109). So a small answer
 * waits behind at most that bound, and two pulls get equal shares of the uplink whatever their
 * chunk size or carriage. A chunk request that has waited so long that its answer would reach
 * the Server after the relay gave up on it (D10, 408) is answered `busy` instead (D50).
 */
import { base64Length, busy, internalError, type GetBlobReq } from "@a2c-smcp/protocol";
import { DEFAULT_CHUNK_BYTES } from "./blob/engine.ts";
import type { ComputerMetrics } from "./metrics.ts";
import type { AnswerTransport } from "./transport/index.ts";

/** A request's socket.io acknowledgement: its answer goes through it, once. */
export type Ack = (result: unknown) => void;

/**
 * Bytes the socket may hold unsent, chunks being read included, before no further chunk is read
 * (D48 has the measurements it was chosen from).
 */
export const DEFAULT_MAX_UNSENT_BYTES = 256 * 1024;
/**
 * ... and what the socket drains in this many ms at the rate it was seen draining, not under
 * `MIN_UNSENT_BYTES` (D109): a small answer waits behind about this much, whatever the link.
 */
export const UNSENT_TARGET_MS = 50;
export const MIN_UNSENT_BYTES = 16 * 1024;
/** Chunk reads at once (bounds descriptors and buffers; the byte bound usually binds first). */
export const DEFAULT_MAX_IN_FLIGHT = 32;
/** Chunk requests queued over all flows before `busy` at once. */
export const DEFAULT_MAX_QUEUE = 1024;
/** The Server's relay timeout of `client:get_*` (D10), when the Computer is not told another. */
export const DEFAULT_RELAY_TIMEOUT_MS = 30_000;
/**
 * Time kept for an answer to reach the Server once read, besides draining what the socket holds
 * before it: the read itself and the transit, on a starved machine.
 */
export const RELAY_MARGIN_MS = 2_000;

/** What a Computer may tune about chunk answers (`StartComputerOptions.chunks`). */
export interface ChunkSchedulerTuning {
  /** Unsent bytes (socket + chunks being read) before no further chunk is read. */
  maxUnsentBytes?: number;
  /** ... and the time (ms) they may take to drain at the measured rate; 0: bytes only. */
  unsentTargetMs?: number;
  /** Chunk reads at once. */
  maxInFlight?: number;
  /** Chunk requests queued over all flows before `busy` at once. */
  maxQueue?: number;
  /** The Server's relay timeout of `client:get_*` (D10): the age after which an answer is late. */
  relayTimeoutMs?: number;
  /** The chunk a request without `max_chunk_bytes` gets (its cost before it is read). */
  defaultChunkBytes?: number;
}

export interface ChunkSchedulerOptions extends ChunkSchedulerTuning {
  /** The Server's `maxHttpBufferSize`: the largest answer, and the round robin's quantum. */
  maxHttpBufferSize: number;
  /** Reads one chunk request into its answer (or an ErrorPayload); never rejects. */
  read(req: GetBlobReq): Promise<unknown>;
  transport: Pick<AnswerTransport, "unsentBytes" | "onWritable">;
  /** Hands one answer to the socket. */
  answer(ack: Ack, result: unknown): void;
  metrics?: ComputerMetrics;
}

/** Why a chunk request was answered `busy` without being read. */
export type ChunkRefusal = "queue_full" | "stale" | "closed";

interface Queued {
  readonly req: GetBlobReq;
  readonly ack: Ack;
  readonly arrivedAt: number;
  /** Bytes its answer is expected to put on the wire. */
  readonly cost: number;
  readonly flow: Flow;
}

interface Flow {
  readonly key: string;
  readonly queue: Queued[];
  head: number;
  /** Bytes it may still send this round (deficit round robin). */
  deficit: number;
  /** Its quantum for the current turn was added. */
  visited: boolean;
}

/**
 * What an answer carries besides the chunk's own bytes, about: the envelope's strings, keys and
 * numbers, the socket.io and engine.io framing. A cost for the round robin, not a bound (that is
 * protocol/sizing.ts `chunkEnvelopeBound`): a worst-case escape of every character would charge
 * each answer several KB and tilt the shares against pulls with small chunks.
 */
function envelopeBytes(req: GetBlobReq): number {
  return 320 + 2 * (req.blob_handle.length + req.req_id.length);
}

/** Hand-overs whose time in the socket is measured at once (the rest are not sampled). */
const MAX_SOJOURN_MARKS = 64;
/** Re-check when the socket holds the bound and no read will finish to wake the scheduler. */
const RECHECK_MS = 25;

/**
 * Chunk requests in per-flow queues, read and answered deficit round robin while the socket's
 * unsent bytes allow (see the header). One queue: the same structure enforces the read limit
 * (`maxInFlight`), the queue bound (`queue_full`) and lateness (`stale`).
 */
export class ChunkScheduler {
  readonly #o: ChunkSchedulerOptions;
  readonly #maxUnsent: number;
  readonly #bound: UnsentBound;
  readonly #maxInFlight: number;
  readonly #maxQueue: number;
  readonly #relayTimeoutMs: number;
  readonly #defaultChunk: number;
  readonly #quantum: number;
  readonly #flows = new Map<string, Flow>();
  /** Flows with queued requests, in round-robin order; `#turn` is the one being served. */
  readonly #active: Flow[] = [];
  #turn = 0;
  #queued = 0;
  #reading = 0;
  /** Expected wire bytes of the chunks being read. */
  #promised = 0;
  #pumping = false;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = 0;
  /** Chunk answer bytes handed to the socket so far. */
  #handed = 0;
  /** Recent hand-overs not yet seen leaving the socket: when, and `#handed` after them. */
  readonly #inSocket: Array<{ at: number; end: number }> = [];
  /** How long answers recently stayed in the socket after being handed over (ms, smoothed). */
  #sojournMs = 0;

  constructor(o: ChunkSchedulerOptions) {
    this.#o = o;
    this.#maxUnsent = Math.max(1, o.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES);
    this.#maxInFlight = Math.max(1, Math.floor(o.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT));
    this.#maxQueue = Math.max(0, Math.floor(o.maxQueue ?? DEFAULT_MAX_QUEUE));
    this.#relayTimeoutMs = o.relayTimeoutMs ?? DEFAULT_RELAY_TIMEOUT_MS;
    this.#defaultChunk = o.defaultChunkBytes ?? DEFAULT_CHUNK_BYTES;
    this.#quantum = o.maxHttpBufferSize;
    this.#bound = new UnsentBound({
      maxBytes: this.#maxUnsent,
      minBytes: Math.min(this.#maxUnsent, MIN_UNSENT_BYTES),
      targetMs: (o.unsentTargetMs ?? UNSENT_TARGET_MS) || Number.POSITIVE_INFINITY,
    });
    o.transport.onWritable(() => this.#pump());
  }

  /** Chunk requests waiting to be read. */
  get queued(): number {
    return this.#queued;
  }

  /** Queues one validated, correctly addressed `client:get_blob`; its ack is always called. */
  submit(req: GetBlobReq, ack: Ack): void {
    if (this.#closed) return this.#refuse(ack, "closed");
    if (this.#queued >= this.#maxQueue && this.#canStart() !== true) {
      return this.#refuse(ack, "queue_full");
    }
    const key = `${req.agent}\n${req.blob_handle}`;
    let flow = this.#flows.get(key);
    if (!flow) {
      flow = { key, queue: [], head: 0, deficit: 0, visited: false };
      this.#flows.set(key, flow);
      this.#active.push(flow);
    }
    flow.queue.push({ req, ack, arrivedAt: performance.now(), cost: this.#cost(req), flow });
    this.#queued++;
    this.#pump();
  }

  /** Refuses every queued request (`closed`); reads already started finish normally. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const flow of this.#active) {
      for (let i = flow.head; i < flow.queue.length; i++) {
        this.#refuse(flow.queue[i]!.ack, "closed");
      }
    }
    this.#active.length = 0;
    this.#flows.clear();
    this.#queued = 0;
    this.#gauges();
  }

  /** The wire bytes a request's answer is expected to carry, before it is read. */
  #cost(req: GetBlobReq): number {
    const asked = req.max_chunk_bytes;
    const chunk = asked !== undefined && asked > 0 ? asked : this.#defaultChunk;
    const carried = req.blob_format === "binary" ? chunk : base64Length(chunk);
    return Math.min(carried, this.#quantum) + envelopeBytes(req);
  }

  /** True when a read may start now; else what holds it back. */
  #canStart(): true | "reads" | "bytes" {
    if (this.#reading >= this.#maxInFlight) return "reads";
    if (this.#o.transport.unsentBytes() + this.#promised >= this.#bound.limitBytes) return "bytes";
    return true;
  }

  #pump(): void {
    if (this.#pumping) return; // an answer written from inside the loop wakes it again
    this.#pumping = true;
    try {
      const now = performance.now();
      this.#measure(now);
      this.#bound.look(now, this.#handed, this.#o.transport.unsentBytes());
      for (;;) {
        if (this.#queued === 0) break;
        const can = this.#canStart();
        if (can !== true) {
          if (can === "bytes" && this.#reading === 0) this.#arm(RECHECK_MS);
          break;
        }
        const next = this.#next();
        if (!next) break;
        if (!this.#late(next, now)) this.#start(next, now);
        else {
          this.#refund(next, next.cost);
          this.#refuse(next.ack, "stale");
        }
      }
      this.#expire(now);
    } finally {
      this.#pumping = false;
      this.#gauges();
    }
  }

  /** Deficit round robin: the next request to read, taken off its queue. */
  #next(): Queued | undefined {
    while (this.#active.length > 0) {
      if (this.#turn >= this.#active.length) this.#turn = 0;
      const flow = this.#active[this.#turn]!;
      if (!flow.visited) {
        flow.deficit += this.#quantum;
        flow.visited = true;
      }
      const head = flow.queue[flow.head]!;
      if (head.cost <= flow.deficit) {
        flow.deficit -= head.cost;
        this.#take(flow);
        return head;
      }
      flow.visited = false;
      this.#turn++;
    }
    return undefined;
  }

  /** Takes the head of `flow`; a flow left empty leaves the round (and its deficit with it). */
  #take(flow: Flow): void {
    flow.head++;
    this.#queued--;
    if (flow.head < flow.queue.length) {
      if (flow.head * 2 >= flow.queue.length) {
        flow.queue.splice(0, flow.head);
        flow.head = 0;
      }
      return;
    }
    this.#flows.delete(flow.key);
    const at = this.#active.indexOf(flow);
    this.#active.splice(at, 1);
    if (at < this.#turn) this.#turn--;
  }

  #start(q: Queued, now: number): void {
    this.#reading++;
    this.#promised += q.cost;
    this.#o.metrics?.chunkWaitSeconds.observe((now - q.arrivedAt) / 1000);
    const read = this.#o.read(q.req).catch(() => internalError());
    void read.then((result) => {
      this.#reading--;
      this.#promised -= q.cost;
      const wire = wireBytes(result, q.req);
      // The flow pays what the answer really carries (a last chunk is shorter than asked).
      this.#refund(q, q.cost - wire);
      this.#handed += wire;
      if (this.#inSocket.length < MAX_SOJOURN_MARKS) {
        this.#inSocket.push({ at: performance.now(), end: this.#handed });
      }
      this.#o.answer(q.ack, result);
      this.#pump();
    });
  }

  /** Gives `q`'s flow back `bytes` of its deficit (bounded), if the flow is still queued. */
  #refund(q: Queued, bytes: number): void {
    if (this.#flows.get(q.flow.key) !== q.flow) return;
    q.flow.deficit += Math.max(-this.#quantum, Math.min(this.#quantum, bytes));
  }

  #refuse(ack: Ack, why: ChunkRefusal): void {
    this.#o.metrics?.blobRefusals.inc({ reason: why });
    const message =
      why === "stale"
        ? "Chunk request waited too long for this Computer's uplink; retry later"
        : why === "queue_full"
          ? "Too many chunk requests queued at this Computer; retry later"
          : "This Computer is closing";
    this.#o.answer(ack, busy(message));
  }

  /**
   * Its answer would reach the Server after the relay's timeout: waited so far, plus the time
   * answers have recently spent in the socket after being handed over, plus the margin.
   */
  #late(q: Queued, now: number): boolean {
    return now - q.arrivedAt + this.#sojournMs + RELAY_MARGIN_MS >= this.#relayTimeoutMs;
  }

  /**
   * Measures how long answers stay in the socket: a hand-over has left it once the bytes handed
   * over minus those still unsent reach the total right after it. Smoothed like a TCP RTT.
   */
  #measure(now: number): void {
    if (this.#inSocket.length === 0) return;
    const left = this.#handed - this.#o.transport.unsentBytes();
    let n = 0;
    while (n < this.#inSocket.length && this.#inSocket[n]!.end <= left) {
      const sojourn = now - this.#inSocket[n]!.at;
      this.#sojournMs = 0.875 * this.#sojournMs + 0.125 * sojourn;
      n++;
    }
    if (n > 0) this.#inSocket.splice(0, n);
  }

  /** Refuses late heads (every flow's oldest) and arms the timer for the next one. */
  #expire(now: number): void {
    let due = Infinity;
    for (let i = 0; i < this.#active.length;) {
      const flow = this.#active[i]!;
      const head = flow.queue[flow.head]!;
      if (this.#late(head, now)) {
        this.#take(flow); // the flow's next head is checked next, or the next flow if it left
        this.#refuse(head.ack, "stale");
        continue;
      }
      const allowed = this.#relayTimeoutMs - RELAY_MARGIN_MS - this.#sojournMs;
      due = Math.min(due, head.arrivedAt + allowed - now);
      i++;
    }
    if (due !== Infinity) this.#arm(Math.max(1, due));
    else if (this.#queued === 0 && this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  /** Makes sure the scheduler looks again within `ms` (one timer, moved only to an earlier time). */
  #arm(ms: number): void {
    if (this.#closed) return;
    const at = performance.now() + ms;
    if (this.#timer !== undefined) {
      if (this.#timerAt <= at) return;
      clearTimeout(this.#timer);
    }
    this.#timerAt = at;
    // Not unref'd: a queued request is owed an answer (close() clears it).
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#pump();
    }, ms);
  }

  #gauges(): void {
    const m = this.#o.metrics;
    if (!m) return;
    m.chunksQueued.set(this.#queued);
    m.chunksInFlight.set(this.#reading);
    m.unsentBytes.set(this.#o.transport.unsentBytes());
  }
}

/** The bytes an answer puts on the wire, about (the chunk's bytes plus its envelope). */
function wireBytes(result: unknown, req: GetBlobReq): number {
  const blob = (result as { blob?: unknown } | null)?.blob;
  const body = typeof blob === "string" ? blob.length : Buffer.isBuffer(blob) ? blob.length : 0;
  return body + envelopeBytes(req);
}

/** How long a drain-rate sample counts toward the rate (a max filter). */
export const DRAIN_RATE_WINDOW_MS = 1000;
/** The least span (ms) between two looks that gives a sample: a write's burst is no rate. */
const MIN_SPAN_MS = 10;

export interface UnsentBoundOptions {
  /** The bound in bytes (the socket may hold this much whatever the rate). */
  maxBytes: number;
  /** The least bound: one answer of about this size always fits. */
  minBytes: number;
  /** The time (ms) the socket's unsent bytes may take to drain at the measured rate. */
  targetMs: number;
}

/**
 * How many answer bytes the socket may hold unsent, bounded in time as well as in bytes
 * (D109): what it drains in `targetMs` at the rate it was last seen draining, never under
 * `minBytes` nor over `maxBytes`. Chunk requests beyond it wait in the scheduler, where a small
 * answer overtakes them; so when the link slows, the buffered answers follow within the rate
 * window, not after the old rate's bytes drained at the new one. Passive (the caller passes the
 * time and the socket's counts), so tests drive it on a simulated clock and link.
 *
 * The drain rate: bytes that left the socket between two looks over the time between them, when
 * it held unsent bytes at the first (it sent as fast as the path took them). If it ran empty by
 * the second the sample says less than the path, and counts only when it raises the rate. The
 * rate is the largest sample of the last `DRAIN_RATE_WINDOW_MS`.
 */
export class UnsentBound {
  readonly #o: UnsentBoundOptions;
  /** Samples (bytes/ms) of the window, a monotonic deque: the first is the largest. */
  #samples: { at: number; v: number }[] = [];
  #lookAt = Number.NaN;
  #drained = 0;
  #busy = false;

  constructor(o: UnsentBoundOptions) {
    this.#o = o;
  }

  /** The drain rate in bytes/ms (0 before a sample). */
  get rate(): number {
    return this.#samples[0]?.v ?? 0;
  }

  /** The bytes the socket may hold unsent now (chunks being read included). */
  get limitBytes(): number {
    const { maxBytes, minBytes, targetMs } = this.#o;
    const r = this.rate;
    if (r === 0) return maxBytes;
    return Math.min(maxBytes, Math.max(minBytes, r * targetMs));
  }

  /**
   * A look at the socket at `now`: `handed` answer bytes handed to it so far, `unsent` of them
   * (or of anything else it carries) not yet sent.
   */
  look(now: number, handed: number, unsent: number): void {
    const drained = handed - unsent;
    if (Number.isNaN(this.#lookAt)) {
      this.#start(now, drained, unsent);
      return;
    }
    const span = now - this.#lookAt;
    // A look too soon after the last one waits for a later; one after an idle socket restarts.
    if (!this.#busy) return this.#start(now, drained, unsent);
    if (span < MIN_SPAN_MS) return;
    const sample = Math.max(0, drained - this.#drained) / span;
    if (unsent > 0 || sample > this.rate) this.#add(now, sample);
    this.#start(now, drained, unsent);
  }

  #start(now: number, drained: number, unsent: number): void {
    this.#lookAt = now;
    this.#drained = drained;
    this.#busy = unsent > 0;
  }

  #add(now: number, v: number): void {
    const q = this.#samples;
    while (q.length > 0 && q[q.length - 1]!.v <= v) q.pop();
    q.push({ at: now, v });
    while (q.length > 1 && q[0]!.at < now - DRAIN_RATE_WINDOW_MS) q.shift();
  }
}
