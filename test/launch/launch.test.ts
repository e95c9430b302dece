/**
 * scripts/launch/: a process's lines are kept (bounded) and waited for; its exit is seen whichever
 * of its pipes closed first; a stop escalates to SIGKILL for a child that ignores SIGTERM; a
 * command prefix runs the process under another command with the same pid; a script of this repo
 * runs compiled on plain node, its own `import.meta` intact and `@a2c-smcp/*` resolved to the
 * built packages, and its compiled file is reused until a source changes; a role starts as its
 * shipped bin with the bins' node flags.
 */
import assert from "node:assert/strict";
import { readFileSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { compileScript } from "../../scripts/launch/compile.ts";
import { launch } from "../../scripts/launch/process.ts";
import { NODE_FLAGS, REPO_ROOT, startRole, startScript } from "../../scripts/launch/roles.ts";

const node = (code: string, name = "node -e"): ReturnType<typeof launch> =>
  launch({ name, command: process.execPath, args: ["-e", code] });

void test("lines are kept and waited for, before and after they arrive", async () => {
  const p = node(
    'console.log("first"); setTimeout(() => { console.error("second"); console.log("third") }, 200)',
  );
  await p.waitFor(/^third$/);
  assert.equal((await p.waitFor(/^first$/)).input, "first", "a line that came before the wait");
  const exit = await p.exited;
  assert.deepEqual(exit, { code: 0, signal: null, status: 0 });
  assert.deepEqual(p.lines(), ["first", "second", "third"]);
  assert.equal(p.stdout(), "first\nthird\n");
  assert.equal(p.stderr(), "second\n");
});

void test("a wait fails with the process's last lines when it exits first", async () => {
  const p = node('console.log("bye"); process.exit(3)');
  await assert.rejects(
    p.waitFor(/never/),
    /exited with 3 before a line matched \/never\/:\n {2}bye/,
  );
  assert.equal((await p.exited).status, 3);
});

void test("what is kept is bounded: the oldest lines go first", async () => {
  const p = launch({
    name: "chatty",
    command: process.execPath,
    args: ["-e", 'for (let i = 0; i < 5000; i++) console.log("line " + i)'],
    keepBytes: 1000,
  });
  await p.exited;
  const lines = p.lines();
  assert.ok(lines.join("\n").length <= 1000, `${lines.length} lines kept`);
  assert.equal(lines.at(-1), "line 4999");
  assert.ok(p.stdout().length <= 1000 && p.stdout().endsWith("line 4999\n"));
});

void test("stop: SIGTERM, then SIGKILL after the grace for a child that ignores it", async () => {
  const p = node(
    'process.on("SIGTERM", () => console.log("ignored")); console.log("up"); setInterval(() => {}, 1000)',
  );
  await p.waitFor(/^up$/);
  const started = Date.now();
  const exit = await p.stop("SIGTERM", 300);
  assert.equal(exit.signal, "SIGKILL");
  assert.equal(exit.status, 137);
  assert.ok(p.lines().includes("ignored"));
  assert.ok(Date.now() - started < 5000);
});

void test("an exit is seen when a pipe closed before it and another outlives it", async () => {
  // The child closes its stdout at once and leaves its stderr to a grandchild that holds it
  // 300 ms past the child's exit. The host process has nothing else to wait for: the launcher
  // waited for a second "close" of stdout, never settled, and the host ended with 13 (a
  // top-level await never settled), as \`npm run stack\` did once on Ctrl-C.
  const child = [
    'const { spawn } = require("node:child_process");',
    'spawn(process.execPath, ["-e", "setTimeout(() => {}, 300)"], { stdio: ["ignore", "ignore", "inherit"], detached: true }).unref();',
    'require("node:fs").closeSync(1);',
    "setTimeout(() => process.exit(0), 100);",
  ].join(" ");
  const processTs = join(REPO_ROOT, "scripts/launch/process.ts");
  const host = [
    `import { launch } from ${JSON.stringify(processTs)};`,
    `const p = launch({ name: "child", command: process.execPath, args: ["-e", ${JSON.stringify(child)}] });`,
    'const exit = await p.exited; console.log("settled", exit.status);',
  ].join(" ");
  const h = launch({
    name: "host",
    command: process.execPath,
    args: ["--conditions=@a2c-smcp/source", "--import", "tsx", "--input-type=module", "-e", host],
    cwd: REPO_ROOT,
  });
  const exit = await h.exited;
  assert.equal(exit.status, 0, h.output());
  assert.deepEqual(h.lines(), ["settled 0"]);
});

void test("a start that fails is an exit with status 127, not an exception", async () => {
  const p = launch({ name: "nothing", command: "/nonexistent/a2c-command", args: [] });
  assert.equal((await p.exited).status, 127);
  assert.match(p.output(), /spawn error: .*ENOENT/);
});

void test("a command prefix runs the process under it, with the process's own pid", async () => {
  const p = launch({
    name: "niced",
    command: process.execPath,
    args: ["-e", "console.log(process.pid); setTimeout(() => {}, 5000)"],
    prefix: ["nice", "-n", "7"],
  });
  const pid = Number((await p.waitFor(/^\d+$/))[0]);
  assert.equal(pid, p.pid, "nice execs node");
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const niceness = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
  assert.equal(niceness, 7);
  await p.stop();
});

const HOST = "test/launch/fixtures/host.ts";

void test("a script runs compiled on plain node: its own import.meta, the built packages", async () => {
  const p = await startScript(HOST, { args: ["a", "b"] });
  assert.equal((await p.exited).code, 0, p.output());
  const seen = JSON.parse(p.stdout()) as Record<string, unknown>;
  const dir = join(REPO_ROOT, "test/launch/fixtures");
  assert.equal(seen.dirname, dir);
  assert.equal(fileURLToPath(String(seen.url)), join(dir, "host.ts"));
  assert.equal(fileURLToPath(String(seen.protocol)), join(REPO_ROOT, "protocol/dist/index.js"));
  assert.equal(typeof seen.version, "string");
  assert.deepEqual(seen.argv, ["a", "b"]);
  assert.equal(seen.mention, "new URL(import.meta.url)");
  assert.doesNotMatch(p.child.spawnargs.join(" "), /tsx|--conditions/);
});

void test("a compiled script is reused until one of its sources changes", async () => {
  const first = await compileScript(HOST);
  const before = statSync(first).mtimeMs;
  assert.equal(await compileScript(HOST), first);
  assert.equal(statSync(first).mtimeMs, before, "reused");
  const source = join(REPO_ROOT, HOST);
  const t = new Date(Date.now() + 2000);
  utimesSync(source, t, t);
  assert.equal(await compileScript(HOST), first);
  assert.ok(statSync(first).mtimeMs > before, "compiled again");
});

void test("a role starts as its shipped bin, with the bins' node flags", async () => {
  const p = startRole("server", { args: ["--help"] });
  await p.exited;
  const args = p.child.spawnargs;
  assert.deepEqual(args.slice(1, 1 + NODE_FLAGS.length), [...NODE_FLAGS]);
  assert.equal(args[1 + NODE_FLAGS.length], join(REPO_ROOT, "server/dist/main.js"));
  assert.match(p.output(), /a2c-server/);
});
