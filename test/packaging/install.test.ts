/**
 * The packages as a user gets them: the four `npm pack` tarballs installed into fresh projects
 * outside the repo (the one with all four is made once per test run and shared with
 * bin-signals.test.ts: test/support/packaging.ts `packedProject`). There, plain node (no tsx, no
 * loader) imports the Agent SDK from dist/, the installed a2c-server and a2c-computer bins serve
 * a skill asset that AgentClient.downloadBlob
 * pulls and verifies, a strict TypeScript consumer type-checks against the shipped .d.ts with
 * the project's own TypeScript, and a project installing only the SDK holds no Server or
 * Computer dependency.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { standaloneDemoMcpServer } from "../../scripts/demo/mcp-command.ts";
import { writeRandomFile, writeSkill } from "../support/agent-stack.ts";
import {
  Bins,
  cmdline,
  freePort,
  installProject,
  installedPackages,
  packedProject,
  sh,
  REPO_ROOT,
  type Packed,
} from "../support/packaging.ts";

const ASSET_BYTES = 4 * 1024 * 1024 + 4099;
/** What only the Server or the Computer needs; none of it may reach an SDK install. */
const NOT_FOR_THE_SDK = [
  "redis",
  "@redis/client",
  "piscina",
  "@modelcontextprotocol/sdk",
  "hono",
  "@hono/node-server",
  "express",
  "engine.io",
  "socket.io",
  "@socket.io/redis-adapter",
  "prom-client",
  "yaml",
];

let root: string;
let packed: Packed;
let full: string;
let sdkOnly: string;
let work: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), "a2c-packaging-"));
  work = join(root, "work");
  // Every tarball with TypeScript and @types/node: this run's one install of them.
  ({ packed, project: full } = await packedProject(root));
  sdkOnly = await installProject(join(root, "sdk"), [
    packed.tarballs.agent,
    packed.tarballs.protocol,
  ]);
});

after(() => rm(root, { recursive: true, force: true }));

void test("each tarball holds its dist/, package.json and README.md, and nothing else", async () => {
  for (const [dir, tgz] of Object.entries(packed.tarballs)) {
    const listing = (await sh("tar", ["-tzf", tgz], { cwd: full })).split("\n").filter(Boolean);
    const outside = listing.filter(
      (p) =>
        !/^package\/dist\/.+\.(js|d\.ts)$/.test(p) &&
        p !== "package/package.json" &&
        p !== "package/README.md",
    );
    assert.deepEqual(outside, [], `${dir}: files besides dist/*.js, *.d.ts, package.json, README`);
    assert.ok(listing.includes("package/README.md"), `${dir} ships its README`);
  }
});

void test("plain node imports the Agent SDK from the installed dist/", async () => {
  const script = `
    const sdk = await import("@a2c-smcp/agent");
    const protocol = await import("@a2c-smcp/protocol");
    console.log(JSON.stringify({
      agent: import.meta.resolve("@a2c-smcp/agent"),
      protocol: import.meta.resolve("@a2c-smcp/protocol"),
      AgentClient: typeof sdk.AgentClient,
      version: protocol.PROTOCOL_VERSION,
      loaders: process.execArgv.filter((a) => /^--(import|loader|require|conditions|experimental)/.test(a)),
    }));`;
  const out = await sh(process.execPath, ["--input-type=module", "-e", script], { cwd: full });
  const seen = JSON.parse(out) as Record<string, unknown>;
  assert.equal(seen.agent, `file://${full}/node_modules/@a2c-smcp/agent/dist/index.js`);
  assert.equal(seen.protocol, `file://${full}/node_modules/@a2c-smcp/protocol/dist/index.js`);
  assert.equal(seen.AgentClient, "function");
  assert.equal(seen.version, "0.4.0");
  assert.deepEqual(seen.loaders, []);
});

void test("the installed bins serve a skill asset; downloadBlob pulls and verifies it", async (t) => {
  const token = randomBytes(16).toString("hex");
  const home = join(work, "home");
  await writeSkill(home, "demo", "# Demo\n");
  const sha256 = await writeRandomFile(join(home, "user/demo/assets/blob.bin"), ASSET_BYTES);
  const mcpConfig = join(work, "mcp.json");
  // The demo MCP server ships in no package: one self-contained file, outside the repo.
  const demoServer = join(work, "mcp", "demo-server.mjs");
  await standaloneDemoMcpServer(demoServer);
  await writeFile(
    mcpConfig,
    JSON.stringify({ mcpServers: { demo: { command: process.execPath, args: [demoServer] } } }),
  );

  const bins = new Bins(full, work);
  t.after(() => bins.set.stopAll());
  const server = await bins.server(token);
  const httpPort = await freePort();
  const computer = bins.start("a2c-computer", [
    ...["--server", server.url, "--office", "office-1", "--name", "pc-1", "--token", token],
    ...["--skills", home, "--mcp-config", mcpConfig, "--state-dir", join(work, "state")],
    ...["--workers", "1", "--http-port", String(httpPort)],
  ]);

  const out = join(work, "blob.bin");
  const script = `
    import { createHash } from "node:crypto";
    import { readFile } from "node:fs/promises";
    import { AgentClient } from "@a2c-smcp/agent";
    const [url, token, out] = process.argv.slice(1);
    const agent = new AgentClient({ url, token });
    await agent.connect();
    await agent.joinOffice("office-1");
    await agent.waitForComputer("pc-1", { timeoutMs: 60_000 });
    const skill = await agent.getSkill("pc-1", "demo", "assets/blob.bin");
    const info = await agent.downloadBlob("pc-1", skill.blob_handle, out, {
      expectedSha256: skill.sha256,
    });
    const onDisk = createHash("sha256").update(await readFile(out)).digest("hex");
    const tools = (await agent.getTools("pc-1")).map((tool) => tool.name);
    await agent.close();
    console.log(JSON.stringify({ sha256: info.sha256, size: info.totalSize, onDisk, tools }));`;
  const pulled = JSON.parse(
    await sh(process.execPath, ["--input-type=module", "-e", script, server.url, token, out], {
      cwd: full,
    }),
  ) as { sha256: string; size: number; onDisk: string; tools: string[] };
  assert.deepEqual(
    { sha256: pulled.sha256, size: pulled.size, onDisk: pulled.onDisk },
    { sha256, size: ASSET_BYTES, onDisk: sha256 },
  );
  // The shebang ran node itself with the process tuning, no launcher process in between. Read
  // now that both served the pull: /usr/bin/env has long exec'd node.
  for (const child of [server.child, computer]) {
    const argv = await cmdline(child.pid);
    assert.equal(argv[0], "node");
    assert.deepEqual(argv.slice(1, 3), ["--max-semi-space-size=4", "--heap-growing-percent=300"]);
  }
  // The demo MCP server runs from the installed package's dist/ too.
  assert.ok(pulled.tools.includes("demo__png"), `demo tools listed: ${pulled.tools.join(", ")}`);
  // The asset is over the inline-hash size: the pool thread (dist/workers/hash-file.js) hashed it.
  const metrics = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  assert.match(metrics, /^a2c_computer_hash_computations_total\{[^}]*path="pool"[^}]*\} [1-9]/m);
});

