/**
 * A Server started while Redis is away (server/redis/cluster.ts): node-redis retries a first
 * connection forever, so the Server used to wait without listening and without exiting. It now
 * gives up after A2C_REDIS_CONNECT_TIMEOUT_MS with one clear line and exit 1, so whoever
 * supervises it sees why and starts it again.
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { startRole } from "../../scripts/launch/roles.ts";

/** A loopback port nobody listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

void test("Redis unreachable at start: the Server exits 1 with one clear line, in the bound", async () => {
  const port = await closedPort();
  const started = performance.now();
  const proc = startRole("server", {
    args: ["--port", "0", "--token", "t", "--redis", `redis://127.0.0.1:${port}`],
    env: { A2C_REDIS_CONNECT_TIMEOUT_MS: "1000", A2C_LOG_LEVEL: "warn" },
  });
  const exit = await proc.exited;
  const seconds = (performance.now() - started) / 1000;
  assert.equal(exit.code, 1, proc.tail(5).join("\n"));
  assert.ok(seconds < 30, `exited after ${seconds.toFixed(1)} s`);
  assert.equal(proc.stdout(), "", "never said it was listening");
  assert.match(
    proc.stderr(),
    new RegExp(`cannot reach Redis at redis://127\\.0\\.0\\.1:${port} in 1000 ms: .*ECONNREFUSED`),
  );
  assert.match(proc.stderr(), /server failed to start/);
});
