// @pure
/**
 * No Docker engine runs here, so the compose file and Dockerfile are checked statically: they
 * parse, every command runs something that exists in its image (a bin of the packages in the
 * final stage, or a script of the checkout in the demo stage), every A2C_* variable a service or
 * the image sets is one its process actually reads, ports/URLs/healthchecks agree with each
 * other, and the scale-out layout holds (two Server nodes on the `redis` service, the Agent and
 * its Computer on different nodes). test/packaging/docker-runtime.test.ts runs the final
 * stage's commands.
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
import { runInNewContext } from "node:vm";
import { parse } from "yaml";
import { parseComputerArgs } from "../../computer/config.ts";
import { generateDemoHome } from "../../scripts/stack/demo-data.ts";
import { planFromEnv } from "../../scripts/stack/env-plan.ts";
import { configFromArgs } from "../../server/config.ts";
import {
  execForm,
  healthcheck,
  last,
  repoDockerfile,
  stageEnv,
  stageNamed,
} from "../support/dockerfile.ts";

const root = join(import.meta.dirname, "..", "..");
const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), {
  merge: true,
}) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const stages = repoDockerfile(root);
const runtime = stages.at(-1)!;
const demoStage = stageNamed(stages, "demo");
const dockerignore = readFileSync(join(root, ".dockerignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith("#"));

interface Service {
  build?: string | { context: string; target?: string };
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
    if (entry === "dist" || entry === "node_modules") continue;
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

/** The bins of the workspace packages: bin name → package folder. */
const BINS = new Map<string, string>();
for (const dir of ["protocol", "agent", "server", "computer"]) {
  const pkg = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) as {
    bin?: Record<string, string>;
  };
  for (const bin of Object.keys(pkg.bin ?? {})) BINS.set(bin, dir);
}

const services = compose.services;
/** Services built from our Dockerfile (the others, like `redis`, use an official image). */
const ours = Object.entries(services).filter(([, svc]) => svc.build !== undefined);
const targetOf = (svc: Service): string | undefined =>
  typeof svc.build === "object" ? svc.build.target : undefined;
const SERVERS = ["server-a", "server-b"];

/** What a service's process is: a bin of a package (final stage) or a demo script (demo stage). */
function entryOf(name: string, svc: Service): { folders: string[]; file: string } {
  const cmd = svc.command!;
  if (targetOf(svc) === undefined) {
    assert.equal(cmd.length, 1, `${name}: the final stage runs a bin, no more: ${cmd.join(" ")}`);
    const dir = BINS.get(cmd[0]!);
    assert.ok(dir, `${name}: ${cmd[0]} is a bin of a workspace package`);
    return { folders: [dir, "protocol"], file: `${dir}/package.json` };
  }
  assert.equal(targetOf(svc), "demo", `${name}: a built stage is the final one or demo`);
  assert.equal(cmd[0], "node", `${name}: the demo stage runs node: ${cmd.join(" ")}`);
  const file = cmd.find((a) => a.endsWith(".ts")) ?? "";
  assert.ok(file.startsWith("scripts/"), `${name}: the demo stage runs a script of scripts/`);
  return { folders: ["scripts", "agent", "protocol"], file };
}

/** A service's environment as its process sees it: the image's ENV under the service's. */
function processEnv(svc: Service): Record<string, string> {
  const image = targetOf(svc) === undefined ? stageEnv(runtime) : stageEnv(demoStage);
  return { ...image, ...(svc.environment ?? {}) };
}

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
  for (const name of [...SERVERS, "computer", "computer-b"]) {
    assert.equal(targetOf(services[name]!), undefined, `${name} runs the final stage`);
  }
});

void test("every command runs what its image holds", () => {
  const copied = stages.flatMap((st) =>
    st.instructions
      .filter((i) => i.op === "COPY" && !i.args.startsWith("--from"))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1)),
  );
  for (const src of copied) assert.ok(existsSync(join(root, src)), `COPY source ${src} exists`);
  for (const [name, svc] of ours) {
    const { file } = entryOf(name, svc);
    assert.ok(existsSync(join(root, file)), `${name}: ${file} exists`);
    const top = file.split("/")[0]!;
    assert.ok(copied.includes(top), `${name}: ${top}/ is copied into the build stage`);
    assert.ok(!dockerignore.includes(top), `${name}: ${top}/ is not in .dockerignore`);
  }
});

