/**
 * Hosts on shaped links, for tests and the bench's `links` section (docs/decisions.md D37): one
 * Server, N Agents and M Computers, each a Linux network namespace, joined through two router
 * namespaces so every shaped queue sits on a forwarding hop, never on a sender's own interface
 * (where TCP Small Queues and local backpressure would hide the queue an application builds):
 *
 *     computer-i ─┐                                          ┌─ agent-j
 *     computer-… ─┤ br0 [router-c] up0 ══▶ eth0 [server] eth1 ── up0 [router-a] br0 ══▶ ├─ agent-…
 *                 (switch)      uplink queue               downlink queue  (switch)
 *
 * The Computers' uplink is router-c's egress toward the Server (`up0`), shared by every Computer;
 * the Agents' downlink is router-a's egress toward the Agents (its bridge `br0`), shared by every
 * Agent. Uploads go the other way: the Agents' uplink is router-a's egress toward the Server
 * (`up0`), the Computers' downlink router-c's egress toward the Computers (`br0`). Each direction
 * carries a `tbf` (rate, burst and latency, as the kernel reports them back) or, unshaped, a
 * `pfifo` that only counts. Wire bytes come from those qdiscs' counters: every frame, headers and
 * retransmissions included.
 *
 * Round trips come from a packet delay line in a router (delay.ts, `delay(side, oneWayMs)`):
 * router-c delays what crosses between the Computers and the Server, router-a what crosses
 * between the Server and the Agents. Every host's TCP buffers may grow to 32 MiB, so a flow can
 * keep a bandwidth-delay product of 200 Mbit/s × 1 s in flight. Their congestion control is the
 * machine's unless `congestion` names one (the bench's `--congestion`).
 *
 * Names are `<prefix>_<owner pid, base 36><seq>-<role>` (at most 15 characters). Everything is torn
 * down by `close()`, by a synchronous cleanup on the owner's exit or fatal signal, and, should the
 * owner have been killed outright, by the next harness of this prefix: it removes namespaces whose
 * owner is gone, with every process still inside them.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChildSet, type ManagedChild } from "../stack/children.ts";
import {
  DEFAULT_MAX_HELD_BYTES,
  startDelayLine,
  type DelayLine,
  type DelayLineStats,
} from "./delay.ts";
import {
  LinkCommandError,
  ip,
  linksUnavailable,
  listNamespaces,
  namespacePids,
  run,
  runSync,
  tc,
  type IpLinkStats,
  type TcQdisc,
} from "./system.ts";

/** `uplink` Computers → Server, `downlink` Server → Agents; the other two the way uploads go. */
export type Direction = "uplink" | "downlink" | "agentUplink" | "computerDownlink";
/** Where a delay line sits: router-c (Computers ↔ Server) or router-a (Server ↔ Agents). */
export type DelaySide = "computers" | "agents";

/** How one direction is shaped. */
export interface Shape {
  /** Link rate, Mbit/s (10^6 bits per second). */
  rateMbit: number;
  /** Token bucket depth; default max(10 full frames, 4 ms at the rate) (tbf needs ≥ rate / HZ). */
  burstBytes?: number;
  /** Longest a packet may wait in the shaper's queue before it is dropped; default 100 ms. */
  latencyMs?: number;
}

/** What the kernel holds on a direction's shaped interface (read back, not what was asked). */
export interface ShapeReport {
  direction: Direction;
  /** `tbf` when shaped, `pfifo` when not (it only counts). */
  qdisc: "tbf" | "pfifo";
  /** Namespace and interface of the queue. */
  at: string;
  rateBitsPerSecond: number | null;
  burstBytes: number | null;
  latencyMs: number | null;
}

/** A qdisc's counters: what left through it (frames with every header) and what it dropped. */
export interface QueueCounters {
  bytes: number;
  packets: number;
  drops: number;
  overlimits: number;
  /** Bytes waiting in the queue right now. */
  backlogBytes: number;
}

/** What a queue carried (frames with every header) and dropped between two reads of its counters. */
export function queueDelta(
  before: QueueCounters,
  after: QueueCounters,
): { bytes: number; drops: number } {
  return { bytes: after.bytes - before.bytes, drops: after.drops - before.drops };
}

