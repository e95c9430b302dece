/**
 * Uploads under faults and a hostile Agent, against real Computers through a real Server
 * (docs/protocol.md, "client:put_blob"). Only complete, verified files ever appear in the root.
 * - a Computer that shuts down deletes its `.part` files;
 * - many abandoned first chunks: bounded by the concurrency cap, reclaimed by the idle timeout
 *   (their `.part` files deleted), after which uploads are accepted again;
 * - a message over the Server's `maxHttpBufferSize` costs the sender its connection, nobody else;
 * - the Computer killed mid-upload (SIGKILL) and restarted: the old id is `invalid_upload`, the
 *   orphaned `.part` is collected once older than the idle timeout, a new upload stores;
 * - the disk fills up (a 2 MiB tmpfs; needs root to mount, skipped with the reason otherwise):
 *   `io_error` with `details.storage_reason: "storage_full"`, the `.part` deleted, and uploads
 *   work again once space is free.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { RunningComputer } from "../../computer/computer.ts";
import { JOINED, startComputerProcess } from "../../scripts/launch/roles.ts";
import { ServerHarness, TEST_TOKEN, type Socket } from "../support/server-harness.ts";
import { sha256Hex, UploadDriver, type Answer } from "../support/upload-driver.ts";
import { startHarnessComputer } from "./support/harness-computer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-upload-faults-"));
let h: ServerHarness;
let agent: Socket;
const computers: RunningComputer[] = [];

before(async () => {
  h = await ServerHarness.start({ maxHttpBufferSize: 1_000_000 });
  agent = await h.agent("office-1", "agent-1");
});

after(async () => {
  await Promise.all(computers.map((pc) => pc.close()));
  await h?.close();
  try {
    execFileSync("umount", [join(dir, "tmpfs")], { stdio: "pipe" });
  } catch {
    // not mounted
  }
  rmSync(dir, { recursive: true, force: true });
});

async function computer(
  name: string,
  root: string | undefined,
  upload: { idleTimeoutMs?: number; maxConcurrent?: number; maxBytes?: number } = {},
): Promise<UploadDriver> {
  const pc = await startHarnessComputer(h, join(dir, name), {
    name,
    services: [],
    ...(root !== undefined ? { landingRoot: root } : {}),
    upload,
  });
  computers.push(pc);
  return new UploadDriver(agent, "agent-1", name);
}

const reason = (a: Answer): unknown => (a.details as { reason?: unknown } | undefined)?.reason;
const files = (d: string): string[] => (existsSync(d) ? readdirSync(d) : []);

/** Resolves once `check()` holds (a background step of a process), failing after 20 s. */
async function eventually(check: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > until) assert.fail(`not within 20 s: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

void test("200 abandoned first chunks: 8 sessions at most, busy beyond, reclaimed after the idle timeout", async () => {
  const root = join(dir, "land-abandon");
  const up = await computer("pc-abandon", root, { maxConcurrent: 8, idleTimeoutMs: 300 });
  const bytes = randomBytes(64);
  const answers = await Promise.all(Array.from({ length: 200 }, () => up.begin(bytes, 32)));
  const opened = answers.filter((a) => typeof a.upload_id === "string" && !("code" in a));
  const busy = answers.filter((a) => reason(a) === "busy");
  assert.equal(opened.length, 8);
  assert.equal(busy.length, 192);
  assert.equal(files(join(root, ".a2c-upload")).length, 8);
  await new Promise((r) => setTimeout(r, 500)); // the idle timeout (300 ms) has passed
  // The next chunk expires them all (their .part deleted) and opens a session of its own.
  const again = await up.begin(bytes, 64);
  assert.equal(again.total_size, 64);
  await eventually(() => files(join(root, ".a2c-upload")).length === 0, "expired .part deleted");
  assert.deepEqual(files(root).sort(), [".a2c-upload", again.upload_id].sort());
});

void test("a Computer that shuts down deletes its uploads in flight (upstream's discard_all)", async () => {
  const root = join(dir, "land-close");
  const pc = await startHarnessComputer(h, join(dir, "pc-close"), {
    name: "pc-close",
    services: [],
    landingRoot: root,
  });
  const up = new UploadDriver(agent, "agent-1", "pc-close");
  const bytes = randomBytes(64);
  const open = await Promise.all([up.begin(bytes, 32), up.begin(bytes, 16)]);
  assert.ok(open.every((a) => typeof a.upload_id === "string"));
  assert.equal(files(join(root, ".a2c-upload")).length, 2);
  await pc.close();
  assert.deepEqual(files(join(root, ".a2c-upload")), []);
  assert.deepEqual(files(root), [".a2c-upload"]);
});

void test("a chunk over maxHttpBufferSize drops its sender only; the Computer keeps serving", async () => {
  const root = join(dir, "land-big");
  const pc = await startHarnessComputer(h, join(dir, "pc-big"), {
    name: "pc-big",
    office: "office-2",
    services: [],
    landingRoot: root,
  });
  computers.push(pc);
  const hostile = await h.agent("office-2", "agent-hostile");
  const closed = new Promise<string>((resolve) => hostile.once("disconnect", resolve));
  hostile.emit("client:put_blob", {
    agent: "agent-hostile",
    req_id: "r-big",
    computer: "pc-big",
    chunk_offset: 0,
    eof: true,
    total_size: 1_500_000,
    sha256: "0".repeat(64),
    blob: randomBytes(1_500_000).toString("base64"),
  });
  assert.ok(await closed);
  assert.deepEqual(files(root), []);
  // The office's next Agent uploads to the same Computer as if nothing happened.
  const next = await h.agent("office-2", "agent-next");
  const bytes = randomBytes(300_000);
  const up = new UploadDriver(next, "agent-next", "pc-big");
  const { final } = await up.upload(bytes, { chunkSize: 100_000 });
  assert.deepEqual(readFileSync(final.landing_path as string), bytes);
});

void test("the Computer killed mid-upload and restarted: old id invalid_upload, orphan .part collected", async (t) => {
  const root = join(dir, "land-restart");
  const start = () =>
    startComputerProcess(
      {
        server: h.url,
        office: "office-1",
        name: "pc-restart",
        token: TEST_TOKEN,
        stateDir: join(dir, "state-restart"),
        extra: ["--workers", "0", "--landing-root", root],
      },
      { env: { A2C_LOG_LEVEL: "info", A2C_UPLOAD_IDLE_TIMEOUT: "1" } },
    );
  let proc = start();
  t.after(() => proc.kill().then(() => undefined));
  await proc.waitFor(JOINED, 60_000);
  const up = new UploadDriver(agent, "agent-1", "pc-restart");
  const bytes = randomBytes(256 * 1024);
  const first = await up.begin(bytes, 64 * 1024);
  const id = first.upload_id as string;
  assert.equal((await up.next(id, bytes, 64 * 1024, 64 * 1024)).chunk_offset, 64 * 1024);
  await proc.kill("SIGKILL");
  assert.deepEqual(files(join(root, ".a2c-upload")), [`${id}.part`]);

  proc = start();
  await proc.waitFor(JOINED, 60_000);
  const lost = await up.next(id, bytes, 128 * 1024, 64 * 1024);
  assert.equal(reason(lost), "invalid_upload");
  // Older than the idle timeout (1 s), the orphan goes when the next session is created.
  await eventually(() => {
    const part = join(root, ".a2c-upload", `${id}.part`);
    return !existsSync(part) || Date.now() - statSync(part).mtimeMs > 1500;
  }, "the orphan aged past the idle timeout");
  const { final } = await up.upload(bytes, { chunkSize: 64 * 1024 });
  assert.deepEqual(readFileSync(final.landing_path as string), bytes);
  await eventually(
    () => !files(join(root, ".a2c-upload")).includes(`${id}.part`),
    "the orphan collected",
  );
  assert.deepEqual(files(root).sort(), [".a2c-upload", final.upload_id].sort());
});

void test("disk full: io_error with storage_reason storage_full, nothing kept; uploads resume once space is free", async (t) => {
  const mnt = join(dir, "tmpfs");
  mkdirSync(mnt);
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", mnt], {
      stdio: "pipe",
    });
  } catch (err) {
    t.skip(`cannot mount a tmpfs here (${String((err as Error).message).split("\n")[0]})`);
    return;
  }
  const up = await computer("pc-full", mnt, { maxBytes: 8 * 1024 * 1024 });
  const big = randomBytes(3 * 1024 * 1024);
  const { final } = await up.upload(big, { chunkSize: 256 * 1024, inFlight: 4 });
  assert.equal(final.code, 4019, JSON.stringify(final));
  assert.equal(reason(final), "io_error");
  assert.equal((final.details as Record<string, unknown>).storage_reason, "storage_full");
  assert.equal(final.message, "write to landing root failed");
  await eventually(() => files(join(mnt, ".a2c-upload")).length === 0, ".part deleted");
  assert.deepEqual(files(mnt), [".a2c-upload"]);
  const small = randomBytes(512 * 1024);
  const ok = await up.upload(small, { chunkSize: 128 * 1024 });
  assert.equal(ok.final.sha256, sha256Hex(small));
  assert.deepEqual(readFileSync(ok.final.landing_path as string), small);
});
