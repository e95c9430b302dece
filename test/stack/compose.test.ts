/**
 * No Docker engine runs here, so the compose file and Dockerfile are checked statically: they
 * parse, every command runs something that exists in the image, every A2C_* variable a service
 * sets is one its process actually reads, ports/URLs agree with each other, and the scale-out
 * layout holds (two Server nodes on the `redis` service, the Agent and its Computer on different
 * nodes).
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
/** Services built from our Dockerfile (the others, like `redis`, use an official image). */
const ours = Object.entries(services).filter(([, svc]) => svc.build !== undefined);
const SERVERS = ["server-a", "server-b"];

void test("compose has redis, two server nodes, the computers and the agent, each with a command", () => {
  for (const name of ["redis", ...SERVERS, "computer", "computer-b", "agent"]) {
    assert.ok(services[name], `service ${name}`);
  }
  for (const [name, svc] of Object.entries(services)) {
    assert.ok(Array.isArray(svc.command) && svc.command.length > 0, `${name} has a command`);
    assert.ok(svc.build !== undefined || svc.image, `${name} has an image`);
  }
  const redis = services.redis!;
  assert.match(redis.image ?? "", /^redis:7(\b|$)/, "official redis:7 image");
  assert.equal(redis.build, undefined);
  assert.deepEqual(redis.healthcheck?.test, ["CMD", "redis-cli", "ping"]);
});

