/**
 * Blob handles (D14): opaque, authenticated, versioned, kind-tagged records.
 *
 * Wire form: base64url (no padding) of `version(1) ‖ nonce(12) ‖ ciphertext ‖ tag(16)`, where the
 * ciphertext is AES-256-GCM over the compact JSON `[kind, fields]` and the version byte is the
 * additional authenticated data. So:
 * - the Agent sees no readable path (a handle never encodes a plain path): fields are encrypted;
 * - anything not minted with this key (random, truncated, bit-flipped, re-encoded, foreign key,
 *   other version, empty, over-long) fails `open()` and is `invalid_handle` before any file-system
 *   access (the codec never touches the disk);
 * - the kind is inside the authenticated plaintext, so a `tool` handle can never be replayed as a
 *   `skill` one.
 * Overhead is 29 bytes before base64, so a SKILL handle is ~100–150 characters.
 *
 * The key is per Computer, kept in its state directory (`0700` folder, `0600` file), created once
 * atomically (write a temp file, then `link()`, which fails if another process won the race), and
 * reused on restart: handles survive restarts, and two Computers sharing a state dir share handles.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmod, link, mkdir, open, readFile, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { LIMITS } from "@a2c-smcp/protocol";
import type { HandleFields, HandleKind } from "../contracts.ts";

export const HANDLE_VERSION = 1;
export const HANDLE_KINDS: readonly HandleKind[] = ["skill", "tool"];
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const MIN_SEALED_BYTES = 1 + NONCE_BYTES + 2 /* "[]" */ + TAG_BYTES;
/**
 * The schema's bound on `blob_handle` (a longer one could never be pulled): `seal()` refuses to
 * mint beyond it and `open()` rejects longer input unread. Typical handles are 100–200 chars.
 */
export const MAX_HANDLE_CHARS = LIMITS.handle;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const AAD = Buffer.from([HANDLE_VERSION]);

/** Name of the key file inside the state directory. */
export const HANDLE_KEY_FILE = "handle.key";

export interface OpenedHandle {
  kind: HandleKind;
  fields: HandleFields;
}

/**
 * Handles opened recently, by wire string. Opening is a pure function of (key, handle), so a
 * remembered result is exactly what a fresh AES-GCM open would return; only handles that
 * authenticated are kept (a forged one is decided afresh every time, still with no I/O). It saves
 * a decipher per chunk: an Agent pulls the same handle at many offsets.
 */
const OPENED_CACHE_ENTRIES = 1024;

export class HandleCodec {
  readonly #key: Buffer;
  readonly #opened = new Map<string, OpenedHandle>();

  constructor(key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error(`handle key must be ${KEY_BYTES} bytes`);
    this.#key = Buffer.from(key);
  }

  seal(kind: HandleKind, fields: HandleFields): string {
    if (!HANDLE_KINDS.includes(kind)) throw new Error(`unknown handle kind ${String(kind)}`);
    if (!isFieldRecord(fields)) throw new Error("handle fields must be strings or finite numbers");
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(AAD);
    const plain = Buffer.from(JSON.stringify([kind, fields]), "utf8");
    const sealed = Buffer.concat([
      AAD,
      nonce,
      cipher.update(plain),
      cipher.final(),
      cipher.getAuthTag(),
    ]);
    const handle = sealed.toString("base64url");
    if (handle.length > MAX_HANDLE_CHARS) {
      throw new Error(`handle would exceed ${MAX_HANDLE_CHARS} characters; fields too long`);
    }
    return handle;
  }

  /** The record inside `handle`, or `null` when it does not authenticate. Pure: no I/O. */
  open(handle: string): OpenedHandle | null {
    const known = this.#opened.get(handle);
    if (known !== undefined) return known;
    const opened = this.#open(handle);
    if (opened !== null) {
      if (this.#opened.size >= OPENED_CACHE_ENTRIES) {
        this.#opened.delete(this.#opened.keys().next().value!); // oldest first
      }
      this.#opened.set(handle, opened);
    }
    return opened;
  }

  #open(handle: string): OpenedHandle | null {
    if (handle.length === 0 || handle.length > MAX_HANDLE_CHARS || !BASE64URL.test(handle)) {
      return null;
    }
    const sealed = Buffer.from(handle, "base64url");
    // Re-encoding must give the input back: rejects non-canonical trailing bits and lengths.
    if (sealed.length < MIN_SEALED_BYTES || sealed.toString("base64url") !== handle) return null;
    if (sealed[0] !== HANDLE_VERSION) return null;
    const nonce = sealed.subarray(1, 1 + NONCE_BYTES);
    const body = sealed.subarray(1 + NONCE_BYTES, sealed.length - TAG_BYTES);
    const tag = sealed.subarray(sealed.length - TAG_BYTES);
    let plain: Buffer;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, nonce, {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(AAD);
      decipher.setAuthTag(tag);
      plain = Buffer.concat([decipher.update(body), decipher.final()]);
    } catch {
      return null;
    }
    // Authenticated from here on; the shape checks guard against our own older/buggy minting.
    let record: unknown;
    try {
      record = JSON.parse(plain.toString("utf8"));
    } catch {
      return null;
    }
    if (!Array.isArray(record) || record.length !== 2) return null;
    const [kind, fields] = record as [unknown, unknown];
    if (typeof kind !== "string" || !HANDLE_KINDS.includes(kind as HandleKind)) return null;
    if (!isFieldRecord(fields)) return null;
    // Frozen: the same record is handed to every later open of this handle.
    return Object.freeze({ kind: kind as HandleKind, fields: Object.freeze(fields) });
  }
}

function isFieldRecord(value: unknown): value is HandleFields {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  return Object.values(value).every(
    (v) => typeof v === "string" || (typeof v === "number" && Number.isFinite(v)),
  );
}

/**
 * Loads the Computer's handle key from `stateDir`, creating the directory (`0700`) and the key
 * (`0600`) on first start. Concurrent first starts agree on one key: the key is written to a
 * private temp file and published with `link()`, which fails if the name already exists.
 */
export async function loadOrCreateHandleKey(stateDir: string, log?: Logger): Promise<Buffer> {
  const created = await mkdir(stateDir, { recursive: true, mode: 0o700 });
  if (created !== undefined) await chmod(stateDir, 0o700); // mkdir's mode is subject to umask
  const keyPath = join(stateDir, HANDLE_KEY_FILE);
  let key = await readKey(keyPath);
  if (key === null) {
    const tmp = join(
      stateDir,
      `.${HANDLE_KEY_FILE}.${process.pid}.${randomBytes(6).toString("hex")}`,
    );
    const fh = await open(tmp, "wx", 0o600);
    try {
      await fh.writeFile(randomBytes(KEY_BYTES));
      await fh.sync();
    } finally {
      await fh.close();
    }
    try {
      await link(tmp, keyPath);
      log?.info("created a new handle key in the state directory");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    } finally {
      await unlink(tmp);
    }
    key = await readKey(keyPath);
    if (key === null) throw new Error("handle key vanished while being created");
  }
  const mode = (await stat(keyPath)).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    log?.warn({ mode: mode.toString(8) }, "handle key file is readable by others; expected 0600");
  }
  return key;
}

async function readKey(keyPath: string): Promise<Buffer | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(keyPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  if (bytes.length !== KEY_BYTES) {
    // Never silently replace a key: that would invalidate every handle in the wild.
    throw new Error(
      `handle key file is corrupt (expected ${KEY_BYTES} bytes, got ${bytes.length})`,
    );
  }
  return bytes;
}
