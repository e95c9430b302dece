/**
 * The partial file of a download (D85): one file beside the target, `<target>.a2c-part`,
 * that a later process can continue (`resume`, the CLI's `-c`). Its layout:
 *
 *   [0, total_size)                 the resource's bytes, a verified prefix of them valid
 *   [total_size, + 2 × TRAILER_SLOT) two trailer slots, written in turn
 *
 * A slot holds a record (the resource's sha256, size and MIME type; the Computer and handle it
 * was pulled with, so a tool can ask again; and marks: prefix lengths with the sha256 of the bytes
 * before them), framed by a magic, a length and a sha256 of its own. A torn slot fails its own
 * checksum and the other one is read, so a crash at any point leaves a file whose newest valid
 * record describes bytes that were written before it. Nothing is trusted without hashing: a
 * resume reads the prefix back and compares it with the marks, the newest first, falling back to
 * the mark the last `fdatasync` made durable (a power loss may lose later pages), else to 0.
 * When the download completes the trailer is cut off, the file synced and renamed onto the
 * target, so no file but the target is left.
 */
import { createHash, type Hash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";

/** The partial file of a download to `target`. */
export function partialPath(target: string): string {
  return `${target}.a2c-part`;
}

/** Bytes of one trailer slot; a record that does not fit drops its source fields. */
export const TRAILER_SLOT = 4096;
export const TRAILER_BYTES = 2 * TRAILER_SLOT;
const MAGIC = Buffer.from("A2CPART1", "latin1");
const HEAD = MAGIC.length + 4;
const SUM = 32;

/** A prefix of `offset` bytes whose sha256 state digests to `sha256`. */
export interface Mark {
  offset: number;
  sha256: string;
}

export interface PartialRecord {
  totalSize: number;
  sha256: string;
  mimeType: string;
  /** How to ask for the resource again (informational: resume trusts the sha256, D14). */
  computer?: string;
  handle?: string;
  /** The newest mark: the prefix written when the record was. */
  mark: Mark;
  /** The newest mark made durable by an `fdatasync` before the record was written. */
  durable: Mark;
}

const ZERO: Mark = { offset: 0, sha256: createHash("sha256").digest("hex") };

/** A record of no bytes yet. */
export function freshRecord(
  id: { totalSize: number; sha256: string; mimeType: string },
  source: { computer?: string; handle?: string },
): PartialRecord {
  return { ...id, ...source, mark: ZERO, durable: ZERO };
}

function encodeSlot(record: PartialRecord, seq: number): Buffer {
  const { computer, handle, ...rest } = record;
  let json = Buffer.from(JSON.stringify({ v: 1, seq, ...rest, computer, handle }));
  if (HEAD + json.length + SUM > TRAILER_SLOT)
    json = Buffer.from(JSON.stringify({ v: 1, seq, ...rest }));
  const slot = Buffer.alloc(TRAILER_SLOT);
  MAGIC.copy(slot, 0);
  slot.writeUInt32BE(json.length, MAGIC.length);
  json.copy(slot, HEAD);
  createHash("sha256")
    .update(slot.subarray(0, HEAD + json.length))
    .digest()
    .copy(slot, HEAD + json.length);
  return slot;
}

function decodeSlot(slot: Buffer): (PartialRecord & { seq: number }) | undefined {
  if (slot.length < TRAILER_SLOT || !slot.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  const len = slot.readUInt32BE(MAGIC.length);
  if (HEAD + len + SUM > TRAILER_SLOT) return undefined;
  const sum = createHash("sha256")
    .update(slot.subarray(0, HEAD + len))
    .digest();
  if (!sum.equals(slot.subarray(HEAD + len, HEAD + len + SUM))) return undefined;
  try {
    const r = JSON.parse(slot.subarray(HEAD, HEAD + len).toString("utf8")) as Record<
      string,
      unknown
    >;
    const mark = (m: unknown): Mark | undefined => {
      const o = m as Mark | undefined;
      return Number.isSafeInteger(o?.offset) && typeof o?.sha256 === "string" ? o : undefined;
    };
    const [m, d] = [mark(r.mark), mark(r.durable)];
    if (r.v !== 1 || !Number.isSafeInteger(r.totalSize) || typeof r.sha256 !== "string")
      return undefined;
    if (!m || !d || typeof r.seq !== "number") return undefined;
    return {
      seq: r.seq,
      totalSize: r.totalSize as number,
      sha256: r.sha256,
      mimeType: typeof r.mimeType === "string" ? r.mimeType : "",
      ...(typeof r.computer === "string" ? { computer: r.computer } : {}),
      ...(typeof r.handle === "string" ? { handle: r.handle } : {}),
      mark: m,
      durable: d,
    };
  } catch {
    return undefined;
  }
}

/** Writes `record` into the slot after the newest (`seq` counts the writes). */
export async function writeRecord(
  fh: FileHandle,
  record: PartialRecord,
  seq: number,
): Promise<void> {
  const slot = encodeSlot(record, seq);
  await fh.write(slot, 0, slot.length, record.totalSize + (seq % 2) * TRAILER_SLOT);
}

/** The newest valid record of an open partial file (its trailer is its last TRAILER_BYTES). */
export async function readRecord(
  fh: FileHandle,
): Promise<(PartialRecord & { seq: number }) | undefined> {
  const { size } = await fh.stat();
  if (size < TRAILER_BYTES) return undefined;
  const buf = Buffer.alloc(TRAILER_BYTES);
  await fh.read(buf, 0, TRAILER_BYTES, size - TRAILER_BYTES);
  const slots = [decodeSlot(buf.subarray(0, TRAILER_SLOT)), decodeSlot(buf.subarray(TRAILER_SLOT))];
  const valid = slots.filter((s) => s !== undefined && s.totalSize === size - TRAILER_BYTES);
  return valid.sort((a, b) => b!.seq - a!.seq)[0];
}

/** Bytes read at once while re-hashing a prefix. */
const VERIFY_READ_BYTES = 4 * 1024 * 1024;

/**
 * Reads the prefix back and hashes it: the longest of the record's marks whose bytes digest as
 * recorded, with the hash advanced to it (to go on hashing what follows); offset 0 when none does.
 */
export async function verifyPrefix(
  fh: FileHandle,
  record: PartialRecord,
): Promise<{ offset: number; hash: Hash }> {
  const marks = [record.durable, record.mark]
    .filter((m) => m.offset > 0 && m.offset <= record.totalSize)
    .sort((a, b) => a.offset - b.offset);
  const hash = createHash("sha256");
  let best: { offset: number; hash: Hash } = { offset: 0, hash: createHash("sha256") };
  const buf = Buffer.allocUnsafe(Math.min(VERIFY_READ_BYTES, marks.at(-1)?.offset ?? 1));
  let at = 0;
  for (const m of marks) {
    while (at < m.offset) {
      const n = Math.min(buf.length, m.offset - at);
      const { bytesRead } = await fh.read(buf, 0, n, at);
      if (bytesRead <= 0) return best;
      hash.update(buf.subarray(0, bytesRead));
      at += bytesRead;
    }
    if (hash.copy().digest("hex") !== m.sha256) return best;
    best = { offset: at, hash: hash.copy() };
  }
  return best;
}
