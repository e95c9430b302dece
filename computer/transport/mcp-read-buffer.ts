/**
 * A linear-time replacement for the MCP SDK's stdio read buffer (fast path `mcp_read_buffer`).
 *
 * The SDK's `ReadBuffer` (`shared/stdio.js`, v1.32) does `Buffer.concat([buffer, chunk])` for
 * every 64 KiB pipe read and then scans the whole buffer for `\n` again: a 7 MB tool result (a
 * 5 MB screenshot in base64) costs ~110 concatenations and scans of growing buffers, i.e.
 * hundreds of megabytes of copying, seconds on a busy host. This one scans only the new chunk for
 * newlines and concatenates each message's pieces once. Same contract: `append` throws (after
 * clearing) when one pending message would exceed `maxBufferSize`; `readMessage` returns the next
 * parsed JSON-RPC message or null; `clear` empties it.
 *
 * The SDK keeps its buffer in the private field `_readBuffer` of `StdioClientTransport`, which
 * `installLinearReadBuffer` replaces before the transport starts. The probe builds a transport
 * (nothing is spawned until `start`) to see that the field is still there; if a future SDK
 * renames it, the fast path is reported unavailable and the SDK's own buffer keeps working.
 */
import { deserializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

const NEWLINE = 0x0a;

export class LinearReadBuffer {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly lines: Buffer[] = [];

  constructor(private readonly maxBufferSize: number) {}

  append(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      if (nl === -1) break;
      const piece = chunk.subarray(start, nl);
      this.checkSize(piece.length);
      this.lines.push(this.pending.length === 0 ? piece : Buffer.concat([...this.pending, piece]));
      this.pending = [];
      this.pendingBytes = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.checkSize(rest.length);
      this.pending.push(rest);
      this.pendingBytes += rest.length;
    }
  }

  readMessage(): JSONRPCMessage | null {
    const line = this.lines.shift();
    if (line === undefined) return null;
    let text = line.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    return deserializeMessage(text);
  }

  clear(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.lines.length = 0;
  }

  private checkSize(extra: number): void {
    if (this.pendingBytes + extra > this.maxBufferSize) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${this.maxBufferSize} bytes`);
    }
  }
}

interface SdkReadBuffer {
  append?: unknown;
  readMessage?: unknown;
  clear?: unknown;
}

function readBufferOf(transport: StdioClientTransport): SdkReadBuffer | undefined {
  return (transport as unknown as { _readBuffer?: SdkReadBuffer })._readBuffer;
}

/** Why the SDK's stdio read buffer cannot be replaced, or undefined. */
export function linearReadBufferUnavailable(): string | undefined {
  let rb: SdkReadBuffer | undefined;
  try {
    rb = readBufferOf(new StdioClientTransport({ command: process.execPath }));
  } catch (err) {
    return `the MCP SDK's StdioClientTransport cannot be built (${(err as Error).message})`;
  }
  if (
    typeof rb?.append !== "function" ||
    typeof rb.readMessage !== "function" ||
    typeof rb.clear !== "function"
  ) {
    return "the MCP SDK's StdioClientTransport has no _readBuffer with append/readMessage/clear";
  }
  return undefined;
}

/** Installs the linear buffer into a (not yet started) SDK stdio transport; false if it cannot. */
export function installLinearReadBuffer(
  transport: StdioClientTransport,
  maxBytes: number,
): boolean {
  const rb = readBufferOf(transport);
  if (typeof rb?.append !== "function" || typeof rb.readMessage !== "function") return false;
  (transport as unknown as { _readBuffer: LinearReadBuffer })._readBuffer = new LinearReadBuffer(
    maxBytes,
  );
  return true;
}
