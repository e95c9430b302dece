/**
 * A bare socket.io server playing a relay that forwards anything (buggy or hostile), with a real
 * Computer joined to it: the Computer's own checks are what answers. `relay` is the Server-side
 * socket of the Computer (emit to it as a relay would).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Server, type Socket as ServerSocket } from "socket.io";
import {
  startComputer,
  type RunningComputer,
  type StartComputerOptions,
} from "../../../computer/computer.ts";
import { testTransport } from "./harness-computer.ts";

export interface BareRelay {
  relay: ServerSocket;
  pc: RunningComputer;
  close(): Promise<void>;
}

/** Starts the relay and a Computer `pc-1` in `office-1` joined to it (`options` override). */
export async function bareRelay(options: Partial<StartComputerOptions> = {}): Promise<BareRelay> {
  const dir = mkdtempSync(join(tmpdir(), "a2c-bare-relay-"));
  const http = createServer();
  const io = new Server(http);
  const joined = new Promise<ServerSocket>((resolve) => {
    io.of("/smcp").on("connection", (socket) => {
      socket.on("server:join_office", (_req: unknown, ack: (ok: boolean, r: null) => void) => {
        ack(true, null);
        resolve(socket);
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  const pc = await startComputer({
    server: `http://127.0.0.1:${port}`,
    office: "office-1",
    name: "pc-1",
    stateDir: join(dir, "state"),
    workers: 0,
    services: [],
    transport: testTransport(),
    ...options,
  });
  const relay = await joined;
  return {
    relay,
    pc,
    async close() {
      await pc.close();
      await io.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
