/**
 * The Computers of the soak's "many Agents" load (offices soak-many-1..N, name `pc`), in one
 * process: one Agent per office (offices.ts) means 64 pulling Agents need 64 Computers, and 64
 * Node processes would cost the 2-core box more than the load they serve. Prints "ready" once
 * every one joined; closes them all on SIGTERM.
 */
import { parseArgs } from "node:util";
import { startComputer, type RunningComputer } from "@a2c-smcp/computer";

const { values: a } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    skills: { type: "string" },
    state: { type: "string" },
    count: { type: "string", default: "64" },
  },
});

async function main(): Promise<void> {
  const n = Number(a.count);
  const pcs: RunningComputer[] = [];
  for (let i = 1; i <= n; i += 16) {
    const batch = Array.from({ length: Math.min(16, n - i + 1) }, (_, k) => i + k);
    pcs.push(
      ...(await Promise.all(
        batch.map((k) =>
          startComputer({
            server: a.url!,
            office: `soak-many-${k}`,
            name: "pc",
            token: a.token!,
            skills: a.skills!,
            stateDir: `${a.state!}-${k}`,
            workers: 0,
            startTimeoutMs: 120_000,
          }),
        ),
      )),
    );
  }
  process.stdout.write("ready\n");
  await new Promise<void>((r) => process.once("SIGTERM", () => r()));
  await Promise.all(pcs.map((p) => p.close()));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`computers-proc: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
