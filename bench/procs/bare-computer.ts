/**
 * The ceiling's Computer: a plain socket.io client that answers `pull` with one chunk of a file,
 * shaped like a GetBlobRet (same field names, a handle string as long as our stack's) so the JSON
 * envelope costs the same. No handle check, no hash cache, no sizing: the transport alone.
 * Reads use a fresh Buffer per chunk (FileHandle.read), as a straightforward implementation would.
 *
 * `A2C_BENCH_CORRUPT=1` flips one byte of the third chunk it serves: the test that proves a wrong
 * byte fails the run uses it.
 */
import { open, type FileHandle } from "node:fs/promises";
import { io, type Socket } from "socket.io-client";
import { serve } from "../lib/ipc.ts";
import { fileDigests } from "../lib/data.ts";
import { waitForUpgrade } from "../lib/sockets.ts";

interface PullReq {
  offset: number;
  size: number;
  carriage: "base64" | "binary";
  req_id: string;
}

let socket: Socket | null = null;
let file: FileHandle | null = null;
let served = 0;
const corrupt = process.env.A2C_BENCH_CORRUPT === "1";

serve({
  start: async (args) => {
    const { url, path, handleLength } = args as { url: string; path: string; handleLength: number };
    const { sha256, size } = fileDigests(path, 1 << 20);
    file = await open(path, "r");
    const handle = "h".repeat(handleLength);
    const s = io(`${url}/smcp`, {
      auth: { role: "computer" },
      transports: ["polling", "websocket"],
      reconnection: false,
    });
    socket = s;
    s.on("pull", (req: PullReq, ack: (answer: unknown) => void) => {
      const len = Math.max(0, Math.min(req.size, size - req.offset));
      const buf = Buffer.allocUnsafe(len);
      const fh = file;
      if (!fh) return;
      fh.read(buf, 0, len, req.offset).then(
        () => {
          if (corrupt && ++served === 3 && buf.length > 0) buf[0] = (buf[0] ?? 0) ^ 0xff;
          ack({
            blob_handle: handle,
            mime_type: "application/octet-stream",
            total_size: size,
            sha256,
            chunk_offset: req.offset,
            eof: req.offset + len === size,
            blob: req.carriage === "binary" ? buf : buf.toString("base64"),
            req_id: req.req_id,
            ...(req.carriage === "binary" ? { blob_format: "binary" } : {}),
          });
        },
        (err: unknown) => ack({ code: 500, message: String(err) }),
      );
    });
    await new Promise<void>((resolve, reject) => {
      s.once("connect", () => resolve());
      s.once("connect_error", reject);
    });
    // Measure on WebSocket, as the stack does after its upgrade.
    await waitForUpgrade(s);
    return { sha256, size };
  },
  stop: async () => {
    socket?.disconnect();
    await file?.close();
    return null;
  },
});
