/**
 * The `ip` and `tc` commands the link harness runs, and whether this machine can run them: root,
 * `iproute2` on PATH, and a kernel that lets us create a network namespace (a container may not).
 */
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** One failed command, with what it printed (the harness's errors name the command). */
export class LinkCommandError extends Error {
  override readonly name = "LinkCommandError";
}

function describe(cmd: string, args: readonly string[]): string {
  return [cmd, ...args].join(" ");
}

/** Runs `cmd args`; rejects with its stderr when it fails. */
export async function run(cmd: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync(cmd, [...args], { maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    const why = e.code === "ENOENT" ? `${cmd} is not installed` : (e.stderr ?? e.message).trim();
    throw new LinkCommandError(`${describe(cmd, args)}: ${why}`);
  }
}

/** The synchronous form, for the exit-time cleanup (no event loop left to wait on). */
export function runSync(cmd: string, args: readonly string[]): string {
  try {
    return execFileSync(cmd, [...args], { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    throw new LinkCommandError(`${describe(cmd, args)}: ${(e.stderr ?? e.message).trim()}`);
  }
}

/** `ip -n NS …` (or `ip …` with no namespace). */
export function ip(ns: string | null, ...args: string[]): Promise<string> {
  return run("ip", ns ? ["-n", ns, ...args] : args);
}

/** `tc -n NS …`. */
export function tc(ns: string, ...args: string[]): Promise<string> {
  return run("tc", ["-n", ns, ...args]);
}

/** Every network namespace name (`ip netns list` prints `name (id: n)` or `name`). */
export function listNamespaces(): string[] {
  const out = runSync("ip", ["netns", "list"]);
  return out
    .split("\n")
    .map((line) => line.trim().split(/\s+/)[0] ?? "")
    .filter(Boolean);
}

/** Process ids inside a namespace (empty when it is gone). */
export function namespacePids(ns: string): number[] {
  try {
    return runSync("ip", ["netns", "pids", ns])
      .split("\n")
      .map((s) => Number(s.trim()))
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    return [];
  }
}

/**
 * Why the harness cannot run here, or null when it can. Checked in this order so the reason is
 * the first thing to fix: not root, `ip` or `tc` missing (Debian's `iproute2`), namespaces refused.
 */
export function linksUnavailable(): string | null {
  if (typeof process.getuid === "function" && process.getuid() !== 0) {
    return "the link harness needs root (network namespaces and tc)";
  }
  for (const cmd of ["ip", "tc"]) {
    try {
      execFileSync(cmd, ["-V"], { stdio: "ignore" });
    } catch {
      return `${cmd} is not installed (apt-get install iproute2)`;
    }
  }
  try {
    runSync("ip", ["netns", "list"]);
  } catch (err) {
    return `network namespaces are not available: ${(err as Error).message}`;
  }
  return null;
}

/** What the kernel says of one TCP connection (`ss -ti`), the fields the harness reads. */
export interface TcpInfo {
  /** Smoothed round trip, ms. */
  rttMs: number;
  /** Least round trip seen, ms (the path's own, without queueing). */
  minRttMs: number;
  /** The last delivery-rate sample, payload bits per second, as the kernel times it. */
  deliveryRateBps: number;
  /** The sample was taken while the sender had nothing to send (it says less than the path). */
  appLimited: boolean;
  bytesAcked: number;
  congestion: string;
}

/** Parses one connection's `ss -ti` lines (the address line, then its info line). */
export function parseTcpInfo(text: string): TcpInfo | null {
  const num = (re: RegExp): number => Number(re.exec(text)?.[1] ?? NaN);
  if (!/\brtt:/.test(text)) return null;
  return {
    rttMs: num(/\brtt:([\d.]+)\//),
    minRttMs: num(/\bminrtt:([\d.]+)/),
    deliveryRateBps: num(/\bdelivery_rate (\d+)bps/),
    appLimited: /\bapp_limited\b/.test(text),
    bytesAcked: num(/\bbytes_acked:(\d+)/),
    congestion: /^\s*([a-z]+)\s/m.exec(text.split("\n")[1] ?? "")?.[1] ?? "?",
  };
}

/**
 * The kernel's view of the established connection in namespace `ns` whose local port is
 * `localPort` (the first one, null when there is none). Its rates and round trips are timed by
 * the kernel, so what runs beside the harness does not move them.
 */
export async function tcpInfo(ns: string, localPort: number): Promise<TcpInfo | null> {
  const out = await run("ip", [
    ...["netns", "exec", ns, "ss", "-tinH", "state", "established"],
    ...["sport", "=", `:${localPort}`],
  ]);
  const lines = out.split("\n");
  return lines.length >= 2 ? parseTcpInfo(`${lines[0]}\n${lines[1]}`) : null;
}

/** A qdisc as `tc -j -s qdisc show` reports it (the fields the harness reads). */
export interface TcQdisc {
  kind: string;
  root?: boolean;
  options?: { rate?: number; burst?: number; lat?: number };
  bytes?: number;
  packets?: number;
  drops?: number;
  overlimits?: number;
  backlog?: number;
}

/** A link as `ip -j -s link show` reports it (the fields the harness reads). */
export interface IpLinkStats {
  ifname: string;
  stats64?: { rx?: { bytes?: number }; tx?: { bytes?: number } };
}
