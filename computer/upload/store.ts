/**
 * The Computer's upload store behind `client:put_blob` (docs/protocol.md, "client:put_blob"):
 * one session per `upload_id`, each chunk checked in upstream's order, its bytes written straight
 * to `<root>/.a2c-upload/<upload_id>.part` (memory does not grow with the upload), and the final
 * chunk fsynced, verified, renamed into the landing root and the root's directory fsynced. Only
 * complete, verified files ever appear in the root.
 *
 * Chunks of one session run one after another in arrival order (an Agent may keep several in
 * flight: they arrive in order over its one connection); sessions run independently. Every
 * file-system call is asynchronous (libuv's pool), so an upload never holds the event loop for
 * longer than hashing one chunk.
 */
import { createHash, randomUUID, type Hash } from "node:crypto";
import {
  mkdir,
  open,
  readdir,
  realpath,
  rename,
  stat,
  unlink,
  type FileHandle,
} from "node:fs/promises";
import { join, sep } from "node:path";
import type { Logger } from "pino";
import {
  blobWriteFailed,
  landingName,
  UPLOAD_MESSAGES as M,
  UPLOAD_PART_DIR,
  UPLOAD_PART_SUFFIX,
  UploadReason as R,
  type ErrorPayload,
  type PutBlobAck,
  type PutBlobFinalAck,
} from "@a2c-smcp/protocol";
import { storageReason, type StorageHealth } from "../blob/storage-faults.ts";

export interface UploadStoreOptions {
  /** Absolute landing root; undefined: every upload is `forbidden` (fail-closed). */
  root: string | undefined;
  /** A session idle (since its last accepted chunk) longer than this is dropped (ms). */
  idleTimeoutMs: number;
  /** Sessions open at once before a first chunk is `busy`. */
  maxConcurrent: number;
  /** Largest declared `total_size`. */
  maxBytes: number;
  log: Logger;
  /** Disk-fault episodes of this store (logged once each, counted). */
  health?: StorageHealth;
  metrics?: UploadMetrics;
}

/** The Computer's upload metrics (computer/metrics.ts). */
export interface UploadMetrics {
  uploadSessions: { set(value: number): void };
  uploadOutcomes: { inc(labels: { outcome: string }): void };
}

/** One upload in flight. */
interface Session {
  readonly id: string;
  readonly part: string;
  readonly name: string;
  readonly totalSize: number;
  readonly sha256: string;
  readonly hash: Hash;
  fh: FileHandle | undefined;
  received: number;
  /** Monotonic time of the last accepted chunk (ms). */
  lastActive: number;
  /** The chain chunks of this session run on, in arrival order. */
  tail: Promise<unknown>;
  /** Chunks queued or running: a session with work is never expired. */
  pending: number;
  dropped: boolean;
  /** The background `fdatasync` in flight, if any, and the bytes written since the last one. */
  writeback: Promise<void> | undefined;
  unsynced: number;
  /** What a background `fdatasync` failed with: the final fsync would not report it again. */
  writebackError: unknown;
}

type Req = Record<string, unknown>;
type Answer = PutBlobAck | PutBlobFinalAck | ErrorPayload;

const SHA256_HEX = /^[0-9a-f]{64}$/;
const now = (): number => performance.now();

export class UploadStore {
  readonly #o: UploadStoreOptions;
  readonly #sessions = new Map<string, Session>();
  #gcRunning = false;
  #closed = false;
  /** The `.part` deletions of the last expiry: an `invalid_upload` answer waits for them. */
  #expiring: Promise<unknown> = Promise.resolve();

  constructor(options: UploadStoreOptions) {
    this.#o = options;
  }

  /** Sessions open now (first chunks being set up included). */
  get sessions(): number {
    return this.#sessions.size;
  }

  /** The landing root, when one is configured. */
  get root(): string | undefined {
    return this.#o.root;
  }

  /**
   * Handles one chunk. Must be called in arrival order: it queues a later chunk behind the
   * earlier ones of its session before it returns.
   */
  put(req: Req): Promise<Answer> {
    return this.#route(req).then((answer) => this.#count(answer));
  }

