/**
 * Descriptors the blob engine holds: where an open descriptor's file is now, the cache that keeps
 * descriptors open between chunks, and the one a producer may look at during a pull.
 *
 * Open descriptors kept between `client:get_blob` requests for the same file, so a chunk costs a
 * few cheap syscalls on an already-open descriptor instead of open + close (two libuv thread-pool
 * round trips) every time.
 *
 * Reuse never weakens what a fresh open would guarantee. The engine takes a cached descriptor only
 * after the producer re-authorized the request (every pull) and only when, at that moment:
 *   - the path still names the descriptor's file: for a sandbox-checked realpath (`canonical`),
 *     `/proc/self/fd/N` reads back exactly that path (the same check a fresh open gets); otherwise
 *     `lstat(path)` (last component not followed, like O_NOFOLLOW) has the descriptor's dev:ino;
 *   - the content signature (dev:ino:size:mtime_ns:ctime_ns) is the one seen when the descriptor
 *     was opened. Any write, chmod or chown moves ctime, so a changed file is opened afresh and a
 *     permission change is enforced by that open exactly as before.
 * Serving the descriptor's bytes is then what a fresh open at the moment of the check would serve.
 *
 * Lifetime: entries are reference counted (a descriptor is never closed while a request or a hash
 * computation reads it, so its number cannot be reused under a reader), bounded in number (LRU),
 * and closed after `idleMs` without use, so the process's descriptor count returns to its base
 * when pulls stop. Open descriptors stay within `maxEntries` plus the reads in flight (dispatch.ts
 * bounds those): an entry over the bound closes as soon as its last reader lets go.
 *
 * A file that loses its last name (deleted, or renamed over) is not held beyond the request that
 * sees it, so its disk space is freed: a request for that path finds the signature changed (the
 * unlink moved its ctime) and closes it, and every request first closes the idle descriptors
 * whose file has no name left (`fstat` link count 0). That check runs at most once per event-loop
 * turn while requests overlap (a busy Computer pays one pass per turn, not one per chunk) and on
 * every request that starts with no other in progress; a file that keeps another hard link keeps
 * its space anyway and is left to the idle timer.
 */
import { closeSync, fstatSync, lstatSync, readlinkSync, type BigIntStats } from "node:fs";
import type { BlobSource, HeldFiles } from "../contracts.ts";

/**
 * A file's content signature: device, inode, size, mtime ns, ctime ns. Any write, chmod or chown
 * moves ctime and an atomic-rename rewrite changes the inode, so two reads under one signature
 * read the same content: the hash cache's key (D18), the check that a held descriptor still
 * serves what a fresh open would, the worker tasks' check that a file did not change under them.
 */
