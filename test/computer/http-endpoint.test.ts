// The Computer's optional HTTP endpoint (computer/http.ts) against a real Server: /healthz says
// `starting` before the Computer exists, `ok` (200) once joined, `connecting` (503) after the
// Server went away, with the state of each fast path; /metrics is the Computer's Prometheus text;
// other methods and paths refused.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pino } from "pino";
import type { RunningComputer } from "../../computer/computer.ts";
import { FAST_PATHS } from "../../computer/transport/index.ts";
import { startComputerHttp } from "../../computer/http.ts";
import { ServerHarness } from "../support/server-harness.ts";
import { startHarnessComputer } from "./support/harness-computer.ts";

const dir = mkdtempSync(join(tmpdir(), "a2c-http-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function get(
  url: string,
  method = "GET",
): Promise<{ status: number; body: string; type: string }> {
  const res = await fetch(url, { method });
  return {
    status: res.status,
    body: await res.text(),
    type: res.headers.get("content-type") ?? "",
  };
}

void test("healthz follows the Computer's life; metrics is Prometheus text", async () => {
  const h = await ServerHarness.start();
  const running: { computer?: RunningComputer } = {};
  const http = await startComputerHttp({
    options: { port: 0 },
    computer: () => running.computer,
    name: "pc-1",
    office: "office-1",
    log: pino({ level: "silent" }),
  });
  try {
    assert.match(http.url, /^http:\/\/127\.0\.0\.1:\d+$/, "loopback unless told otherwise");
    const starting = await get(`${http.url}/healthz`);
    assert.equal(starting.status, 503);
    assert.equal(starting.type, "application/json");
    assert.equal(JSON.parse(starting.body).status, "starting");
    assert.equal(JSON.parse(starting.body).fast_paths, null);
    assert.equal((await get(`${http.url}/metrics`)).status, 503);

    running.computer = await startHarnessComputer(h, dir, {
      services: [],
      startTimeoutMs: 10_000,
    });
    const ok = await get(`${http.url}/healthz`);
    assert.equal(ok.status, 200);
    const body = JSON.parse(ok.body) as Record<string, unknown>;
    assert.deepEqual(
      { ...body, uptime_s: 0 },
      {
        status: "ok",
        name: "pc-1",
        office: "office-1",
        connected: true,
        joined: true,
        transport: body.transport,
        fast_paths: running.computer.fastPaths,
        uptime_s: 0,
      },
    );
    assert.deepEqual(
      Object.keys(body.fast_paths as object).sort(),
      FAST_PATHS.map((p) => p.name).sort(),
    );
    assert.ok(body.transport === "polling" || body.transport === "websocket");

    const metrics = await get(`${http.url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.type, /^text\/plain/);
    assert.match(metrics.body, /^# HELP a2c_computer_requests_total /m);
    assert.match(metrics.body, /a2c_computer_blob_in_flight\{computer="pc-1"\} 0/);

    assert.equal((await get(`${http.url}/healthz`, "POST")).status, 405);
    assert.equal((await get(`${http.url}/nope`)).status, 404);

    // The Server goes away: the endpoint says so (503) while the Computer keeps retrying.
    const gone = new Promise((resolve) => running.computer!.socket.once("disconnect", resolve));
    await h.close();
    await gone;
    const down = await get(`${http.url}/healthz`);
    assert.equal(down.status, 503);
    assert.deepEqual(
      [JSON.parse(down.body).status, JSON.parse(down.body).joined],
      ["connecting", false],
    );
  } finally {
    await running.computer?.close();
    await http.close();
    await h.close();
  }
});
