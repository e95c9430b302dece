/**
 * Where the SDK's few log lines go: a pull resuming or restarting from offset 0, a failed
 * auto-refresh, a cache entry that failed verification. A library writes nothing to its host's
 * stderr and reads none of its environment, so the default is silent; any pino logger fits the
 * interface (the CLI passes one, `log.ts`).
 */
export interface AgentLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

const ignore = (): void => {};

/** The default logger: drops everything. */
export const silentLogger: AgentLogger = { info: ignore, warn: ignore };
