/**
 * Test harness for anything that talks to a real Server: start it on port 0, connect plain
 * socket.io-client sockets as Agents and Computers (the right path, `a2c_version` query, token),
 * join offices, await events and acks, and close everything in one call.
 *
 *   const h = await ServerHarness.start();               // real Server, token auth, port 0
 *   const agent = await h.agent("office-1", "agent-1");   // connected + joined
 *   const pc = await h.computer("office-1", "pc-1");
 *   pc.on("client:get_tools", (req, ack) => ack({ tools: [], req_id: req.req_id }));
 *   const [answer] = await emitAck(agent, "client:get_tools", { agent: "agent-1", req_id: "r1", computer: "pc-1" });
 *   await h.close();                                      // sockets first, then the Server
 *
 * Waiting is event-driven: `waitFor` resolves on the event itself and fails after a timeout that
 * only guards against a hung test. To prove that something was NOT delivered, record the socket
 * (`record`) and call `barrier` before asserting: the barrier is a round trip on the same
 * connection, so anything the Server sent earlier has arrived by the time it resolves.
 *
 * `A2C_TEST_SERVER_TRANSPORT=stock` runs every harness Server with its transport fast paths off
 * (`transport: "stock"`: socket.io, engine.io and ws as shipped), so the same tests check the wire
 * contract both ways: the test runner runs every file tagged `@both-transports` a second time so
 * (scripts/run-tests.ts). A test of one fast path's mechanism skips then.
 */
import { after, before } from "node:test";
import { io as connectIo, type Socket } from "socket.io-client";
import { PROTOCOL_VERSION, NAMESPACE, type Role } from "../../protocol/index.ts";
import { startServer, type RunningServer, type ServerOptions } from "../../server/server.ts";

export type { Socket };

/** The token every harness Server accepts unless told otherwise. */
export const TEST_TOKEN = "harness-token-0123456789";

/** Guard against a hung test, not a pacing device. */
export const DEFAULT_WAIT_MS = 20_000;

/** The transport harness Servers run with: `"stock"` under `A2C_TEST_SERVER_TRANSPORT=stock`. */
export const TEST_TRANSPORT: "fast" | "stock" =
  process.env.A2C_TEST_SERVER_TRANSPORT === "stock" ? "stock" : "fast";

/** A test's `skip` option for a test of one fast path's mechanism: skipped on a stock run. */
export function skipUnlessFastPaths(what: string): string | false {
  return TEST_TRANSPORT === "stock" ? `stock transport run: ${what} is a fast path` : false;
}

export interface ConnectOptions {
  /** `auth.token`; `null` sends no auth object. Default TEST_TOKEN. */
  token?: string | null;
  /** Extra/other `auth` fields (merged over `{token}`). */
  auth?: Record<string, unknown>;
  /** `a2c_version` query value; `null` omits it. Default PROTOCOL_VERSION. */
  version?: string | null;
  transports?: ("polling" | "websocket")[];
  namespace?: string;
  extraHeaders?: Record<string, string>;
  /** Use the Server's engine path unless overridden. */
  path?: string;
}

/** Why a connect failed: the `connect_error` message and its flat `data`, if any. */
export class ConnectRefused extends Error {
  constructor(
    message: string,
    readonly data: unknown,
  ) {
    super(message);
  }
}

export class ServerHarness {
  private readonly sockets = new Set<Socket>();
  private closed = false;

  private constructor(readonly server: RunningServer) {}

  /** Starts a Server on 127.0.0.1:0 with token auth (TEST_TOKEN) unless options say otherwise. */
  static async start(options: ServerOptions = {}): Promise<ServerHarness> {
    const auth = options.auth || options.noAuth || options.tokens ? {} : { tokens: [TEST_TOKEN] };
    const server = await startServer({
      host: "127.0.0.1",
      port: 0,
      transport: TEST_TRANSPORT,
      ...auth,
      ...options,
    });
    return new ServerHarness(server);
  }

  get url(): string {
    return this.server.url;
  }

