/**
 * The CLI's pino logger (the SDK itself logs only to a logger it is given: logger.ts), on
 * stderr so the CLI's stdout stays machine-readable. Level from `A2C_LOG_LEVEL` (default `warn`;
 * silent under `node --test` unless asked). Every line carries
 * the base fields every role logs: `role`, `name`, `pid`, `hostname`. Human-readable lines on a
 * TTY or with `A2C_LOG_FORMAT=pretty` (docs/configuration.md, "Logs"). Never log a token.
 */
import { createRequire } from "node:module";
import { hostname } from "node:os";
import { pino, type DestinationStream, type Logger } from "pino";

const level = process.env.A2C_LOG_LEVEL ?? (process.env.NODE_TEST_CONTEXT ? "silent" : "warn");

let prettyMissing = false;

/**
 * JSON lines on stderr, or pino-pretty's lines (an optional dependency, loaded only then) when
 * stderr is a TTY or `A2C_LOG_FORMAT=pretty`; `A2C_LOG_FORMAT=json` keeps JSON on a TTY.
 */
function destination(level: string): DestinationStream {
  const format = process.env.A2C_LOG_FORMAT ?? (process.stderr.isTTY ? "pretty" : "json");
  if (format === "pretty" && level !== "silent" && !prettyMissing) {
    try {
      const load = createRequire(import.meta.url);
      const pretty = load("pino-pretty") as (o: object) => DestinationStream;
      return pretty({ destination: 2, sync: true, colorize: process.stderr.isTTY === true });
    } catch {
      prettyMissing = true;
      process.stderr.write("log: pino-pretty is not installed (optional dependency): JSON lines\n");
    }
  }
  return pino.destination(2);
}

function create(name: string): Logger {
  return pino(
    {
      level,
      base: { role: "agent", name, pid: process.pid, hostname: hostname() },
      redact: ["token", "auth", "*.token", "*.auth"],
    },
    destination(level),
  );
}

/** The CLI's logger (a live binding: `setLogName` replaces it). */
export let log: Logger = create("a2c-agent");

/** Names the process's Agent in every later line (the CLI passes its `--name`). */
export function setLogName(name: string): void {
  log = create(name);
}
