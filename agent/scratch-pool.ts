/**
 * A pool of reused scratch buffers for the sinks that do not decode in place (file, stream):
 * each buffer pays its first-touch page faults once, not once per chunk.
 */
/**
 * Buffers have the size of the regions asked for: a read whose chunk size changes (a binary
 * request answered in base64 goes on at the base64 size) starts a new set.
 */
export class ScratchPool {
  private readonly free: ArrayBufferLike[] = [];
  private readonly owned = new WeakSet<ArrayBufferLike>();
  private readonly isFree = new WeakSet<ArrayBufferLike>();
  constructor(private size: number) {}
  take(len: number): Buffer {
    if (len > this.size || len * 4 < this.size) {
      this.size = len;
      this.free.length = 0;
    }
    let store = this.free.pop();
    if (store) this.isFree.delete(store);
    else {
      store = Buffer.allocUnsafeSlow(Math.max(1, this.size)).buffer;
      this.owned.add(store);
    }
    return Buffer.from(store, 0, len);
  }
  give(view: Buffer): void {
    const store = view.buffer;
    if (!this.owned.has(store) || this.isFree.has(store)) return;
    if (store.byteLength !== Math.max(1, this.size)) return; // of an earlier size: let it go
    this.isFree.add(store);
    this.free.push(store);
  }
}
