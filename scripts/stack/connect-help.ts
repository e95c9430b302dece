/**
 * How to reach a running stack with the Agent CLI: the argument list the `cli-download` scenario
 * runs, and what `npm run stack -- --keep` prints (the same command, for a person to paste).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { DemoFile, DemoManifest } from "./demo-data.ts";

export interface CliTarget {
  serverUrl: string;
  token: string;
  officeId: string;
  computer: string;
}

/**
 * Arguments of `agent/cli.ts` that download `file` to `out`. Every value rides in its option
 * (`--token=<t>`): a separate argument that starts with `-` (a base64url token may) would be read
 * as an option by the CLI's parser, which then refuses `--token` as missing its value.
 */
export function cliDownloadArgs(t: CliTarget, file: DemoFile, out: string): string[] {
  return [
    `--server=${t.serverUrl}`,
    `--office=${t.officeId}`,
    `--token=${t.token}`,
    "skill",
    t.computer,
    file.skill,
    file.rel_path,
    `--output=${out}`,
  ];
}

export interface KeptStack {
  /** Office 1's Agent node: the printed command connects there. */
  serverUrl: string;
  nodes: { name: string; url: string }[];
  redisUrl: string | null;
  token: string;
  offices: { officeId: string; computers: string[] }[];
  manifestPath: string;
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The `npm run agent -- ...` line that downloads the big demo file from office 1. */
export function keptDownloadCommand(stack: KeptStack, repoRoot: string, out: string): string {
  const manifest = JSON.parse(readFileSync(stack.manifestPath, "utf8")) as DemoManifest;
  const office = stack.offices[0]!;
  const args = cliDownloadArgs(
    {
      serverUrl: stack.serverUrl,
      token: stack.token,
      officeId: office.officeId,
      computer: office.computers[0]!,
    },
    manifest.files.big,
    out,
  );
  // --prefix: the command works from any directory, not only the repository root.
  return ["npm", "--prefix", repoRoot, "run", "agent", "--", ...args].map(quote).join(" ");
}

export function connectHelp(stack: KeptStack, repoRoot: string): string {
  const lines = [
    "",
    "The Server and Computers keep running (Ctrl-C stops them all).",
    ...stack.nodes.map((n) => `  ${n.name.padEnd(8)} ${n.url}   (health: ${n.url}/healthz)`),
    ...(stack.redisUrl ? [`  redis    ${stack.redisUrl}   (shared by the nodes)`] : []),
    ...stack.offices.map((o) => `  office   ${o.officeId}   computers: ${o.computers.join(", ")}`),
    "",
    `  demo manifest ${stack.manifestPath}   (sizes and sha256 of every demo file)`,
    "",
    `Connect the Agent CLI from another shell, e.g. download the big file from office 1${
      stack.nodes.length > 1
        ? ` (through ${stack.nodes[0]!.name}; any node reaches any office)`
        : ""
    }:`,
    // npm runs scripts from the package root; INIT_CWD is where the user typed the command.
    `  ${keptDownloadCommand(stack, repoRoot, join(process.env.INIT_CWD ?? process.cwd(), "big.bin"))}`,
    "",
  ];
  return lines.join("\n");
}
