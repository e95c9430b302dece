#!/usr/bin/env node
/**
 * `npm run build`, and the build that `npm test`, `npm run bench`, `npm run stack` and
 * `npm run soak` run first: each package's `dist/` (`tsc -b`, incremental: a tree already built
 * costs about a second), then the bundled `a2c-agent` command (agent/bundle-cli.mjs), redone only
 * when something it bundles is newer. Output whose source is gone (a moved or deleted module)
 * is removed first: tsc leaves it, and `npm pack` would ship it. Processes those commands start run this shipped build on
 * plain node, as users run it, so a fresh clone needs nothing but `npm ci` before any of them.
 */
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BUNDLE = join(ROOT, "agent/dist/a2c-agent.js");
/** What the bundle is made of (agent/bundle-cli.mjs bundles dist/cli.js and what it imports). */
const BUNDLED_FROM = ["agent/dist", "protocol/dist"];
/** The workspace packages tsc builds, each from `<folder>/**.ts` into `<folder>/dist/`. */
const PACKAGES = ["protocol", "agent", "server", "computer"];
const EMITTED = /\.(?:d\.ts|js)(?:\.map)?$/;
/** Held while a build runs in this checkout (a directory: its creation is atomic). */
const LOCK = join(ROOT, "node_modules/.cache/a2c-build.lock");

/** True when the lock's holder is gone (killed mid-build): its pid is dead, or it never wrote one. */
function holderGone() {
  try {
    process.kill(Number(readFileSync(join(LOCK, "pid"), "utf8")), 0);
    return false;
  } catch (err) {
    if (err.code === "EPERM") return false;
    if (err.code === "ENOENT") {
      try {
        return Date.now() - statSync(LOCK).mtimeMs > 10_000;
      } catch {
        return true;
      }
    }
    return true;
  }
}

/**
 * Runs `fn` alone in this checkout. Processes started together through npm scripts (a Server
 * and its Computers) each build first: after a change, every one of them rebuilt everything at
 * once on the same cores, and a start took minutes. Now the others wait for the first build,
 * then find the tree current in about a second.
 */
function alone(fn) {
  mkdirSync(dirname(LOCK), { recursive: true });
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (err) {
      if (err.code !== "EEXIST") throw err;
      if (holderGone()) rmSync(LOCK, { recursive: true, force: true });
      else Atomics.wait(pause, 0, 0, 200);
    }
  }
  try {
    writeFileSync(join(LOCK, "pid"), String(process.pid));
    return fn();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/** Removes what tsc emitted for a source that no longer exists; returns how many files. */
function pruneOrphans(folder, dir = join(ROOT, folder, "dist"), rel = "") {
  if (!existsSync(dir)) return 0;
  let removed = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const sub = join(rel, entry.name);
    if (entry.isDirectory()) {
      removed += pruneOrphans(folder, path, sub);
      continue;
    }
    if (!EMITTED.test(entry.name) || path === BUNDLE) continue;
    const source = join(ROOT, folder, sub.replace(EMITTED, ".ts"));
    if (!existsSync(source)) {
      rmSync(path);
      removed++;
    }
  }
  return removed;
}

function newestJs(dir, skip) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestJs(path, skip));
    else if (entry.name.endsWith(".js") && path !== skip)
      newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

function run(what, args) {
  const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: "inherit" });
  if (r.status !== 0)
    throw new Error(`build: ${what} failed (exit ${String(r.status ?? r.signal)})`);
}

/** Builds what is stale; returns what it did, for one line of output. */
export function build() {
  const started = performance.now();
  const pruned = PACKAGES.reduce((n, folder) => n + pruneOrphans(folder), 0);
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  run("tsc -b", [tsc, "-b", "tsconfig.build.json"]);
  const bundleStale =
    !existsSync(BUNDLE) ||
    statSync(BUNDLE).mtimeMs <
      Math.max(...BUNDLED_FROM.map((d) => newestJs(join(ROOT, d), BUNDLE)));
  if (bundleStale) run("the a2c-agent bundle", ["agent/bundle-cli.mjs"]);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const notes = [
    ...(pruned > 0 ? [`${pruned} files of removed modules deleted`] : []),
    ...(bundleStale ? ["a2c-agent bundled again"] : []),
  ];
  return `build: every package's dist/ is current${notes.map((n) => `, ${n}`).join("")} (${seconds} s)`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const line = alone(build);
    if (!process.argv.includes("--quiet")) process.stderr.write(`${line}\n`);
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
