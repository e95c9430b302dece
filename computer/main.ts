/**
 * `npm run computer -- --server URL --office ID --name NAME [...]`: runs one Computer until
 * SIGINT/SIGTERM (clean leave + close, exit 0). Exit 2 on bad usage, 1 when the Computer gives up
 * (refused token, protocol version mismatch, refused join).
 */
import type { RunningComputer } from "./computer.ts";
import { parseComputerArgs, USAGE, UsageError } from "./config.ts";
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
  const log = createComputerLogger(options.name);
  // Signals are handled from the very start: a SIGTERM during the connect must not kill the
  // process mid-join (default action), it must stop it cleanly once there is something to close.
  const running: { computer?: RunningComputer } = {};
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
    computer.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, "close failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));

  const computer = await startComputer({
    ...options,
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
  running.computer = computer;
  if (stopping) {
    stopping = false;
    stop("deferred");
  }
}

await main();
