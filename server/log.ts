/**
 * The Server's structured logger (pino) on stderr, so stdout stays free for the one
 * `listening on` line of main.ts. Level from `A2C_LOG_LEVEL` (default `info`). Every line carries the base fields every
 * role logs: `role`, `name`, `pid`, `hostname`. Human-readable lines on a TTY or with
 * `A2C_LOG_FORMAT=pretty` (docs/configuration.md, "Logs"). Never log a token or a key.
 */
import { createRequire } from "node:module";
import { hostname } from "node:os";
import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

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

export function createLogger(level: string = defaultLogLevel(), name = "a2c-server"): Logger {
  return pino(
    {
      level,
      base: { role: "server", name, pid: process.pid, hostname: hostname() },
      // Defence in depth: credentials never reach a log line even if a handshake object is logged.
      redact: {
        paths: ["token", "*.token", "auth.token", "headers.authorization", "*.authorization"],
        censor: "[redacted]",
      },
    },
    destination(level),
  );
}
