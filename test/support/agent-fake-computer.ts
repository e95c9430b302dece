/**
 * A scripted counterpart for Agent SDK tests: a real socket.io Server on port 0, namespace /smcp,
 * that plays both the relay and the Computer. It answers `server:join_office` and
 * `server:list_room` like the real Server, and every `client:*` from a per-event script, so a test
 * can make a "Computer" misbehave in exactly one way. Every request is recorded.
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Server, type Socket } from "socket.io";
import { AgentClient, type AgentClientOptions } from "../../agent/client.ts";
import { NAMESPACE, blobNotAccessible } from "../../protocol/index.ts";

/** Return this from a script to never answer (the request stays unacked). */
export const NO_ANSWER = Symbol("no answer");

export type Script = (req: Record<string, unknown>, socket: Socket) => unknown;

export interface Recorded {
  event: string;
  payload: Record<string, unknown>;
}

export interface FakeServer {
  url: string;
  port: number;
  io: Server;
  /** Every event received on /smcp, in order. */
  received: Recorded[];
  /** `client:get_blob` payloads only. */
  blobRequests(): Record<string, unknown>[];
  /** Handshakes seen (auth + query). */
  handshakes: {
    auth: Record<string, unknown>;
    query: Record<string, unknown>;
    transport: string;
  }[];
  /** Computers listed by `server:list_room`. */
  computers: Set<string>;
  /** Script for a `client:*` event. */
  on(event: string, script: Script): void;
  /** Emits to every connected Agent socket. */
  emitToAgents(event: string, payload: unknown): void;
  /** Removes a Computer and tells the Agents (`notify:leave_office`). */
  computerLeaves(name: string): void;
  /** Adds a Computer and tells the Agents (`notify:enter_office`). */
  computerEnters(name: string): void;
  /** Drops every Agent socket (they reconnect). */
  dropAgents(): void;
  close(): Promise<void>;
}

export const OFFICE = "office-1";
export const COMPUTER = "pc";

export async function startFakeServer(
  opts: { computers?: string[]; maxHttpBufferSize?: number } = {},
): Promise<FakeServer> {
  const http: HttpServer = createServer();
  const io = new Server(http, { maxHttpBufferSize: opts.maxHttpBufferSize ?? 1e8 });
  const received: Recorded[] = [];
  const handshakes: FakeServer["handshakes"] = [];
  const scripts = new Map<string, Script>();
  const computers = new Set(opts.computers ?? [COMPUTER]);
  const nsp = io.of(NAMESPACE);
  let office = OFFICE;

  nsp.on("connection", (socket) => {
    handshakes.push({
      auth: { ...(socket.handshake.auth as Record<string, unknown>) },
      query: { ...(socket.handshake.query as Record<string, unknown>) },
      transport: socket.conn.transport.name,
    });
    socket.onAny((event: string, ...args: unknown[]) => {
      const payload = (args[0] ?? {}) as Record<string, unknown>;
      received.push({ event, payload });
      const last = args[args.length - 1];
      const ack = typeof last === "function" ? (last as (...a: unknown[]) => void) : undefined;
      if (event === "server:join_office") {
        office = String(payload.office_id);
        void socket.join(office);
        ack?.(true, null);
        return;
      }
      if (event === "server:leave_office") {
        ack?.(true, null);
        return;
      }
      if (event === "server:list_room") {
        ack?.({
          req_id: payload.req_id,
          sessions: [...computers].map((name, i) => ({
            sid: `sid-${i}`,
            name,
            role: "computer",
            office_id: office,
          })),
        });
        return;
      }
      const script = scripts.get(event);
      if (!script) {
        ack?.();
        return;
      }
      void Promise.resolve(script(payload, socket)).then(
        (answer) => {
          if (answer !== NO_ANSWER) ack?.(answer);
        },
        (err: unknown) => ack?.({ code: 500, message: String(err) }),
      );
    });
  });

  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    io,
    received,
    handshakes,
    computers,
    blobRequests: () => received.filter((r) => r.event === "client:get_blob").map((r) => r.payload),
    on: (event, script) => void scripts.set(event, script),
    emitToAgents: (event, payload) => void nsp.emit(event, payload),
    computerLeaves(name) {
      computers.delete(name);
      nsp.emit("notify:leave_office", { office_id: office, computer: name });
    },
    computerEnters(name) {
      computers.add(name);
      nsp.emit("notify:enter_office", { office_id: office, computer: name });
    },
    dropAgents() {
      for (const s of nsp.sockets.values()) s.conn.close();
    },
    async close() {
      nsp.disconnectSockets(true);
      await new Promise<void>((resolve) => void io.close(() => resolve()));
    },
  };
}

