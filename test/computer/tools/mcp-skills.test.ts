/**
 * MCP-sourced skills, mode `resources` (protocol.md §7.1; D20): the demo server's `skill://` resources
 * are staged into `<home>/mcp/demo/<skill>/`, seen by the SKILL registry as `mcp:demo:<skill>`,
 * orphaned when the server dies, restored when it comes back, re-staged on list_changed; a bundle
 * staged earlier whose server is no longer configured stays orphaned.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createSkillService, type SkillService } from "../../../computer/skills/index.ts";
import { encodePng } from "../../../scripts/demo/png.ts";
import { GetSkillsRetSchema } from "../../../protocol/index.ts";
import {
  nextReqId,
  quietLog,
  textOf,
  toolFixture,
  type ToolFixture,
} from "../../support/tools-harness.ts";

const home = mkdtempSync(join(tmpdir(), "a2c-mcp-skills-"));
const demoDir = join(home, "mcp", "demo");
const marker = join(demoDir, ".orphaned");
let fx: ToolFixture;
let skills: SkillService;

before(async () => {
  // A bundle staged by an earlier run whose server is no longer configured.
  mkdirSync(join(home, "mcp", "stale", "old-skill"), { recursive: true });
  writeFileSync(
    join(home, "mcp", "stale", "old-skill", "SKILL.md"),
    "---\nname: old-skill\ndescription: old\n---\n",
  );
  fx = await toolFixture({ skillsHome: home, restartBaseMs: 20 });
  await fx.service.skillsIdle();
  skills = await createSkillService({
    config: fx.config,
    home,
    minter: fx.engine,
    log: quietLog,
    watch: false,
  });
});
after(async () => {
  await skills.close();
  await fx.close();
  rmSync(home, { recursive: true, force: true });
});

async function skillNames(): Promise<string[]> {
  await skills.refresh();
  const ret = await skills.handlers["client:get_skills"]!(
    { agent: "a", req_id: nextReqId(), computer: fx.config.name },
    { signal: new AbortController().signal, log: quietLog },
  );
  return GetSkillsRetSchema.parse(ret).skills.map((s) => s.name);
}

async function until(pred: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await pred())) await new Promise((r) => setTimeout(r, 10));
}

void test("skill:// resources are staged under mcp/<bundle_id>/<skill>/", async () => {
  const pkg = join(demoDir, "hello-skill");
  assert.match(readFileSync(join(pkg, "SKILL.md"), "utf8"), /^---\nname: hello-skill\n/);
  assert.equal(
    readFileSync(join(pkg, "references", "guide.md"), "utf8"),
    "# Guide\n\nGreet the user politely.\n",
  );
  assert.ok(
    readFileSync(join(pkg, "assets", "logo.png")).equals(encodePng({ width: 4, height: 4 })),
  );
  const sidecar = JSON.parse(readFileSync(join(pkg, ".a2c-source.json"), "utf8"));
  assert.equal(sidecar.uri, "skill://demo/hello-skill");
  assert.equal(sidecar.version, "1");
  assert.ok(!existsSync(marker));
  assert.ok(!existsSync(join(demoDir, "second-skill")), "a disabled resource is not staged");
  assert.deepEqual(await skillNames(), ["mcp:demo:hello-skill"]);
});

void test("a bundle whose server is not configured any more is orphaned", () => {
  assert.ok(existsSync(join(home, "mcp", "stale", ".orphaned")));
});

void test("server dies → orphaned; restarted → restored", async () => {
  const conn = fx.service.connection("demo")!;
  const pid = Number(textOf(await fx.call("demo__pid")));
  process.kill(pid, "SIGKILL");
  await until(() => existsSync(marker));
  assert.deepEqual(await skillNames(), [], "orphaned skills are absent from get_skills");
  await until(() => conn.state === "ready");
  await fx.service.skillsIdle();
  await until(() => !existsSync(marker));
  assert.deepEqual(await skillNames(), ["mcp:demo:hello-skill"]);
});

void test("resources/list_changed re-stages: a new skill appears, then goes away", async () => {
  await fx.call("demo__toggle_skill");
  await until(() => existsSync(join(demoDir, "second-skill", "SKILL.md")));
  await fx.service.skillsIdle();
  assert.deepEqual(await skillNames(), ["mcp:demo:hello-skill", "mcp:demo:second-skill"]);
  await fx.call("demo__toggle_skill");
  await until(() => !existsSync(join(demoDir, "second-skill")));
  assert.deepEqual(await skillNames(), ["mcp:demo:hello-skill"]);
});
