/**
 * Soak instrumentation, loaded with `--import` into every soak child process (Server, Computers,
 * Agents) when A2C_SOAK_TRACE names a directory. It changes no behaviour; it only records:
 *   - once a second: this process's event-loop delay (p99, max; beyond the monitor's 5 ms tick,
 *     see bench/lib/eld.ts: the histogram itself holds whole tick intervals), CPU time used, time spent
 *     runnable but waiting for a core (/proc/self/task/* /schedstat run_delay), active handles,
 *     and garbage-collection pauses (their total and the longest, from V8's `gc` entries);
 *   - for every `client:get_blob` of the probe Agent (payload `agent` = A2C_SOAK_PROBE): the wall
 *     time at each hop it crosses in this process, keyed by `req_id` (the relay forwards the
 *     payload unchanged, D13, so the key is the same in every process):
 *       agent    a_send (emit)        a_recv (ack callback)
 *       server   s_in (event handled) s_fwd (emitted to the Computer)
 *                s_ack (Computer's ack handled) s_out (ack written to the Agent)
 *       computer c_in (event handled) c_out (ack written)
 * It patches socket.io's and socket.io-client's Socket prototypes (shared by every socket of the
 * process), so the timestamps are taken where the library hands packets to the application.
 * Lines are appended to <dir>/<role>-<pid>.jsonl each second (wall times in ms, µs resolution).
 */
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { startEldMonitor, summarizeEld } from "../../bench/lib/eld.ts";

const dir = process.env.A2C_SOAK_TRACE;
const role = process.env.A2C_SOAK_ROLE ?? "proc";
const probe = process.env.A2C_SOAK_PROBE ?? "agent-probe";
const EVENT = "client:get_blob";

/** Wall clock in ms with sub-ms resolution, comparable across processes of one machine. */
const now = (): number => performance.timeOrigin + performance.now();

type Hops = Record<string, number>;
const hops = new Map<string, Hops>();
const mark = (reqId: string, hop: string): void => {
  let h = hops.get(reqId);
  if (!h) hops.set(reqId, (h = {}));
  h[hop] = now();
};
/** The probe's req_id if `args` is a probe get_blob emit (`[event, payload, ...]`), else null. */
function probeReq(event: unknown, payload: unknown): string | null {
  if (event !== EVENT || typeof payload !== "object" || payload === null) return null;
  const p = payload as { agent?: unknown; req_id?: unknown };
  return p.agent === probe && typeof p.req_id === "string" ? p.req_id : null;
}

type AnyFn = (...a: unknown[]) => unknown;
interface Patchable {
  emit: AnyFn;
  onevent: (packet: { data?: unknown[]; id?: number }) => void;
  ack: (id: number) => AnyFn;
  __soakReq?: string | null;
}

/**
 * Wraps emit (outgoing request: `sendHop`, its ack: `ackHop`), onevent (incoming request: `inHop`)
 * and ack (the answer written: `outHop`) of one Socket class.
 */
function patch(proto: Patchable, sendHop: string, ackHop: string, inHop: string, outHop: string) {
  const { emit, onevent, ack } = proto;
  proto.emit = function (this: Patchable, ...args: unknown[]) {
    const req = probeReq(args[0], args[1]);
    const cb = args.at(-1);
    if (req && typeof cb === "function") {
      mark(req, sendHop);
      args[args.length - 1] = (...a: unknown[]) => {
        mark(req, ackHop);
        return (cb as AnyFn)(...a);
      };
    }
    return emit.apply(this, args);
  };
  proto.onevent = function (this: Patchable, packet) {
    const req = probeReq(packet.data?.[0], packet.data?.[1]);
    if (req) mark(req, inHop);
    this.__soakReq = req;
    try {
      onevent.call(this, packet);
    } finally {
      this.__soakReq = null;
    }
  };
  proto.ack = function (this: Patchable, id: number) {
    const fn = ack.call(this, id);
    const req = this.__soakReq;
    if (!req) return fn;
    return (...a: unknown[]) => {
      mark(req, outHop);
      return fn(...a);
    };
  };
}

/** Sum of run_delay (ns runnable but not running) over this process's threads. */
function runDelayNs(): number {
  let sum = 0;
  try {
    for (const t of readdirSync("/proc/self/task")) {
      const f = readFileSync(`/proc/self/task/${t}/schedstat`, "utf8").split(" ");
      sum += Number(f[1] ?? 0);
    }
  } catch {
    // not Linux or no schedstat: reported as 0
  }
  return sum;
}

if (dir) {
  // Imported by role: a client process need not load the server library, and vice versa.
  if (role === "server") {
    const { Socket } = await import("socket.io");
    patch(Socket.prototype as unknown as Patchable, "s_fwd", "s_ack", "s_in", "s_out");
  } else {
    const { Socket } = await import("socket.io-client");
    patch(Socket.prototype as unknown as Patchable, "a_send", "a_recv", "c_in", "c_out");
  }
  const file = join(dir, `${role}-${process.pid}.jsonl`);
  // 5 ms ticks: ~200 samples a second, so the per-second p99 is about the second-worst tick.
  const ELD_RES_MS = 5;
  const eld = startEldMonitor(ELD_RES_MS);
  let cpu = process.cpuUsage();
  let wait = runDelayNs();
  let gcMs = 0;
  let gcMax = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcMs += e.duration;
      gcMax = Math.max(gcMax, e.duration);
    }
  }).observe({ entryTypes: ["gc"] });
  const flush = (): void => {
    const c = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    const w = runDelayNs();
    const e = summarizeEld(eld, ELD_RES_MS);
    const lines = [
      JSON.stringify({
        t: now(),
        eld_p99: e.p99,
        eld_max: e.max,
        cpu_ms: (c.user + c.system) / 1000,
        wait_ms: (w - wait) / 1e6,
        gc_ms: gcMs,
        gc_max: gcMax,
        handles: (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles()
          .length,
      }),
    ];
    wait = w;
    gcMs = gcMax = 0;
    eld.reset();
    for (const [req, h] of hops) lines.push(JSON.stringify({ req, ...h }));
    hops.clear();
    try {
      appendFileSync(file, lines.join("\n") + "\n");
    } catch {
      // the soak removed its directory: nothing left to record
    }
  };
  setInterval(flush, 1_000).unref();
  process.on("exit", flush);
}