export interface Host {
  /** `server`, `router-c`, `router-a`, `computer-<i>`, `agent-<i>`. */
  name: string;
  ns: string;
  /** Its address on the side facing the rest of the topology. */
  address: string;
}

/** What a congestion control's name may look like (the kernel's are short, lower case). */
export const CONGESTION_NAME = /^[a-z0-9_]{1,15}$/;
const CONGESTION_KEY = "net.ipv4.tcp_congestion_control";

export interface LinksOptions {
  agents: number;
  computers: number;
  /** Name prefix, 1-3 letters, default `lk` (stale namespaces of this prefix are removed at start). */
  prefix?: string;
  uplink?: Shape | null;
  downlink?: Shape | null;
  agentUplink?: Shape | null;
  computerDownlink?: Shape | null;
  /** One-way delay of each side's delay line, ms (0 or absent: none). */
  delayMs?: Partial<Record<DelaySide, number>>;
  /**
   * The hosts' TCP congestion control (`net.ipv4.tcp_congestion_control` in their namespaces);
   * absent: what a new namespace gets on this machine. One the kernel does not allow in a
   * namespace is refused with the list it allows.
   */
  congestion?: string;
}

/** A process started in one of the hosts (see `spawnIn`). */
export interface HostProcessSpec {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  ipc?: boolean;
  onLine?: (line: string) => void;
}

export interface Links {
  readonly id: string;
  readonly server: Host & {
    /** The Server's address as the Computers reach it (through router-c). */
    addressForComputers: string;
    /** The Server's address as the Agents reach it (through router-a). */
    addressForAgents: string;
  };
  readonly computers: readonly Host[];
  readonly agents: readonly Host[];
  readonly routerC: Host;
  readonly routerA: Host;
  /** Every namespace of this topology. */
  readonly namespaces: readonly string[];
  /** Shapes one direction (`null`: unshaped, counted) and reports what the kernel now holds. */
  shape(direction: Direction, shape: Shape | null): Promise<ShapeReport>;
  /** What each direction holds now. */
  shapes(): Promise<Record<Direction, ShapeReport>>;
  /**
   * Runs (replacing any) a delay line of `oneWayMs` on `side`, or none for 0: every packet
   * crossing that side's router then waits `oneWayMs`, a round trip through it 2 × `oneWayMs`.
   * Resolves with what the line it replaced reported (null: there was none).
   */
  delay(side: DelaySide, oneWayMs: number, maxHeldBytes?: number): Promise<DelayLineStats | null>;
  /** The one-way delay of each side's line now (0: none). */
  delays(): Record<DelaySide, number>;
  /** Counters of each direction's queue. */
  counters(): Promise<Record<Direction, QueueCounters>>;
  /**
   * Bytes each switch port carried toward the shared queue or from it (router-c: received from
   * each Computer; router-a: sent to each Agent), from the link counters (which count a GSO
   * packet's headers once, so they run a few % under the queue counters).
   */
  portBytes(): Promise<{ computers: number[]; agents: number[] }>;
  /** Starts a process inside `host`'s namespace; it is stopped by `close()`. */
  spawn(host: Host, spec: HostProcessSpec): ManagedChild;
  /** The hosts' TCP congestion control (as the Server's namespace reports it). */
  congestionControl(): Promise<string>;
  close(): Promise<void>;
}

