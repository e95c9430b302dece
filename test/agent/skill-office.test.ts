import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import { IntegrityError, InvalidSkillNameError, SkillResourceError } from "../../agent/errors.ts";
import {
  COMPUTER,
  OFFICE,
  answerFor,
  connectAgent,
  sha256,
  startFakeServer,
  testBytes,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;

before(async () => {
  fake = await startFakeServer({ computers: [COMPUTER, "pc2"] });
  agent = await connectAgent(fake, { autoRefresh: true });
  fake.on("client:get_skill", (req) => skillAnswer(req));
  fake.on("client:get_blob", (req) =>
    answerFor(req.blob_handle === "refs/logo.png" ? png : md, req, {
      mime: req.blob_handle === "refs/logo.png" ? "image/png" : "text/markdown",
    }),
  );
});
after(async () => {
  await agent.close();
  await fake.close();
});

const md = Buffer.from("# Title\n\nSome text with ünïcødé\n".repeat(3000), "utf8");
const png = testBytes(4000, 1);

function skillAnswer(req: Record<string, unknown>, over: Record<string, unknown> = {}) {
  const rel = (req.rel_path as string | undefined) ?? "SKILL.md";
  const base = { name: req.name, rel_path: rel, req_id: req.req_id };
  if (rel === "SKILL.md") {
    const body = "short body ✓";
    return {
      ...base,
      mime_type: "text/markdown",
      total_size: Buffer.byteLength(body),
      sha256: sha256(Buffer.from(body)),
      body,
      ...over,
    };
  }
  const bytes = rel.endsWith(".png") ? png : md;
  return {
    ...base,
    mime_type: rel.endsWith(".png") ? "image/png" : "text/markdown",
    total_size: bytes.length,
    sha256: sha256(bytes),
    blob_handle: rel,
    ...over,
  };
}

void test("getSkill: inline body verified and returned", async () => {
  const ret = await agent.getSkill(COMPUTER, "my-skill");
  assert.equal(ret.body, "short body ✓");
  const sent = fake.received.filter((r) => r.event === "client:get_skill").at(-1)!.payload;
  assert.equal(sent.name, "my-skill");
  assert.equal("rel_path" in sent, false);
});

void test("getSkill: an inline body that does not match sha256 is an IntegrityError", async () => {
  fake.on("client:get_skill", (req) => skillAnswer(req, { sha256: sha256(Buffer.from("x")) }));
  try {
    await assert.rejects(agent.getSkill(COMPUTER, "my-skill"), IntegrityError);
  } finally {
    fake.on("client:get_skill", (req) => skillAnswer(req));
  }
});

void test("getSkill: a text handle is drained into body, handle removed", async () => {
  const ret = await agent.getSkill(COMPUTER, "my-skill", "references/big.md");
  assert.equal(ret.body, md.toString("utf8"));
  assert.equal(ret.blob_handle, undefined);
  assert.equal(ret.total_size, md.length);
});

void test("getSkill: a binary handle is returned for the caller to pull", async () => {
  const ret = await agent.getSkill(COMPUTER, "my-skill", "refs/logo.png");
  assert.equal(ret.body, undefined);
  assert.equal(ret.blob_handle, "refs/logo.png");
  const bytes = await agent.readBlob(COMPUTER, ret.blob_handle ?? "", {
    expectedSha256: ret.sha256,
  });
  assert.deepEqual(bytes, png);
});

void test("getSkill: 4016 / 4017 are typed", async () => {
  fake.on("client:get_skill", (req) =>
    req.name === "bad name!!"
      ? { code: 4016, message: "Invalid skill name format", details: { name: req.name } }
      : { code: 4017, message: "Skill resource not accessible", details: { reason: "traversal" } },
  );
  try {
    await assert.rejects(agent.getSkill(COMPUTER, "bad name!!"), InvalidSkillNameError);
    await assert.rejects(agent.getSkill(COMPUTER, "ok", "../x"), (e: unknown) => {
      assert.ok(e instanceof SkillResourceError);
      assert.equal(e.reason, "traversal");
      return true;
    });
  } finally {
    fake.on("client:get_skill", (req) => skillAnswer(req));
  }
});

void test("office: Computers seeded from list_room, tracked from notify:*", async () => {
  assert.deepEqual(agent.computers.sort(), [COMPUTER, "pc2"]);
  const left = new Promise<string>((r) => agent.once("computer_left", r));
  fake.computerLeaves("pc2");
  assert.equal(await left, "pc2");
  assert.deepEqual(agent.computers, [COMPUTER]);
  const joined = new Promise<string>((r) => agent.once("computer_joined", r));
  fake.computerEnters("pc3");
  assert.equal(await joined, "pc3");
  // A notification for another office is ignored.
  fake.emitToAgents("notify:enter_office", { office_id: "other", computer: "intruder" });
  await agent.refreshComputers();
  assert.ok(!agent.computers.includes("intruder"));
  assert.equal(agent.officeId, OFFICE);
});

void test("autoRefresh: a Computer entering triggers get_tools; notify:update_skills triggers get_skills", async () => {
  fake.on("client:get_tools", (req) => ({
    req_id: req.req_id,
    tools: [{ name: "b__t", bundle_id: "b", description: "d", params_schema: {} }],
  }));
  fake.on("client:get_skills", (req) => ({
    req_id: req.req_id,
    skills: [{ name: "s", source: "user", path: "/x", description: "d" }],
  }));
  const tools = new Promise<[string, unknown[]]>((r) => agent.once("tools", (c, t) => r([c, t])));
  fake.computerEnters("pc4");
  const [c, t] = await tools;
  assert.equal(c, "pc4");
  assert.equal(t.length, 1);
  const skills = new Promise<[string, unknown[]]>((r) =>
    agent.once("skills", (c2, s) => r([c2, s])),
  );
  const updated = new Promise<string>((r) => agent.once("skills_updated", r));
  fake.emitToAgents("notify:update_skills", { computer: COMPUTER });
  assert.equal(await updated, COMPUTER);
  const [c2, s] = await skills;
  assert.equal(c2, COMPUTER);
  assert.equal(s.length, 1);
});

void test("the Agent never emits notify:* events", () => {
  assert.ok(fake.received.every((r) => !r.event.startsWith("notify:")));
});
