/**
 * The Server's structured logger (pino, JSON lines). Level from `A2C_LOG_LEVEL`; inside Node's
 * test runner the default is `silent` so test output stays readable. Never log a token or a key.
 */
import { pino, type Logger } from "pino";

export type { Logger };

export function defaultLogLevel(): string {
  const fromEnv = process.env.A2C_LOG_LEVEL;
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  return process.env.NODE_TEST_CONTEXT !== undefined ? "silent" : "info";
}

/** A JSON logger on stderr, so stdout stays free for the one `listening on` line of main.ts. */
export function createLogger(level: string = defaultLogLevel()): Logger {
  return pino(
    {
      name: "a2c-server",
      level,
      // Defence in depth: credentials never reach a log line even if a handshake object is logged.
      redact: {
        paths: ["token", "*.token", "auth.token", "headers.authorization", "*.authorization"],
        censor: "[redacted]",
      },
    },
    pino.destination(2),
  );
}
