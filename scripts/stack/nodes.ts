/**
 * The Server side of the stack as processes: one node (the shipped `a2c-server`) or several on a
 * `redis-server` the stack starts itself (loopback, free port, temp dir, no persistence). Both
 * are children of a ChildSet, so they stop as process groups with everything else.
 */
import { mkdirSync } from "node:fs";
import { connect, createServer } from "node:net";
import type { ChildSet, ManagedChild } from "./children.ts";

export interface RunningNode {
  name: string;
  url: string;
  child: ManagedChild;
}

export interface RunningRedis {
  url: string;
  child: ManagedChild;
}

/** Readiness probes have no event to wait on: poll, but stop at once when the child exits. */
async function poll(
  child: ManagedChild,
  deadline: number,
  what: string,
  probe: () => Promise<boolean>,
): Promise<void> {
  let exited = false;
  void child.exited.then(() => (exited = true));
  while (!exited) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`${child.name}: ${what} not answered in time`);
    await Promise.race([child.exited, new Promise((r) => setTimeout(r, 50))]);
  }
  throw new Error(`${child.name} exited during start-up:\n  ${child.tail().join("\n  ")}`);
}

/** Resolves when `url` answers 200, rejects when `child` exits first or the deadline passes. */
export function waitHealthy(url: string, child: ManagedChild, deadline: number): Promise<void> {
  return poll(child, deadline, `GET ${url}`, async () => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false; // not listening yet
    }
  });
}

/** One PING over a raw socket: true on `+PONG`. */
export function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host: "127.0.0.1", port });
    let buf = "";
    const done = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once("error", () => done(false));
    sock.once("connect", () => sock.write("PING\r\n"));
    sock.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      if (buf.includes("\r\n")) done(buf.startsWith("+PONG"));
    });
  });
}

/** A free loopback port (bound, then released: redis-server has no "any port" option). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === "object" && addr ? addr.port : 0));
    });
  });
}

/**
 * Starts `redis-server` on a free loopback port with its own dir and no persistence, and waits
 * until it answers PING. Another process may grab the port between our probe and Redis's bind:
 * then Redis exits and the next attempt takes another port.
 */
export async function startRedis(
  set: ChildSet,
  dir: string,
  deadline: number,
): Promise<RunningRedis> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = set.spawn({
      name: attempt === 0 ? "redis" : `redis-${attempt + 1}`,
      command: "redis-server",
      // Flags only, no config file: the Debian package's /etc/redis is not ours to read.
      args: [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        dir,
        "--save",
        "",
        "--appendonly",
        "no",
        "--loglevel",
        "warning",
      ],
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    try {
      await poll(child, deadline, "PING", () => ping(port));
      return { url: `redis://127.0.0.1:${port}`, child };
    } catch (err) {
      last = err;
      // Only a Redis that exited (port taken) is worth another try; a hung one is not.
      const exited = await Promise.race([child.exited, Promise.resolve(null)]);
      if (exited === null) break;
      if (child.tail().some((l) => l.includes("ENOENT"))) {
        throw new Error(
          "--nodes > 1 needs redis-server on PATH (Debian: apt-get install redis-server)",
        );
      }
    }
  }
  throw last instanceof Error ? last : new Error(String(last));
}

export interface NodeSpec {
  name: string;
  port: number;
  token: string;
  redisUrl: string | null;
  env: NodeJS.ProcessEnv;
}

/** Starts one Server node (`a2c-server`); `listening` resolves with the URL it prints. */
export function spawnNode(
  set: ChildSet,
  spec: NodeSpec,
): { child: ManagedChild; listening: Promise<string> } {
  let announced: (url: string) => void = () => {};
  const listening = new Promise<string>((r) => (announced = r));
  const child = set.role("server", {
    name: spec.name,
    args: spec.redisUrl ? ["--redis", spec.redisUrl] : [],
    inheritEnv: spec.env,
    env: { A2C_HOST: "127.0.0.1", A2C_PORT: String(spec.port), A2C_TOKENS: spec.token },
    // The Server prints exactly one stdout line: `listening on http://HOST:PORT`.
    onLine: (line, stream) => {
      const m = stream === "stdout" ? /^listening on (\S+)/.exec(line) : null;
      if (m) announced(m[1]!);
    },
  });
  return { child, listening };
}

/** Waits for a spawned node's `listening` line and its /healthz. */
export async function nodeReady(
  name: string,
  spawned: { child: ManagedChild; listening: Promise<string> },
  deadline: number,
): Promise<RunningNode> {
  const { child } = spawned;
  const url = await Promise.race([
    spawned.listening,
    child.exited.then((code) => {
      throw new Error(`${name} exited with ${code}:\n  ${child.tail().join("\n  ")}`);
    }),
    new Promise<never>((_, reject) =>
      setTimeout(
        () => reject(new Error(`${name} did not start in time`)),
        deadline - Date.now(),
      ).unref(),
    ),
  ]);
  await waitHealthy(`${url}/healthz`, child, deadline);
  return { name, url, child };
}
