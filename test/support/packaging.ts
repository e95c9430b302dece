/**
 * Helpers for the packaging tests: build the packages once at a time, `npm pack` them, install
 * the tarballs into fresh projects outside the repo (from npm's cache: `--prefer-offline`), and
 * run the installed bins as process-group leaders with plain node.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { TestContext } from "node:test";
import { waitGroupGone } from "../../scripts/launch/process.ts";
import { ChildSet, type ManagedChild } from "../../scripts/stack/children.ts";
import { REPO_ROOT } from "./agent-stack.ts";

export { REPO_ROOT };

const run = promisify(execFile);

/** The workspace folders, in build order. */
export const PACKAGE_DIRS = ["protocol", "agent", "server", "computer"] as const;
export type PackageDir = (typeof PACKAGE_DIRS)[number];

/**
 * The environment of a process a user would start: ours without what npm, the test runner or a
 * loader put in it (npm_* settings would steer the scratch installs; NODE_OPTIONS could load
 * tsx; the runner's NODE_TEST_CONTEXT, A2C_LOG_LEVEL and A2C_TEST_RUN_TMP are the suite's, not a
 * user's).
 */
export function userEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("npm_") || k === "NODE_OPTIONS" || k === "NODE_TEST_CONTEXT") continue;
    if (k === "A2C_LOG_LEVEL" || k === "A2C_TEST_RUN_TMP") continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** Runs a command to completion; rejects with its output on a non-zero exit. */
