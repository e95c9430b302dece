/**
 * A socket.io-client-level Agent for `client:put_blob` (the SDK's upload is written elsewhere):
 * sends chunks exactly as given, hostile ones included, and a whole upload in upstream's pattern
 * (one chunk in flight, base64) or pipelined, in base64 or binary carriage.
 */
import { createHash } from "node:crypto";
import { emitAck, request, type Socket } from "./server-harness.ts";

export type Answer = Record<string, unknown>;

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export interface UploadOptions {
  /** Raw bytes per chunk, default 256 KiB (upstream's). */
  chunkSize?: number;
  nameHint?: string;
  /** Declared digest; default the real one. */
  sha256?: string;
  /** Chunks sent before waiting for the oldest ack (1 = upstream's pattern). */
  inFlight?: number;
  /** Ask for binary carriage, and use it once an ack offers it. */
  binary?: boolean;
}

export interface UploadResult {
  /** Every ack, in order (the last one final, or a flat error). */
  acks: Answer[];
  final: Answer;
}

export class UploadDriver {
  constructor(
    readonly socket: Socket,
    readonly agent: string,
    readonly computer: string,
  ) {}

  /** One `client:put_blob` with `fields` (nothing added but agent, req_id, computer). */
  async chunk(fields: Record<string, unknown>): Promise<Answer> {
    const [answer] = await emitAck(
      this.socket,
      "client:put_blob",
      request(this.agent, this.computer, fields),
    );
    return answer as Answer;
  }

  /** A first chunk declaring `bytes` whole, carrying `first` of them. */
  begin(bytes: Uint8Array, first: number, extra: Record<string, unknown> = {}): Promise<Answer> {
    return this.chunk({
      chunk_offset: 0,
      eof: first === bytes.length,
      total_size: bytes.length,
      sha256: sha256Hex(bytes),
      blob: Buffer.from(bytes.subarray(0, first)).toString("base64"),
      ...extra,
    });
  }

  /** A later chunk of `uploadId`: `bytes[offset, offset+len)`. */
  next(
    uploadId: string,
    bytes: Uint8Array,
    offset: number,
    len: number,
    extra: Record<string, unknown> = {},
  ): Promise<Answer> {
    return this.chunk({
      upload_id: uploadId,
      chunk_offset: offset,
      eof: offset + len === bytes.length,
      blob: Buffer.from(bytes.subarray(offset, offset + len)).toString("base64"),
      ...extra,
    });
  }

  /** A whole upload; stops at the first error answer. */
  async upload(bytes: Uint8Array, o: UploadOptions = {}): Promise<UploadResult> {
    const size = o.chunkSize ?? 256 * 1024;
    const acks: Answer[] = [];
    const firstLen = Math.min(size, bytes.length);
    const first = await this.chunk({
      chunk_offset: 0,
      eof: firstLen === bytes.length,
      total_size: bytes.length,
      sha256: o.sha256 ?? sha256Hex(bytes),
      ...(o.nameHint !== undefined ? { name_hint: o.nameHint } : {}),
      blob: Buffer.from(bytes.subarray(0, firstLen)).toString("base64"),
      ...(o.binary ? { blob_format: "base64" } : {}),
    });
    acks.push(first);
    if ("code" in first || firstLen === bytes.length) return { acks, final: first };
    const id = first.upload_id as string;
    const binary = o.binary === true && first.blob_format === "binary";
    const window: Promise<Answer>[] = [];
    for (let offset = firstLen; offset < bytes.length; offset += size) {
      const len = Math.min(size, bytes.length - offset);
      const part = Buffer.from(bytes.subarray(offset, offset + len));
      window.push(
        this.chunk({
          upload_id: id,
          chunk_offset: offset,
          eof: offset + len === bytes.length,
          blob: binary ? part : part.toString("base64"),
          ...(o.binary ? { blob_format: binary ? "binary" : "base64" } : {}),
        }),
      );
      if (window.length >= (o.inFlight ?? 1)) {
        const ack = await window.shift()!;
        acks.push(ack);
        if ("code" in ack) return { acks, final: ack };
      }
    }
    for (const pending of window) acks.push(await pending);
    return { acks, final: acks.at(-1)! };
  }
}
