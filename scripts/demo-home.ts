/**
 * Generates the demo data a Computer serves outside `npm run stack` (docker compose, or by hand):
 *
 *   <out>/home/           the demo skill home (A2C_SKILLS_DIR)
 *   <out>/mcp.json        MCP config running the demo MCP server (A2C_MCP_CONFIG)
 *   <out>/manifest.json   sizes and sha256 of every resource, for the scripted Agent
 *
 * Usage: node --conditions=@a2c-smcp/source --import tsx scripts/demo-home.ts --out DIR
 *          [--big-mib N] [--demo-mcp BUILT_JS] [--force]
 * `--demo-mcp` names the built demo MCP server where the Computer runs (docker compose:
 * `/app/computer/dist/tools/demo-server.js` in the image); without it the config runs this
 * checkout's source through tsx.
 * Existing data is kept unless --force (a restarted container serves the same bytes).
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_BIG_SIZE, generateDemoHome, writeDemoMcpConfig } from "./stack/demo-data.ts";

const REPO_ROOT = resolve(import.meta.dirname, "..");

function main(): number {
  const { values } = parseArgs({
    options: {
      out: { type: "string" },
      "big-mib": { type: "string" },
      "demo-mcp": { type: "string" },
      force: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help || !values.out) {
    process.stderr.write(
      "Usage: scripts/demo-home.ts --out DIR [--big-mib N] [--demo-mcp BUILT_JS] [--force]\n",
    );
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
  writeDemoMcpConfig(join(out, "mcp.json"), REPO_ROOT, values["demo-mcp"]);
  // The manifest is written last: its presence means the data is complete.
  writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
  process.stdout.write(
    `demo data in ${out}: skills ${manifest.skills.join(", ")}; big file ${bigMib} MiB\n`,
  );
  return 0;
}

process.exitCode = main();