void test("every command runs a file that exists and is copied into the image", () => {
  const copied = [...dockerfile.matchAll(/^COPY\s+(.+)\s+\S+$/gm)].flatMap((m) =>
    m[1]!.split(/\s+/),
  );
  for (const src of copied) assert.ok(existsSync(join(root, src)), `COPY source ${src} exists`);
  for (const [name, svc] of ours) {
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
    if (svc.build === undefined) {
      const keys = Object.keys(svc.environment ?? {}).filter((k) => k.startsWith("A2C_"));
      assert.deepEqual(keys, [], `${name} runs no code of ours, so no A2C_* variable is read`);
      continue;
    }
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

/** `http://server-a:7100` → its service name, after checking it is a node on its own port. */
function nodeOf(who: string, url: string | undefined): string {
  const m = /^http:\/\/([\w-]+):(\d+)$/.exec(url ?? "");
  assert.ok(m, `${who}: ${url} is http://<service>:<port>`);
  const [, host, port] = m;
  assert.ok(SERVERS.includes(host!), `${who}: ${host} is a Server node`);
  assert.equal(port, services[host!]!.environment?.A2C_PORT, `${who} reaches ${host}'s port`);
  return host!;
}

void test("ports, URLs and healthchecks agree", () => {
  const published = new Set<string>();
  for (const name of SERVERS) {
    const server = services[name]!;
    const port = server.environment?.A2C_PORT;
    assert.ok(port, `${name} sets A2C_PORT`);
    assert.equal(server.environment?.A2C_HOST, "0.0.0.0", `${name} listens beyond loopback`);
    const mapped = (server.ports ?? []).map(String).filter((p) => p.endsWith(`:${port}`));
    assert.equal(mapped.length, 1, `${name}: published port maps to A2C_PORT`);
    const host = mapped[0]!.split(":")[0]!;
    assert.ok(!published.has(host), `${name}: host port ${host} not taken by another node`);
    published.add(host);
    const health = (server.healthcheck?.test ?? []).join(" ");
    assert.ok(health.includes(`:${port}/healthz`), `${name} healthcheck probes /healthz`);
  }
  for (const [name, svc] of Object.entries(services)) {
    const url = svc.environment?.A2C_SERVER_URL;
    if (url) {
      const node = nodeOf(name, url);
      assert.equal(
        svc.depends_on?.[node]?.condition,
        "service_healthy",
        `${name} waits for ${node}`,
      );
    }
    for (const dep of Object.keys(svc.depends_on ?? {})) {
      assert.ok(services[dep], `${name} depends on existing service ${dep}`);
    }
    for (const v of svc.volumes ?? []) {
      const vol = String(v).split(":")[0]!;
      assert.ok(compose.volumes && vol in compose.volumes, `${name}: volume ${vol} is declared`);
    }
  }
  // The nodes, the Computers and the Agent share one token.
  const tokens = services["server-a"]!.environment?.A2C_TOKENS;
  assert.equal(services["server-b"]!.environment?.A2C_TOKENS, tokens, "both nodes accept it");
  for (const name of ["computer", "computer-b", "agent"]) {
    assert.equal(services[name]!.environment?.A2C_TOKEN, tokens, `${name} uses the server's token`);
  }
});

void test("both nodes use the redis service and the Agent reaches its Computer via the other node", () => {
  for (const name of SERVERS) {
    const url = new URL(services[name]!.environment?.A2C_REDIS_URL ?? "missing:");
    assert.equal(url.protocol, "redis:", `${name}: A2C_REDIS_URL is a redis:// URL`);
    assert.equal(url.hostname, "redis", `${name}: points at the redis service`);
    assert.equal(url.port || "6379", "6379", `${name}: on Redis's own port`);
    assert.equal(services[name]!.depends_on?.redis?.condition, "service_healthy");
  }
  const agent = services.agent!.environment ?? {};
  const agentNode = nodeOf("agent", agent.A2C_SERVER_URL);
  const computerNode = nodeOf("computer", services.computer!.environment?.A2C_SERVER_URL);
  assert.notEqual(agentNode, computerNode, "office A crosses nodes");
  const intruderNode = nodeOf("agent (other)", agent.A2C_STACK_OTHER_SERVER_URL);
  assert.notEqual(intruderNode, agentNode, "the probe's second Agent joins via the other node");
  assert.notEqual(
    nodeOf("computer-b", services["computer-b"]!.environment?.A2C_SERVER_URL),
    computerNode,
    "the Computers are spread over both nodes",
  );
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

void test("each Computer's healthcheck probes its own /healthz; the Agent waits for them", () => {
  for (const name of ["computer", "computer-b"]) {
    const svc = services[name]!;
    const port = svc.environment?.A2C_HTTP_PORT;
    assert.ok(port, `${name} sets A2C_HTTP_PORT`);
    assert.equal(svc.environment?.A2C_HTTP_HOST, undefined, "loopback: the probe runs inside");
    const health = (svc.healthcheck?.test ?? []).join(" ");
    assert.ok(health.includes(`http://127.0.0.1:${port}/healthz`), `${name} probes its endpoint`);
    assert.ok(health.includes("r.ok"), `${name}: only a 2xx (joined) is healthy`);
    assert.equal(services.agent!.depends_on?.[name]?.condition, "service_healthy");
  }
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
  const token = envOf("server-a").A2C_TOKENS;
  for (const name of SERVERS) {
    const server = await configFromArgs([], envOf(name));
    assert.equal(server.port, 7100);
    assert.equal(server.host, "0.0.0.0");
    assert.deepEqual(
      server.tokens?.map((t) => (typeof t === "string" ? t : t.token)),
      [token],
    );
    assert.equal(server.redis?.url, "redis://redis:6379", `${name} runs on the Redis`);
  }

  for (const name of ["computer", "computer-b"]) {
    const env = envOf(name);
    const c = parseComputerArgs([], env);
    assert.ok(c, `${name} options`);
    assert.equal(c.server, env.A2C_SERVER_URL);
    assert.equal(c.office, env.A2C_OFFICE_ID);
    assert.equal(c.name, env.A2C_COMPUTER_NAME);
    assert.equal(c.token, token);
    assert.equal(c.skills, "/demo/home");
    assert.equal(c.mcpConfig, "/demo/mcp.json");
    assert.equal(c.stateDir, "/state");
    assert.equal(c.http?.port, Number(env.A2C_HTTP_PORT), `${name} serves /healthz`);
    assert.equal(c.http?.host, undefined, `${name}'s endpoint stays on the container's loopback`);
  }

  // The agent reads a manifest the demo-data service wrote; stand one in for /demo/manifest.json.
  const dir = mkdtempSync(join(tmpdir(), "a2c-compose-"));
  try {
    const manifest = join(dir, "manifest.json");
    writeFileSync(manifest, JSON.stringify(generateDemoHome(join(dir, "home"), { bigSize: 1024 })));
    const plan = planFromEnv({ ...envOf("agent"), A2C_STACK_MANIFEST: manifest });
    assert.equal(plan.serverUrl, "http://server-a:7100");
    assert.equal(plan.otherServerUrl, "http://server-b:7100");
    assert.equal(plan.officeId, envOf("computer").A2C_OFFICE_ID);
    assert.deepEqual(plan.computers, [envOf("computer").A2C_COMPUTER_NAME]);
    assert.equal(plan.neighbour.officeId, envOf("computer-b").A2C_OFFICE_ID);
    assert.equal(plan.neighbour.computer, envOf("computer-b").A2C_COMPUTER_NAME);
    assert.equal(plan.token, token);
    assert.equal(plan.scenarios.length, 13);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
