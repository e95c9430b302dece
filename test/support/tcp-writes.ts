/**
 * Counts the write calls node's stream machinery makes on a net.Socket (`_write` for one buffer,
 * `_writev` for several), with the buffers each carried: how the write-batching tests see how
 * many system calls an answer took, on the real TCP socket of a real session.
 */
interface Tcp {
  _write(...args: unknown[]): void;
  _writev(...args: unknown[]): void;
}

export interface WriteCount {
  writes: number;
  buffers: number;
}

/** From now on, every write on `tcp` is counted in the returned object. */
export function countTcpWrites(tcp: unknown): WriteCount {
  const t = tcp as Tcp;
  const seen: WriteCount = { writes: 0, buffers: 0 };
  const write = t._write.bind(t);
  const writev = t._writev.bind(t);
  t._write = (...args: unknown[]) => {
    seen.writes += 1;
    seen.buffers += 1;
    write(...args);
  };
  t._writev = (...args: unknown[]) => {
    seen.writes += 1;
    seen.buffers += (args[0] as unknown[]).length;
    writev(...args);
  };
  return seen;
}
