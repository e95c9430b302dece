/**
 * Disk errors named for what they are (D57). A write into the Computer's state directory (the tool
 * spool, the derived store of SKILL.md bodies) that fails because the disk is full (`ENOSPC`,
 * `EDQUOT`) or broken (`EIO`, `EROFS`) is answered with a reason the Agent can act on,
 * `storage_full` or `storage_error`, instead of "internal error" or "too large to send".
 *
 * A store keeps one `StorageHealth`: the first failure of an episode logs one line (what fails
 * until when), later ones are only counted, and the first write that succeeds again ends the
 * episode with one more line. Nothing is switched off meanwhile: every write tries the disk, so
 * service resumes by itself the moment space is free.
 */
import type { Logger } from "pino";

/** `details.reason` (4017 / 4018) and a tool result's `meta.a2c_error_reason` for a disk fault. */
export type StorageReason = "storage_full" | "storage_error";

/** The store a fault happened in (the metrics' `store` label). */
export type StoreName = "spool" | "derived" | "uploads";

/** The Computer's metrics for storage faults (computer/metrics.ts). */
export interface StorageFaultMetrics {
  storageFailures: { inc(labels: { store: StoreName; reason: StorageReason }): void };
  storageFailing: { set(labels: { store: StoreName }, value: number): void };
}

/** The reason for a failed write when it is a disk fault; `null` for anything else. */
export function storageReason(err: unknown): StorageReason | null {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === "ENOSPC" || code === "EDQUOT") return "storage_full";
  if (code === "EIO" || code === "EROFS") return "storage_error";
  return null;
}

/** A write that failed for a disk fault, with its reason; `cause` is the errno error. */
export class StorageFaultError extends Error {
  override readonly name = "StorageFaultError";
  constructor(
    readonly reason: StorageReason,
    readonly store: StoreName,
    options: { cause: unknown },
  ) {
    super(
      reason === "storage_full"
        ? `the Computer is out of disk space (${store})`
        : `the Computer's disk failed a write (${store})`,
      options,
    );
  }
}

/** One store's episodes of disk faults: logged once each, counted always. */
export class StorageHealth {
  #since: number | undefined;
  #failures = 0;

  constructor(
    private readonly store: StoreName,
    /** What fails while the disk does, for the episode's first log line. */
    private readonly impact: string,
    private readonly log: Logger | undefined,
    private readonly metrics: StorageFaultMetrics | undefined,
  ) {}

  /** True while the last write of this store failed for a disk fault. */
  get failing(): boolean {
    return this.#since !== undefined;
  }

  /**
   * A write failed: a `StorageFaultError` when `err` is a disk fault (counted; the episode's
   * first logs), else `err` itself.
   */
  failed(err: unknown): unknown {
    const reason = storageReason(err);
    if (reason === null) return err;
    this.metrics?.storageFailures.inc({ store: this.store, reason });
    this.#failures++;
    if (this.#since === undefined) {
      this.#since = Date.now();
      this.metrics?.storageFailing.set({ store: this.store }, 1);
      this.log?.error(
        { store: this.store, reason, code: (err as NodeJS.ErrnoException).code },
        `${this.store}: ${reason === "storage_full" ? "out of disk space" : "disk error"}; ${this.impact} until a write succeeds again`,
      );
    }
    return new StorageFaultError(reason, this.store, { cause: err });
  }

  /** A write succeeded: ends an episode, if one was going on. */
  ok(): void {
    if (this.#since === undefined) return;
    this.log?.info(
      { store: this.store, failures: this.#failures, seconds: (Date.now() - this.#since) / 1000 },
      `${this.store}: writing again`,
    );
    this.#since = undefined;
    this.#failures = 0;
    this.metrics?.storageFailing.set({ store: this.store }, 0);
  }
}