  /** A socket that is not awaited (for connect_error tests). Closed by `close()`. */
  socket(options: ConnectOptions = {}): Socket {
    const query: Record<string, string> = {};
    const version = options.version === undefined ? PROTOCOL_VERSION : options.version;
    if (version !== null) query.a2c_version = version;
    const token = options.token === undefined ? TEST_TOKEN : options.token;
    const auth = { ...(token !== null ? { token } : {}), ...options.auth };
    const socket = connectIo(`${this.server.url}${options.namespace ?? NAMESPACE}`, {
      path: options.path ?? this.server.path,
      query,
      auth,
      transports: options.transports ?? ["polling", "websocket"],
      extraHeaders: options.extraHeaders,
      forceNew: true,
      reconnection: false,
      timeout: DEFAULT_WAIT_MS,
    });
    this.sockets.add(socket);
    return socket;
  }

  /** Connects and resolves on `connect`; rejects with ConnectRefused on `connect_error`. */
  async connect(options: ConnectOptions = {}): Promise<Socket> {
    const socket = this.socket(options);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no connect within ${DEFAULT_WAIT_MS} ms`)),
        DEFAULT_WAIT_MS,
      );
      socket.once("connect", () => {
        clearTimeout(timer);
        resolve();
      });
      socket.once("connect_error", (err: Error & { data?: unknown }) => {
        clearTimeout(timer);
        reject(new ConnectRefused(err.message, err.data));
      });
    });
    return socket;
  }

  /** Connects and joins as an Agent; fails the test if the join is refused. */
  async agent(officeId: string, name: string, options: ConnectOptions = {}): Promise<Socket> {
    return this.member("agent", officeId, name, options);
  }

  /**
   * Agent `agent-1` and Computer `pc-1` joined to `office-1`, both on WebSocket only: the pair the
   * relay tests that look at what crosses the wire use.
   */
  async webSocketPair(): Promise<{ agent: Socket; pc: Socket }> {
    const agent = await this.agent("office-1", "agent-1", { transports: ["websocket"] });
    const pc = await this.computer("office-1", "pc-1", { transports: ["websocket"] });
    return { agent, pc };
  }

  /** The Server's engine.io session of a client socket (engine.io internals, typed by the test). */
  sessionOf<T>(socket: Socket): T {
    const clients = (this.server.io.engine as unknown as { clients: Record<string, T> }).clients;
    const session = clients[socket.io.engine.id];
    if (!session) throw new Error(`no engine.io session ${socket.io.engine.id}`);
    return session;
  }

  /** Connects and joins as a Computer; fails the test if the join is refused. */
  async computer(officeId: string, name: string, options: ConnectOptions = {}): Promise<Socket> {
    return this.member("computer", officeId, name, options);
  }

  private async member(
    role: Role,
    officeId: string,
    name: string,
    options: ConnectOptions,
  ): Promise<Socket> {
    const socket = await this.connect(options);
    const [ok, reason] = await joinOffice(socket, { role, name, office_id: officeId });
    if (ok !== true)
      throw new Error(`join ${role} ${name} → ${officeId} refused: ${String(reason)}`);
    return socket;
  }

  /** `barrier` on every connected socket this harness opened. */
  async barrierAll(): Promise<void> {
    await Promise.all([...this.sockets].filter((s) => s.connected).map((s) => barrier(s)));
  }

  /** Disconnects every socket it opened, then closes the Server. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.sockets) s.disconnect();
    await this.server.close();
  }
}

/** A Server and its WebSocket pair (`webSocketPair`), for the tests of one file or suite. */
export interface WebSocketPairSuite {
  readonly server: ServerHarness;
  readonly agent: Socket;
  readonly pc: Socket;
}

/**
 * Starts a Server with `webSocketPair()` before the enclosing file's or suite's tests and closes
 * it after them; the fields are set once `before` has run.
 */
export function webSocketPairSuite(options: ServerOptions = {}): WebSocketPairSuite {
  const suite = {} as { server: ServerHarness; agent: Socket; pc: Socket };
  before(async () => {
    suite.server = await ServerHarness.start(options);
    Object.assign(suite, await suite.server.webSocketPair());
  });
  after(() => suite.server?.close());
  return suite;
}

/** Emits with an ack and resolves with ALL ack arguments (emitWithAck keeps only the first). */
export function emitAck(socket: Socket, event: string, ...args: unknown[]): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no ack for ${event} within ${DEFAULT_WAIT_MS} ms`)),
      DEFAULT_WAIT_MS,
    );
    socket.emit(event, ...args, (...answer: unknown[]) => {
      clearTimeout(timer);
      resolve(answer);
    });
  });
}

