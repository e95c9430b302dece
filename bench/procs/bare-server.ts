/**
 * The ceiling's relay: a bare socket.io Server in its own process, no A2C logic at all. An Agent
 * socket's `pull` is forwarded to the one Computer socket with `timeout().emitWithAck`, and the
 * answer goes back in the Agent's ack unchanged (a Buffer inside it stays a binary attachment).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Server, type Socket } from "socket.io";
import { serve } from "../lib/ipc.ts";

let computer: Socket | null = null;
const http = createServer();
const io = new Server(http, {
  // The ceiling is measured at every chunk size of the sweep, so it is never the limit here.
  maxHttpBufferSize: 1e8,
  pingTimeout: 60_000,
});

io.of("/smcp").on("connection", (socket) => {
  const role = (socket.handshake.auth as { role?: string }).role;
  if (role === "computer") {
    computer = socket;
    socket.on("disconnect", () => {
      if (computer === socket) computer = null;
    });
    return;
  }
  socket.on("pull", (req: unknown, ack: (answer: unknown) => void) => {
    if (typeof ack !== "function") return;
    if (!computer) {
      ack({ code: 404, message: "no computer" });
      return;
    }
    computer
      .timeout(30_000)
      .emitWithAck("pull", req)
      .then(
        (answer: unknown) => ack(answer),
        (err: unknown) => ack({ code: 408, message: String(err) }),
      );
  });
});

serve({
  start: async () => {
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}` };
  },
  "has-computer": async () => computer !== null,
});