const SUBNET = "10.77";
const ADDR = {
  computersSwitch: `${SUBNET}.1.1`,
  routerCUp: `${SUBNET}.2.1`,
  serverFromC: `${SUBNET}.2.2`,
  serverFromA: `${SUBNET}.3.2`,
  routerAUp: `${SUBNET}.3.1`,
  agentsSwitch: `${SUBNET}.4.1`,
} as const;
const computerAddress = (i: number): string => `${SUBNET}.1.${10 + i}`;
const agentAddress = (i: number): string => `${SUBNET}.4.${10 + i}`;
/** Hosts per side: addresses .10 to .249 of a /24. */
const MAX_HOSTS = 240;
/** The interface that carries each direction's queue, in its router. */
const QUEUE_DEVICE: Record<Direction, { router: "routerC" | "routerA"; dev: string }> = {
  uplink: { router: "routerC", dev: "up0" },
  downlink: { router: "routerA", dev: "br0" },
  agentUplink: { router: "routerA", dev: "up0" },
  computerDownlink: { router: "routerC", dev: "br0" },
};
export const DIRECTIONS = Object.keys(QUEUE_DEVICE) as Direction[];
/** A full Ethernet frame (1500 MTU + 14 bytes of header). */
const FRAME_BYTES = 1514;
/** Queue bound of the counting-only qdisc of an unshaped direction (never reached). */
const PFIFO_LIMIT = 100_000;
const DEFAULT_LATENCY_MS = 100;
/** TCP buffers of every host: autotuning may reach 32 MiB (the kernel's default send cap is 4). */
const TCP_BUFFERS = [
  "net.ipv4.tcp_rmem=4096 131072 33554432",
  "net.ipv4.tcp_wmem=4096 16384 33554432",
];

/** `f` of every direction, as a record. */
async function byDirection<T>(f: (d: Direction) => Promise<T>): Promise<Record<Direction, T>> {
  const all = await Promise.all(DIRECTIONS.map(f));
  return Object.fromEntries(DIRECTIONS.map((d, i) => [d, all[i]])) as Record<Direction, T>;
}

export function defaultBurstBytes(rateMbit: number): number {
  return Math.max(10 * FRAME_BYTES, Math.ceil((rateMbit * 1e6) / 8 / 250));
}

// ---------------------------------------------------------------------------------------------
// Names, stale namespaces and cleanup on exit

let seq = 0;
const live = new Set<LinksImpl>();
let exitHooked = false;

function ownerAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/** Deletes a namespace after killing whatever still runs in it. */
function removeNamespaceSync(ns: string): void {
  killPids(namespacePids(ns));
  try {
    runSync("ip", ["netns", "del", ns]);
  } catch {
    // Already gone.
  }
}

/** Removes namespaces of `prefix` whose owner process no longer exists. */
export function sweepStale(prefix: string): string[] {
  const pattern = new RegExp(`^${prefix}_([0-9a-z]+)[0-9a-z]-[a-z0-9]+$`);
  const removed: string[] = [];
  for (const ns of listNamespaces()) {
    const m = pattern.exec(ns);
    if (!m?.[1]) continue;
    const owner = parseInt(m[1], 36);
    if (owner === process.pid || ownerAlive(owner)) continue;
    removeNamespaceSync(ns);
    removed.push(ns);
  }
  return removed;
}

function cleanupAllSync(): void {
  for (const l of live) l.destroySync();
}

function onFatalSignal(signal: NodeJS.Signals): void {
  cleanupAllSync();
  // Alone on this signal, keep its default meaning (the process ends by it); with other
  // listeners, they decide.
  if (process.listenerCount(signal) === 1) {
    process.removeListener(signal, onFatalSignal);
    process.kill(process.pid, signal);
  }
}

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on("exit", cleanupAllSync);
  for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(s, onFatalSignal);
}

// ---------------------------------------------------------------------------------------------

class LinksImpl implements Links {
  readonly id: string;
  readonly server: Links["server"];
  readonly computers: Host[];
  readonly agents: Host[];
  readonly routerC: Host;
  readonly routerA: Host;
  readonly namespaces: string[];
  readonly #children: ChildSet;
  readonly #logDir: string;
  readonly #lines: Partial<Record<DelaySide, DelayLine>> = {};
  #closed = false;

