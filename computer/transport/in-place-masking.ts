/**
 * In-place masking (fast path `mask_in_place`): ws masks the Computer's own chunk buffers in
 * place instead of masking a copy.
 *
 * A WebSocket client MUST mask every frame it sends with a fresh random key (RFC 6455 §5.3). ws
 * does that by allocating a new buffer of the frame's size and writing the masked bytes into it,
 * because it may not modify a caller's Buffer ("readOnly"). For a binary get_blob answer that is a
 * second chunk-sized allocation per chunk, outside V8's heap: at 1 MiB binary chunks it was what
 * started V8's full mark-compacts (external memory grows past its limit long before the young
 * generation fills), whose concurrent marking cost the Computer about twice its main thread's time
 * per chunk.
 *
 * The buffer behind a binary answer is the transport's own (lent-buffers.ts): nothing reads it
 * after the ack is written, and a pooled one is reused only once the TCP socket has written it.
 * So ws may mask it in place, exactly as it does with data it allocated itself: same random key
 * per frame, same bytes on the wire, one copy and one allocation fewer. Only Buffers passed to
 * `allow` are masked in place; any other Buffer (a producer's in-memory bytes) keeps ws's copy.
 *
 * What it relies on (ws 8, the copy engine.io-client loads): `WebSocket.send` → `Sender.send`
 * computes `readOnly` (true for every Buffer) and calls `this.dispatch(data, compress, options,
 * cb)`, or queues `[this.dispatch, …]` while the sender is busy; `dispatch` → `Sender.frame(data,
 * options)`, which masks into a new buffer when `options.readOnly`, else into `data` itself. An
 * own `dispatch` on each sender clears `readOnly` for allowed Buffers and calls the prototype's.
 * The probe runs `Sender.frame` on a scratch buffer to see that it still behaves so.
 */
import {
  engineWs,
  isWebSocketTransport,
  onEveryTransport,
  type ClientManager,
} from "./client-stack.ts";

type Dispatch = (data: unknown, compress: boolean, options: unknown, cb: unknown) => void;

interface WsSender {
  dispatch?: Dispatch;
}

interface SenderTransport {
  readonly ws?: { readonly _sender?: WsSender | null } | null;
}

/** Why in-place masking cannot work with the installed ws, or undefined. */
export function inPlaceMaskingUnavailable(): string | undefined {
  const ws = engineWs();
  if (typeof ws === "string") return ws;
  if (typeof ws.Sender.prototype.dispatch !== "function") return "ws Sender has no dispatch method";
  if (typeof ws.Sender.frame !== "function") return "ws Sender has no static frame method";
  // A frame of a writable buffer must be [header, the buffer itself, masked]; a read-only one a
  // single merged copy. Anything else means ws no longer decides the copy by `readOnly`.
  const data = Buffer.alloc(200, 0x11);
  const options = (readOnly: boolean): Record<string, unknown> => ({
    fin: true,
    opcode: 2,
    rsv1: false,
    mask: true,
    readOnly,
    maskBuffer: Buffer.alloc(4),
    generateMask: (mask: Buffer) => mask.fill(0x22),
  });
  try {
    const copied = ws.Sender.frame(data, options(true));
    if (copied.length !== 1 || data[0] !== 0x11)
      return "ws Sender.frame no longer copies read-only data";
    const inPlace = ws.Sender.frame(data, options(false));
    if (inPlace.length !== 2 || inPlace[1] !== data || data[0] !== (0x11 ^ 0x22)) {
      return "ws Sender.frame no longer masks writable data in place";
    }
  } catch (err) {
    return `ws Sender.frame failed (${(err as Error).message})`;
  }
  return undefined;
}

/** Lets the ws senders of a Manager's WebSocket transports mask allowed Buffers in place. */
export class InPlaceMasking {
  readonly #allowed = new WeakSet<Buffer>();
  readonly #patched = new WeakSet<object>();

  /** Installs on every WebSocket transport of `manager` (reconnects too). */
  constructor(manager: ClientManager, unavailable: (reason: string) => void) {
    onEveryTransport(manager, (transport) => {
      if (!isWebSocketTransport(transport)) return;
      const reason = this.#install(transport as SenderTransport);
      if (reason) unavailable(reason);
    });
  }

  /** `buf` is the transport's own: ws may overwrite it while framing it. */
  allow(buf: Buffer): void {
    this.#allowed.add(buf);
  }

  #install(t: SenderTransport): string | undefined {
    const sender = t.ws?._sender;
    if (!sender || typeof sender.dispatch !== "function") {
      return "the WebSocket transport's ws has no sender with a dispatch method";
    }
    if (this.#patched.has(sender)) return undefined;
    this.#patched.add(sender);
    const dispatch = sender.dispatch;
    const allowed = this.#allowed;
    sender.dispatch = function (this: WsSender, data, compress, options, cb): void {
      const opts = options as { readOnly?: boolean } | null;
      if (opts?.readOnly === true && Buffer.isBuffer(data) && allowed.has(data)) {
        opts.readOnly = false;
      }
      dispatch.call(this, data, compress, options, cb);
    };
    return undefined;
  }
}
