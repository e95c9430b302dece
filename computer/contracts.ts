/**
 * The seams inside the Computer: how producers plug into the blob engine, and how the SKILL and
 * tool services plug into the Computer's dispatch. Adding a third producer (desktop screenshots,
 * artifacts) means implementing `Producer` and registering it; no engine code changes.
 */
import type { BigIntStats } from "node:fs";
import type { Logger } from "pino";
import type { ClientEvent, ClientEventTypes, ErrorPayload } from "@a2c-smcp/protocol";

// ---------------------------------------------------------------------------------------------
// Producers and the blob engine

/** Kind tag inside every handle record (D14). */
export type HandleKind = "skill" | "tool";

/** The producer-specific fields of a handle record (the codec adds version and kind). */
export type HandleFields = Readonly<Record<string, string | number>>;

/**
 * Where the bytes of a resolved handle live.
 * - `file`: the engine opens the path, takes a consistent snapshot (fstat signature), hashes it
 *   through the hash cache, and reads chunks. With `sha256` (a content-addressed file: the tool
 *   spool, a derived SKILL.md body) the file is served only while its digest for the snapshot's
 *   signature is that `sha256`.
 * - `bytes`: derived content already in memory (a small SKILL.md body), with its digest.
 */
export type BlobSource =
  | {
      type: "file";
      path: string;
      mimeType: string;
      sha256?: string;
      /**
       * `path` is a realpath checked by a sandbox: the engine refuses (`forbidden`) a descriptor
       * that resolves anywhere else (a path component swapped for a symlink after the check).
       */
      canonical?: boolean;
      /**
       * The file is unservable (vanished, or not the content `sha256` names): the producer drops
       * it, and the engine resolves the handle once more (a cache the producer can make again).
       */
      discard?: () => void;
    }
  | { type: "bytes"; bytes: Buffer; mimeType: string; sha256?: string };

/**
 * The blob engine's open descriptors, offered to a producer while it re-authorizes one pull.
 * `at(path)` answers the fstat of a descriptor the engine holds on exactly `path` right now (its
 * /proc path reads back `path`, and its content signature is the one it was opened with), or
 * `undefined`. The descriptor is then kept for this pull: a file source with that `path` is
 * served from it. At most one per pull.
 */
export interface HeldFiles {
  at(path: string): BigIntStats | undefined;
}

/** Pull-time outcome of re-authorizing a handle (D15, D17). */
export type ResolveResult =
  | { ok: true; source: BlobSource }
  | { ok: false; reason: "forbidden" | "gone" | "storage_full" | "storage_error" };

export interface Producer {
  readonly kind: HandleKind;
  /**
   * Re-authorizes and resolves an authenticated handle's fields on every pull. Fields that do
   * not have this producer's shape resolve to `null` (→ `invalid_handle`). Never trusts a path
   * from the handle: the producer's own checks run again (defence in depth).
   */
  resolve(
    fields: HandleFields,
    ctx?: Partial<Pick<RequestContext, "signal">>,
    held?: HeldFiles,
  ): Promise<ResolveResult | null>;
}

/** What producers need from the engine at mint time. */
export interface HandleMinter {
  /** Seals `fields` into an opaque, authenticated, base64url handle of `kind`. */
  mint(kind: HandleKind, fields: HandleFields): string;
}

// ---------------------------------------------------------------------------------------------
// Services and dispatch

/** Passed to every `client:*` handler. */
export interface RequestContext {
  /**
   * Aborted when the Computer shuts down or the request is cancelled. The dispatcher makes it
   * on first read: read it only when it is needed (producers get the context, not the signal).
   */
  readonly signal: AbortSignal;
  readonly log: Logger;
}

/**
 * A handler gets a payload already validated with the protocol schema and already checked to be
 * addressed to this Computer (D15), and answers a success object or a flat ErrorPayload.
 */
export type ClientHandler<E extends ClientEvent> = (
  req: ClientEventTypes[E]["req"],
  ctx: RequestContext,
) => Promise<ClientEventTypes[E]["ret"] | ErrorPayload>;

export type ClientHandlers = { [E in ClientEvent]?: ClientHandler<E> };

/** Settings every service reads (from flags / env of `npm run computer`). */
export interface ComputerConfig {
  /** This Computer's name (routing name in its office). */
  readonly name: string;
  /** State directory (handle key, blob spool); created 0700. */
  readonly stateDir: string;
  /** Text up to this many bytes is inlined; binary items over it are sidebanded (D21, D24). */
  readonly inlineBudget: number;
  /** Hard cap on a resource's size (`too_large`, D21; over-cap tool items, D24). */
  readonly maxSize: number;
  /** The Server's `maxHttpBufferSize`; every ack must fit it (D16). */
  readonly maxHttpBufferSize: number;
  /** Serve skill files that have more than one hard link (skills/sandbox.ts; default false). */
  readonly allowHardLinks?: boolean;
}

/** A service contributes handlers and producers, and is told when the Computer joins/leaves. */
export interface ComputerService {
  readonly handlers: ClientHandlers;
  readonly producers: readonly Producer[];
  /** Called with an emitter for `server:update_*` once the Computer is in an office. */
  attach?(notify: (event: "server:update_skills" | "server:update_tool_list") => void): void;
  /** Called when the Computer leaves its office (no notifications until attached again). */
  detach?(): void;
  /** `notify:tool_call_cancel` from the office's Agent. */
  cancel?(reqId: string): void;
  close(): Promise<void>;
}

/** Default settings (D21 and D16). */
export const DEFAULT_INLINE_BUDGET = 32 * 1024;
export const DEFAULT_MAX_SIZE = 100 * 1024 * 1024;
