// @both-transports
/**
 * Final connect failures stop the Computer with a clear, typed error instead of a silent
 * reconnect loop: a refused token (401, D4) and a protocol version the Server does not speak
 * (HTTP 400 + 4008, protocol.md §1.4). A Computer name already taken in the office is a refused join.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { ComputerConnectError, startComputer } from "../../computer/computer.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";
import { testTransport } from "./support/harness-computer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-connect-"));
let h: ServerHarness;

before(async () => {
  h = await ServerHarness.start();
});
after(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

const opts = (extra: Record<string, unknown> = {}) => ({
  server: h.url,
  office: "office-1",
  name: "pc-1",
  token: TEST_TOKEN,
  stateDir: join(dir, "state"),
  workers: 0,
  services: [],
  startTimeoutMs: 10_000,
  transport: testTransport(),
  ...extra,
});

void test("a refused token rejects with kind 'unauthorized' (401)", async () => {
  await assert.rejects(startComputer(opts({ token: "wrong" })), (err: unknown) => {
    assert.ok(err instanceof ComputerConnectError);
    assert.equal(err.kind, "unauthorized");
    assert.equal(err.code, 401);
    return true;
  });
});

void test("a Server of another protocol version rejects with kind 'version_mismatch' (4008)", async () => {
  const other = await ServerHarness.start({ protocolVersion: "0.5.0" });
  try {
    await assert.rejects(startComputer(opts({ server: other.url })), (err: unknown) => {
      assert.ok(err instanceof ComputerConnectError);
      assert.equal(err.kind, "version_mismatch");
      assert.equal(err.code, 4008);
      assert.match(err.message, /server 0\.5\.0, client 0\.4\.0/);
      return true;
    });
  } finally {
    await other.close();
  }
});

void test("a name already taken in the office is a refused join; the first keeps working", async () => {
  const first = await startComputer(opts());
  try {
    await assert.rejects(startComputer(opts()), (err: unknown) => {
      assert.ok(err instanceof ComputerConnectError);
      assert.equal(err.kind, "join_refused");
      return true;
    });
    assert.ok(first.joined);
  } finally {
    await first.close();
  }
});
