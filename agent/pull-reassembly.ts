/**
 * In-order reassembly of one logical read: every answer is checked against what was asked and
 * against the read's identity (pull-chunk.ts), placed into the sink at its own `chunk_offset`,
 * and, as the contiguous prefix grows, fed to the running sha256 and committed to the sink in
 * offset order. The window scheduler (pull-window.ts) decides what to ask; this part decides
 * what the answers mean for the bytes.
 */
import { createHash, type Hash } from "node:crypto";
import type { GetBlobRet } from "@a2c-smcp/protocol";
import { checkChunk, placeChunk, type BlobIdentity, type Work } from "./pull-chunk.ts";
import type { PullProgress } from "./pull-types.ts";
import type { Sink } from "./sinks.ts";

/** A checked chunk waiting for the prefix to reach it. */
interface Held {
  bytes: Buffer;
  /** A region of the sink (given back once written) rather than a buffer it may keep. */
  owned: boolean;
}

export class Reassembly<R> {
  /** Bytes hashed and committed, in order: the read is done when it reaches `total`. */
  private prefix = 0;
  /** Bytes of this read accepted so far, in any order (for progress). */
  private accepted = 0;
  private readonly waiting = new Map<number, Held>();
  /** Commits whose bytes the sink still holds in memory (it answered with a promise). */
  private committing = 0;
  private commitError: unknown;
  private readonly hash: Hash = createHash("sha256");
  /** Chunks held besides the sink's own batch: waiting for the prefix, or being written. */
  private readonly maxHeld: number;

  /** Called when a commit settles (the scheduler may go on); set by the scheduler. */
  wake: () => void = () => undefined;

  constructor(
    private readonly sink: Sink<R>,
    readonly identity: BlobIdentity,
    window: number,
    private readonly onProgress: ((p: PullProgress) => void) | undefined,
  ) {
    this.maxHeld = sink.inPlace ? Number.POSITIVE_INFINITY : window * 2;
  }

  get total(): number {
    return this.identity.total;
  }

  /** The offset every later byte depends on: the first one not yet hashed. */
  get nextNeeded(): number {
    return this.prefix;
  }

  /** Every byte hashed and nothing left in the sink's hands. */
  get complete(): boolean {
    return this.prefix === this.identity.total && this.committing === 0;
  }

  /** Nothing will ever move the prefix without a new answer (no write pending). */
  get idle(): boolean {
    return this.committing === 0;
  }

  /** No more chunks may be held: only the one at the prefix may still be asked for. */
  get full(): boolean {
    return this.waiting.size + this.committing >= this.maxHeld;
  }

  /** A write that failed since the last look (the read fails with it). */
  get failure(): unknown {
    return this.commitError;
  }

  /**
   * Takes the answer to `w`: checks it (`Restart` on drift, `ChunkContractError` on a broken
   * contract), places its bytes (`region` when they were decoded straight into it), hashes and
   * commits whatever became contiguous. Returns the unanswered tail of a short answer, to be
   * asked again (the plan never shifts).
   */
  accept(w: Work, ret: GetBlobRet, region?: Buffer): Work | undefined {
    const len = checkChunk(w, ret, this.identity);
    const [bytes, owned] = placeChunk(this.sink, ret, len, region);
    this.accepted += len;
    if (len > 0) this.waiting.set(w.offset, { bytes, owned });
    else if (owned) this.sink.discard(bytes);
    this.advance();
    this.onProgress?.({ bytes: this.accepted, total: this.identity.total });
    return len < w.len ? { offset: w.offset + len, len: w.len - len } : undefined;
  }

  /** The sha256 of every byte, in order (once the read is complete). */
  digest(): string {
    return this.hash.digest("hex");
  }

  /** Gives back whatever is still held (the read ended, well or not). */
  release(): void {
    for (const h of this.waiting.values()) if (h.owned) this.sink.discard(h.bytes);
    this.waiting.clear();
  }

  /** Hashes and commits the chunks that now continue the prefix. */
  private advance(): void {
    for (let next = this.waiting.get(this.prefix); next; next = this.waiting.get(this.prefix)) {
      this.waiting.delete(this.prefix);
      this.hash.update(next.bytes);
      const at = this.prefix;
      this.prefix += next.bytes.length;
      const p = this.sink.commit(at, next.bytes, next.owned);
      if (p) {
        this.committing++;
        p.then(
          () => this.committed(),
          (err: unknown) => {
            this.commitError ??= err;
            this.committed();
          },
        );
      }
    }
  }

  private committed(): void {
    this.committing--;
    this.wake();
  }
}
