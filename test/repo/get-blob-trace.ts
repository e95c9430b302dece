/**
 * Runs a Server, a Computer and an Agent in this process, pulls one skill asset (warm-up), then
 * pulls another with V8's precise coverage counting calls, and prints the repository files
 * whose functions ran during that pull (test/repo/trace-calls.ts; one line of JSON). Run by
 * test/repo/get-blob-files.test.ts under the source condition, so module URLs are the sources.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AgentClient, silentLogger } from "@a2c-smcp/agent";
import { createSkillService, startComputer } from "@a2c-smcp/computer";
import { startServer } from "@a2c-smcp/server";
import pino from "pino";
import { callsDuring, filesThatRan } from "./trace-calls.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const binary = process.argv[2] !== "base64";
const dir = mkdtempSync(join(tmpdir(), "a2c-trace-"));
const token = randomBytes(16).toString("hex");
const home = join(dir, "skills");
mkdirSync(join(home, "user/demo/assets"), { recursive: true });
writeFileSync(join(home, "user/demo/SKILL.md"), "---\nname: demo\ndescription: d\n---\n# Demo\n");
for (const name of ["a.bin", "b.bin"]) {
  writeFileSync(join(home, "user/demo/assets", name), randomBytes(3 << 20));
}

const quiet = pino({ level: "silent" });
const server = await startServer({ port: 0, host: "127.0.0.1", tokens: [token], logger: quiet });
const computer = await startComputer({
  server: server.url,
  office: "office-1",
  name: "pc-1",
  token,
  stateDir: join(dir, "state"),
  // The default SKILL service without its watcher: the watcher's periodic scan of the home is a
  // background job, not part of a pull, and one that fell inside the traced pull would be listed.
  services: [
    (ctx) =>
      createSkillService({
        config: ctx.config,
        home,
        minter: ctx.minter,
        log: ctx.log,
        sandboxChecks: ctx.metrics.sandboxChecks,
        watch: false,
        ...(ctx.hashCache ? { fileHasher: ctx.hashCache } : {}),
        ...(ctx.derived ? { derived: ctx.derived } : {}),
      }),
  ],
  workers: 0,
  logger: quiet,
});
const agent = new AgentClient({ url: server.url, token, logger: silentLogger });
await agent.connect();
await agent.joinOffice("office-1");
await agent.waitForComputer("pc-1", { timeoutMs: 30_000 });
const pull = { binary };
const warm = await agent.getSkill("pc-1", "demo", "assets/a.bin");
await agent.readBlob("pc-1", warm.blob_handle!, pull);
// A resource this Computer has not served yet: its handle opened, its file hashed.
const handle = (await agent.getSkill("pc-1", "demo", "assets/b.bin")).blob_handle!;

const scripts = await callsDuring(() => agent.readBlob("pc-1", handle, pull));
const files = filesThatRan(scripts, ROOT).filter((path) => !path.startsWith("test/"));
await agent.close();
await computer.close();
await server.close();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify(files));
