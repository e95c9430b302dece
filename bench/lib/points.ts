/**
 * The points of the sweep: which chunk sizes are measured for a carriage and a buffer, and which
 * would exceed the buffer (marked in the report instead of sent: an ack over `maxHttpBufferSize`
 * makes the Server drop the Computer's socket). All size math comes from protocol/sizing.ts.
 */
import {
  largestAckMessage,
  maxChunkBytes,
  type Carriage,
  type ChunkEnvelope,
} from "@a2c-smcp/protocol";

/** Largest chunk whose ack fits `buffer` for this envelope (WebSocket, the measured transport). */
export function largestFit(buffer: number, carriage: Carriage, envelope: ChunkEnvelope): number {
  return maxChunkBytes({ maxHttpBufferSize: buffer, envelope, carriage, transport: "websocket" });
}

/** Whether a chunk of `bytes` fits `buffer`; the biggest single message is what must fit. */
export function fitsBuffer(
  bytes: number,
  buffer: number,
  carriage: Carriage,
  envelope: ChunkEnvelope,
): boolean {
  return largestAckMessage(envelope, bytes, false, carriage, { transport: "websocket" }) <= buffer;
}

export interface SizePoint {
  bytes: number;
  /** True when this size is the largest that fits one of the buffers. */
  isMax: boolean;
  /** Per buffer: does an ack with this chunk fit? */
  fits: Record<string, boolean>;
  /** Largest message this chunk's ack needs, bytes. */
  messageBytes: number;
}

/** The plan's sizes plus the largest fit of every buffer, ascending, with fit marks. */
export function sizePoints(
  sizes: readonly number[],
  buffers: readonly number[],
  carriage: Carriage,
  envelope: ChunkEnvelope,
): SizePoint[] {
  const maxes = buffers.map((b) => largestFit(b, carriage, envelope));
  const all = [...new Set([...sizes, ...maxes])].sort((a, b) => a - b);
  return all.map((bytes) => ({
    bytes,
    isMax: maxes.includes(bytes),
    fits: Object.fromEntries(
      buffers.map((b) => [String(b), fitsBuffer(bytes, b, carriage, envelope)]),
    ),
    messageBytes: largestAckMessage(envelope, bytes, false, carriage, { transport: "websocket" }),
  }));
}
