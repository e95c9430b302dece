/**
 * docs/architecture.md lists the files one `client:get_blob` runs, from the SDK call to the
 * Computer's file and back, and promises at most 25. This test holds the list to the code: a
 * Server, a Computer and an Agent run in one process (test/repo/get-blob-trace.ts) and pull a
 * resource the Computer has not served yet while V8 counts calls; the repository files whose
 * functions ran must be exactly the listed ones (in either carriage), and no more than 25.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { REPO_ROOT } from "../support/agent-stack.ts";

const run = promisify(execFile);
const MOST = 25;

/** The `- \`path\`` lines under the heading "The files one get_blob crosses". */
function listed(): string[] {
  const doc = readFileSync(join(REPO_ROOT, "docs/architecture.md"), "utf8");
  const start = doc.indexOf("### The files one get_blob crosses");
  assert.ok(start >= 0, "docs/architecture.md has the list");
  const section = doc.slice(start).split(/\n#{1,3} /)[0]!;
  return [...section.matchAll(/^- `([\w./-]+\.ts)`/gm)].map((m) => m[1]!);
}

async function traced(carriage: "binary" | "base64"): Promise<string[]> {
  const { stdout } = await run(
    process.execPath,
    ["--conditions=@a2c-smcp/source", "--import", "tsx", "test/repo/get-blob-trace.ts", carriage],
    { cwd: REPO_ROOT, timeout: 120_000 },
  );
  const files = JSON.parse(stdout.trim().split("\n").at(-1)!) as string[];
  // A trace that saw nothing of a role would prove nothing.
  for (const role of ["agent/", "server/", "computer/", "protocol/"]) {
    assert.ok(
      files.some((f) => f.startsWith(role)),
      `${carriage}: no ${role} file ran: ${files.join(", ")}`,
    );
  }
  return files;
}

void test("one get_blob runs the files docs/architecture.md lists, at most 25", async () => {
  const doc = listed();
  assert.ok(doc.length <= MOST, `${doc.length} files listed`);
  assert.equal(new Set(doc).size, doc.length, "a file listed twice");
  const [binary, base64] = await Promise.all([traced("binary"), traced("base64")]);
  const ran = new Set([...binary, ...base64]);
  assert.deepEqual(
    [...ran].filter((f) => !doc.includes(f)),
    [],
    "files one get_blob ran that the list leaves out",
  );
  assert.deepEqual(
    doc.filter((f) => !ran.has(f)),
    [],
    "files the list names that one get_blob did not run",
  );
});
