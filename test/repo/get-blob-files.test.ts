/**
 * docs/architecture.md lists the files one `client:get_blob` runs, from the SDK call to the
 * Computer's file and back, and this test writes that list: a Server, a Computer and an Agent
 * run in one process (test/repo/get-blob-trace.ts) and pull a resource the Computer has not
 * served yet while V8 counts calls (test/repo/trace-calls.ts counts every function called, only
 * a module's top level is not). The marked block in the doc must be exactly what the two traces
 * (binary and base64 carriage) make of it, so a file that runs cannot be left out of the list
 * and a file that no longer runs cannot stay on it. `A2C_WRITE_DOCS=1` rewrites the block.
 * Every function that ran in the traced pull is at most `LONGEST` lines of its source.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { REPO_ROOT } from "../support/agent-stack.ts";

const run = promisify(execFile);
const DOC = join(REPO_ROOT, "docs/architecture.md");
const BEGIN =
  "<!-- BEGIN get-blob-files: written by test/repo/get-blob-files.test.ts from its trace -->";
const END = "<!-- END get-blob-files -->";
/**
 * The pull may not grow past this many files in either carriage. The goal docs/architecture.md
 * states is 25; this bound is where the pull stands, lowered as its legs are shortened.
 */
const MOST = 25;
/** The most source lines of a function that runs in a pull (the developers' guide). */
const LONGEST = 80;
/** The order a request crosses the roles; files are sorted by path within a role. */
const ROLES = ["agent/", "protocol/", "server/", "computer/"];

interface RanFunction {
  file: string;
  name: string;
  line: number;
  lines: number;
}

async function traced(carriage: "binary" | "base64"): Promise<string[]> {
  const { stdout } = await run(
    process.execPath,
    ["--conditions=@a2c-smcp/source", "--import", "tsx", "test/repo/get-blob-trace.ts", carriage],
    { cwd: REPO_ROOT, timeout: 120_000 },
  );
  const { files, functions } = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
    files: string[];
    functions: RanFunction[];
  };
  // A trace that saw nothing of a role would prove nothing.
  for (const role of ROLES) {
    assert.ok(
      files.some((f) => f.startsWith(role)),
      `${carriage}: no ${role} file ran: ${files.join(", ")}`,
    );
  }
  // Every file that ran had its functions found in its source.
  assert.deepEqual([...new Set(functions.map((f) => f.file))].sort(), files);
  const long = functions.filter((f) => f.lines > LONGEST);
  assert.deepEqual(
    long.map((f) => `${f.file}:${f.line} ${f.name || "(anonymous)"}: ${f.lines} lines`),
    [],
    `${carriage}: functions over ${LONGEST} lines ran in the pull`,
  );
  return files;
}

/** The block between the markers, as the traces make it. */
function listBlock(binary: string[], base64: string[]): string {
  const either = [...new Set([...binary, ...base64])];
  const role = (f: string): number => ROLES.findIndex((r) => f.startsWith(r));
  either.sort((a, b) => role(a) - role(b) || (a < b ? -1 : 1));
  const only = (f: string): string =>
    !binary.includes(f) ? " (base64 only)" : !base64.includes(f) ? " (binary only)" : "";
  return [
    `${binary.length} files in binary carriage, ${base64.length} in base64 (${either.length} in either):`,
    "",
    ...either.map((f) => `- \`${f}\`${only(f)}`),
  ].join("\n");
}

function docParts(doc: string): { before: string; block: string; after: string } {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  assert.ok(start >= 0 && end > start, "docs/architecture.md has the marked list");
  return {
    before: doc.slice(0, start + BEGIN.length),
    block: doc.slice(start + BEGIN.length, end).trim(),
    after: doc.slice(end),
  };
}

void test("docs/architecture.md lists exactly the files one get_blob runs", async () => {
  const [binary, base64] = await Promise.all([traced("binary"), traced("base64")]);
  const block = listBlock(binary, base64);
  const doc = readFileSync(DOC, "utf8");
  const parts = docParts(doc);
  if (process.env.A2C_WRITE_DOCS === "1") {
    writeFileSync(DOC, `${parts.before}\n\n${block}\n\n${parts.after}`);
  } else {
    assert.equal(
      parts.block,
      block,
      "the list differs from the trace (A2C_WRITE_DOCS=1 npm test -- test/repo/get-blob-files.test.ts rewrites it)",
    );
  }
  assert.ok(binary.length <= MOST, `binary: ${binary.length} files, more than ${MOST}`);
  assert.ok(base64.length <= MOST, `base64: ${base64.length} files, more than ${MOST}`);
});
