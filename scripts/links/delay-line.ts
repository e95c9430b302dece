/**
 * The userspace delay stage's forwarding (docs/decisions.md D38): these kernels have no `netem`,
 * so where a case needs round-trip delay, a TCP proxy holds every read for `delayMs` before it
 * writes it on, in each direction (a round trip gains 2 × `delayMs`). Order is kept (every read
 * waits the same time), and the stage holds at most `maxHeldBytes` per direction, counting what
 * waits in the line and what the outgoing socket has not sent: above it, reading stops, so a slow
 * link behind the stage pushes back on the sender as the link itself would, instead of the stage
 * soaking up the sender's queue.
 */
import type { Socket } from "node:net";

export interface DelayOptions {
  delayMs: number;
  maxHeldBytes: number;
}

/** Forwards `src` to `dst`, every read delayed by `delayMs`. */
export function delayedPipe(src: Socket, dst: Socket, o: DelayOptions): void {
  const line: Array<{ due: number; buf: Buffer }> = [];
  let lineBytes = 0;
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const held = (): number => lineBytes + dst.writableLength;
  const maybeResume = (): void => {
    if (src.isPaused() && held() <= o.maxHeldBytes / 2) src.resume();
  };
  const flush = (): void => {
    timer = undefined;
    const now = performance.now();
    // setTimeout may fire up to a millisecond early by performance.now()'s clock.
    while (line.length > 0 && line[0]!.due <= now + 1) {
      const { buf } = line.shift()!;
      lineBytes -= buf.length;
      dst.write(buf);
    }
    if (line.length > 0) schedule();
    else if (ended) dst.end();
    maybeResume();
  };
  const schedule = (): void => {
    if (timer !== undefined || line.length === 0) return;
    timer = setTimeout(flush, Math.max(0, line[0]!.due - performance.now()));
  };
  src.on("data", (buf: Buffer) => {
    line.push({ due: performance.now() + o.delayMs, buf });
    lineBytes += buf.length;
    if (held() > o.maxHeldBytes) src.pause();
    schedule();
  });
  dst.on("drain", maybeResume);
  src.on("end", () => {
    ended = true;
    if (line.length === 0) dst.end();
  });
  const close = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    line.length = 0;
    src.destroy();
    dst.destroy();
  };
  src.on("error", close);
  dst.on("error", close);
  src.on("close", () => {
    // A reset (not an orderly end) drops what was still held, as a broken link would.
    if (!ended) close();
  });
}