  constructor(prefix: string, agents: number, computers: number) {
    this.id = `${prefix}_${process.pid.toString(36)}${(seq++ % 36).toString(36)}`;
    const ns = (role: string): string => `${this.id}-${role}`;
    this.server = {
      name: "server",
      ns: ns("s"),
      address: ADDR.serverFromA,
      addressForComputers: ADDR.serverFromC,
      addressForAgents: ADDR.serverFromA,
    };
    this.routerC = { name: "router-c", ns: ns("rc"), address: ADDR.routerCUp };
    this.routerA = { name: "router-a", ns: ns("ra"), address: ADDR.routerAUp };
    this.computers = Array.from({ length: computers }, (_, i) => ({
      name: `computer-${i}`,
      ns: ns(`c${i}`),
      address: computerAddress(i),
    }));
    this.agents = Array.from({ length: agents }, (_, i) => ({
      name: `agent-${i}`,
      ns: ns(`a${i}`),
      address: agentAddress(i),
    }));
    this.namespaces = [
      this.server.ns,
      this.routerC.ns,
      this.routerA.ns,
      ...this.computers.map((h) => h.ns),
      ...this.agents.map((h) => h.ns),
    ];
    this.#logDir = mkdtempSync(join(tmpdir(), "a2c-links-"));
    this.#children = new ChildSet(this.#logDir);
  }

