// @both-transports
/**
 * `/metrics` of a real Server and a real Computer after real traffic (a base64 pull, a binary
 * pull and an inline SKILL.md body): both parse as Prometheus text, follow Prometheus' naming
 * rules (and `promtool check metrics` when it is installed; CI installs it), and the byte
 * counters count decoded resource bytes with the carriage as a label, so the Server (which never
 * decodes a blob) and the Computer report the same figures for the same traffic; the Computer
 * counts each pull's sandbox check by how it was answered.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pino } from "pino";
import { collectDefaultMetrics } from "prom-client";
import { AgentClient } from "../../agent/client.ts";
import { startComputer, type RunningComputer } from "../../computer/computer.ts";
import { startComputerHttp, type ComputerHttp } from "../../computer/http.ts";
import { writeRandomFile, writeSkill } from "../support/agent-stack.ts";
import { namingProblems, parseExposition, type Family } from "../support/prometheus-text.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";

const OFFICE = "office-metrics";
const SIZE = 300_001; // not a multiple of 3: the last base64 chunk is padded
const BODY = "Grüße aus der Skill-Datei.\n"; // UTF-8 bytes ≠ characters

let h: ServerHarness;
let computer: RunningComputer;
let http: ComputerHttp;
let dir: string;
let serverText: string;
let computerText: string;
let bodyBytes: number;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "metrics-exposition-"));
  const root = await writeSkill(join(dir, "home"), "files", BODY);
  await writeRandomFile(join(root, "data.bin"), SIZE);
  h = await ServerHarness.start({ processMetrics: true });
  computer = await startComputer({
    server: h.url,
    office: OFFICE,
    name: "pc",
    token: TEST_TOKEN,
    skills: join(dir, "home"),
    stateDir: join(dir, "state"),
    workers: 0,
    startTimeoutMs: 30_000,
  });
  collectDefaultMetrics({ register: computer.metrics.registry }); // as computer/main.ts does
  http = await startComputerHttp({
    options: { port: 0 },
    computer: () => computer,
    name: "pc",
    office: OFFICE,
    log: pino({ level: "silent" }),
  });

  const agent = new AgentClient({ url: h.url, token: TEST_TOKEN });
  await agent.connect();
  await agent.joinOffice(OFFICE);
  try {
    const skill = await agent.getSkill("pc", "files");
    bodyBytes = Buffer.byteLength(skill.body ?? "", "utf8");
    const handle = (await agent.getSkillRaw("pc", "files", "data.bin")).blob_handle!;
    assert.equal(
      (await agent.readBlob("pc", handle, { binary: false, chunkBytes: 65536 })).length,
      SIZE,
    );
    assert.equal((await agent.readBlob("pc", handle, { binary: true })).length, SIZE);
  } finally {
    await agent.close();
  }
  serverText = await (await fetch(h.server.metricsUrl)).text();
  computerText = await (await fetch(`http://127.0.0.1:${http.port}/metrics`)).text();
});
after(async () => {
  await http?.close();
  await computer?.close();
  await h?.close();
  await rm(dir, { recursive: true, force: true });
});

/**
 * prom-client's default process metrics include three gauges named with `_total`, kept that way
 * upstream for compatibility. They are not ours to rename; everything else must pass.
 */
const UPSTREAM_EXCEPTIONS = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
];
const upstream = (line: string): boolean =>
  UPSTREAM_EXCEPTIONS.some((n) => line.startsWith(`${n}:`) || line.startsWith(`${n} `));

function value(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string>,
): number {
  const f = families.get(name);
  assert.ok(f, `${name} is exposed`);
  const s = f.samples.find((x) => Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  assert.ok(s, `${name}${JSON.stringify(labels)} has a sample`);
  return s.value;
}

for (const [role, text] of [
  ["Server", () => serverText],
  ["Computer", () => computerText],
] as const) {
  void test(`${role}: /metrics parses and follows Prometheus' naming rules`, () => {
    const families = parseExposition(text());
    assert.ok(families.size > 10);
    const problems = [...families.values()].flatMap(namingProblems);
    assert.deepEqual(
      problems.filter((p) => !upstream(p)),
      [],
    );
    for (const f of families.values()) {
      if (f.name.startsWith("a2c_") && f.name.includes("bytes")) {
        assert.match(f.name, /_bytes(_total)?$/, `${f.name}: bytes in base units, at the end`);
      }
    }
  });

  void test(`${role}: promtool check metrics`, (t) => {
    const found = spawnSync("promtool", ["--version"], { stdio: "ignore" });
    if (found.error) {
      // CI installs it (.ci/run); a developer machine may not have it.
      assert.ok(!process.env.CI, "promtool is installed in CI");
      t.skip("promtool is not installed");
      return;
    }
    const r = spawnSync("promtool", ["check", "metrics"], { input: text(), encoding: "utf8" });
    const complaints = `${r.stdout}${r.stderr}`.split("\n").filter((l) => l !== "");
    assert.deepEqual(
      complaints.filter((l) => !upstream(l)),
      [],
    );
    assert.equal(complaints.length, UPSTREAM_EXCEPTIONS.length, complaints.join("\n"));
  });
}

void test("byte counters: decoded resource bytes, by carriage, the same on both sides", () => {
  const server = parseExposition(serverText);
  const pc = parseExposition(computerText);
  const relayed = (event: string, carriage: string): number =>
    value(server, "a2c_relay_resource_bytes_total", { event, carriage });
  for (const carriage of ["base64", "binary"]) {
    assert.equal(relayed("client:get_blob", carriage), SIZE, `Server, ${carriage}`);
    assert.equal(
      value(pc, "a2c_computer_blob_bytes_total", { carriage }),
      SIZE,
      `Computer, ${carriage}`,
    );
  }
  assert.equal(relayed("client:get_skill", "inline"), bodyBytes);
  assert.ok(bodyBytes > BODY.length - 1, "the body's UTF-8 bytes, not its characters");
});

void test("sandbox checks: every pull of a skill file counted once, by how it was answered", () => {
  const pc = parseExposition(computerText);
  const pulls = value(pc, "a2c_computer_requests_total", {
    event: "client:get_blob",
    outcome: "ok",
  });
  const walk = value(pc, "a2c_computer_sandbox_checks_total", { path: "walk" });
  const held = value(pc, "a2c_computer_sandbox_checks_total", { path: "held" });
  assert.equal(walk + held, pulls);
  assert.ok(walk >= 1, "the first pull walked the path");
  assert.ok(held >= 1, "later pulls were shown from the held descriptor");
});
