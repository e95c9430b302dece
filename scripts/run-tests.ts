/**
 * The test command, `npm test [-- FOLDER|FILE…]`: builds what is stale (scripts/build.mjs: the
 * suite starts Servers, Computers and the CLI from the shipped build, D60), then runs every
 * `*.test.ts` under test/ (or under the given folders and files) with Node's test runner. The whole
 * suite first checks for the programs scripts/install-system-packages installs, and without one
 * stops at once with one line naming that command.
 *
 * The test files are compiled first, all at once (esbuild, the repo's sources bundled from
 * source with most packages they import, shared modules split into common chunks), and each
 * test process runs JavaScript on plain node: a process start then costs about half of what the
 * tsx loader made it cost. Stack traces name the sources' own lines (source maps).
 *
 * How a file runs is said by a tag on a line of its own in its first lines (D61):
 * - `// @pure`: it starts no process and opens no socket. All such files share one process
 *   (test/support/pure-run.ts), each file's tests in a suite of its own; that process refuses
 *   processes and sockets.
 * - `// @both-transports`: what it checks depends on how the Server and the Computer read and
 *   write their sockets. It runs twice: as shipped, and with every transport fast path off
 *   (`A2C_TEST_SERVER_TRANSPORT=stock`, `A2C_TEST_COMPUTER_TRANSPORT=stock`; the harnesses read
 *   them), as a library upgrade or `--stock-transport` would run it.
 * - no tag: a process of its own, once.
 *
 * Files that took longest last time start first (the runner's queue is first in, first out), so
 * a long file never starts near the end. `TEST_CONCURRENCY` sets how many processes run at once
 * (default 3: most files wait on sockets and timers more than on the CPU).
 */
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { ownImportMeta, REPO_ROOT as ROOT, REQUIRE_BANNER, withEsbuild } from "./launch/compile.ts";

const CACHE = join(ROOT, "node_modules/.cache/a2c-test");
const DURATIONS = join(CACHE, "durations.json");
const PURE_RUN = "test/support/pure-run.ts";
const TAG = /^\s*(?:\/\/|\*)\s*@(pure|both-transports)\s*$/gm;
/** How far into a file its tags may stand (they belong with its header comment). */
const TAG_REACH = 3000;
/**
 * Without durations from an earlier run (a fresh clone), whole folders go first in this order:
 * those of end-to-end tests against real processes, the longest ones.
 */
const LONG_FOLDERS = ["bench", "packaging", "reliability", "stack", "computer", "agent"];

function collect(path: string, out: string[]): string[] {
  if (statSync(path).isFile()) {
    if (path.endsWith(".test.ts")) out.push(path);
    return out;
  }
  for (const entry of readdirSync(path).sort()) {
    if (entry === "node_modules" || entry.startsWith(".")) continue;
    collect(join(path, entry), out);
  }
  return out;
}

/**
 * Packages the test bundles leave to node: the server side of socket.io (its transport fast
 * paths reach socket.io's `Client` through the installed files, so engine.io, ws and the parser
 * must be the installed instances too), packages that load files or workers of their own by path
 * (pino's transports, piscina, playwright, prettier, autocannon), native code and compilers, and
 * large ones only a few files load.
 */
const LEFT_TO_NODE = new Set([
  "socket.io",
  "socket.io-adapter",
  "socket.io-parser",
  "engine.io",
  "engine.io-parser",
  "ws",
  "bufferutil",
  "utf-8-validate",
  "pino",
  "pino-pretty",
  "thread-stream",
  "piscina",
  "playwright-core",
  "prettier",
  "autocannon",
  "esbuild",
  "typescript",
  "vega",
  "vega-lite",
  "tinybench",
]);

/** The package of a bare import specifier: `@scope/name` or `name`. */
function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

function tagsOf(file: string): Set<string> {
  const head = readFileSync(join(ROOT, file), "utf8").slice(0, TAG_REACH);
  return new Set([...head.matchAll(TAG)].map((m) => m[1]!));
}

