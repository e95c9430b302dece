/**
 * A hostile client's view of the Server: engine.io and socket.io frames written by hand over a
 * plain `ws` WebSocket (none of socket.io-client, none of our SDK), so a test can do what a
 * compliant client never does: stop reading its TCP socket while it keeps sending, send pongs
 * nobody asked for, send event names and payloads socket.io-client would refuse to encode.
 *
 *   const c = await RawClient.connect(h.url, h.server.path, { token: TEST_TOKEN });
 *   await c.join("agent", "office-1", "attacker");
 *   const [answer] = await c.request("client:get_skills", {...});
 *   c.stopReading();                       // the kernel buffers fill, the Server's queue grows
 *   c.emit("client:get_blob", {...});      // fire and forget (an ack is still asked for)
 *   await c.closed;                        // the Server dropped us
 */
import { WebSocket } from "ws";
import { NAMESPACE, PROTOCOL_VERSION } from "../../protocol/index.ts";

/** Guard against a hung test, not a pacing device. */
const WAIT_MS = 20_000;

export interface RawClientOptions {
  token?: string;
  /** Answer the Server's pings (as a compliant client does). Default true. */
  answerPings?: boolean;
}

export class RawClient {
  /** Resolves when the connection is gone (closed by either side). */
  readonly closed: Promise<void>;
  /** Engine.IO handshake values. */
  pingInterval = 0;
  pingTimeout = 0;
  /** Pings received from the Server. */
  pings = 0;
  private pingWaiters: (() => void)[] = [];
  private nextId = 1;
  private readonly acks = new Map<number, (args: unknown[]) => void>();
  /** Events the Server sends (to a raw client joined as a Computer): name, arguments, ack id. */
  onEvent: ((event: string, args: unknown[], ackId: number | undefined) => void) | undefined;
  private isClosed = false;

  private constructor(
    private readonly ws: WebSocket,
    private readonly answerPings: boolean,
  ) {
    this.closed = new Promise((resolve) => ws.once("close", () => resolve()));
    void this.closed.then(() => (this.isClosed = true));
    ws.on("error", () => undefined); // a dropped connection is the expected outcome of some tests
    ws.on("message", (data: Buffer, isBinary: boolean) => {
      if (!isBinary) this.onText(data.toString("utf8"));
    });
  }

  /** Opens a WebSocket session straight away (no polling) and connects to `/smcp`. */
  static async connect(
    baseUrl: string,
    enginePath: string,
    options: RawClientOptions = {},
  ): Promise<RawClient> {
    const url = new URL(`${enginePath}?EIO=4&transport=websocket`, baseUrl.replace(/^http/, "ws"));
    url.searchParams.set("a2c_version", PROTOCOL_VERSION);
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const client = new RawClient(ws, options.answerPings ?? true);
    const connected = client.waitText((t) => t.startsWith(`40${NAMESPACE},`));
    const open = client.waitText((t) => t.startsWith("0"));
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    const handshake = JSON.parse((await open).slice(1)) as {
      pingInterval: number;
      pingTimeout: number;
    };
    client.pingInterval = handshake.pingInterval;
    client.pingTimeout = handshake.pingTimeout;
    const auth = options.token !== undefined ? { token: options.token } : {};
    client.sendRaw(`40${NAMESPACE},${JSON.stringify(auth)}`);
    await connected;
    return client;
  }

  get connected(): boolean {
    return !this.isClosed;
  }

  /** The TCP socket under the WebSocket (to stop reading it, or count its bytes). */
  get tcp(): NodeJS.Socket {
    const tcp = (this.ws as unknown as { _socket?: NodeJS.Socket })._socket;
    if (!tcp) throw new Error("the WebSocket has no TCP socket");
    return tcp;
  }

  /** Resolves when the Server's next ping has arrived (and been answered, if `answerPings`). */
  nextPing(): Promise<void> {
    return new Promise((resolve) => this.pingWaiters.push(resolve));
  }

  /** `server:join_office`; resolves with the ack's two arguments. */
  join(role: "agent" | "computer", officeId: string, name: string): Promise<unknown[]> {
    return this.request("server:join_office", { role, name, office_id: officeId });
  }

  /** Emits with an ack and resolves with the ack's arguments. */
  request(event: unknown, ...args: unknown[]): Promise<unknown[]> {
    return this.requestText(JSON.stringify([event, ...args]));
  }

  /**
   * Emits an event whose data array is `json`, written as is (payloads socket.io-client could not
   * encode), and resolves with the ack's arguments.
   */
  requestText(json: string): Promise<unknown[]> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.acks.delete(id);
        reject(new Error(`no ack for ${json.slice(0, 64)} within ${WAIT_MS} ms`));
      }, WAIT_MS);
      this.acks.set(id, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      this.sendRaw(`42${NAMESPACE},${id}${json}`);
    });
  }

  /** Emits `event` asking for an ack (whose answer is dropped); returns the ack id. */
  emit(event: unknown, ...args: unknown[]): number {
    const id = this.nextId++;
    this.sendRaw(`42${NAMESPACE},${id}${JSON.stringify([event, ...args])}`);
    return id;
  }

  /** Emits with no ack at all. */
  notify(event: unknown, ...args: unknown[]): void {
    this.sendRaw(`42${NAMESPACE},${JSON.stringify([event, ...args])}`);
  }

  /** One engine.io text packet, as is (e.g. `"3"`, an unsolicited pong). */
  sendRaw(text: string): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(text);
  }

  /** Answers the Server's event `ackId` with `json`, the ack's data array as raw JSON text. */
  ackRaw(ackId: number, json: string): void {
    this.sendRaw(`43${NAMESPACE},${ackId}${json}`);
  }

  /** Stops reading the TCP socket: what the Server sends stays in the kernel, then in the Server. */
  stopReading(): void {
    this.tcp.pause();
  }

  close(): void {
    this.ws.terminate();
  }

  private onText(text: string): void {
    if (text === "2") {
      this.pings += 1;
      if (this.answerPings) this.sendRaw("3");
      for (const wake of this.pingWaiters.splice(0)) wake();
      return;
    }
    const event = new RegExp(`^42${NAMESPACE},(\\d*)`).exec(text);
    if (event) {
      const [name, ...args] = JSON.parse(text.slice(event[0].length)) as [string, ...unknown[]];
      this.onEvent?.(name, args, event[1] ? Number(event[1]) : undefined);
      return;
    }
    const ack = new RegExp(`^43${NAMESPACE},(\\d+)`).exec(text);
    if (!ack) return;
    const id = Number(ack[1]);
    const done = this.acks.get(id);
    if (!done) return;
    this.acks.delete(id);
    done(JSON.parse(text.slice(ack[0].length)) as unknown[]);
  }

  private waitText(match: (text: string) => boolean): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no handshake answer")), WAIT_MS);
      const listener = (data: Buffer, isBinary: boolean): void => {
        const text = data.toString("utf8");
        if (isBinary || !match(text)) return;
        clearTimeout(timer);
        this.ws.off("message", listener);
        resolve(text);
      };
      this.ws.on("message", listener);
    });
  }
}
