/**
 * The built Agent CLI as a user runs it (the `a2c-agent` bin of agent/package.json, with its
 * shebang's node flags, process start included), for the sections that time it (userView,
 * upload); and the file digest every file they store or download is checked with.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { shebangFlags } from "../../scripts/links/stack.ts";
import { IntegrityError } from "./integrity.ts";
import { mallocEnv } from "./ipc.ts";

export { shebangFlags };

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** What the `a2c-agent` bin runs (`npm run build` writes it). */
export const CLI = join(
  ROOT,
  "agent",
  (
    JSON.parse(readFileSync(join(ROOT, "agent/package.json"), "utf8")) as {
      bin: Record<string, string>;
    }
  ).bin["a2c-agent"]!,
);

export interface CliRun {
  /** Wall time from spawn to exit. */
  seconds: number;
  /** The carriage its summary line reported, null when it reported none. */
  carriage: "binary" | "base64" | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI once with `flags` (its shebang's) and `args`; rejects on a non-zero exit. */
export function runCli(flags: string[], args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [...flags, CLI, ...args], {
      cwd: ROOT,
      env: { ...process.env, A2C_LOG_LEVEL: "warn", ...mallocEnv() },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr = (stderr + d).slice(-8000);
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) {
        reject(new Error(`a2c-agent exited ${String(code)}: ${stderr.trim().slice(-600)}`));
        return;
      }
      const m = /verified, (binary|base64) carriage, /.exec(stderr);
      resolve({ seconds, carriage: (m?.[1] as CliRun["carriage"]) ?? null, stdout, stderr });
    });
  });
}

/** The CLI's connection flags for `office` on the Server at `url`. */
export function cliConnection(url: string, office: string, token: string): string[] {
  return [`--server=${url}`, `--office=${office}`, `--token=${token}`];
}

export async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const c of createReadStream(path, { highWaterMark: 1 << 20 })) h.update(c as Buffer);
  return h.digest("hex");
}

/** Throws IntegrityError naming `what` unless the file at `path` has the sha256 `expected`. */
export async function expectFileSha256(
  what: string,
  path: string,
  expected: string,
): Promise<void> {
  const got = await sha256File(path);
  if (got !== expected) throw new IntegrityError(`${what}: sha256 ${got}, expected ${expected}`);
}

/** An uploaded file must be the source; then it goes (the disk holds one upload at a time). */
export async function expectLanded(landingPath: string, sha256: string): Promise<void> {
  try {
    await expectFileSha256(`upload stored at ${landingPath}`, landingPath, sha256);
  } finally {
    rmSync(landingPath, { force: true });
  }
}
