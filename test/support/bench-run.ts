/**
 * Runs the bench (bench/main.ts, what `npm run bench` runs) as a real process, as CI does, and
 * reads its report back. The script runs compiled on plain node (scripts/launch/compile.ts), not
 * through the tsx loader `npm run bench` uses: the same code, without compiling it at every start.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Report } from "../../bench/report/types.ts";
import { compileScript } from "../../scripts/launch/compile.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

export interface BenchRun {
  code: number | null;
  stdout: string;
  stderr: string;
  report: Report;
}

export async function runBench(
  args: string[],
  env: Record<string, string> = {},
): Promise<BenchRun> {
  const out = args[args.indexOf("--out") + 1];
  if (!args.includes("--out") || !out) throw new Error("runBench needs --out DIR");
  const child = spawn(process.execPath, [await compileScript("bench/main.ts"), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as Report;
  return { code, stdout, stderr, report };
}
