// @pure
// Live updates (protocol.md §7.10): a burst of edits in the skill home refreshes the
// registry and calls notify("server:update_skills") exactly once, only while attached. Edits are
// written synchronously so the whole burst lands inside one debounce window whatever the load.
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { isErrorPayload } from "../../../protocol/index.ts";
import {
  callGetSkills,
  skillMd,
  startSkillRig,
  writePackage,
  type SkillRig,
} from "../../support/skills-fixtures.ts";

/** A rig whose refreshes and notifications can be awaited. */
async function watchedRig(over: { fsWatch?: boolean; pollMs?: number } = {}) {
  let refreshes = 0;
  let waiters: Array<() => void> = [];
  const rig: SkillRig = await startSkillRig(
    async (home) => {
      await writePackage(home, "user/one", skillMd("one", "1"), { "ref.md": "r" });
      await writePackage(home, "mcp/srv/helper", skillMd("helper", "h"));
    },
    {
      watch: true,
      debounceMs: 300,
      pollMs: over.pollMs ?? 0,
      fsWatch: over.fsWatch ?? true,
      onRefresh: () => {
        refreshes++;
        const w = waiters;
        waiters = [];
        for (const f of w) f();
      },
    },
  );
  const notes: string[] = [];
  return {
    rig,
    notes,
    refreshes: () => refreshes,
    /** Resolves after the next watcher-driven registry rebuild. */
    nextRefresh: () => new Promise<void>((resolve) => waiters.push(resolve)),
    attach: () => rig.service.attach?.((e) => notes.push(e)),
  };
}

async function names(rig: SkillRig): Promise<string[]> {
  const ret = await callGetSkills(rig.service);
  assert.ok(!isErrorPayload(ret));
  return ret.skills.map((s) => s.name);
}

void test("a burst of edits while attached → the registry is refreshed and notify is called exactly once", async () => {
  const w = await watchedRig();
  try {
    w.attach();
    const refreshed = w.nextRefresh();
    const home = w.rig.home;
    writeFileSync(join(home, "user/one/ref.md"), "r2");
    writeFileSync(join(home, "user/one/extra.txt"), "new file");
    mkdirSync(join(home, "user/two/scripts"), { recursive: true });
    writeFileSync(join(home, "user/two/SKILL.md"), skillMd("two", "2"));
    writeFileSync(join(home, "user/two/scripts/run.sh"), "echo");
    writeFileSync(join(home, "user/one/SKILL.md"), skillMd("one", "1 edited"));
    await refreshed;
    await w.rig.service.whenIdle();
    assert.deepEqual(w.notes, ["server:update_skills"]);
    assert.equal(w.refreshes(), 1);
    assert.deepEqual(await names(w.rig), ["one", "two", "mcp:srv:helper"]);

    // A second burst (files inside the new package's fresh subdirectory are watched too).
    const again = w.nextRefresh();
    writeFileSync(join(home, "user/two/scripts/run.sh"), "echo changed");
    await again;
    await w.rig.service.whenIdle();
    assert.deepEqual(w.notes, ["server:update_skills", "server:update_skills"]);
  } finally {
    await w.rig.close();
  }
});

void test("orphaning a bundle and removing a package are changes to the skill set", async () => {
  const w = await watchedRig();
  try {
    w.attach();
    let refreshed = w.nextRefresh();
    writeFileSync(join(w.rig.home, "mcp/srv/.orphaned"), "");
    await refreshed;
    await w.rig.service.whenIdle();
    assert.deepEqual(w.notes, ["server:update_skills"]);
    assert.deepEqual(await names(w.rig), ["one"]);
    refreshed = w.nextRefresh();
    rmSync(join(w.rig.home, "user/one"), { recursive: true });
    await refreshed;
    await w.rig.service.whenIdle();
    assert.equal(w.notes.length, 2);
    assert.deepEqual(await names(w.rig), []);
  } finally {
    await w.rig.close();
  }
});

void test("while detached: the registry still follows the home, but nothing is emitted", async () => {
  const w = await watchedRig();
  try {
    let refreshed = w.nextRefresh();
    writeFileSync(join(w.rig.home, "user/one/ref.md"), "before attach");
    await refreshed;
    await w.rig.service.whenIdle();
    w.attach();
    w.rig.service.detach?.();
    refreshed = w.nextRefresh();
    mkdirSync(join(w.rig.home, "user/three"));
    writeFileSync(join(w.rig.home, "user/three/SKILL.md"), skillMd("three", "3"));
    await refreshed;
    await w.rig.service.whenIdle();
    assert.deepEqual(w.notes, []);
    assert.equal(w.refreshes(), 2);
    assert.ok((await names(w.rig)).includes("three"));
  } finally {
    await w.rig.close();
  }
});

void test("the periodic signature scan alone catches edits (fs.watch disabled)", async () => {
  const w = await watchedRig({ fsWatch: false, pollMs: 50 });
  try {
    w.attach();
    const refreshed = w.nextRefresh();
    writeFileSync(join(w.rig.home, "user/one/ref.md"), "polled");
    writeFileSync(join(w.rig.home, "user/one/more.md"), "polled too");
    await refreshed;
    await w.rig.service.whenIdle();
    assert.deepEqual(w.notes, ["server:update_skills"]);
  } finally {
    await w.rig.close();
  }
});
