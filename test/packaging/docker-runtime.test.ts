/**
 * What the image runs, without Docker: the final stage's tree is staged exactly as its build
 * stage stages it (scripts/stage-runtime.ts), its own `npm ci` installs the production
 * dependencies, and then its CMD and HEALTHCHECK, and the Computer command of
 * docker-compose.yml, run verbatim with the stage's ENV (container paths mapped to temp dirs).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { parse } from "yaml";
import { AgentClient } from "../../agent/index.ts";
import { ChildSet, type ManagedChild } from "../../scripts/stack/children.ts";
import { stageRuntime } from "../../scripts/stage-runtime.ts";
import { execForm, healthcheck, last, repoDockerfile, stageEnv } from "../support/dockerfile.ts";
import {
  REPO_ROOT,
  freePort,
  installedPackages,
  sh,
  stopWith,
  userEnv,
  withBuild,
} from "../support/packaging.ts";

const DEV_TOOLS = ["tsx", "typescript", "esbuild", "eslint", "prettier", "typescript-eslint"];

const runtime = repoDockerfile(REPO_ROOT).at(-1)!;
const workdir = last(runtime, "WORKDIR")!.args;
const compose = parse(readFileSync(join(REPO_ROOT, "docker-compose.yml"), "utf8"), {
  merge: true,
}) as { services: Record<string, { command: string[]; environment: Record<string, string> }> };

let root: string;
let app: string;
let children: ChildSet;

/**
 * Container paths in a value (`/app/...`, or a `:`-separated list such as PATH) → the temp dirs
 * that stand in for them.
 */
function mapPaths(value: string, map: Record<string, string>): string {
  return value
    .split(":")
    .map((part) => {
      for (const [from, to] of Object.entries(map)) {
        if (part === from || part.startsWith(`${from}/`)) return to + part.slice(from.length);
      }
      return part;
    })
    .join(":");
}

/** The final stage's ENV as the container sees it, paths mapped; plus `extra`. */
function imageEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = stageEnv(runtime, { PATH: process.env.PATH });
  const mapped = Object.fromEntries(
    Object.entries(env).map(([k, v]) => [k, mapPaths(v, { [workdir]: app })]),
  );
  return userEnv({ ...mapped, ...extra });
}

/** Runs an exec-form command the way Docker would (no shell); resolves with its exit code. */
function runExec(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    execFile(argv[0]!, argv.slice(1), { cwd: app, env }, (err) => {
      resolve(err ? (typeof err.code === "number" ? err.code : 1) : 0);
    });
  });
}

/** Starts an exec-form command as a group leader; `onLine` sees each stdout line. */
function startExec(
  name: string,
  argv: string[],
  env: NodeJS.ProcessEnv,
  onLine?: (line: string) => void,
): ManagedChild {
  return children.spawn({
    name,
    command: argv[0]!,
    args: argv.slice(1),
    cwd: app,
    env,
    ...(onLine ? { onLine } : {}),
  });
}

/** The image's CMD (the Server); resolves once it printed its `listening on` line. */
async function startCmd(env: NodeJS.ProcessEnv): Promise<{ child: ManagedChild; line: string }> {
  let announce: (line: string) => void = () => {};
  const listening = new Promise<string>((r) => (announce = r));
  const child = startExec("cmd", execForm(last(runtime, "CMD")!.args), env, (l) => {
    if (l.startsWith("listening on ")) announce(l);
  });
  const line = await Promise.race([
    listening,
    child.exited.then((code) => {
      throw new Error(`CMD exited ${code}:\n${child.tail().join("\n")}`);
    }),
  ]);
  return { child, line };
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "a2c-docker-runtime-"));
  app = join(root, "app");
  children = new ChildSet(root);
  await withBuild(() => stageRuntime(app));
  // The stage's own install command (its cache clean and mkdirs are for the image only).
  const install = runtime.instructions
    .filter((i) => i.op === "RUN")
    .flatMap((i) => i.args.split("&&").map((part) => part.trim()))
    .find((part) => part.startsWith("npm ci"));
  assert.ok(install, "the final stage runs npm ci");
  const [npm, ...args] = install.split(/\s+/);
  await sh(npm!, [...args, "--prefer-offline"], { cwd: app });
});

