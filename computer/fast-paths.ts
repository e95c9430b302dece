/**
 * Fast paths: the places where the Computer changes what a library it uses does underneath, for
 * speed. Each one can be switched off (`StartComputerOptions.fastPaths`; `--stock-transport` and
 * `A2C_COMPUTER_<NAME>=0|1` in config.ts), and each is probed at start against the installed
 * library: one whose internals are missing or behave differently is `unavailable: <reason>` and
 * stays off, so a library upgrade falls back to the stock behaviour visibly instead of silently. A live object
 * that turns out to lack what the probe could not see makes the path unavailable from then on.
 *
 * The states are logged at start, served by `/healthz` (`fast_paths`) and exported as the gauge
 * `a2c_transport_fast_path{name,state}` (1 on; 0 with `state` `off` or `unavailable`), the same
 * gauge the Server exports for its own fast paths.
 */
import type { Logger } from "pino";
import type { Gauge } from "prom-client";
import { linearReadBufferUnavailable } from "./transport/mcp-read-buffer.ts";
import { batchedWritesUnavailable } from "./transport/batched-writes.ts";
import { inPlaceMaskingUnavailable } from "./transport/in-place-masking.ts";
import { lentBuffersUnavailable } from "./transport/lent-buffers.ts";

/** The switches of `StartComputerOptions.fastPaths` (absent = on). */
export interface FastPathSwitches {
  /** Binary chunks in pooled buffers, reused once written (transport/lent-buffers.ts). */
  lendBuffers?: boolean;
  /** ws masks the Computer's own chunk buffers in place (transport/in-place-masking.ts). */
  maskInPlace?: boolean;
  /** One flush and one write per answer (transport/batched-writes.ts). */
  batchWrites?: boolean;
  /** Stdio MCP servers read with a linear buffer (transport/mcp-read-buffer.ts). */
  mcpReadBuffer?: boolean;
}

/** `"all"` (the default), `"none"` (every library's stock behaviour), or per path. */
export type FastPathOptions = "all" | "none" | FastPathSwitches;

/** The names the report, the gauge and the environment use, with their switch and probe. */
const PATHS = {
  lend_buffers: { option: "lendBuffers", unavailable: lentBuffersUnavailable },
  mask_in_place: { option: "maskInPlace", unavailable: inPlaceMaskingUnavailable },
  batch_writes: { option: "batchWrites", unavailable: batchedWritesUnavailable },
  mcp_read_buffer: { option: "mcpReadBuffer", unavailable: linearReadBufferUnavailable },
} as const satisfies Record<
  string,
  { option: keyof FastPathSwitches; unavailable: () => string | undefined }
>;

export type FastPathName = keyof typeof PATHS;
export const FAST_PATH_NAMES = Object.keys(PATHS) as FastPathName[];

export type FastPathState = "on" | "off" | `unavailable: ${string}`;
export type FastPathReport = Record<FastPathName, FastPathState>;

let probed: Partial<Record<FastPathName, string | null>> | undefined;

/** Why each path cannot work with the installed libraries (null: it can). Probed once. */
function probe(name: FastPathName): string | null {
  probed ??= {};
  if (probed[name] === undefined) {
    let reason: string | undefined;
    try {
      reason = PATHS[name].unavailable();
    } catch (err) {
      reason = `probe failed (${(err as Error).message})`;
    }
    probed[name] = reason ?? null;
  }
  return probed[name];
}

/** Whether `options` asks for `name`. */
export function fastPathWanted(options: FastPathOptions | undefined, name: FastPathName): boolean {
  if (options === undefined || options === "all") return true;
  if (options === "none") return false;
  return options[PATHS[name].option] !== false;
}

/** Switches with exactly `names` on. */
export function onlyFastPaths(names: readonly FastPathName[]): FastPathSwitches {
  const switches: FastPathSwitches = {};
  for (const name of FAST_PATH_NAMES) switches[PATHS[name].option] = names.includes(name);
  return switches;
}

/** The state of every path for `options` with the installed libraries. */
export function resolveFastPaths(options: FastPathOptions | undefined): FastPathReport {
  const report = {} as FastPathReport;
  for (const name of FAST_PATH_NAMES) {
    const reason = fastPathWanted(options, name) ? probe(name) : undefined;
    report[name] = reason === undefined ? "off" : reason === null ? "on" : `unavailable: ${reason}`;
  }
  return report;
}

/** The live states of one Computer's fast paths. */
export class FastPaths {
  readonly #states: FastPathReport;
  readonly #log: Logger | undefined;
  readonly #gauge: Gauge<"name" | "state"> | undefined;

  constructor(
    options: FastPathOptions | undefined,
    out: { log?: Logger; gauge?: Gauge<"name" | "state"> },
  ) {
    this.#states = resolveFastPaths(options);
    this.#log = out.log;
    this.#gauge = out.gauge;
    for (const name of FAST_PATH_NAMES) this.#gauge?.set(this.#labels(name), this.on(name) ? 1 : 0);
    this.#log?.info({ fastPaths: this.report() }, "fast paths");
  }

  on(name: FastPathName): boolean {
    return this.#states[name] === "on";
  }

  /** A live object lacks what `name` relies on: it is off from now on (said once). */
  unavailable(name: FastPathName, reason: string): void {
    if (!this.on(name)) return;
    this.#gauge?.remove(this.#labels(name));
    this.#states[name] = `unavailable: ${reason}`;
    this.#gauge?.set(this.#labels(name), 0);
    this.#log?.warn({ fastPath: name, reason }, "fast path unavailable; stock behaviour from now");
  }

  report(): FastPathReport {
    return { ...this.#states };
  }

  #labels(name: FastPathName): { name: FastPathName; state: "on" | "off" | "unavailable" } {
    const state = this.#states[name];
    return {
      name,
      state: state.startsWith("unavailable") ? "unavailable" : (state as "on" | "off"),
    };
  }
}
