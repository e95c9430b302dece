/**
 * The CLI's pino logger (the SDK itself logs only to a logger it is given: logger.ts), on
 * stderr so the CLI's stdout stays machine-readable. Level from `A2C_LOG_LEVEL` (default `warn`).
 * Every line carries the base fields every role logs:
 * `role`, `name`, `pid`, `hostname`. Human-readable lines on a TTY or with
 * `A2C_LOG_FORMAT=pretty` (docs/configuration.md, "Logs"). Never log a token.
 *
 * pino is loaded when the first line at an enabled level is written, not at start-up: most runs
 * of the command log nothing, and loading it is a noticeable part of the command's start.
 */
import { createRequire } from "node:module";
import { hostname } from "node:os";
import type { DestinationStream, Logger, pino as Pino } from "pino";
import type { AgentLogger } from "./logger.ts";

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"];
const level = process.env.A2C_LOG_LEVEL || "warn";
const load = createRequire(import.meta.url);

let prettyMissing = false;

/**
 * JSON lines on stderr, or pino-pretty's lines (an optional dependency, loaded only then) when
 * stderr is a TTY or `A2C_LOG_FORMAT=pretty`; `A2C_LOG_FORMAT=json` keeps JSON on a TTY.
 */
function destination(pino: typeof Pino, level: string): DestinationStream {
  const format = process.env.A2C_LOG_FORMAT ?? (process.stderr.isTTY ? "pretty" : "json");
  if (format === "pretty" && level !== "silent" && !prettyMissing) {
    try {
      const pretty = load("pino-pretty") as (o: object) => DestinationStream;
      return pretty({ destination: 2, sync: true, colorize: process.stderr.isTTY === true });
    } catch {
      prettyMissing = true;
      process.stderr.write("log: pino-pretty is not installed (optional dependency): JSON lines\n");
    }
  }
  return pino.destination(2);
}

/** True when a line at `at` is written at the configured level (unknown levels: pino decides). */
function enabled(at: string): boolean {
  if (level === "silent") return false;
  const min = LEVELS.indexOf(level);
  return min < 0 || LEVELS.indexOf(at) >= min;
}

/** The CLI's logger: an `AgentLogger` whose pino instance is created on first use. */
class CliLogger implements AgentLogger {
  private pinoLogger: Logger | undefined;
  constructor(private readonly name: string) {}

  info(obj: object, msg: string): void {
    if (enabled("info")) this.logger().info(obj, msg);
  }
  warn(obj: object, msg: string): void {
    if (enabled("warn")) this.logger().warn(obj, msg);
  }
  error(obj: object, msg: string): void {
    if (enabled("error")) this.logger().error(obj, msg);
  }

  private logger(): Logger {
    if (!this.pinoLogger) {
      const { pino } = load("pino") as { pino: typeof Pino };
      this.pinoLogger = pino(
        {
          level,
          base: { role: "agent", name: this.name, pid: process.pid, hostname: hostname() },
          redact: ["token", "auth", "*.token", "*.auth"],
        },
        destination(pino, level),
      );
    }
    return this.pinoLogger;
  }
}

/** The CLI's logger (a live binding: `setLogName` replaces it). */
export let log: CliLogger = new CliLogger("a2c-agent");

/** Names the process's Agent in every later line (the CLI passes its `--name`). */
export function setLogName(name: string): void {
  log = new CliLogger(name);
}
