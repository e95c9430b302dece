/**
 * The big file downloaded to disk by the Agent CLI (`a2c-agent`, the shipped build) as a process
 * of its own. The CLI is an Agent too, and an office holds one Agent: the scripted Agent leaves
 * its office for the download and joins again afterwards.
 */
import { mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { startRole } from "../../launch/roles.ts";
import { cliDownloadArgs } from "../connect-help.ts";
import { check, sha256, type Scenario } from "./context.ts";

/** Runs the CLI; resolves with its exit code and output (bounded). */
async function runCli(
  args: string[],
  signal: AbortSignal,
  onPercent: (pct: number) => void,
): Promise<{ code: number; out: string }> {
  const cli = startRole("agent", {
    args,
    env: { A2C_LOG_LEVEL: "warn" },
    keepBytes: 4000,
    // Off a TTY the CLI prints `<label>: NN% <bytes>/<total> ...` every 10 %.
    onLine: (line, stream) => {
      if (stream !== "stderr") return;
      for (const m of line.matchAll(/: +(\d+)% /g)) onPercent(Number(m[1]));
    },
  });
  const onAbort = (): void => void cli.stop("SIGTERM");
  signal.addEventListener("abort", onAbort, { once: true });
  const exit = await cli.exited;
  signal.removeEventListener("abort", onAbort);
  return { code: exit.status, out: cli.output() };
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
    run = await runCli(args, signal, (pct) =>
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
    detail: `a2c-agent wrote ${out.split("/").pop()} (${size} B) in ${Date.now() - started} ms, ${carriage} carriage`,
  };
};
