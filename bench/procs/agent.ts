/**
 * The Agent-side load process: runs the windowed driver against the bare relay, plain HTTP Range,
 * or our stack (see ../stack/agent-side.ts), and answers with the verified result of each point.
 */
import { Agent as HttpAgent, request } from "node:http";
import { io, type Socket } from "socket.io-client";
import { serve } from "../lib/ipc.ts";
import { fileDigests } from "../lib/data.ts";
import { drive, type Chunk, type DriveResult, type FetchChunk } from "../lib/driver.ts";
import { waitForUpgrade } from "../lib/sockets.ts";
import { stackHandlers, stackFetcher } from "../stack/agent-side.ts";

export interface DriveArgs {
  carrier: "bare" | "http" | "stack";
  /** The source file on disk (the driver reads it once to learn every chunk's digest). */
  path: string;
  chunkBytes: number;
  window: number;
  durationMs: number;
  carriage: "base64" | "binary";
  maxChunks?: number;
  /** For `stack`: which connected Agent (index) and which handle to pull. */
  agent?: number;
  handle?: string;
}

const digestCache = new Map<string, ReturnType<typeof fileDigests>>();
function digestsOf(path: string, chunkBytes: number): ReturnType<typeof fileDigests> {
  const key = `${path}\0${chunkBytes}`;
  let d = digestCache.get(key);
  if (!d) {
    d = fileDigests(path, chunkBytes);
    digestCache.set(key, d);
  }
  return d;
}

let bare: Socket | null = null;
let httpUrl = "";
let httpAgent: HttpAgent | null = null;
let seq = 0;

interface BareAnswer {
  chunk_offset?: number;
  blob?: string | Buffer;
  sha256?: string;
  total_size?: number;
  eof?: boolean;
  code?: number;
  message?: string;
}

function bareFetcher(carriage: DriveArgs["carriage"]): FetchChunk {
  const s = bare;
  if (!s) throw new Error("bare relay not connected");
  return async (offset, size) => {
    const a = (await s
      .timeout(30_000)
      .emitWithAck("pull", { offset, size, carriage, req_id: `b${++seq}` })) as BareAnswer;
    if (a.code !== undefined) throw new Error(`bare relay error ${a.code}: ${String(a.message)}`);
    const bytes =
      typeof a.blob === "string" ? Buffer.from(a.blob, "base64") : (a.blob ?? Buffer.alloc(0));
    return {
      offset: a.chunk_offset ?? -1,
      bytes,
      sha256: a.sha256 ?? null,
      totalSize: a.total_size ?? -1,
      eof: a.eof ?? false,
    } satisfies Chunk;
  };
}

function httpFetcher(totalSize: number): FetchChunk {
  const agent = httpAgent;
  if (!agent) throw new Error("http baseline not set up");
  return (offset, size) =>
    new Promise<Chunk>((resolve, reject) => {
      const req = request(
        `${httpUrl}/file`,
        { agent, headers: { range: `bytes=${offset}-${offset + size - 1}` } },
        (res) => {
          const parts: Buffer[] = [];
          res.on("data", (d: Buffer) => parts.push(d));
          res.on("end", () => {
            if (res.statusCode !== 206) {
              reject(new Error(`HTTP ${String(res.statusCode)} for range at ${offset}`));
              return;
            }
            const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers["content-range"] ?? "");
            const bytes = parts.length === 1 && parts[0] ? parts[0] : Buffer.concat(parts);
            const first = Number(range?.[1] ?? -1);
            resolve({
              offset: first,
              bytes,
              sha256: null,
              totalSize: Number(range?.[3] ?? -1),
              eof: first + bytes.length === totalSize,
            });
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end();
    });
}

serve({
  "bare-connect": async (args) => {
    const { url } = args as { url: string };
    const s = io(`${url}/smcp`, {
      auth: { role: "agent" },
      transports: ["polling", "websocket"],
      reconnection: false,
    });
    await new Promise<void>((resolve, reject) => {
      s.once("connect", () => resolve());
      s.once("connect_error", reject);
    });
    await waitForUpgrade(s);
    bare = s;
    return null;
  },
  "bare-disconnect": async () => {
    bare?.disconnect();
    bare = null;
    return null;
  },
  "http-setup": async (args) => {
    const { url } = args as { url: string };
    httpUrl = url;
    httpAgent?.destroy();
    httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 64 });
    return null;
  },
  drive: async (raw): Promise<DriveResult> => {
    const args = raw as DriveArgs;
    const d = digestsOf(args.path, args.chunkBytes);
    const fetch =
      args.carrier === "bare"
        ? bareFetcher(args.carriage)
        : args.carrier === "http"
          ? httpFetcher(d.size)
          : stackFetcher(args.agent ?? 0, args.handle ?? "", args.carriage);
    return drive(fetch, {
      totalSize: d.size,
      sha256: d.sha256,
      chunkBytes: args.chunkBytes,
      window: args.window,
      durationMs: args.durationMs,
      chunkDigests: d.chunks,
      maxChunks: args.maxChunks,
    });
  },
  ...stackHandlers,
});