/** The first `ts` code block of the README's "Use it in your project" section. */
async function readmeExample(): Promise<string> {
  const readme = await readFile(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Use it in your project"));
  const m = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(m, "the README's SDK example");
  return m[1]!;
}

void test("a strict TypeScript consumer and the README's example type-check against the shipped .d.ts", async () => {
  await writeFile(join(full, "readme-example.ts"), await readmeExample());
  const consumer = join(full, "consumer.ts");
  await writeFile(
    consumer,
    `import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { AgentClient, IntegrityError, silentLogger, type PullInfo } from "@a2c-smcp/agent";
import { GetBlobRetSchema, PROTOCOL_VERSION, type GetBlobRet } from "@a2c-smcp/protocol";
import { TokenAuthProvider, startServer, type RunningServer } from "@a2c-smcp/server";
import { startComputer, type Producer, type RunningComputer } from "@a2c-smcp/computer";

export async function fetchAsset(url: string, token: string, out: string): Promise<PullInfo> {
  const agent = new AgentClient({ url, token, logger: silentLogger });
  await agent.connect();
  await agent.joinOffice("office-1");
  const skill = await agent.getSkill("pc-1", "demo", "assets/blob.bin");
  if (skill.blob_handle === undefined) throw new Error("served inline");
  const info = await agent.downloadBlob("pc-1", skill.blob_handle, out, {
    expectedSha256: skill.sha256,
  });
  const digest = createHash("sha256").update(await readFile(out)).digest("hex");
  if (digest !== info.sha256) throw new IntegrityError("sha256 mismatch");
  await agent.close();
  return info;
}

export const parse = (raw: unknown): GetBlobRet => GetBlobRetSchema.parse(raw);
export const version: string = PROTOCOL_VERSION;
export type AnyProducer = Producer;

export async function stack(): Promise<[RunningServer, RunningComputer]> {
  const server = await startServer({ port: 0, auth: new TokenAuthProvider([{ token: "t" }]) });
  const computer = await startComputer({ server: server.url, office: "o", name: "pc", token: "t" });
  return [server, computer];
}
`,
  );
  const base = {
    target: "es2022",
    module: "nodenext",
    types: ["node"],
    strict: true,
    noEmit: true,
  };
  // The consumer: our .d.ts and every library's checked (skipLibCheck off), with stricter flags
  // than ours; only the .d.ts ship, so nothing of our sources' settings can help.
  const strict = {
    ...base,
    skipLibCheck: false,
    noUncheckedIndexedAccess: true,
    noPropertyAccessFromIndexSignature: true,
    exactOptionalPropertyTypes: true,
  };
  // The README's example as a reader would compile it (the libraries are checked above).
  const readme = { ...base, skipLibCheck: true };
  const tsc = join(full, "node_modules/typescript/bin/tsc");
  for (const [name, compilerOptions, file] of [
    ["tsconfig.strict.json", strict, "consumer.ts"],
    ["tsconfig.readme.json", readme, "readme-example.ts"],
  ] as const) {
    await writeFile(join(full, name), JSON.stringify({ compilerOptions, files: [file] }));
    await sh(process.execPath, [tsc, "-p", join(full, name)], { cwd: full });
  }
});

void test("a project installing only the SDK holds no Server or Computer dependency", async (t) => {
  const installed = await installedPackages(sdkOnly);
  assert.deepEqual(
    installed.filter((name) => NOT_FOR_THE_SDK.includes(name)),
    [],
  );
  assert.ok(installed.includes("socket.io-client") && installed.includes("zod"));
  const kib = Number(
    (await sh("du", ["-sk", join(sdkOnly, "node_modules")], { cwd: sdkOnly })).split("\t")[0],
  );
  t.diagnostic(`SDK-only install: ${installed.length} packages, ${kib} KiB of node_modules`);
  for (const [dir, s] of Object.entries(packed.stats)) {
    t.diagnostic(`${dir}: ${s.size} B packed, ${s.unpackedSize} B unpacked, ${s.entryCount} files`);
  }
});
