/**
 * The Computer's pino logger, on stderr. Level from `A2C_LOG_LEVEL` (default `info`). Every
 * line carries the base fields every role logs: `role`, `name` (the Computer's), `pid`,
 * `hostname`.
 * Human-readable lines on a TTY or with `A2C_LOG_FORMAT=pretty` (docs/configuration.md, "Logs").
 * Never log a token or a key.
 */
import { createRequire } from "node:module";
import { hostname } from "node:os";
import { pino, type DestinationStream, type Logger } from "pino";

export function defaultLogLevel(): string {
  return process.env.A2C_LOG_LEVEL || "info";
}

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

/** One logger per Computer, tagged with its role and name. */
export function createComputerLogger(name: string, level = defaultLogLevel()): Logger {
  return pino(
    {
      level,
      base: { role: "computer", name, pid: process.pid, hostname: hostname() },
      // Defence in depth: even if a caller passes an options object, these never reach a log line.
      redact: { paths: ["token", "auth.token", "*.token", "key"], censor: "[redacted]" },
    },
    destination(level),
  );
}
