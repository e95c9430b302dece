/**
 * Usage errors of the CLI, as a process: our own words, the usage line of the command at hand,
 * exit 2, nothing on stdout (or only the JSON error with --json), and never Node's parseArgs
 * text. Each is checked before any connection is tried (the Server URL here has no listener).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runCli } from "../support/agent-stack.ts";

const URL_ = "http://127.0.0.1:9";
const base = ["--server", URL_, "--office", "o"];
const MORE = "(a2c-agent --help lists every option)\n";
const usage = (what: string): string =>
  `usage: a2c-agent --server URL --office ID [options] ${what}\n${MORE}`;
const BLOB =
  "blob <computer> <handle> -o FILE [-c] [--limit-rate RATE] [--window N] [--chunk-bytes N] [--base64] [--no-compress]";

async function expectUsage(args: string[], stderr: string): Promise<void> {
  const r = await runCli(args);
  assert.equal(r.stderr, stderr);
  assert.equal(r.stdout, "");
  assert.equal(r.code, 2);
}

void test("a mistyped option: named, with the closest real one", async () => {
  await expectUsage(
    [...base, "--windw", "4", "blob", "pc", "h", "-o", "f"],
    `a2c-agent: unknown option '--windw' (did you mean --window?)\n${usage(BLOB)}`,
  );
});

void test("an option without its value, and a value that looks like an option", async () => {
  await expectUsage(
    [...base, "computers", "--office"],
    `a2c-agent: --office needs a value\n${usage("computers")}`,
  );
  await expectUsage(
    ["--token", "-abc", ...base, "computers"],
    `a2c-agent: --token needs a value (one that starts with '-' goes as --token=VALUE)\n${usage("computers")}`,
  );
  await expectUsage(
    [...base, "--json=yes", "computers"],
    `a2c-agent: --json takes no value (got 'yes')\n${usage("computers")}`,
  );
});

void test("unknown command, missing and extra arguments", async () => {
  await expectUsage(
    [...base, "cal", "pc", "t"],
    "a2c-agent: unknown command 'cal' (did you mean 'call'?); " +
      `commands: computers, skills, skill, tools, call, blob, put\n${usage("<command> [args]")}`,
  );
  await expectUsage([...base, "blob", "pc"], `a2c-agent: blob needs <handle>\n${usage(BLOB)}`);
  await expectUsage(
    [...base, "tools", "pc", "extra"],
    `a2c-agent: tools: unexpected argument 'extra'\n${usage("tools <computer>")}`,
  );
  await expectUsage([...base], `a2c-agent: no command given\n${usage("<command> [args]")}`);
});

void test("--server: required, and a URL with a scheme", async () => {
  await expectUsage(
    ["--office", "o", "computers"],
    `a2c-agent: --server URL (or A2C_SERVER_URL) is required\n${usage("computers")}`,
  );
  await expectUsage(
    ["--server", "127.0.0.1:7100", "--office", "o", "computers"],
    "a2c-agent: --server must be an http:// or https:// URL, got '127.0.0.1:7100' " +
      `(try http://127.0.0.1:7100)\n${usage("computers")}`,
  );
});

void test("numbers, -o and tool arguments are checked before connecting", async () => {
  await expectUsage(
    [...base, "--window", "0", "blob", "pc", "h", "-o", "f"],
    `a2c-agent: --window must be a positive integer (got '0')\n${usage(BLOB)}`,
  );
  await expectUsage([...base, "blob", "pc", "h"], `a2c-agent: blob needs -o FILE\n${usage(BLOB)}`);
  await expectUsage(
    [...base, "--binary", "--base64", "blob", "pc", "h", "-o", "f"],
    `a2c-agent: --binary and --base64 exclude each other\n${usage(BLOB)}`,
  );
  await expectUsage(
    [...base, "blob", "pc", "h", "-o", "f", "--limit-rate", "fast"],
    `a2c-agent: --limit-rate must be bytes a second, as 500k, 2M or 1G (got 'fast')\n${usage(BLOB)}`,
  );
  await expectUsage(
    [...base, "blob", "pc", "h", "-o", "f", "--speed-time", "-1"],
    `a2c-agent: --speed-time needs a value (one that starts with '-' goes as --speed-time=VALUE)\n${usage(BLOB)}`,
  );
  await expectUsage(
    [...base, "blob", "pc", "h", "-o", "f", "--max-time", "0"],
    `a2c-agent: --max-time must be a positive number of seconds (got '0')\n${usage(BLOB)}`,
  );
  await expectUsage(
    [...base, "skill", "pc", "s", "-c"],
    `a2c-agent: -c resumes a download to a file: it needs -o FILE (or --out DIR)\n${usage("skill <computer> <name> [rel_path] [-o FILE [-c]]")}`,
  );
  await expectUsage(
    [...base, "call", "pc", "t", "[1]"],
    `a2c-agent: tool arguments must be a JSON object\n${usage("call <computer> <tool> [JSON] [--out DIR] [--timeout S]")}`,
  );
});

void test("--json: the usage error is a JSON object on stdout", async () => {
  const r = await runCli([...base, "--json", "--windw", "4", "computers"]);
  assert.equal(r.code, 2);
  assert.deepEqual(JSON.parse(r.stdout), {
    error: {
      type: "UsageError",
      message: "unknown option '--windw' (did you mean --window?)",
      summary: "unknown option '--windw' (did you mean --window?)",
    },
    exit_code: 2,
  });
  assert.equal(
    r.stderr,
    `a2c-agent: unknown option '--windw' (did you mean --window?)\n${usage("computers")}`,
  );
});