void test("the Dockerfile: npm ci and a build, then a final stage of production dependencies on node:20, as a non-root user", () => {
  const build = stages[0]!;
  assert.match(build.from, /^node:20\b/);
  assert.ok(build.instructions.some((i) => i.op === "RUN" && /^npm ci\b/.test(i.args)));
  assert.ok(build.instructions.some((i) => i.op === "RUN" && /npm run build/.test(i.args)));
  assert.equal(demoStage.from, build.name, "the demo stage is the build stage plus a user");

  assert.match(runtime.from, /^node:20\b/);
  assert.equal(runtime.name, "runtime");
  const runs = runtime.instructions.filter((i) => i.op === "RUN").map((i) => i.args);
  assert.ok(
    runs.some((r) => /^npm ci --omit=dev\b/.test(r)),
    "production dependencies only",
  );
  const copies = runtime.instructions.filter((i) => i.op === "COPY").map((i) => i.args);
  assert.deepEqual(copies, [`--from=${build.name} /runtime/ ./`], "only the staged tree");
  const user = last(runtime, "USER")?.args;
  assert.ok(user && user !== "root" && user !== "0", `runs as a non-root user (${user})`);
  const env = stageEnv(runtime, { PATH: "/usr/bin" });
  assert.equal(env.A2C_HOST, "0.0.0.0", "listens beyond the container's loopback");
  assert.equal(env.NODE_ENV, "production");
  assert.equal(env.PATH?.split(":")[0], `${last(runtime, "WORKDIR")?.args}/node_modules/.bin`);
  const cmd = execForm(last(runtime, "CMD")!.args);
  assert.ok(BINS.has(cmd[0]!), `CMD runs a bin (${cmd.join(" ")})`);
  assert.equal(healthcheck(runtime).argv[0], "node", "no curl in slim images");
  for (const f of ["**/dist", "**/node_modules"]) {
    assert.ok(dockerignore.includes(f), `${f} of a local checkout stays out of the context`);
  }
});

void test("every A2C_* variable a service or the image sets is read by the process it runs", () => {
  for (const [name, svc] of Object.entries(services)) {
    if (svc.build === undefined) {
      const keys = Object.keys(svc.environment ?? {}).filter((k) => k.startsWith("A2C_"));
      assert.deepEqual(keys, [], `${name} runs no code of ours, so no A2C_* variable is read`);
      continue;
    }
    const { folders } = entryOf(name, svc);
    const read = envNamesIn(...folders);
    for (const key of Object.keys(processEnv(svc))) {
      if (!key.startsWith("A2C_")) continue;
      // The image's A2C_HOST is for the Server; other roles ignore it, as documented.
      if (key === "A2C_HOST" && !(svc.environment ?? {})[key] && folders[0] !== "server") continue;
      assert.ok(read.has(key), `${name} sets ${key}, but ${folders.join("/")} never reads it`);
    }
  }
});

void test("the demo data, MCP server included, is written where the Computers mount it", () => {
  const cmd = services["demo-data"]!.command!;
  assert.ok(cmd.includes("scripts/demo-home.ts"), cmd.join(" "));
  const out = cmd[cmd.indexOf("--out") + 1]!;
  const mounted = (name: string): string | undefined =>
    services[name]!.volumes?.find((v) => v.startsWith("demo:"))?.slice("demo:".length);
  assert.equal(mounted("demo-data"), out);
  // scripts/demo-home.ts writes the MCP config with the server's absolute path under --out.
  for (const c of ["computer", "computer-b"]) {
    assert.equal(mounted(c), out, `${c} mounts the demo data at the path it was written to`);
    assert.equal(processEnv(services[c]!).A2C_MCP_CONFIG, `${out}/mcp.json`);
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

/** The URL a service's healthcheck fetches: its script run against the service's environment. */
function probedUrl(svc: Service): string {
  const test = svc.healthcheck?.test ?? [];
  assert.deepEqual(test, ["CMD", ...healthcheck(runtime).argv], "the image's HEALTHCHECK command");
  const urls: string[] = [];
  runInNewContext(test[3]!, {
    process: { env: processEnv(svc), exit: () => undefined },
    fetch: (url: string) => {
      urls.push(url);
      return new Promise(() => {});
    },
  });
  assert.equal(urls.length, 1);
  return urls[0]!;
}

void test("ports, URLs and healthchecks agree", () => {
  const published = new Set<string>();
  for (const name of SERVERS) {
    const server = services[name]!;
    const port = server.environment?.A2C_PORT;
    assert.ok(port, `${name} sets A2C_PORT`);
    assert.equal(processEnv(server).A2C_HOST, "0.0.0.0", `${name} listens beyond loopback`);
    const mapped = (server.ports ?? []).map(String).filter((p) => p.endsWith(`:${port}`));
    assert.equal(mapped.length, 1, `${name}: published port maps to A2C_PORT`);
    const host = mapped[0]!.split(":")[0]!;
    assert.ok(!published.has(host), `${name}: host port ${host} not taken by another node`);
    published.add(host);
    assert.equal(probedUrl(server), `http://127.0.0.1:${port}/healthz`, `${name}'s healthcheck`);
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
    assert.equal(probedUrl(svc), `http://127.0.0.1:${port}/healthz`, `${name} probes its endpoint`);
    assert.ok(svc.healthcheck!.test.join(" ").includes("r.ok"), "only a 2xx (joined) is healthy");
    assert.equal(services.agent!.depends_on?.[name]?.condition, "service_healthy");
  }
});

/** A service's environment as compose would pass it (`${VAR:-default}` → default). */
function envOf(service: string): NodeJS.ProcessEnv {
  const raw = processEnv(services[service]!);
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
    assert.equal(plan.scenarios.length, 14);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
