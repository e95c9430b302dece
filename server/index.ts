/** The Server package's public surface: run the relay in your own process (`a2c-server` is main.ts). */
export {
  startServer,
  normalizeEnginePath,
  type RunningServer,
  type ServerOptions,
} from "./server.ts";
export {
  MAX_TOKEN_LENGTH,
  NoAuthProvider,
  TokenAuthProvider,
  loadTokensFile,
  mayJoin,
  parseTokensFile,
  type AuthDecision,
  type AuthProvider,
  type AuthRequest,
  type Principal,
  type TokenGrant,
} from "./auth.ts";
export {
  MemoryOfficeRegistry,
  type JoinOutcome,
  type Member,
  type OfficeCounts,
  type OfficeRegistry,
} from "./offices.ts";
export type { ComputerLink } from "./relay.ts";
export type { SmcpNamespace, SmcpSocket } from "./connection.ts";
export type { ServerMetrics } from "./metrics.ts";
export type { OutboundAccount, OutboundGuard, OutboundOptions } from "./outbound.ts";
export type { AdapterKind, RedisClusterOptions } from "./redis/cluster.ts";
export {
  FAST_PATH_NAMES,
  type FastPathName,
  type FastPathReport,
  type FastPathState,
  type TransportOption,
} from "./transport/index.ts";
export { createLogger, type Logger } from "./log.ts";
