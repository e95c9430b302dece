/** The Agent SDK's public surface. */
export * from "./client.ts";
export * from "./errors.ts";
export * from "./pull.ts";
export { ComputerPath, failureKind, type FailureKind, type PathOptions } from "./path.ts";
export {
  PathController,
  type PathControllerOptions,
  type PathState,
  type SendOptions,
  type SendTicket,
} from "./path-controller.ts";
export { BufferSink, StreamSink, type ReadStart, type Sink } from "./sinks.ts";
export {
  FILE_CHECKPOINT_MS,
  FILE_WRITEBACK_BYTES,
  FILE_WRITE_BATCH_BYTES,
  FileSink,
  type FileSinkOptions,
  type FileSinkResult,
  type ResumeEvent,
} from "./file-sink.ts";
export * from "./upload.ts";
export * from "./sideband.ts";
export * from "./cache.ts";
export { isTextMime, drainSkill } from "./skill.ts";
export { classifyConnectError } from "./connect-error.ts";
export { silentLogger, type AgentLogger } from "./logger.ts";
export { RateLimit, parseRate } from "./rate-limit.ts";
export { partialPath } from "./partial-file.ts";
export {
  DEFAULT_SPEED_LIMIT,
  DEFAULT_SPEED_TIME_MS,
  MIN_CLAMP_BYTES,
  SLIVER_LIMIT,
} from "./path.ts";