const shaMemo = new WeakMap<Buffer, string>();
function shaOf(bytes: Buffer): string {
  let h = shaMemo.get(bytes);
  if (h === undefined) shaMemo.set(bytes, (h = sha256(bytes)));
  return h;
}

export function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Deterministic pseudo-random bytes (xorshift), so failures are reproducible. */
export function testBytes(n: number, seed = 1): Buffer {
  const out = Buffer.allocUnsafe(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export interface ServeOptions {
  mime?: string;
  /** The Computer's own chunk cap (it clamps `max_chunk_bytes` to this). */
  cap?: number;
  /** Override what the answer claims (drift / lies). */
  sha?: string;
  total?: number;
}

/** A correct get_blob answer for `bytes` (the well-behaved Computer). */
export function answerFor(
  bytes: Buffer,
  req: Record<string, unknown>,
  o: ServeOptions = {},
): Record<string, unknown> {
  const total = o.total ?? bytes.length;
  const offset = typeof req.chunk_offset === "number" ? req.chunk_offset : 0;
  if (offset < 0 || offset > total) return blobNotAccessible("range");
  const cap = o.cap ?? 1 << 20;
  const asked =
    typeof req.max_chunk_bytes === "number" && req.max_chunk_bytes > 0 ? req.max_chunk_bytes : cap;
  const len = Math.max(0, Math.min(asked, cap, total - offset, bytes.length - offset));
  const slice = bytes.subarray(offset, offset + len);
  const binary = req.blob_format === "binary";
  const out: Record<string, unknown> = {
    blob_handle: req.blob_handle,
    mime_type: o.mime ?? "application/octet-stream",
    total_size: total,
    sha256: o.sha ?? shaOf(bytes),
    chunk_offset: offset,
    eof: offset + len === total,
    blob: binary ? Buffer.from(slice) : slice.toString("base64"),
    req_id: req.req_id,
  };
  if (binary) out.blob_format = "binary";
  return out;
}

/** A script serving `bytes` correctly. */
export function serve(bytes: Buffer, o: ServeOptions = {}): Script {
  const withSha = { ...o, sha: o.sha ?? sha256(bytes) };
  return (req) => answerFor(bytes, req, withSha);
}

/**
 * The `client:get_skill` answer for `req` naming `bytes` as a blob (`blob_handle` the asked
 * `rel_path` unless `o.handle`); `o.total` and `o.sha` make it claim what it does not serve.
 */
export function skillAnswer(
  req: Record<string, unknown>,
  bytes: Buffer,
  o: ServeOptions & { handle?: string } = {},
): Record<string, unknown> {
  return {
    name: req.name,
    rel_path: req.rel_path,
    mime_type: o.mime ?? "application/octet-stream",
    total_size: o.total ?? bytes.length,
    sha256: o.sha ?? shaOf(bytes),
    blob_handle: o.handle ?? req.rel_path,
    req_id: req.req_id,
  };
}

export function blobError(reason: string): Record<string, unknown> {
  return { code: 4018, message: "Blob not accessible", details: { reason } };
}

/** An AgentClient connected to `fake` and joined to its office. Close it with `close()`. */
export async function connectAgent(
  fake: { url: string },
  opts: Partial<AgentClientOptions> = {},
): Promise<AgentClient> {
  const client = new AgentClient({ url: fake.url, name: "agent-1", ...opts });
  await client.connect();
  await client.joinOffice(OFFICE);
  return client;
}

/**
 * The file-level setup of a CLI test against a scripted Computer: the fake Server alone (the CLI
 * is the Agent), started in `before` and closed in `after`; `use` receives it once it is up.
 */
export function useFakeServer(
  use: (fake: FakeServer) => void,
  opts?: Parameters<typeof startFakeServer>[0],
): void {
  let fake: FakeServer | undefined;
  before(async () => {
    fake = await startFakeServer(opts);
    use(fake);
  });
  after(async () => {
    await fake?.close();
  });
}

/** A temporary folder for a test file's outputs: made in `before`, removed in `after`. */
export function useTempDir(prefix: string, use: (dir: string) => void): void {
  let dir: string | undefined;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
    use(dir);
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
}

/**
 * The usual file-level setup of an Agent SDK test: a fake Server/Computer and an Agent joined to
 * its office, started in `before` and closed in `after`. `use` receives both once they are up.
 */
export function useFakeComputer(
  use: (fake: FakeServer, agent: AgentClient) => void,
  opts: {
    server?: Parameters<typeof startFakeServer>[0];
    agent?: Partial<AgentClientOptions>;
  } = {},
): void {
  let fake: FakeServer | undefined;
  let agent: AgentClient | undefined;
  before(async () => {
    fake = await startFakeServer(opts.server);
    agent = await connectAgent(fake, opts.agent);
    use(fake, agent);
  });
  after(async () => {
    await agent?.close();
    await fake?.close();
  });
}
