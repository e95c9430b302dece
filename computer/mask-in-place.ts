/**
 * Masks the Computer's own chunk buffers in place instead of copying them.
 *
 * A WebSocket client MUST mask every frame it sends with a fresh random key (RFC 6455 §5.3). ws
 * does that by allocating a new buffer of the frame's size and writing the masked bytes into it,
 * because it may not modify a caller's Buffer ("readOnly"). For a binary get_blob answer that is a
 * second chunk-sized allocation per chunk, outside V8's heap: measured at 1 MiB binary chunks, it
 * was what started V8's full mark-compacts (external memory grows past its limit long before the
 * young generation fills), and their concurrent marking on V8's helper threads cost the Computer
 * about twice its main thread's time per chunk (perf: ConcurrentMarking ~45% of its samples).
 *
 * The buffer behind a binary answer is ours: the blob engine read the chunk into a pooled buffer
 * lent to the transport (blob/buffers.ts), nothing reads it after the ack is written, and it goes
 * back to the pool only once the TCP socket has written it (`DrainReleases`). So ws may mask it in
 * place, exactly as it does with data it allocated itself: same random key per frame, same bytes
 * on the wire, one copy and one allocation fewer. Only Buffers marked in `ScratchBuffers` are
 * masked in place; any other Buffer (a tool's in-memory bytes, a producer's data) keeps ws's copy.
 *
 * How, with the installed ws 8 (engine.io-client's): `WebSocket.send` → `Sender.send` computes
 * `readOnly` (true for every Buffer) and calls `this.dispatch(data, compress, options, cb)`, or
 * queues `[this.dispatch, …]` while the sender is busy and later applies it; `dispatch` →
 * `Sender.frame(data, options)`, which masks into a new buffer when `options.readOnly`, else into
 * `data` itself. An own `dispatch` on the sender instance clears `readOnly` for marked Buffers and
 * calls the prototype's. If the sender is missing or has no `dispatch`, nothing is patched (ws
 * copies as before); test/computer/mask-in-place.test.ts fails then.
 */

/** Buffers the WebSocket transport may overwrite while framing them (the engine's lent chunks). */
export class ScratchBuffers {
  readonly #marked = new WeakSet<Buffer>();

  mark(buf: Buffer): void {
    this.#marked.add(buf);
  }

  has(data: unknown): boolean {
    return Buffer.isBuffer(data) && this.#marked.has(data);
  }
}

type Dispatch = (data: unknown, compress: boolean, options: unknown, cb: unknown) => void;

interface WsSender {
  dispatch?: Dispatch;
}

interface ClientTransport {
  readonly name?: string;
  readonly ws?: { readonly _sender?: WsSender | null } | null;
}

const patched = new WeakSet<object>();

/**
 * Lets the ws sender of a WebSocket transport mask `scratch` Buffers in place (once per sender).
 * Returns whether it patched.
 */
export function maskScratchInPlace(transport: unknown, scratch: ScratchBuffers): boolean {
  const t = transport as ClientTransport | null | undefined;
  const sender = t?.name === "websocket" ? t.ws?._sender : undefined;
  if (!sender || typeof sender.dispatch !== "function" || patched.has(sender)) return false;
  patched.add(sender);
  const dispatch = sender.dispatch;
  sender.dispatch = function (this: WsSender, data, compress, options, cb): void {
    const opts = options as { readOnly?: boolean } | null;
    if (opts?.readOnly === true && scratch.has(data)) opts.readOnly = false;
    dispatch.call(this, data, compress, options, cb);
  };
  return true;
}
