/**
 * Generates the demo data a Computer serves outside `npm run stack` (docker compose, or by hand):
 *
 *   <out>/home/           the demo skill home (A2C_SKILLS_DIR)
 *   <out>/mcp/            the demo MCP server, one self-contained JavaScript file
 *   <out>/mcp.json        MCP config running it with plain node (A2C_MCP_CONFIG)
 *   <out>/manifest.json   sizes and sha256 of every resource, for the scripted Agent
 *
 * Usage: node --conditions=@a2c-smcp/source --import tsx scripts/demo-home.ts --out DIR
 *          [--big-mib N] [--force]
 * A Computer reading `<out>` at the same path (docker compose mounts it at /demo in every
 * container) needs nothing else: no checkout, no package beyond its own.
 * Existing data is kept unless --force (a restarted container serves the same bytes).
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { standaloneDemoMcpServer } from "./demo/mcp-command.ts";
import { DEFAULT_BIG_SIZE, generateDemoHome, writeDemoMcpConfig } from "./stack/demo-data.ts";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      out: { type: "string" },
      "big-mib": { type: "string" },
      force: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help || !values.out) {
    process.stderr.write("Usage: scripts/demo-home.ts --out DIR [--big-mib N] [--force]\n");
    return values.help ? 0 : 2;
  }
  const out = resolve(values.out);
  const bigMib = Number(values["big-mib"] ?? DEFAULT_BIG_SIZE / 1048576);
  if (!Number.isInteger(bigMib) || bigMib < 1) {
    process.stderr.write("--big-mib must be a positive integer\n");
    return 2;
  }
  const manifestFile = join(out, "manifest.json");
  if (existsSync(manifestFile) && !values.force) {
    process.stdout.write(`demo data already in ${out} (use --force to regenerate)\n`);
    return 0;
  }
  rmSync(join(out, "home"), { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const manifest = generateDemoHome(join(out, "home"), { bigSize: bigMib * 1048576 });
  const server = join(out, "mcp", "demo-server.mjs");
  await standaloneDemoMcpServer(server);
  writeDemoMcpConfig(join(out, "mcp.json"), { command: "node", args: [server] });
  // The manifest is written last: its presence means the data is complete.
  writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
  process.stdout.write(
    `demo data in ${out}: skills ${manifest.skills.join(", ")}; big file ${bigMib} MiB\n`,
  );
  return 0;
}

process.exitCode = await main();
