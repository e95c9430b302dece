/**
 * A Computer joined to a `ServerHarness` office with the settings the Computer tests share
 * (office-1, pc-1, the harness token, state under `dir`, hashing inline, the transport of
 * `testTransport`), so each test states only what it is about.
 */
import { join } from "node:path";
import {
  startComputer,
  type RunningComputer,
  type StartComputerOptions,
} from "../../../computer/computer.ts";
import type { ComputerService, Producer } from "../../../computer/contracts.ts";
import type { TransportMode } from "../../../computer/transport/index.ts";
import { TEST_TOKEN, type ServerHarness } from "../../support/server-harness.ts";

/**
 * The transport every Computer of the Computer tests runs: `fast`, or `stock` with
 * `A2C_TEST_COMPUTER_TRANSPORT=stock` (the test runner runs the files tagged `@both-transports`
 * that way too, on the libraries' stock behaviour: scripts/run-tests.ts).
 */
export function testTransport(): TransportMode {
  return process.env.A2C_TEST_COMPUTER_TRANSPORT === "stock" ? "stock" : "fast";
}

export function startHarnessComputer(
  h: ServerHarness,
  dir: string,
  extra: Partial<StartComputerOptions> = {},
): Promise<RunningComputer> {
  return startComputer({
    server: h.url,
    office: "office-1",
    name: "pc-1",
    token: TEST_TOKEN,
    stateDir: join(dir, "state"),
    workers: 0,
    transport: testTransport(),
    ...extra,
  });
}

/** A service that only contributes blob producers (no handlers). */
export function producersOnly(...producers: Producer[]): ComputerService {
  return { handlers: {}, producers, close: async () => {} };
}

/**
 * Resolves once `pc` talks over WebSocket (it always connects by polling first): for tests of
 * what the WebSocket transport writes.
 */
export async function upgraded(pc: RunningComputer): Promise<void> {
  const engine = pc.socket.io.engine;
  if (engine.transport.name === "websocket") return;
  await new Promise<void>((resolve) => engine.once("upgrade", () => resolve()));
}
