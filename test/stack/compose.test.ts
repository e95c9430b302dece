/**
 * No Docker engine runs here, so the compose file and Dockerfile are checked statically: they
 * parse, every command runs something that exists in the image, every A2C_* variable a service
 * sets is one its process actually reads, and ports/URLs agree with each other.
 */
import assert from "node:assert/strict";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import { parseComputerArgs } from "../../computer/config.ts";
import { generateDemoHome } from "../../scripts/stack/demo-data.ts";
import { planFromEnv } from "../../scripts/stack/env-plan.ts";
import { configFromArgs } from "../../server/config.ts";

const root = join(import.meta.dirname, "..", "..");
const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), {
  merge: true,
}) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
const dockerignore = readFileSync(join(root, ".dockerignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith("#"));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  scripts: Record<string, string>;
};

interface Service {
  build?: unknown;
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
}

/** Every `.ts` file under `dir` (recursively). */
function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** The A2C_* names the sources of these folders mention (what the processes read). */
function envNamesIn(...dirs: string[]): Set<string> {
  const names = new Set<string>();
  for (const d of dirs) {
    for (const f of tsFiles(join(root, d))) {
      for (const m of readFileSync(f, "utf8").matchAll(/\bA2C_[A-Z0-9_]+\b/g)) names.add(m[0]);
    }
  }
  return names;
}

/** Folders whose code runs in each kind of container. */
function foldersFor(entry: string): string[] {
  const top = entry.split("/")[0]!;
  if (top === "scripts") return ["scripts", "agent", "protocol"];
  return [top, "protocol"];
}

/** The file a service's command runs (`node ... file.ts` or `npm run x` → its script's file). */
function entryFile(cmd: string[]): string {
  if (cmd[0] === "npm") {
    assert.equal(cmd[1], "run", `npm command must be "npm run <script>": ${cmd.join(" ")}`);
    const script = pkg.scripts[cmd[2]!];
    assert.ok(script, `npm script ${cmd[2]} exists in package.json`);
    const file = script.split(/\s+/).find((a) => /\.(ts|mjs|js)$/.test(a));
    assert.ok(file, `npm script ${cmd[2]} runs a file`);
    return file;
  }
  assert.equal(cmd[0], "node", `command runs node or npm: ${cmd.join(" ")}`);
  const file = cmd.find((a) => /\.(ts|mjs|js)$/.test(a));
  assert.ok(file, `node command names a file: ${cmd.join(" ")}`);
  return file;
}

const services = compose.services;

void test("compose has the server, computer and agent services, each with a command", () => {
  for (const name of ["server", "computer", "agent"]) {
    assert.ok(services[name], `service ${name}`);
  }
  for (const [name, svc] of Object.entries(services)) {
    assert.ok(Array.isArray(svc.command) && svc.command.length > 0, `${name} has a command`);
    assert.ok(svc.build !== undefined || svc.image, `${name} has an image`);
  }
});

void test("every command runs a file that exists and is copied into the image", () => {
  const copied = [...dockerfile.matchAll(/^COPY\s+(.+)\s+\S+$/gm)].flatMap((m) =>
    m[1]!.split(/\s+/),
  );
  for (const src of copied) assert.ok(existsSync(join(root, src)), `COPY source ${src} exists`);
  for (const [name, svc] of Object.entries(services)) {
    const file = entryFile(svc.command!);
    assert.ok(existsSync(join(root, file)), `${name}: ${file} exists`);
    const top = file.split("/")[0]!;
    assert.ok(copied.includes(top), `${name}: ${top}/ is copied into the image`);
    assert.ok(!dockerignore.includes(top), `${name}: ${top}/ is not in .dockerignore`);
  }
});

void test("the Dockerfile is node:20 based and installs with npm ci", () => {
  assert.match(dockerfile, /^FROM node:20\b/m);
  assert.match(dockerfile, /^RUN npm ci\b/m);
  // Files tsx needs at run time must not be ignored.
  for (const f of ["package.json", "package-lock.json", "tsconfig.json"]) {
    assert.ok(!dockerignore.includes(f), `${f} not ignored`);
  }
});

void test("every A2C_* variable a service sets is read by the process it runs", () => {
  for (const [name, svc] of Object.entries(services)) {
    const file = entryFile(svc.command!);
    const read = envNamesIn(...foldersFor(file));
    for (const key of Object.keys(svc.environment ?? {})) {
      if (!key.startsWith("A2C_")) continue;
      assert.ok(
        read.has(key),
        `${name} sets ${key}, but ${foldersFor(file).join("/")} never reads it`,
      );
    }
  }
});

void test("ports, URLs and healthchecks agree", () => {
  const server = services.server!;
  const port = server.environment?.A2C_PORT;
  assert.ok(port, "server sets A2C_PORT");
  assert.equal(server.environment?.A2C_HOST, "0.0.0.0", "server listens beyond loopback");
  assert.ok(
    (server.ports ?? []).some((p) => String(p).endsWith(`:${port}`)),
    "published port maps to A2C_PORT",
  );
  const health = (server.healthcheck?.test ?? []).join(" ");
  assert.ok(health.includes(`:${port}/healthz`), "server healthcheck probes /healthz on A2C_PORT");
  for (const [name, svc] of Object.entries(services)) {
    const url = svc.environment?.A2C_SERVER_URL;
    if (url) assert.equal(url, `http://server:${port}`, `${name} reaches the server's port`);
    for (const dep of Object.keys(svc.depends_on ?? {})) {
      assert.ok(services[dep], `${name} depends on existing service ${dep}`);
    }
    for (const v of svc.volumes ?? []) {
      const vol = String(v).split(":")[0]!;
      assert.ok(compose.volumes && vol in compose.volumes, `${name}: volume ${vol} is declared`);
    }
  }
  // The Computer and the Agent share one token with the Server.
  const tokens = server.environment?.A2C_TOKENS;
  for (const name of ["computer", "agent"]) {
    assert.equal(services[name]!.environment?.A2C_TOKEN, tokens, `${name} uses the server's token`);
  }
});

void test("the agent runs in the Computer's office and reads the demo manifest it shares", () => {
  const agent = services.agent!.environment ?? {};
  const computer = services.computer!.environment ?? {};
  assert.equal(agent.A2C_OFFICE_ID, computer.A2C_OFFICE_ID);
  assert.ok((agent.A2C_STACK_COMPUTERS ?? "").split(",").includes(computer.A2C_COMPUTER_NAME!));
  const manifest = agent.A2C_STACK_MANIFEST ?? "";
  const shared = (services.agent!.volumes ?? []).map((v) => String(v).split(":")[1]!);
  assert.ok(
    shared.some((mount) => manifest.startsWith(`${mount}/`)),
    "manifest is on a shared volume",
  );
  assert.ok(computer.A2C_SKILLS_DIR?.startsWith(shared[0]!), "skill home on the same volume");
});

/** A service's environment as compose would pass it (`${VAR:-default}` → default). */
function envOf(service: string): NodeJS.ProcessEnv {
  const raw = services[service]!.environment ?? {};
  return Object.fromEntries(
    Object.entries(raw).map(([k, v]) => [
      k,
      String(v).replace(/\$\{(\w+):-([^}]*)\}/g, (_, _name: string, dflt: string) => dflt),
    ]),
  );
}