export function signatureOf(st: {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

export interface CachedFd {
  readonly fd: number;
  readonly path: string;
  /** Content signature when opened (see `signatureOf`). */
  readonly signature: string;
}

interface Entry extends CachedFd {
  refs: number;
  lastUsed: number;
  /** No longer handed out; closed when the last reader releases it. */
  dead: boolean;
}

export const DEFAULT_FD_CACHE_ENTRIES = 16;
export const DEFAULT_FD_IDLE_MS = 500;

export class FdCache {
  readonly #byPath = new Map<string, Entry>();
  readonly #maxEntries: number;
  readonly #idleMs: number;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** References held across every entry (requests and hashes reading right now). */
  #readers = 0;
  /** Idle entries were checked for unlinked files in this event-loop turn. */
  #checkedThisTurn = false;
  #open = 0;
  readonly #onOpenChange: ((open: number) => void) | undefined;

  /** `onOpenChange` hears the number of open descriptors whenever it changes (a gauge). */
  constructor(
    maxEntries = DEFAULT_FD_CACHE_ENTRIES,
    idleMs = DEFAULT_FD_IDLE_MS,
    onOpenChange?: (open: number) => void,
  ) {
    this.#maxEntries = Math.max(0, Math.floor(maxEntries));
    this.#idleMs = idleMs;
    this.#onOpenChange = onOpenChange;
  }

  /** Descriptors open through the cache, read by requests or held for reuse. */
  get open(): number {
    return this.#open;
  }

  /** The live entry for `path`, with a reference taken; `undefined` when there is none. */
  acquire(path: string): CachedFd | undefined {
    this.#closeUnlinked(path);
    const e = this.#byPath.get(path);
    if (e === undefined) return undefined;
    e.refs++;
    this.#readers++;
    e.lastUsed = performance.now();
    this.#byPath.delete(path); // refresh LRU position
    this.#byPath.set(path, e);
    return e;
  }

  /**
   * Adopts a freshly opened, checked descriptor (the caller's reference is taken). With the cache
   * disabled or closed the entry is simply closed on release.
   */
  adopt(fd: number, path: string, signature: string): CachedFd {
    this.#open++;
    this.#onOpenChange?.(this.#open);
    this.#readers++;
    const e: Entry = { fd, path, signature, refs: 1, lastUsed: performance.now(), dead: false };
    if (this.#closed || this.#maxEntries === 0) {
      e.dead = true;
      return e;
    }
    const old = this.#byPath.get(path);
    if (old) this.#kill(old);
    this.#byPath.set(path, e);
    this.#trim();
    this.#arm();
    return e;
  }

  /** Drops the caller's reference. */
  release(c: CachedFd): void {
    const e = c as Entry;
    e.refs--;
    this.#readers--;
    e.lastUsed = performance.now();
    if (e.refs !== 0) return;
    if (e.dead) this.#close(e);
    else this.#trim(); // over the bound while every entry was being read
  }

  /** Stops handing `c` out (its file changed or moved); closed once nobody reads it. */
  invalidate(c: CachedFd): void {
    this.#kill(c as Entry);
  }

  /** Closes every idle descriptor now and the rest as they are released; adopts nothing more. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    for (const e of [...this.#byPath.values()]) this.#kill(e);
  }

  #kill(e: Entry): void {
    if (!e.dead) {
      e.dead = true;
      if (this.#byPath.get(e.path) === e) this.#byPath.delete(e.path);
    }
    if (e.refs === 0) this.#close(e);
  }

  #close(e: Entry): void {
    e.refs = -1; // closed exactly once
    this.#open--;
    this.#onOpenChange?.(this.#open);
    // Synchronously: once a release or request returns, the descriptor is gone (a regular file's
    // close(2) costs microseconds; an asynchronous close left it open for a thread-pool trip).
    try {
      closeSync(e.fd);
    } catch {
      // already invalid: nothing to free
    }
  }

  /**
   * Closes idle descriptors whose file has no name left (see the header), except `path`'s own,
   * which the caller's reuse check decides.
   */
  #closeUnlinked(path: string): void {
    if (this.#checkedThisTurn && this.#readers > 0) return;
    const idle = [...this.#byPath.values()].filter((e) => e.refs === 0 && e.path !== path);
    if (idle.length === 0) return;
    if (!this.#checkedThisTurn) {
      this.#checkedThisTurn = true;
      setImmediate(() => (this.#checkedThisTurn = false));
    }
    for (const e of idle) {
      let unlinked: boolean;
      try {
        unlinked = fstatSync(e.fd).nlink === 0;
      } catch {
        unlinked = true;
      }
      if (unlinked) this.#kill(e);
    }
  }

  #trim(): void {
    if (this.#byPath.size <= this.#maxEntries) return;
    for (const e of this.#byPath.values()) {
      if (this.#byPath.size <= this.#maxEntries) break;
      if (e.refs === 0) this.#kill(e); // busy entries stay; the chunk scheduler bounds them
    }
  }

  #arm(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.sweepIdle(), this.#idleMs);
    this.#timer.unref();
  }

  /** Closes descriptors unused for `idleMs` as of `now` (the timer calls it; tests may too). */
  sweepIdle(now = performance.now()): void {
    const cutoff = now - this.#idleMs;
    for (const e of [...this.#byPath.values()]) {
      if (e.refs === 0 && e.lastUsed <= cutoff) this.#kill(e);
    }
    if (this.#byPath.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}

/**
 * Where an open descriptor's file is now, compared with the path it was opened by (Linux:
 * `/proc/self/fd`). A directory component swapped for a symlink between a sandbox check and the
 * open makes it resolve `elsewhere` (served files stay inside the skill root: D17, D21); a file
 * renamed over after the open reads as `<path> (deleted)`: `replaced`. Where /proc is unavailable
 * the O_NOFOLLOW open is the only guard.
 * Synchronous on purpose: a readlink in /proc is answered from kernel memory in microseconds, far
 * less than a libuv thread-pool round trip.
 */
export type DescriptorLocation = "same" | "replaced" | "elsewhere";

export function descriptorLocation(fd: number, path: string): DescriptorLocation {
  try {
    const target = readlinkSync(`/proc/self/fd/${fd}`);
    if (target === path) return "same";
    return target === `${path} (deleted)` ? "replaced" : "elsewhere";
  } catch (err) {
    const noProc = (err as NodeJS.ErrnoException).code === "ENOENT" && process.platform !== "linux";
    return noProc ? "same" : "elsewhere";
  }
}

/** A cached descriptor that passed `reusable` during this pull, with that check's fstat. */
export interface CheckedFd {
  fd: CachedFd;
  stats: BigIntStats;
}

/**
 * The engine's side of `HeldFiles` for one pull: the producer may ask for the descriptor of one
 * path; the engine then serves a file source with that path from it (`take`), and gives it back
 * to the cache otherwise (`release`).
 */
export class HeldSlot implements HeldFiles {
  #checked: (CheckedFd & { path: string }) | undefined;
  #asked = false;

  constructor(private readonly fds: FdCache) {}

  at(path: string): BigIntStats | undefined {
    if (this.#asked) return undefined;
    this.#asked = true;
    const fd = this.fds.acquire(path);
    if (fd === undefined) return undefined;
    const stats = reusable(fd, { path, canonical: true });
    if (stats === undefined) {
      this.fds.invalidate(fd);
      this.fds.release(fd);
      return undefined;
    }
    this.#checked = { fd, stats, path };
    return stats;
  }

  /** The checked descriptor if it is `path`'s; it is then the caller's to release. */
  take(path: string): CheckedFd | undefined {
    const checked = this.#checked;
    if (checked?.path !== path) return undefined;
    this.#checked = undefined;
    return checked;
  }

  release(): void {
    if (this.#checked) this.fds.release(this.#checked.fd);
    this.#checked = undefined;
  }
}

/**
 * The fstat of a cached descriptor when reusing it serves what a fresh open would (see the top):
 * the path still names its file and its content signature is the one it was opened with.
 */
export function reusable(
  held: CachedFd,
  source: Pick<Extract<BlobSource, { type: "file" }>, "path" | "canonical">,
): BigIntStats | undefined {
  try {
    if (source.canonical) {
      if (descriptorLocation(held.fd, source.path) !== "same") return undefined;
    }
    const st = fstatSync(held.fd, { bigint: true });
    if (signatureOf(st) !== held.signature) return undefined;
    if (!source.canonical) {
      // lstat: the last component is not followed, as the O_NOFOLLOW open would not follow it.
      const named = lstatSync(source.path, { bigint: true, throwIfNoEntry: false });
      if (named === undefined || named.ino !== st.ino || named.dev !== st.dev) return undefined;
    }
    return st;
  } catch {
    return undefined; // the fresh open decides
  }
}
