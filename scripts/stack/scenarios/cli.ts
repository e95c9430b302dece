/**
 * The big file downloaded to disk by the Agent CLI (`agent/cli.ts`) as a process of its own.
 * The CLI is an Agent too, and an office holds one Agent: the scripted Agent leaves its office
 * for the download and joins again afterwards.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { cliDownloadArgs } from "../connect-help.ts";
import { check, sha256, type Scenario } from "./context.ts";

/** Runs the CLI; resolves with its exit code and output (bounded). */
function runCli(
  cwd: string,
  args: string[],
  signal: AbortSignal,
  onPercent: (pct: number) => void,
): Promise<{ code: number; out: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(
      process.execPath,
      ["--conditions=@a2c-smcp/source", "--import", "tsx", "agent/cli.ts", ...args],
      {
        cwd,
        env: { ...process.env, A2C_LOG_LEVEL: "warn" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    const keep = (b: Buffer): void => {
      out = (out + b.toString("utf8")).slice(-4000);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", (b: Buffer) => {
      keep(b);
      // Off a TTY the CLI prints `<label>: NN% <bytes>/<total> ...` every 10 %.
      for (const m of b.toString("utf8").matchAll(/: +(\d+)% /g)) onPercent(Number(m[1]));
    });
    const onAbort = (): void => void child.kill("SIGTERM");
    signal.addEventListener("abort", onAbort, { once: true });
    child.once("error", reject);
    child.once("exit", (code, sig) => {
      signal.removeEventListener("abort", onAbort);
      resolveRun({ code: code ?? (sig ? 128 : 1), out });
    });
  });
}

export const cliDownload: Scenario = async ({ client, plan, computer, progress, signal }) => {
  const big = plan.manifest.files.big;
  mkdirSync(plan.workDir, { recursive: true });
  const out = join(plan.workDir, "big.bin");
  // The CLI's defaults: binary carriage (D19), end to end through the Server.
  const args = cliDownloadArgs(
    { serverUrl: plan.serverUrl, token: plan.token, officeId: plan.officeId, computer },
    big,
    out,
  );
  await client.leaveOffice();
  let run: { code: number; out: string };
  const started = Date.now();
  progress(0, big.size);
  try {
    run = await runCli(plan.repoRoot, args, signal, (pct) =>
      progress(Math.round((big.size * pct) / 100), big.size),
    );
  } finally {
    await client.joinOffice(plan.officeId);
    await client.waitForComputer(computer, { timeoutMs: 30_000 });
  }
  check(
    run.code === 0,
    `CLI exited ${run.code}: ${run.out.trim().split("\n").slice(-3).join(" | ")}`,
  );
  const size = statSync(out).size;
  check(size === big.size, `downloaded ${size} B ≠ ${big.size}`);
  const digest = sha256(readFileSync(out));
  rmSync(out, { force: true });
  check(digest === big.sha256, "downloaded file sha256 ≠ generated");
  progress(big.size, big.size);
  // The CLI's final line names the carriage its chunks used.
  const carriage = /verified, (\w+) carriage/.exec(run.out)?.[1] ?? "unknown";
  return {
    bytes: big.size,
    verified: true,
    restarts: 0,
    detail: `agent/cli.ts wrote ${out.split("/").pop()} (${size} B) in ${Date.now() - started} ms, ${carriage} carriage`,
  };
};