function readDurations(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(DURATIONS, "utf8")) as Record<string, number>;
  } catch {
    return {};
  }
}

/** The programs of scripts/install-system-packages that this machine lacks. */
function missingSystemPackages(): string[] {
  const dirs = (process.env.PATH ?? "").split(":").concat("/usr/sbin");
  const found = (name: string): boolean => dirs.some((d) => d && existsSync(join(d, name)));
  const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
  return [
    ...["redis-server", "nginx", "openssl", "promtool", "ip", "tc", "ss", "cc"].filter(
      (p) => !found(p),
    ),
    ...(existsSync(chromium) ? [] : ["chromium"]),
  ];
}

/**
 * Compiles `files` (paths from the root) into `outDir`, keeping their paths; returns each
 * file's output. The repo's own modules (`@a2c-smcp/*` through their source condition, as the
 * tests import them) are bundled, and so are the packages on most test processes' way in (zod,
 * socket.io-client, the MCP SDK…): a process reads a few chunks instead of resolving hundreds of
 * files, about 0.2 s of CPU less per test process. Left to node: `LEFT_TO_NODE`.
 */
async function compileTests(files: string[], outDir: string): Promise<Map<string, string>> {
  const result = await withEsbuild((esbuild) =>
    esbuild.build({
      entryPoints: files.map((f) => join(ROOT, f)),
      outdir: outDir,
      outbase: ROOT,
      outExtension: { ".js": ".mjs" },
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: "node20",
      conditions: ["@a2c-smcp/source"],
      sourcemap: "linked",
      banner: REQUIRE_BANNER,
      absWorkingDir: ROOT,
      metafile: true,
      logLevel: "error",
      plugins: [
        ownImportMeta(esbuild),
        {
          name: "some-packages-to-node",
          setup(b) {
            b.onResolve({ filter: /^[^./]/ }, (args) =>
              LEFT_TO_NODE.has(packageName(args.path))
                ? { path: args.path, external: true }
                : undefined,
            );
          },
        },
      ],
    }),
  );
  const outputs = new Map<string, string>();
  for (const [out, meta] of Object.entries(result.metafile.outputs)) {
    if (meta.entryPoint) outputs.set(relative(ROOT, join(ROOT, meta.entryPoint)), join(ROOT, out));
  }
  return outputs;
}