export async function sh(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? userEnv(),
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(" ")} failed: ${e.message}\n${e.stdout}\n${e.stderr}`);
  }
}

/** A temp directory outside the repo, removed after the test. */
export async function scratchDir(t: TestContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `a2c-${prefix}-`));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const LOCK = join(
  tmpdir(),
  `a2c-build-${createHash("sha256").update(REPO_ROOT).digest("hex").slice(0, 12)}.lock`,
);

/** True while the process that wrote the lock file is alive. */
function lockHeld(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(lock, "utf8"));
  } catch {
    return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function acquireLock(lock: string): Promise<void> {
  for (;;) {
    try {
      const fd = openSync(lock, "wx");
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    // Another test file holds it right now (or died holding it): wait, or take over.
    if (!lockHeld(lock)) unlinkSync(lock);
    else await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * `npm run build` (scripts/build.mjs: what is stale only), then `fn` on the fresh dist/ trees.
 * Test files run in parallel processes, and a build rewrites dist/ under a concurrent `npm pack`:
 * one at a time. Only what is stale: the CLI bundle rewritten under other test files that start
 * the CLI from it would fail them.
 */
export async function withBuild<T>(fn: () => Promise<T>): Promise<T> {
  await acquireLock(LOCK);
  try {
    await sh(process.execPath, [join(REPO_ROOT, "scripts/build.mjs"), "--quiet"], {
      cwd: REPO_ROOT,
    });
    return await fn();
  } finally {
    unlinkSync(LOCK);
  }
}

export interface Packed {
  /** Tarball path per workspace folder. */
  tarballs: Record<PackageDir, string>;
  /** `npm pack --json` of each: size (packed bytes), unpackedSize, entryCount. */
  stats: Record<PackageDir, { size: number; unpackedSize: number; entryCount: number }>;
}

/** Builds and packs the four packages into `dest`. */
export async function packAll(dest: string): Promise<Packed> {
  const out = await withBuild(() =>
    sh("npm", ["pack", "--workspaces", "--pack-destination", dest, "--json"], {
      cwd: REPO_ROOT,
    }),
  );
  const entries = JSON.parse(out) as {
    name: string;
    filename: string;
    size: number;
    unpackedSize: number;
    entryCount: number;
  }[];
  const tarballs = {} as Packed["tarballs"];
  const stats = {} as Packed["stats"];
  for (const e of entries) {
    const dir = e.name.replace("@a2c-smcp/", "") as PackageDir;
    tarballs[dir] = join(dest, e.filename);
    stats[dir] = { size: e.size, unpackedSize: e.unpackedSize, entryCount: e.entryCount };
  }
  return { tarballs, stats };
}

/** A fresh ESM project in `dir` with `specs` installed (tarball paths or registry specs). */
export async function installProject(dir: string, specs: string[]): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({ name: "scratch", version: "1.0.0", private: true, type: "module" }),
  );
  await sh("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ...specs], {
    cwd: dir,
  });
  return dir;
}

/**
 * The four tarballs and a fresh project outside the repo with all of them installed, plus
 * TypeScript and @types/node (a consumer type-checks there): made once per test run and shared by
 * the files that need it (the runner's `A2C_TEST_RUN_TMP`, removed when the run ends), so `npm pack`
 * and the install run once, not once per file. The files only read it or add files of their own
 * names. Outside the runner, made under `root`.
 */
export async function packedProject(root: string): Promise<{ packed: Packed; project: string }> {
  const shared = process.env.A2C_TEST_RUN_TMP;
  const dir = shared ? join(shared, "packaged") : join(root, "packaged");
  const ready = join(dir, "ready.json");
  const make = async (): Promise<{ packed: Packed; project: string }> => {
    await mkdir(dir, { recursive: true });
    const packed = await packAll(dir);
    const project = await installProject(join(dir, "app"), [
      ...Object.values(packed.tarballs),
      rootDevSpec("typescript"),
      rootDevSpec("@types/node"),
    ]);
    await writeFile(ready, JSON.stringify({ packed, project }));
    return { packed, project };
  };
  if (!shared) return make();
  // One file makes it while the others wait; a file that died holding the lock leaves it to the next.
  const lock = join(shared, "packaged.lock");
  await acquireLock(lock);
  try {
    try {
      return JSON.parse(await readFile(ready, "utf8")) as { packed: Packed; project: string };
    } catch {
      await rm(dir, { recursive: true, force: true });
      return await make();
    }
  } finally {
    unlinkSync(lock);
  }
}

/** A dev dependency spec of the repo's root package.json (`typescript@^5.9.3`). */
export function rootDevSpec(name: string): string {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
    devDependencies: Record<string, string>;
  };
  return `${name}@${pkg.devDependencies[name]}`;
}

/** Every package directory in a project's node_modules (nested ones too), by name. */
export async function installedPackages(project: string): Promise<string[]> {
  const names = new Set<string>();
  const walk = async (nm: string): Promise<void> => {
    let entries: string[];
    try {
      entries = await readdir(nm);
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.startsWith(".")) continue;
      const dirs = e.startsWith("@")
        ? (await readdir(join(nm, e))).map((s) => [`${e}/${s}`, join(nm, e, s)] as const)
        : [[e, join(nm, e)] as const];
      for (const [name, path] of dirs) {
        names.add(name);
        await walk(join(path, "node_modules"));
      }
    }
  };
  await walk(join(project, "node_modules"));
  return [...names].sort();
}

/** A port that was free a moment ago (for a flag that cannot say "any free port" back to us). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** Installed bins started as process-group leaders; `stopAll` on teardown. */
export class Bins {
  readonly set: ChildSet;

  constructor(
    readonly project: string,
    logDir: string,
  ) {
    this.set = new ChildSet(logDir);
  }

  /** Starts `node_modules/.bin/<bin>` itself: its shebang decides how node runs. */
  start(
    bin: string,
    args: string[],
    env: NodeJS.ProcessEnv = {},
    onLine?: (line: string) => void,
  ): ManagedChild {
    return this.set.spawn({
      name: `${bin}-${this.set.children.length}`,
      command: join(this.project, "node_modules", ".bin", bin),
      args,
      cwd: this.project,
      env: userEnv({ A2C_LOG_LEVEL: "info", ...env }),
      ...(onLine ? { onLine } : {}),
    });
  }

  /** Starts a2c-server on a free port; resolves with its URL once it printed it. */
  async server(token: string, extra: string[] = []): Promise<{ child: ManagedChild; url: string }> {
    let announce: (url: string) => void = () => {};
    const listening = new Promise<string>((r) => (announce = r));
    const child = this.start("a2c-server", ["--port", "0", "--token", token, ...extra], {}, (l) => {
      const m = /^listening on (\S+)/.exec(l);
      if (m) announce(m[1]!);
    });
    const url = await Promise.race([
      listening,
      child.exited.then((code) => {
        throw new Error(`a2c-server exited ${code}:\n${child.tail().join("\n")}`);
      }),
    ]);
    return { child, url };
  }
}

/** `/proc/<pid>/cmdline` as argv (Linux). */
export async function cmdline(pid: number): Promise<string[]> {
  return (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0").filter(Boolean);
}

/** How long a stopping process may take before the test calls it hung (not a speed target). */
export const HANG_GUARD_MS = 15_000;

/**
 * Sends `signal` to a child's process; resolves with its exit code once its whole process group
 * is gone. Fails if it hangs, if it was killed by the signal instead of exiting, or if it left a
 * process behind.
 */
export async function stopWith(child: ManagedChild, signal: NodeJS.Signals): Promise<number> {
  process.kill(child.pid, signal);
  const code = await Promise.race([
    child.exited,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${child.name} still running`)), HANG_GUARD_MS).unref(),
    ),
  ]);
  assert.equal(child.process.signalCode, null, `${child.name} exited by itself, not by ${signal}`);
  assert.ok(await waitGroupGone(child.pid, HANG_GUARD_MS), `${child.name} left a process`);
  return code;
}
