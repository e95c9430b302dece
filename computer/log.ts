/**
 * The Computer's pino logger. Level from `A2C_LOG_LEVEL`; under `node --test` the default is
 * `silent` so test output stays readable, elsewhere `info`. Never log a token or a key.
 */
import { pino, type Logger } from "pino";

export function defaultLogLevel(): string {
  const fromEnv = process.env.A2C_LOG_LEVEL;
  if (fromEnv) return fromEnv;
  return process.env.NODE_TEST_CONTEXT ? "silent" : "info";
}

/** One logger per Computer, tagged with its role and name. */
export function createComputerLogger(name: string, level = defaultLogLevel()): Logger {
  return pino({
    level,
    base: { role: "computer", name },
    // Defence in depth: even if a caller passes an options object, these never reach a log line.
    redact: { paths: ["token", "auth.token", "*.token", "key"], censor: "[redacted]" },
  });
}
