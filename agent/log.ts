/**
 * The CLI's pino logger; the SDK itself logs only to a logger it is given (logger.ts). Level
 * from `A2C_LOG_LEVEL`; quiet under `node --test` unless asked. Logs go to stderr so the CLI's
 * stdout stays machine-readable. Never log a token.
 */
import { pino, type Logger } from "pino";

const level = process.env.A2C_LOG_LEVEL ?? (process.env.NODE_TEST_CONTEXT ? "silent" : "warn");

export const log: Logger = pino(
  { level, base: { role: "agent" }, redact: ["token", "auth", "*.token", "*.auth"] },
  pino.destination(2),
);
