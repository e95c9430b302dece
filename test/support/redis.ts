/**
 * A real `redis-server` for tests: its own temp dir, a free loopback port, no persistence unless
 * asked (`persist`: an append-only file synced on every write, so a killed Redis comes back with
 * its data). Readiness is awaited by connecting and sending PING (no sleeps); `stop()` ends it
 * and removes the dir; `kill()` SIGKILLs it (to test a Redis crash); `restart()` starts it again
 * on the same port and dir. Needs `redis-server` on PATH (`.ci/run` installs it from Debian).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, ping } from "../../scripts/stack/nodes.ts";

/** Re-exported: scale-out tests pick ports with it. */
export { freePort };

export interface RedisInstance {
  readonly url: string;
  readonly port: number;
  /** The running process's pid (a new one after `restart()`). */
  readonly pid: number;
  /** Graceful stop (SIGTERM, then SIGKILL after 3 s) and temp dir removal. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL, waits for the exit. The temp dir is still removed by `stop()`. */
  kill(): Promise<void>;
  /** After `kill()`: the same server again (same port and dir; with `persist`, same data). */
  restart(): Promise<void>;
}

export interface RedisOptions {
  /** Keep the data across `kill()` + `restart()` (append-only file, fsync always). */
  persist?: boolean;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** Starts `redis-server`. Retries with another port if the one picked was taken meanwhile. */
export async function startRedis(opts: RedisOptions = {}): Promise<RedisInstance> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const dir = await mkdtemp(join(tmpdir(), "a2c-redis-"));
    try {
      return await startOnce(await freePort(), dir, opts);
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      lastError = err;
    }
  }
  throw lastError instanceof Error ? lastError : new Error(String(lastError));
}

async function startOnce(port: number, dir: string, opts: RedisOptions): Promise<RedisInstance> {
  let server = await spawnServer(port, dir, opts);
  let stopped = false;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return server.child.pid ?? -1;
    },
    stop: async () => {
      if (!stopped) {
        stopped = true;
        await server.stop();
      }
      await rm(dir, { recursive: true, force: true });
    },
    kill: () => server.kill(),
    restart: async () => {
      await server.kill();
      server = await spawnServer(port, dir, opts);
    },
  };
}

interface ServerProcess {
  readonly child: ChildProcess;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

/** One `redis-server` process, answering PING; a failed start is stopped before it throws. */
async function spawnServer(port: number, dir: string, opts: RedisOptions): Promise<ServerProcess> {
  const persistence = opts.persist
    ? ["--appendonly", "yes", "--appendfsync", "always"]
    : ["--appendonly", "no"];
  const child = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--save",
      "",
      ...persistence,
      "--protected-mode",
      "yes",
      "--loglevel",
      "warning",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    if (stderr.length < 4096) stderr += d.toString();
  });
  const gone = exited(child);
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
      await gone;
      clearTimeout(timer);
    }
  };
  const spawnError = new Promise<never>((_, reject) => child.once("error", (err) => reject(err)));
  // Wait for readiness: PING until PONG, or fail if the process exits first.
  const ready = (async (): Promise<void> => {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`redis-server exited during start: ${stderr.trim()}`);
      }
      if (await ping(port)) return;
      // Not listening yet: wait for either the process to exit or a short poll tick. A
      // readiness probe has no event to wait on, so this is the one bounded poll.
      await Promise.race([gone, new Promise((r) => setTimeout(r, 20))]);
    }
  })();
  const deadline = new Promise<never>((_, reject) => {
    const t = setTimeout(
      () => reject(new Error("redis-server did not answer PING in 10 s")),
      10_000,
    );
    void ready.finally(() => clearTimeout(t)).catch(() => undefined);
  });
  try {
    await Promise.race([ready, spawnError, deadline]);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    child,
    stop,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await gone;
    },
  };
}
