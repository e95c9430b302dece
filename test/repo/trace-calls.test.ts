/**
 * The get_blob trace counts a file when any of its functions other than the module's top level
 * was called (test/repo/trace-calls.ts). Proved on fixtures traced as the get_blob trace is (tsx,
 * the source condition): a file with exactly one function, called once, is counted; a file only
 * imported during the trace, or not touched, is not; and V8 still reports a module's top level
 * as the function "" at offset 0, which is what the filter leaves out. The function that ran is
 * found in its TypeScript source, with its length in lines (the get_blob path's bound on them).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import { REPO_ROOT } from "../support/agent-stack.ts";

const run = promisify(execFile);

interface Reported {
  name: string;
  start: number;
  count: number;
}

void test("a file with exactly one function that ran is counted; a module's top level is not", async () => {
  const { stdout } = await run(
    process.execPath,
    ["--conditions=@a2c-smcp/source", "--import", "tsx", "test/repo/fixtures/trace/main.ts"],
    { cwd: REPO_ROOT, timeout: 60_000 },
  );
  const out = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
    answer: number;
    ran: string[];
    functions: { file: string; name: string; line: number; lines: number }[];
    reported: Record<string, Reported[]>;
  };
  assert.equal(out.answer, 42);
  // one-function.ts: V8 reports its one function first (its top level ran before the trace).
  const only = out.reported["one-function.ts"]?.[0];
  assert.deepEqual(only && { name: only.name, count: only.count }, { name: "only", count: 1 });
  const topLevel = out.reported["imported-during.ts"]?.[0];
  assert.deepEqual(topLevel && { ...topLevel, count: topLevel.count > 0 }, {
    name: "",
    start: 0,
    count: true,
  });
  assert.deepEqual(out.ran, ["main.ts", "one-function.ts"]);
  assert.deepEqual(out.functions, [{ file: "one-function.ts", name: "only", line: 2, lines: 3 }]);
});
