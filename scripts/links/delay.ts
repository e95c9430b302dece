/**
 * Round trips on the link harness (docs/decisions.md D96): a packet delay line in a
 * router namespace. `delay-line.c` (built here with the system's C compiler, once per source
 * version, into node_modules/.cache) holds a TUN device and writes back every packet the kernel
 * routes into it `oneWayMs` later; policy routes send everything the router forwards, in both
 * directions, through that device, so each packet crossing the router waits `oneWayMs` and every
 * round trip through it gains 2 × `oneWayMs`. TCP on the hosts sees that round trip itself (slow
 * start, windows, acks, its RTT), as on a real long path; the kernel's own `netem` is missing
 * on these machines.
 *
 * Fail closed: the table the rules point to ends in a blackhole, so should the line's process
 * die, its device (and the route through it) goes and the router drops what it forwards instead
 * of passing it on without the delay.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { firstLine, type ManagedChild } from "../stack/children.ts";
import { ip, run } from "./system.ts";

/** The TUN device of the line (one per router namespace). */
export const LINE_DEVICE = "dl0";
/** The routing table the router's forwarded traffic is sent to while a line runs. */
const TABLE = "100";
/** Priorities of the rules (before the main table's 32766). */
const RULE_PRIORITY = 1000;
/** Packets the kernel may hand the device before the line reads them (its default is 500). */
const TX_QUEUE_PACKETS = 10_000;
/**
 * What the line holds at most: 200 Mbit/s for 300 ms in each direction is 15 MB; above it a
 * packet is dropped, as by a full router queue.
 */
export const DEFAULT_MAX_HELD_BYTES = 64 * 1024 * 1024;

const SOURCE = fileURLToPath(new URL("./delay-line.c", import.meta.url));
const CACHE = fileURLToPath(new URL("../../node_modules/.cache/a2c-links", import.meta.url));

/**
 * The line's program, compiled when its source changed (a hash of the source names it; built
 * under a temporary name and renamed, so harnesses starting at once never run half a file).
 */
export async function delayLineProgram(): Promise<string> {
  const source = readFileSync(SOURCE);
  const hash = createHash("sha256").update(source).digest("hex").slice(0, 16);
  const bin = join(CACHE, `delay-line-${hash}`);
  if (existsSync(bin)) return bin;
  mkdirSync(CACHE, { recursive: true });
  const tmp = `${bin}.${process.pid}.tmp`;
  await run("cc", ["-O2", "-Wall", "-o", tmp, SOURCE]);
  renameSync(tmp, bin);
  return bin;
}

export interface DelayLineSpec {
  /** The router's namespace. */
  ns: string;
  /** The interfaces whose incoming traffic the router forwards (each is routed through the line). */
  forwardedFrom: readonly string[];
  oneWayMs: number;
  maxHeldBytes?: number;
}

export interface DelayLine {
  readonly ns: string;
  readonly oneWayMs: number;
  readonly child: ManagedChild;
  /** Removes the routes through the line, then ends it; resolves with what it reported. */
  stop(): Promise<DelayLineStats>;
}

/** What a line reported when it stopped (NaN when it could not say). */
export interface DelayLineStats {
  heldMaxBytes: number;
  dropped: number;
  /** CPU seconds the line used (user + system). */
  cpuSeconds: number;
  /** TSO bursts crossed it whole (D129); false: the kernel refused the offload, segments did. */
  offload: boolean;
}

type Spawn = (spec: {
  name: string;
  command: string;
  args: string[];
  onLine: (line: string) => void;
}) => ManagedChild;

async function routes(ns: string, from: readonly string[], on: boolean): Promise<void> {
  if (on) {
    await ip(ns, "link", "set", LINE_DEVICE, "up", "txqueuelen", String(TX_QUEUE_PACKETS));
    // A packet written back into the device comes in there from an address routed elsewhere:
    // strict reverse-path filtering would drop it.
    await run("ip", [
      "netns",
      "exec",
      ns,
      "sysctl",
      "-qw",
      `net.ipv4.conf.${LINE_DEVICE}.rp_filter=0`,
    ]);
    await ip(ns, "route", "replace", "default", "dev", LINE_DEVICE, "table", TABLE);
    await ip(ns, "route", "replace", "blackhole", "default", "metric", "100", "table", TABLE);
    for (const [i, dev] of from.entries()) {
      await ip(
        ns,
        "rule",
        "add",
        "iif",
        dev,
        "lookup",
        TABLE,
        "priority",
        String(RULE_PRIORITY + i),
      );
    }
  } else {
    for (const [i] of from.entries()) {
      await ip(ns, "rule", "del", "priority", String(RULE_PRIORITY + i)).catch(() => undefined);
    }
    await ip(ns, "route", "flush", "table", TABLE).catch(() => undefined);
  }
}

/** Starts a delay line in a router namespace and routes what it forwards through it. */
export async function startDelayLine(spawn: Spawn, spec: DelayLineSpec): Promise<DelayLine> {
  if (!(spec.oneWayMs > 0)) throw new RangeError(`a delay line needs oneWayMs > 0`);
  const program = await delayLineProgram();
  const lines: string[] = [];
  const child = spawn({
    name: `delay-line-${spec.ns}`,
    command: program,
    args: [
      LINE_DEVICE,
      String(Math.round(spec.oneWayMs * 1000)),
      String(spec.maxHeldBytes ?? DEFAULT_MAX_HELD_BYTES),
    ],
    onLine: (l) => lines.push(l),
  });
  const ready = await firstLine(child, lines, /^ready /, 30_000);
  const offload = !ready.endsWith(" segments");
  await routes(spec.ns, spec.forwardedFrom, true);
  return {
    ns: spec.ns,
    oneWayMs: spec.oneWayMs,
    child,
    stop: async () => {
      await routes(spec.ns, spec.forwardedFrom, false);
      // The device goes away only when the process has closed it, and the next line in this
      // namespace takes the same name: the stop resolves once the process is gone.
      const stopped = child.stop("SIGTERM", 10_000);
      const last = await firstLine(child, lines, /^held-max /, 10_000).catch(() => "");
      await stopped;
      const m = /^held-max (\d+) dropped (\d+) cpu-s ([\d.]+)/.exec(last);
      return {
        heldMaxBytes: Number(m?.[1] ?? NaN),
        dropped: Number(m?.[2] ?? NaN),
        cpuSeconds: Number(m?.[3] ?? NaN),
        offload,
      };
    },
  };
}