void test("each process's own option parser accepts its service's environment", async () => {
  const server = await configFromArgs([], envOf("server"));
  assert.equal(server.port, 7100);
  assert.equal(server.host, "0.0.0.0");
  assert.deepEqual(
    server.tokens?.map((t) => (typeof t === "string" ? t : t.token)),
    [envOf("server").A2C_TOKENS],
  );

  for (const name of ["computer", "computer-b"]) {
    const env = envOf(name);
    const c = parseComputerArgs([], env);
    assert.ok(c, `${name} options`);
    assert.equal(c.server, "http://server:7100");
    assert.equal(c.office, env.A2C_OFFICE_ID);
    assert.equal(c.name, env.A2C_COMPUTER_NAME);
    assert.equal(c.token, envOf("server").A2C_TOKENS);
    assert.equal(c.skills, "/demo/home");
    assert.equal(c.mcpConfig, "/demo/mcp.json");
    assert.equal(c.stateDir, "/state");
  }

  // The agent reads a manifest the demo-data service wrote; stand one in for /demo/manifest.json.
  const dir = mkdtempSync(join(tmpdir(), "a2c-compose-"));
  try {
    const manifest = join(dir, "manifest.json");
    writeFileSync(manifest, JSON.stringify(generateDemoHome(join(dir, "home"), { bigSize: 1024 })));
    const plan = planFromEnv({ ...envOf("agent"), A2C_STACK_MANIFEST: manifest });
    assert.equal(plan.serverUrl, "http://server:7100");
    assert.equal(plan.officeId, envOf("computer").A2C_OFFICE_ID);
    assert.deepEqual(plan.computers, [envOf("computer").A2C_COMPUTER_NAME]);
    assert.equal(plan.neighbour.officeId, envOf("computer-b").A2C_OFFICE_ID);
    assert.equal(plan.neighbour.computer, envOf("computer-b").A2C_COMPUTER_NAME);
    assert.equal(plan.token, envOf("server").A2C_TOKENS);
    assert.equal(plan.scenarios.length, 13);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
