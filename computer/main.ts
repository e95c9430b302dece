/**
 * `npm run computer -- --server URL --office ID --name NAME [...]`: runs one Computer until
 * SIGINT/SIGTERM (clean leave + close, exit 0). Exit 2 on bad usage, 1 when the Computer gives up
 * (refused token, protocol version mismatch, refused join).
 */
import { parseComputerArgs, USAGE, UsageError } from "./config.ts";
import { createComputerLogger } from "./log.ts";

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
  let stopping = false;
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
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping");
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
}

await main();
