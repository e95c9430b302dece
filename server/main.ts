#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=300
/**
 * `a2c-server [flags]` (`npm run server -- [flags]` from source; see config.ts). The shebang
 * runs node with the process tuning of docs/configuration.md, and no launcher stands between a
 * signal and this process. Prints exactly one line to stdout,
 * `listening on http://HOST:PORT`, logs JSON to stderr, and stops cleanly on SIGINT/SIGTERM:
 * leaves every office, closes every socket, exits 0.
 */
import { ConfigError, USAGE, configFromArgs } from "./config.ts";
import { createLogger } from "./log.ts";
import { startServer, type RunningServer } from "./server.ts";

async function main(): Promise<void> {
  let options;
  try {
    options = await configFromArgs(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`error: ${err.message}\n${USAGE}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const logger = createLogger();
  if (options.noAuth) {
    process.stderr.write(
      "WARNING: --no-auth: authentication is DISABLED; any client may join any office. " +
        "Use for local development only.\n",
    );
  }
  // Signals are handled from the very start: a SIGTERM that arrives while the Server starts (its
  // log already says "listening") must close it cleanly, not kill it by the default action.
  let server: RunningServer | undefined;
  let stopping = false;
  const close = (running: RunningServer): void => {
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    // A stuck close must not keep the process alive forever.
    const guard = setTimeout(() => process.exit(1), 10_000);
    guard.unref();
    if (server) close(server);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
    server = await startServer({ ...options, logger });
  } catch (err) {
    logger.fatal({ err }, "server failed to start");
    process.exit(1);
  }
  if (stopping) {
    close(server);
    return;
  }
  // Printed last: whoever waits for this line may signal the process right away.
  process.stdout.write(`listening on ${server.url}\n`);
}

process.on("unhandledRejection", (reason) => {
  // Last resort: log and keep serving (every handler already catches its own errors).
  createLogger().error({ err: reason }, "unhandled rejection");
});

void main();