after(async () => {
  await children.stopAll();
  await rm(root, { recursive: true, force: true });
});

void test("the final stage holds no TypeScript source and no dev tool", async () => {
  const sources: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir)) {
      if (e === "node_modules") continue;
      const p = join(dir, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith(".ts") && !p.endsWith(".d.ts")) sources.push(p);
    }
  };
  walk(app);
  assert.deepEqual(sources, []);
  const installed = await installedPackages(app);
  assert.deepEqual(
    installed.filter((n) => DEV_TOOLS.includes(n)),
    [],
  );
  for (const pkg of ["@a2c-smcp/server", "@a2c-smcp/computer", "@a2c-smcp/agent"]) {
    assert.ok(installed.includes(pkg), `${pkg} is installed`);
  }
});

void test("CMD serves on 0.0.0.0, HEALTHCHECK passes, SIGTERM ends it with exit 0", async () => {
  const port = String(await freePort());
  const env = imageEnv({ A2C_PORT: port, A2C_TOKENS: randomBytes(16).toString("hex") });
  const server = await startCmd(env);
  assert.equal(server.line, `listening on http://0.0.0.0:${port}`);
  const probe = healthcheck(runtime).argv;
  assert.equal(await runExec(probe, env), 0, "healthy while it serves");
  const closed = String(await freePort());
  assert.equal(await runExec(probe, { ...env, A2C_PORT: closed }), 1, "unhealthy: nothing there");
  assert.equal(await stopWith(server.child, "SIGTERM"), 0);
});

void test("the compose Computer command on the final stage joins, is healthy and serves the demo MCP tools", async () => {
  const token = randomBytes(16).toString("hex");
  const port = String(await freePort());
  const serverEnv = imageEnv({ A2C_PORT: port, A2C_TOKENS: token, A2C_HOST: "127.0.0.1" });
  const server = await startCmd(serverEnv);
  const url = `http://127.0.0.1:${port}`;

  // The demo-data service's command (demo stage: this checkout through tsx), paths mapped.
  const paths = { "/demo": join(root, "demo"), [workdir]: app };
  const demoData = compose.services["demo-data"]!.command.map((a) => mapPaths(a, paths));
  await sh(demoData[0]!, [...demoData.slice(1), "--big-mib", "1"], { cwd: REPO_ROOT });

  const svc = compose.services.computer!;
  const env = Object.fromEntries(
    Object.entries(svc.environment).map(([k, v]) => [
      k,
      mapPaths(v.replace(/\$\{\w+:-[^}]*\}/, token), { ...paths, "/state": join(root, "state") }),
    ]),
  );
  const httpPort = String(await freePort());
  const computerEnv = imageEnv({ ...env, A2C_SERVER_URL: url, A2C_HTTP_PORT: httpPort });
  const computer = startExec("computer", svc.command, computerEnv);

  const agent = new AgentClient({ url, token });
  try {
    await agent.connect();
    await agent.joinOffice(env.A2C_OFFICE_ID!);
    await agent.waitForComputer(env.A2C_COMPUTER_NAME!, { timeoutMs: 60_000 });
    const tools = await agent.getTools(env.A2C_COMPUTER_NAME!);
    assert.ok(
      tools.some((t) => t.name === "demo__png"),
      "the built demo MCP server runs",
    );
  } finally {
    await agent.close();
  }
  assert.equal(await runExec(healthcheck(runtime).argv, computerEnv), 0, "joined: healthy");
  assert.equal(await stopWith(computer, "SIGTERM"), 0);
  assert.equal(await stopWith(server.child, "SIGTERM"), 0);
});
