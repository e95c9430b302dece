/**
 * Uploads when the Server process dies: `a2c-server` is stopped (SIGSTOP, so
 * nothing more is relayed after the chosen moment) and SIGKILLed mid-upload. Without restarts the
 * Agent gets a typed `DisconnectedError` and the landing root holds no file; once the Server is
 * back on the same port (the Agent and the Computer reconnect by themselves) a retry stores the
 * file, verified. With the default restarts the same upload waits for the Server and the Computer
 * to come back and ends verified on its own. Only finished uploads ever appear in the landing root.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import { DisconnectedError } from "../../agent/errors.ts";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { writeRandomFile } from "../support/agent-stack.ts";
import { spawnServer, type Proc } from "../support/reliability-procs.ts";

const MiB = 1024 * 1024;
const SIZE = 16 * MiB;
const TOKEN = "upload-kill-token-0123456789";
const OFFICE = "upload-kill-office";
const SERVER_ENV = { A2C_TOKENS: TOKEN, A2C_LOG_LEVEL: "error" };
let dir: string;
let land: string;
let server: { proc: Proc; url: string };
let port: number;
let pc: RunningComputer;
let agent: AgentClient;
let file: string;
let sha: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "a2c-upload-kill-"));
  land = join(dir, "land");
  file = join(dir, "big.bin");
  sha = await writeRandomFile(file, SIZE);
  server = await spawnServer(0, SERVER_ENV);
  port = Number(new URL(server.url).port);
  pc = await startComputer({
    server: server.url,
    office: OFFICE,
    name: "pc",
    token: TOKEN,
    stateDir: join(dir, "state"),
    landingRoot: land,
    workers: 0,
    startTimeoutMs: 30_000,
  });
  agent = new AgentClient({
    url: server.url,
    token: TOKEN,
    name: "agent-u",
    reconnectionDelayMs: 100,
    reconnectionDelayMaxMs: 500,
  });
  await agent.connect();
  await agent.joinOffice(OFFICE);
  await agent.waitForComputer("pc", { timeoutMs: 30_000 });
});
after(async () => {
  await agent?.close();
  await pc?.close();
  await server?.proc.kill();
  await rm(dir, { recursive: true, force: true });
});

/** The files in the landing root (its upload store, `.a2c-upload`, aside). */
async function stored(): Promise<string[]> {
  return (await readdir(land)).filter((n) => n !== ".a2c-upload").sort();
}

/**
 * Freezes the Server at once (so no chunk is relayed after this moment, however fast the
 * machine), then kills it; `restart` starts it again on the same port once it is gone.
 */
function killServer(restart: boolean): Promise<void> {
  process.kill(server.proc.pid, "SIGSTOP");
  return server.proc.kill("SIGKILL").then(async () => {
    if (restart) server = await spawnServer(port, SERVER_ENV);
  });
}

void test("the Server killed mid-upload: a typed error, nothing stored; a retry once it is back stores the file", async () => {
  let killed: Promise<void> | undefined;
  const err = await agent
    .uploadBlob("pc", file, {
      nameHint: "first.bin",
      retries: 0,
      onProgress: (p) => {
        if (!killed && p.bytes >= SIZE / 4) killed = killServer(false);
      },
    })
    .then(
      () => assert.fail("the upload ended although the Server was killed"),
      (e: unknown) => e,
    );
  assert.ok(killed, "the Server was killed mid-upload");
  await killed;
  assert.ok(err instanceof DisconnectedError, `a typed error: ${String(err)}`);
  assert.deepEqual(await stored(), [], "nothing but complete files in the landing root");

  const reconnected = new Promise<void>((r) => agent.once("reconnected", () => r()));
  server = await spawnServer(port, SERVER_ENV);
  await reconnected;
  await agent.waitForComputer("pc", { timeoutMs: 30_000 });
  const r = await agent.uploadBlob("pc", file, { nameHint: "first.bin" });
  assert.equal(r.sha256, sha);
  assert.equal(r.stats.restarts, 0);
  assert.deepEqual(await stored(), [r.landingPath.split("/").pop()]);
  assert.equal((await readFile(r.landingPath)).length, SIZE);
});

void test("the Server killed and restarted mid-upload: the upload waits for it and ends verified", async () => {
  const before = await stored();
  let killed: Promise<void> | undefined;
  const r = await agent.uploadBlob("pc", file, {
    nameHint: "second.bin",
    onProgress: (p) => {
      if (!killed && p.bytes >= SIZE / 4) killed = killServer(true);
    },
  });
  assert.ok(killed, "the Server was killed mid-upload");
  await killed;
  assert.equal(r.sha256, sha);
  assert.ok(r.stats.restarts >= 1, JSON.stringify(r.stats));
  const name = r.landingPath.split("/").pop()!;
  assert.deepEqual(await stored(), [...before, name].sort(), "the killed session stored nothing");
  assert.equal((await readFile(r.landingPath)).length, SIZE);
});
