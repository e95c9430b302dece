// @pure
/**
 * The node flags the launcher gives a role (scripts/launch/roles.ts NODE_FLAGS) are those of each
 * bin's shebang, which is how an installed `a2c-server`, `a2c-computer` or `a2c-agent` runs, and
 * those of `npm run server|computer|agent`.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { NODE_FLAGS, REPO_ROOT } from "../../scripts/launch/roles.ts";

const SOURCES = { server: "server/main.ts", computer: "computer/main.ts", agent: "agent/cli.ts" };

void test("every bin's shebang runs node with NODE_FLAGS", () => {
  for (const [role, file] of Object.entries(SOURCES)) {
    const first = readFileSync(join(REPO_ROOT, file), "utf8").split("\n", 1)[0];
    assert.equal(first, `#!/usr/bin/env -S node ${NODE_FLAGS.join(" ")}`, role);
  }
});

void test("npm run server|computer|agent run the built bins with NODE_FLAGS", () => {
  const { scripts } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  };
  const bins = {
    server: "server/dist/main.js",
    computer: "computer/dist/main.js",
    agent: "agent/dist/a2c-agent.js",
  };
  for (const [role, bin] of Object.entries(bins)) {
    assert.ok(
      scripts[role]?.endsWith(`&& exec node ${NODE_FLAGS.join(" ")} ${bin}`),
      `${role}: ${scripts[role]}`,
    );
  }
});