/** `server:join_office` → the two ack arguments `[ok, reason]`. */
export async function joinOffice(
  socket: Socket,
  req: { role: Role; name: string; office_id: string },
): Promise<unknown[]> {
  return emitAck(socket, "server:join_office", req);
}

/** Resolves with the arguments of the next `event` on `socket` (optionally matching `filter`). */
export function waitFor<T = unknown>(
  socket: Socket,
  event: string,
  filter: (payload: T) => boolean = () => true,
  timeoutMs = DEFAULT_WAIT_MS,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.off(event, listener);
      reject(new Error(`no ${event} within ${timeoutMs} ms`));
    }, timeoutMs);
    const listener = (payload: T): void => {
      if (!filter(payload)) return;
      clearTimeout(timer);
      socket.off(event, listener);
      resolve(payload);
    };
    socket.on(event, listener);
  });
}

/** Everything a socket received, in order (event name and first argument). */
export interface Recorded {
  event: string;
  payload: unknown;
}

/** Starts recording every event `socket` receives; returns the live list. */
export function record(socket: Socket): Recorded[] {
  const seen: Recorded[] = [];
  socket.onAny((event: string, payload: unknown) => seen.push({ event, payload }));
  return seen;
}

/**
 * A round trip on `socket`'s own connection (a harmless `server:list_room` that the Server always
 * answers). When it resolves, every packet the Server sent to this socket before has arrived.
 */
export async function barrier(socket: Socket): Promise<void> {
  await emitAck(socket, "server:list_room", null);
}

/** A fresh AgentCallData + computer target. */
let reqCounter = 0;
export function request(
  agent: string,
  computer: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  reqCounter += 1;
  return { agent, req_id: `req-${process.pid}-${reqCounter}`, computer, ...extra };
}

/**
 * A get_blob answer carrying a whole resource in one chunk (offset 0, eof), as a Computer would
 * ack it; the sha256 is a placeholder (the Server relays it unchecked).
 */
export function wholeChunkAck(
  blob: Buffer | string,
  reqId: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    blob_handle: "h",
    mime_type: "application/octet-stream",
    total_size: typeof blob === "string" ? Buffer.from(blob, "base64").length : blob.length,
    sha256: "0".repeat(64),
    chunk_offset: 0,
    eof: true,
    blob,
    req_id: reqId,
    ...extra,
  };
}

type WirePacket = { type: string; data?: unknown };

/**
 * Answers the next request event `computer` receives with `json` as its ack's data, written on
 * the wire as it is (no socket.io encoding): for ack texts JSON.stringify would not write.
 */
export function answerNextRaw(computer: Socket, json: string): void {
  const engine = computer.io.engine;
  const onPacket = (p: WirePacket): void => {
    const m = typeof p.data === "string" ? /^2\/smcp,(\d+)\[/.exec(p.data) : null;
    if (p.type !== "message" || !m) return;
    engine.off("packet", onPacket);
    engine.send(`3/smcp,${m[1]}${json}`);
  };
  engine.on("packet", onPacket);
}

/** The ACK texts (`3/smcp,<id>[…]`) `socket` receives from now on, as they come off the wire. */
export function incomingAckTexts(socket: Socket): string[] {
  const seen: string[] = [];
  socket.io.engine.on("packet", (p: WirePacket) => {
    if (typeof p.data === "string" && p.data.startsWith("3/smcp,")) seen.push(p.data);
  });
  return seen;
}

/**
 * The TCP socket under a client's WebSocket transport (engine.io-client's `ws`), to pause its
 * reading or count its writes. Throws while the client is not on WebSocket.
 */
export function clientTcp(socket: { io: { engine: { transport: unknown } } }): NodeJS.Socket {
  const transport = socket.io.engine.transport as {
    name: string;
    ws?: { _socket?: NodeJS.Socket };
  };
  const tcp = transport.ws?._socket;
  if (transport.name !== "websocket" || !tcp) {
    throw new Error(`client transport is ${transport.name}, not a WebSocket with a TCP socket`);
  }
  return tcp;
}

/** Plain HTTP GET against the Server (no socket.io). */
export async function httpGet(
  url: string,
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(url);
  return { status: res.status, headers: res.headers, text: await res.text() };
}
