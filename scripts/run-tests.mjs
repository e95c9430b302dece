#!/usr/bin/env node
// The test command: every `*.test.ts` under test/ (or under the folders/files given as
// arguments), run by Node's own test runner with the tsx loader, each file in its own process.
// `npm test -- test/server` runs a subset.
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const args = process.argv.slice(2);
const roots = args.length > 0 ? args : ["test"];

function collect(path, out) {
  const st = statSync(path);
  if (st.isFile()) {
    if (path.endsWith(".test.ts")) out.push(path);
    return out;
  }
  for (const entry of readdirSync(path).sort()) {
    if (entry === "node_modules" || entry.startsWith(".")) continue;
    collect(join(path, entry), out);
  }
  return out;
}

const files = roots.flatMap((r) => collect(join(root, r), [])).map((f) => relative(root, f));
if (files.length === 0) {
  console.error(`no test files under ${roots.join(", ")}`);
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? "3";
const child = spawn(
  process.execPath,
  [
    "--conditions=@a2c-smcp/source",
    "--import",
    "tsx",
    "--test",
    "--test-reporter=spec",
    `--test-concurrency=${concurrency}`,
    "--test-timeout=600000",
    ...files,
  ],
  { cwd: root, stdio: "inherit" },
);
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
