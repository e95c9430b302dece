#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=300
/**
 * `a2c-computer --server URL --office ID --name NAME [...]` (`npm run computer -- ...` from
 * source; the shebang runs node with the process tuning of docs/configuration.md): runs one
 * Computer until SIGINT/SIGTERM (clean leave + close, exit 0). Exit 2 on bad usage, 1 when the
 * Computer gives up (refused token, protocol version mismatch, refused join). With `--http-port` it also serves
 * `/healthz` and `/metrics` (http.ts) from the start, before the Computer has joined.
 */
import { collectDefaultMetrics } from "prom-client";
import type { RunningComputer } from "./computer.ts";
import { parseComputerArgs, USAGE, UsageError } from "./config.ts";
import { startComputerHttp, type ComputerHttp } from "./http.ts";
import { createComputerLogger } from "./log.ts";

const STOP_WHILE_STARTING_MS = 2_000;

async function main(): Promise<void> {
  let options;
  try {
    options = parseComputerArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`error: ${err.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (options === null) {
    console.log(USAGE);
    return;
  }
  // Loaded after argument parsing so `--help` and usage errors answer at once.
  const { startComputer } = await import("./computer.ts");
  const { http: httpOptions, ...computerOptions } = options;
  const log = createComputerLogger(options.name);
  // Signals are handled from the very start: a SIGTERM during the connect must not kill the
  // process mid-join (default action), it must stop it cleanly once there is something to close.
  const running: { computer?: RunningComputer; http?: ComputerHttp } = {};
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping");
    const computer = running.computer;
    if (!computer) {
      // Still connecting: give the start a moment to finish so we can leave properly.
      setTimeout(() => process.exit(0), STOP_WHILE_STARTING_MS).unref();
      return;
    }
    Promise.all([computer.close(), running.http?.close()]).then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, "close failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));

  if (httpOptions) {
    running.http = await startComputerHttp({
      options: httpOptions,
      computer: () => running.computer,
      name: options.name,
      office: options.office,
      log,
    }).catch((err: unknown) => {
      log.fatal({ err: (err as Error).message }, "http endpoint failed to start");
      process.exit(1);
    });
  }
  const computer = await startComputer({
    ...computerOptions,
    logger: log,
    startTimeoutMs: 0, // a Computer may start before its Server: keep retrying
    onFatal: (err) => {
      log.fatal({ err: err.message }, "Computer stopped");
      process.exit(1);
    },
  }).catch((err: unknown) => {
    log.fatal({ err: (err as Error).message }, "Computer failed to start");
    process.exit(1);
  });
  log.info(
    { office: options.office, stateDir: computer.config.stateDir },
    "Computer running; Ctrl-C to stop",
  );
  // Served on /metrics only: process figures (CPU, RSS, event loop) next to the Computer's own.
  if (httpOptions) collectDefaultMetrics({ register: computer.metrics.registry });
  running.computer = computer;
  if (stopping) {
    stopping = false;
    stop("deferred");
  }
}

await main();