  async build(): Promise<void> {
    for (const n of this.namespaces) {
      await run("ip", ["netns", "add", n]);
      await ip(n, "link", "set", "lo", "up");
    }
    const { server, routerC: rc, routerA: ra } = this;
    // Computers' side: a switch (bridge) in router-c, router-c's uplink to the Server.
    await this.bridge(rc.ns, ADDR.computersSwitch);
    for (const [i, h] of this.computers.entries()) {
      await this.hostOnSwitch(h, rc.ns, `c${i}`, ADDR.computersSwitch);
    }
    await ip(
      rc.ns,
      "link",
      "add",
      "up0",
      "type",
      "veth",
      "peer",
      "name",
      "eth0",
      "netns",
      server.ns,
    );
    await this.address(rc.ns, "up0", `${ADDR.routerCUp}/24`);
    await this.address(server.ns, "eth0", `${ADDR.serverFromC}/24`);
    await ip(rc.ns, "route", "add", "default", "via", ADDR.serverFromC);
    // Agents' side: the Server's second interface to router-a, a switch in router-a.
    await ip(
      server.ns,
      "link",
      "add",
      "eth1",
      "type",
      "veth",
      "peer",
      "name",
      "up0",
      "netns",
      ra.ns,
    );
    await this.address(server.ns, "eth1", `${ADDR.serverFromA}/24`);
    await this.address(ra.ns, "up0", `${ADDR.routerAUp}/24`);
    await ip(ra.ns, "route", "add", "default", "via", ADDR.serverFromA);
    await this.bridge(ra.ns, ADDR.agentsSwitch);
    for (const [i, h] of this.agents.entries()) {
      await this.hostOnSwitch(h, ra.ns, `a${i}`, ADDR.agentsSwitch);
    }
    await ip(server.ns, "route", "add", `${SUBNET}.1.0/24`, "via", ADDR.routerCUp);
    await ip(server.ns, "route", "add", `${SUBNET}.4.0/24`, "via", ADDR.routerAUp);
    for (const r of [rc, ra]) {
      await run("ip", ["netns", "exec", r.ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    }
    for (const h of [server, ...this.computers, ...this.agents]) {
      await run("ip", ["netns", "exec", h.ns, "sysctl", "-qw", ...TCP_BUFFERS]);
    }
  }

  /** Sets the hosts' congestion control (the routers only forward). */
  async congestion(name: string): Promise<void> {
    if (!CONGESTION_NAME.test(name)) throw new RangeError(`not a congestion control: ${name}`);
    for (const h of [this.server, ...this.computers, ...this.agents]) {
      const key = `${CONGESTION_KEY}=${name}`;
      await run("ip", ["netns", "exec", h.ns, "sysctl", "-qw", key]).catch(() => {
        const allowed = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
        const list = existsSync(allowed) ? readFileSync(allowed, "utf8").trim() : "?";
        throw new LinkCommandError(
          `congestion control ${name} cannot be set in a namespace: this kernel allows ${list} (net.ipv4.tcp_allowed_congestion_control)`,
        );
      });
    }
  }

  async congestionControl(): Promise<string> {
    return (
      await run("ip", ["netns", "exec", this.server.ns, "sysctl", "-n", CONGESTION_KEY])
    ).trim();
  }

  async delay(
    side: DelaySide,
    oneWayMs: number,
    maxHeldBytes?: number,
  ): Promise<DelayLineStats | null> {
    if (!(oneWayMs >= 0)) throw new RangeError(`a delay must be >= 0 ms, got ${oneWayMs}`);
    const stats = (await this.#lines[side]?.stop()) ?? null;
    delete this.#lines[side];
    if (oneWayMs === 0) return stats;
    const router = side === "computers" ? this.routerC : this.routerA;
    this.#lines[side] = await startDelayLine((spec) => this.spawn(router, spec), {
      ns: router.ns,
      forwardedFrom: ["br0", "up0"],
      oneWayMs,
      maxHeldBytes: maxHeldBytes ?? DEFAULT_MAX_HELD_BYTES,
    });
    return stats;
  }

  delays(): Record<DelaySide, number> {
    return {
      computers: this.#lines.computers?.oneWayMs ?? 0,
      agents: this.#lines.agents?.oneWayMs ?? 0,
    };
  }

  private async bridge(ns: string, address: string): Promise<void> {
    await ip(ns, "link", "add", "br0", "type", "bridge");
    await this.address(ns, "br0", `${address}/24`);
  }

  private async hostOnSwitch(h: Host, router: string, port: string, gw: string): Promise<void> {
    await ip(h.ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", router);
    await ip(router, "link", "set", port, "master", "br0", "up");
    await this.address(h.ns, "eth0", `${h.address}/24`);
    await ip(h.ns, "route", "add", "default", "via", gw);
  }

  private async address(ns: string, dev: string, cidr: string): Promise<void> {
    await ip(ns, "addr", "add", cidr, "dev", dev);
    await ip(ns, "link", "set", dev, "up");
  }

  private queue(direction: Direction): { ns: string; dev: string } {
    const q = QUEUE_DEVICE[direction];
    return { ns: this[q.router].ns, dev: q.dev };
  }

  async shape(direction: Direction, shape: Shape | null): Promise<ShapeReport> {
    const { ns, dev } = this.queue(direction);
    if (shape === null) {
      await tc(ns, "qdisc", "replace", "dev", dev, "root", "pfifo", "limit", String(PFIFO_LIMIT));
    } else {
      if (!(shape.rateMbit > 0)) throw new RangeError(`rate must be > 0 Mbit/s`);
      const bits = Math.round(shape.rateMbit * 1e6);
      const burst = shape.burstBytes ?? defaultBurstBytes(shape.rateMbit);
      const latency = shape.latencyMs ?? DEFAULT_LATENCY_MS;
      await tc(
        ns,
        ...["qdisc", "replace", "dev", dev, "root", "tbf"],
        ...["rate", `${bits}bit`, "burst", `${burst}b`, "latency", `${latency}ms`],
      );
    }
    return this.readShape(direction);
  }

  async shapes(): Promise<Record<Direction, ShapeReport>> {
    return byDirection((d) => this.readShape(d));
  }

  private async rootQdisc(direction: Direction, stats: boolean): Promise<TcQdisc> {
    const { ns, dev } = this.queue(direction);
    const out = await tc(ns, "-j", ...(stats ? ["-s"] : []), "qdisc", "show", "dev", dev);
    const list = JSON.parse(out) as TcQdisc[];
    const root = list.find((q) => q.root === true) ?? list[0];
    if (!root) throw new LinkCommandError(`no qdisc on ${ns}/${dev}`);
    return root;
  }

  private async readShape(direction: Direction): Promise<ShapeReport> {
    const { ns, dev } = this.queue(direction);
    const q = await this.rootQdisc(direction, false);
    const at = `${ns}/${dev}`;
    if (q.kind === "tbf") {
      const o = q.options ?? {};
      return {
        direction,
        qdisc: "tbf",
        at,
        // tc's JSON gives the rate in bytes per second and the latency in microseconds.
        rateBitsPerSecond: typeof o.rate === "number" ? o.rate * 8 : null,
        burstBytes: typeof o.burst === "number" ? o.burst : null,
        latencyMs: typeof o.lat === "number" ? o.lat / 1000 : null,
      };
    }
    return {
      direction,
      qdisc: "pfifo",
      at,
      rateBitsPerSecond: null,
      burstBytes: null,
      latencyMs: null,
    };
  }

  async counters(): Promise<Record<Direction, QueueCounters>> {
    const read = async (d: Direction): Promise<QueueCounters> => {
      const q = await this.rootQdisc(d, true);
      return {
        bytes: q.bytes ?? 0,
        packets: q.packets ?? 0,
        drops: q.drops ?? 0,
        overlimits: q.overlimits ?? 0,
        backlogBytes: q.backlog ?? 0,
      };
    };
    return byDirection(read);
  }

  async portBytes(): Promise<{ computers: number[]; agents: number[] }> {
    const stats = async (ns: string): Promise<Map<string, IpLinkStats>> => {
      const list = JSON.parse(await ip(ns, "-j", "-s", "link", "show")) as IpLinkStats[];
      return new Map(list.map((l) => [l.ifname, l]));
    };
    const [rc, ra] = await Promise.all([stats(this.routerC.ns), stats(this.routerA.ns)]);
    return {
      computers: this.computers.map((_, i) => rc.get(`c${i}`)?.stats64?.rx?.bytes ?? 0),
      agents: this.agents.map((_, i) => ra.get(`a${i}`)?.stats64?.tx?.bytes ?? 0),
    };
  }

  spawn(host: Host, spec: HostProcessSpec): ManagedChild {
    if (this.#closed) throw new Error(`links ${this.id} are closed: not starting ${spec.name}`);
    return spawnIn(this.#children, host.ns, spec);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#children.stopAll();
    } finally {
      for (const n of this.namespaces) {
        killPids(namespacePids(n));
        await run("ip", ["netns", "del", n]).catch(() => undefined);
      }
      rmSync(this.#logDir, { recursive: true, force: true });
      live.delete(this);
    }
  }

  /** The exit-time form of `close()`: no waiting, SIGKILL for every process. */
  destroySync(): void {
    this.#closed = true;
    this.#children.killAllNow();
    for (const n of this.namespaces) removeNamespaceSync(n);
    rmSync(this.#logDir, { recursive: true, force: true });
    live.delete(this);
  }
}

/**
 * The one way the harness starts a process: `ip netns exec NS command…` as the leader of its own
 * process group (a Computer's MCP servers are its children), through the stack's `ChildSet`, so
 * it is stopped with everything it started. `ns` null runs it where the caller runs.
 */
export function spawnIn(
  children: ChildSet,
  ns: string | null,
  spec: HostProcessSpec,
): ManagedChild {
  return children.spawn({
    name: spec.name,
    command: ns ? "ip" : spec.command,
    args: ns ? ["netns", "exec", ns, spec.command, ...spec.args] : spec.args,
    env: { ...process.env, ...spec.env },
    cwd: spec.cwd ?? process.cwd(),
    ...(spec.ipc ? { ipc: true } : {}),
    ...(spec.onLine ? { onLine: spec.onLine } : {}),
  });
}

/**
 * Builds the topology with every direction unshaped (counted) unless its option says otherwise.
 * Throws with the reason when the machine cannot (`linksUnavailable`).
 */
export async function openLinks(opts: LinksOptions): Promise<Links> {
  const why = linksUnavailable();
  if (why) throw new LinkCommandError(why);
  const prefix = opts.prefix ?? "lk";
  if (!/^[a-z]{1,3}$/.test(prefix)) throw new RangeError(`prefix must be 1-3 letters a-z`);
  for (const [what, n] of [
    ["agents", opts.agents],
    ["computers", opts.computers],
  ] as const) {
    if (!Number.isInteger(n) || n < 1 || n > MAX_HOSTS)
      throw new RangeError(`${what} must be 1..${MAX_HOSTS}, got ${n}`);
  }
  sweepStale(prefix);
  hookExit();
  const links = new LinksImpl(prefix, opts.agents, opts.computers);
  live.add(links);
  try {
    await links.build();
    if (opts.congestion !== undefined) await links.congestion(opts.congestion);
    for (const d of DIRECTIONS) await links.shape(d, opts[d] ?? null);
    for (const side of ["computers", "agents"] as const) {
      const ms = opts.delayMs?.[side];
      if (ms) await links.delay(side, ms);
    }
  } catch (err) {
    await links.close();
    throw err;
  }
  return links;
}
