/**
 * The Computer package's public surface: run a Computer in your own process and plug in
 * producers of your own (`a2c-computer` is main.ts).
 */
export {
  ComputerConnectError,
  defaultServices,
  startComputer,
  type RunningComputer,
  type ServiceContext,
  type ServiceFactory,
  type StartComputerOptions,
} from "./computer.ts";
export {
  DEFAULT_INLINE_BUDGET,
  DEFAULT_MAX_SIZE,
  type BlobSource,
  type ClientHandler,
  type ClientHandlers,
  type ComputerConfig,
  type ComputerService,
  type HandleFields,
  type HandleKind,
  type HandleMinter,
  type Producer,
  type RequestContext,
  type ResolveResult,
} from "./contracts.ts";
export {
  startComputerHttp,
  type ComputerHttp,
  type ComputerHttpOptions,
  type HealthBody,
  type HealthStatus,
} from "./http.ts";
export {
  FAST_PATHS,
  type FastPathName,
  type FastPathReport,
  type FastPathState,
  type TransportMode,
} from "./transport/index.ts";
export { createComputerLogger } from "./log.ts";
export { createSkillService, type SkillService, type SkillServiceOptions } from "./skills/index.ts";
export { createToolService, type ToolService, type ToolServiceOptions } from "./tools/service.ts";
