/**
 * A linear-time replacement for the MCP SDK's stdio `ReadBuffer`.
 *
 * The SDK's buffer (`shared/stdio.js`, v1.32) does `Buffer.concat([buffer, chunk])` for every
 * 64 KiB pipe read and then scans the whole buffer for `\n` again: a 7 MB tool result (a 5 MB
 * screenshot in base64) costs ~110 concatenations and scans of growing buffers, i.e. hundreds of
 * megabytes of copying, seconds on a busy host. This one scans only the new chunk for newlines
 * and concatenates each message's pieces once. Same contract: `append` throws (after clearing)
 * when one pending message would exceed `maxBufferSize`; `readMessage` returns the next parsed
 * JSON-RPC message or null.
 */
import { deserializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
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

/**
 * Installs the linear buffer into a (not yet started) SDK stdio transport. The SDK keeps it in a
 * private field; if a future SDK renames the field, nothing is replaced and the SDK's own buffer
 * keeps working (slower), so this can never break the transport.
 */
export function installLinearReadBuffer(
  transport: StdioClientTransport,
  maxBytes: number,
): boolean {
  const t = transport as unknown as { _readBuffer?: { append?: unknown; readMessage?: unknown } };
  if (
    typeof t._readBuffer?.append !== "function" ||
    typeof t._readBuffer.readMessage !== "function"
  ) {
    return false;
  }
  t._readBuffer = new LinearReadBuffer(maxBytes);
  return true;
}
