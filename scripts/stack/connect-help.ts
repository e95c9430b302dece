/** What `npm run stack -- --keep` prints: how to reach the running Server and Computers. */
import { readFileSync } from "node:fs";
import type { DemoManifest } from "./demo-data.ts";

export interface KeptStack {
  serverUrl: string;
  token: string;
  offices: { officeId: string; computers: string[] }[];
  manifestPath: string;
}

/** The shell-quoted Agent CLI command that downloads the big demo file from office 1. */
export function cliDownloadCommand(stack: KeptStack, outFile: string): string[] {
  const manifest = JSON.parse(readFileSync(stack.manifestPath, "utf8")) as DemoManifest;
  const office = stack.offices[0]!;
  return [
    "npm",
    "run",
    "agent",
    "--",
    "--server",
    stack.serverUrl,
    "--office",
    office.officeId,
    "--token",
    stack.token,
    "--computer",
    office.computers[0]!,
    "skill",
    "get",
    manifest.files.big.skill,
    manifest.files.big.rel_path,
    "--out",
    outFile,
  ];
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function connectHelp(stack: KeptStack): string {
  const lines = [
    "",
    "The Server and Computers keep running (Ctrl-C stops them all).",
    `  server   ${stack.serverUrl}   (health: ${stack.serverUrl}/healthz)`,
    ...stack.offices.map((o) => `  office   ${o.officeId}   computers: ${o.computers.join(", ")}`),
    "",
    "Connect the Agent CLI from another shell, e.g. download the big file from office 1:",
    `  ${cliDownloadCommand(stack, "big.bin").map(quote).join(" ")}`,
    "",
    "Or set the environment once:",
    `  export A2C_SERVER_URL=${stack.serverUrl} A2C_OFFICE_ID=${stack.offices[0]!.officeId} A2C_TOKEN=${quote(stack.token)}`,
    "",
  ];
  return lines.join("\n");
}
