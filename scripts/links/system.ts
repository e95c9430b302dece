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