  #route(req: Req): Promise<Answer> {
    this.#expireIdle();
    // Absent (or null) means a first chunk; anything else, "" included, names a session.
    if (req.upload_id === undefined || req.upload_id === null) return this.#first(req);
    const id = req.upload_id;
    const session = typeof id === "string" ? this.#sessions.get(id) : undefined;
    if (!session) return this.#expiring.then(() => unknownUpload(id));
    return this.#enqueue(session, () => this.#later(session, req));
  }

  /** Counts a 4019 by its reason, a final ack as `stored`, and the sessions open now. */
  #count(answer: Answer): Answer {
    const m = this.#o.metrics;
    if (m) {
      if ("code" in answer) m.uploadOutcomes.inc({ outcome: String(answer.details?.reason) });
      else if ("landing_path" in answer) m.uploadOutcomes.inc({ outcome: "stored" });
      m.uploadSessions.set(this.#sessions.size);
    }
    return answer;
  }

  /** Shutdown: closes every session and deletes its `.part` (nothing half-written is kept). */
  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#sessions.values()];
    await Promise.allSettled(all.map((s) => s.tail));
    await Promise.allSettled(all.map((s) => this.#drop(s)));
  }

  #first(req: Req): Promise<Answer> {
    const root = this.#o.root;
    if (root === undefined || this.#closed) {
      return Promise.resolve(blobWriteFailed(R.Forbidden, M.notConfigured));
    }
    const total = req.total_size;
    if (typeof total !== "number" || !Number.isInteger(total) || total < 1) {
      return Promise.resolve(blobWriteFailed(R.InvalidDeclaration, M.badTotalSize));
    }
    if (typeof req.sha256 !== "string" || !SHA256_HEX.test(req.sha256)) {
      return Promise.resolve(blobWriteFailed(R.InvalidDeclaration, M.badSha256));
    }
    if (total > this.#o.maxBytes) {
      return Promise.resolve(blobWriteFailed(R.TooLarge, M.tooLarge, { total_size: total }));
    }
    if (this.#sessions.size >= this.#o.maxConcurrent) {
      return Promise.resolve(blobWriteFailed(R.Busy, M.busy));
    }
    const id = randomUUID().replaceAll("-", "");
    const session: Session = {
      id,
      part: join(root, UPLOAD_PART_DIR, id + UPLOAD_PART_SUFFIX),
      name: landingName(id, req.name_hint),
      totalSize: total,
      sha256: req.sha256,
      hash: createHash("sha256"),
      fh: undefined,
      received: 0,
      lastActive: now(),
      tail: Promise.resolve(),
      pending: 0,
      dropped: false,
      writeback: undefined,
      unsynced: 0,
      writebackError: undefined,
    };
    // Registered before the first await: the slot counts toward the cap while it is set up.
    this.#sessions.set(id, session);
    return this.#enqueue(session, async () => {
      try {
        await mkdir(join(root, UPLOAD_PART_DIR), { recursive: true, mode: 0o700 });
        session.fh = await open(session.part, "wx", 0o600);
      } catch (err) {
        this.#o.log.warn({ err, upload_id: id }, "landing root not writable");
        this.#sessions.delete(id);
        session.dropped = true;
        return blobWriteFailed(R.Forbidden, M.notWritable);
      }
      this.#collectOrphans();
      return this.#chunk(session, req);
    });
  }

  async #later(session: Session, req: Req): Promise<Answer> {
    if (session.dropped) return unknownUpload(session.id);
    // "Later chunks MUST NOT carry total_size, sha256 or name_hint"; the session is kept.
    if (req.total_size !== undefined || req.sha256 !== undefined || req.name_hint !== undefined) {
      return blobWriteFailed(R.InvalidDeclaration, M.lateDeclaration);
    }
    return this.#chunk(session, req);
  }

  /** The common path of every chunk: offset, bytes, overrun, end, append, and maybe finish. */
  async #chunk(session: Session, req: Req): Promise<Answer> {
    const id = session.id;
    const offset = req.chunk_offset;
    if (typeof offset !== "number" || offset !== session.received) {
      return blobWriteFailed(R.Range, M.offsetMismatch, { upload_id: id });
    }
    const bytes = chunkBytes(req.blob);
    if (typeof bytes === "string") {
      return blobWriteFailed(R.InvalidDeclaration, bytes, { upload_id: id });
    }
    const end = offset + bytes.length;
    if (end > session.totalSize) {
      await this.#drop(session);
      return blobWriteFailed(R.Range, M.overrun, { upload_id: id });
    }
    const eof = req.eof === true;
    if (eof && end !== session.totalSize) {
      return blobWriteFailed(R.Range, M.shortFinal, { upload_id: id });
    }
    try {
      if (bytes.length > 0) await writeAll(session.fh!, bytes, offset);
      this.#o.health?.ok();
    } catch (err) {
      return this.#ioError(session, err, M.writeFailed);
    }
    startWriteback(session, bytes.length);
    session.hash.update(bytes);
    session.received = end;
    session.lastActive = now();
    const ack = { chunk_offset: offset, req_id: String(req.req_id), upload_id: id };
    if (!eof) return ack;
    return this.#finish(session, ack);
  }

  /** The final chunk: fsync, verify, rename into the root, fsync the root, answer the path. */
  async #finish(
    session: Session,
    ack: { chunk_offset: number; req_id: string; upload_id: string },
  ): Promise<Answer> {
    const root = this.#o.root!;
    await session.writeback;
    if (session.writebackError !== undefined) {
      return this.#ioError(session, session.writebackError, M.flushFailed);
    }
    try {
      await session.fh!.sync();
    } catch (err) {
      return this.#ioError(session, err, M.flushFailed);
    }
    const digest = session.hash.digest("hex");
    if (digest !== session.sha256) {
      await this.#drop(session);
      return blobWriteFailed(R.Integrity, M.integrity, { upload_id: session.id });
    }
    const target = join(root, session.name);
    try {
      await session.fh!.close();
      session.fh = undefined;
      await rename(session.part, target);
    } catch (err) {
      return this.#ioError(session, err, M.finalizeFailed);
    }
    this.#sessions.delete(session.id);
    session.dropped = true;
    try {
      // A stored file survives power loss only once the directory entry the rename made does.
      await syncDirectory(root);
      // Inside the root by construction; checked again in case the root was swapped meanwhile.
      const [realRoot, realFile] = await Promise.all([realpath(root), realpath(target)]);
      if (!realFile.startsWith(realRoot + sep)) throw new Error("stored file escaped the root");
    } catch (err) {
      await unlink(target).catch(() => undefined);
      return this.#ioError(session, err, M.finalizeFailed);
    }
    return { ...ack, landing_path: target, sha256: digest, total_size: session.received };
  }

  /** `io_error`, the session dropped; a disk fault says which in `details.storage_reason`. */
  async #ioError(session: Session, err: unknown, message: string): Promise<ErrorPayload> {
    const reason = storageReason(err);
    if (reason !== null) this.#o.health?.failed(err);
    this.#o.log.error({ err, upload_id: session.id }, message);
    await this.#drop(session);
    return blobWriteFailed(R.IoError, message, {
      upload_id: session.id,
      ...(reason !== null ? { storage_reason: reason } : {}),
    });
  }

  /** Runs `work` after every chunk queued before it on `session`. */
  #enqueue(session: Session, work: () => Promise<Answer>): Promise<Answer> {
    session.pending++;
    const run = session.tail.then(work).finally(() => session.pending--);
    session.tail = run.catch(() => undefined);
    return run;
  }

  /** Forgets a session and deletes its `.part`. */
  async #drop(session: Session): Promise<void> {
    if (this.#sessions.get(session.id) === session) this.#sessions.delete(session.id);
    session.dropped = true;
    const fh = session.fh;
    session.fh = undefined;
    await fh?.close().catch(() => undefined);
    await unlink(session.part).catch(() => undefined);
  }

  /**
   * Drops every session idle strictly longer than the timeout (lazily, on each chunk: there is no
   * timer), then collects orphans. A session with chunks queued or running is not idle.
   */
  #expireIdle(): void {
    const t = now();
    const drops: Promise<void>[] = [];
    for (const session of this.#sessions.values()) {
      if (session.pending === 0 && t - session.lastActive > this.#o.idleTimeoutMs) {
        drops.push(this.#drop(session));
      }
    }
    if (drops.length > 0) {
      this.#o.log.info({ expired: drops.length }, "idle upload sessions dropped");
      this.#expiring = Promise.all(drops).then(() => this.#collectOrphans());
    }
  }

  /**
   * Deletes the direct children of `.a2c-upload` that are files, not a live session's `.part`,
   * and older (mtime) than the idle timeout: what a restart or a crash left. Younger ones may
   * belong to another Computer process sharing the root. One pass at a time; never throws.
   */
  #collectOrphans(): void {
    const root = this.#o.root;
    if (root === undefined || this.#gcRunning) return;
    this.#gcRunning = true;
    const dir = join(root, UPLOAD_PART_DIR);
    const live = (name: string): boolean =>
      name.endsWith(UPLOAD_PART_SUFFIX) && this.#sessions.has(name.slice(0, -5));
    void (async () => {
      let removed = 0;
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        if (!entry.isFile() || live(entry.name)) continue;
        const path = join(dir, entry.name);
        const st = await stat(path).catch(() => undefined);
        if (!st || Date.now() - st.mtimeMs <= this.#o.idleTimeoutMs) continue;
        if (live(entry.name)) continue;
        if (
          await unlink(path).then(
            () => true,
            () => false,
          )
        )
          removed++;
      }
      if (removed > 0) this.#o.log.info({ removed }, "orphaned upload parts collected");
    })()
      .catch((err: unknown) => this.#o.log.warn({ err }, "orphan collection failed"))
      .finally(() => (this.#gcRunning = false));
  }
}

function unknownUpload(id: unknown): ErrorPayload {
  return blobWriteFailed(R.InvalidUpload, M.unknownUpload, {
    ...(typeof id === "string" ? { upload_id: id } : {}),
  });
}

/**
 * A chunk's bytes: a binary attachment as it is, a string as strict base64 (the standard
 * alphabet only; padding optional, D78). Otherwise the 4019 message that refuses it.
 *
 * Node's decoder skips what is not base64 and stops at an inner `=`, so a string that decodes to
 * fewer bytes than its length promises held something else; it also takes base64url's `-` and `_`,
 * which are looked for apart. Both checks run in native code: a chunk is checked at the speed it
 * is decoded.
 */
export function chunkBytes(blob: unknown): Uint8Array | string {
  if (blob instanceof Uint8Array) return blob;
  if (blob instanceof ArrayBuffer) return new Uint8Array(blob);
  if (typeof blob !== "string") return M.blobNotString;
  let n = blob.length;
  while (n > 0 && blob.charCodeAt(n - 1) === 61) n--;
  const padded = n < blob.length;
  if (blob.length - n > 2 || n % 4 === 1 || (padded && blob.length % 4 !== 0)) {
    return M.badBase64;
  }
  if (blob.includes("-") || blob.includes("_")) return M.badBase64;
  const bytes = Buffer.from(blob, "base64");
  return bytes.length === Math.floor((n * 3) / 4) ? bytes : M.badBase64;
}

/** Writes every byte at `position` (a short write is continued, never lost). */
async function writeAll(fh: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await fh.write(bytes, done, bytes.length - done, position + done);
    if (bytesWritten === 0) throw new Error("short write");
    done += bytesWritten;
  }
}

/**
 * Written bytes after which the disk is asked to start writing them (a background `fdatasync`,
 * never awaited by the chunk): the fsync of the final chunk then has little left to flush,
 * instead of the whole file, and the Agent waits that much less for its last ack.
 */
export const UPLOAD_WRITEBACK_BYTES = 32 * 1024 * 1024;

function startWriteback(session: Session, written: number): void {
  session.unsynced += written;
  const fh = session.fh;
  if (session.writeback || session.unsynced < UPLOAD_WRITEBACK_BYTES || !fh) return;
  session.unsynced = 0;
  // A failure is the upload's: the kernel reports a writeback error once per descriptor.
  session.writeback = fh
    .datasync()
    .catch((err: unknown) => void (session.writebackError ??= err))
    .finally(() => (session.writeback = undefined));
}

async function syncDirectory(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