async function main(): Promise<number> {
  const roots = process.argv.length > 2 ? process.argv.slice(2) : ["test"];
  const files = roots.flatMap((r) => collect(join(ROOT, r), [])).map((f) => relative(ROOT, f));
  if (files.length === 0) {
    console.error(`no test files under ${roots.join(", ")}`);
    return 1;
  }
  // The whole suite drives them all: without one it would fail deep inside a test, minutes in.
  // A run of chosen files goes on (they may need none), told the same line.
  const missing = missingSystemPackages();
  if (missing.length > 0) {
    console.error(
      `npm test: ${missing.join(", ")} not found; install them with ` +
        "`sudo scripts/install-system-packages` (Debian/Ubuntu)",
    );
    if (process.argv.length <= 2) return 1;
  }
  const built = spawnSync(process.execPath, [join(ROOT, "scripts/build.mjs")], {
    cwd: ROOT,
    stdio: "inherit",
  });
  if (built.status !== 0) return 1;

  const runDir = join(CACHE, `run-${process.pid}`);
  mkdirSync(runDir, { recursive: true });
  // Scratch space the test files of this run share (outside the repo: test/support/packaging.ts
  // installs a project there once for several files).
  const runTmp = mkdtempSync(join(tmpdir(), "a2c-test-run-"));
  process.on("exit", () => {
    rmSync(runDir, { recursive: true, force: true });
    rmSync(runTmp, { recursive: true, force: true });
  });
  const started = performance.now();
  const compiled = await compileTests([...files, PURE_RUN], join(runDir, "compiled"));
  console.error(
    `tests: ${files.length} files compiled (${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
  const output = (file: string): string => compiled.get(file)!;

  const pure: string[] = [];
  /** Every unit the runner runs: what to run, and the test file it stands for. */
  const units: { path: string; file: string }[] = [];
  for (const file of files) {
    const tags = tagsOf(file);
    if (tags.has("pure")) {
      pure.push(file);
      continue;
    }
    units.push({ path: output(file), file });
    if (tags.has("both-transports")) {
      const wrapper = join(runDir, "stock-transport", `${file}.mjs`);
      mkdirSync(join(wrapper, ".."), { recursive: true });
      writeFileSync(
        wrapper,
        [
          "// The test file again, every transport fast path off (scripts/run-tests.ts).",
          'process.env.A2C_TEST_SERVER_TRANSPORT = "stock";',
          'process.env.A2C_TEST_COMPUTER_TRANSPORT = "stock";',
          `await import(${JSON.stringify(pathToFileURL(output(file)).href)});`,
          "",
        ].join("\n"),
      );
      units.push({ path: wrapper, file });
    }
  }
  if (pure.length > 0) {
    const entry = join(runDir, "pure.test.mjs");
    writeFileSync(
      entry,
      [
        "// Every @pure test file in this one process (scripts/run-tests.ts).",
        `import { runPureFiles } from ${JSON.stringify(pathToFileURL(output(PURE_RUN)).href)};`,
        `runPureFiles(${JSON.stringify(pure.map(output))}, ${JSON.stringify(pure)});`,
        "",
      ].join("\n"),
    );
    units.push({ path: entry, file: "@pure" });
  }

  const durations = readDurations();
  const known = units.every((u) => typeof durations[u.file] === "number");
  const rank = (file: string): number => {
    const i = LONG_FOLDERS.indexOf(file === "@pure" ? "" : (file.split("/")[1] ?? ""));
    return i === -1 ? LONG_FOLDERS.length : i;
  };
  units.sort((a, b) =>
    known ? durations[b.file]! - durations[a.file]! : rank(a.file) - rank(b.file),
  );
  // What the durations reporter sees (each test's source file, through the source maps) → the
  // unit it stands for: the pure files' suites are declared by pure-run.ts.
  const fileOf = new Map<string, string>([[join(ROOT, PURE_RUN), "@pure"]]);
  for (const file of files) fileOf.set(join(ROOT, file), file);

  const reported = join(runDir, "durations.json");
  const child = spawn(
    process.execPath,
    [
      "--enable-source-maps",
      "--test",
      "--test-reporter=spec",
      "--test-reporter-destination=stdout",
      `--test-reporter=${pathToFileURL(join(ROOT, "scripts/test-durations.mjs")).href}`,
      `--test-reporter-destination=${reported}`,
      `--test-concurrency=${process.env.TEST_CONCURRENCY ?? "3"}`,
      "--test-timeout=600000",
      ...units.map((u) => relative(ROOT, u.path)),
    ],
    {
      cwd: ROOT,
      stdio: "inherit",
      // Quiet logs unless asked: tests that read a process's log lines set the level they need.
      env: {
        ...process.env,
        A2C_LOG_LEVEL: process.env.A2C_LOG_LEVEL ?? "silent",
        A2C_TEST_RUN_TMP: runTmp,
      },
    },
  );
  const code = await new Promise<number>((resolve) =>
    child.on("exit", (c, signal) => resolve(c ?? (signal ? 1 : 0))),
  );
  // Durations of this run order the next one (a partial run adds what it measured).
  try {
    const measured = JSON.parse(readFileSync(reported, "utf8") || "{}") as Record<string, number>;
    const next = readDurations();
    for (const [path, ms] of Object.entries(measured)) {
      const file = fileOf.get(path);
      if (file) next[file] = ms;
    }
    writeFileSync(DURATIONS, JSON.stringify(next, null, 1));
  } catch {
    // No durations (an interrupted run): the next run orders by folder.
  }
  return code;
}

process.exitCode = await main();
