/**
 * A Computer's ack arguments kept as the JSON text it sent (D13: the Server "relays the
 * Computer's ack unchanged. It never parses or rebuilds `blob`"). The raw-ack parser
 * (raw-acks.ts) produces one from a plain ACK packet and writes its text back verbatim into the
 * Agent's ACK packet, so a 64 KiB base64 chunk crosses the Server without a JSON.parse of the
 * whole ack on the way in and a JSON.stringify on the way out.
 *
 * The text is still checked to be a JSON array before anyone forwards it: a hostile Computer must
 * not be able to make an Agent's socket.io-client fail to decode a packet (that closes the Agent's
 * whole connection). The check avoids building the big strings: see `checkAckJson`.
 */
import { NOTHING, base64Bytes, carriedBy, type Carried } from "./carried.ts";

/**
 * The arguments of one ack, as the JSON text of their array (`[arg0, arg1, …]`). socket.io sees
 * it as the ack's single argument. Serialized by anyone else (the Redis adapter's msgpack or JSON
 * carrying an ack to another node, a custom link), it stands for the first argument it holds, as
 * those carry one ack argument: `toJSON` parses the text then (once).
 */
export class AckText {
  #first: { value: unknown } | undefined;
  #text: string | Buffer;

  constructor(
    /**
     * The array's JSON exactly as the Computer sent it (valid JSON, an array): its text, or the
     * UTF-8 bytes of its WebSocket message when it arrived long (ack-bytes.ts).
     */
    text: string | Buffer,
    /** The resource bytes it carried, counted while it was checked. */
    readonly carried: Carried,
  ) {
    this.#text = text;
  }

  /** The UTF-8 bytes of the JSON when it arrived as bytes, else null. */
  get bytes(): Buffer | null {
    return typeof this.#text === "string" ? null : this.#text;
  }

  /** The JSON text (decoded from the bytes, once, when it arrived as bytes). */
  get json(): string {
    if (typeof this.#text !== "string") this.#text = this.#text.toString("utf8");
    return this.#text;
  }

  /** The arguments as values (parses the text). */
  args(): unknown[] {
    return JSON.parse(this.json) as unknown[];
  }

  /** The first argument as a value: what a serializer that meets this ack argument writes. */
  toJSON(): unknown {
    this.#first ??= { value: this.args()[0] };
    return this.#first.value;
  }
}

/** Strings longer than this are not copied into the skeleton that JSON.parse validates. */
const LONG_STRING = 64;

/**
 * The content of a string token up to its closing quote when it has no escape and no control
 * character. Sticky and greedy: V8 runs it as one tight loop (~0.3 ns a character here), where an
 * unanchored search for the first bad character (`/[\x00-\x1f\\]/.test`) costs ten times more
 * than JSON.parse itself.
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what it excludes
const PLAIN_CONTENT = /[^\u0000-\u001f"\\]*/y;

/** Skeleton marker prefix: a value starting with a backslash cannot come from a plain token. */
const MARK = "\\";

/** The characters a JSON string token can hold only escaped: the backslash and U+0000–U+001F. */
const NOT_PLAIN = ["\\", ...Array.from({ length: 0x20 }, (_, c) => String.fromCharCode(c))];
/** The same as UTF-8 bytes (each is one byte, and no byte of a longer sequence is below 0x80). */
const NOT_PLAIN_BYTES = NOT_PLAIN.map((c) => c.charCodeAt(0));

/**
 * True when no character of `NOT_PLAIN` occurs anywhere in `json`. Then every string token is
 * plain and ends at the next quote: 33 native searches over the whole text cost less than
 * matching every token with PLAIN_CONTENT. JSON.stringify writes no backslash unless a string
 * needs an escape, so a chunk ack qualifies.
 */
function allPlain(json: string): boolean {
  for (const c of NOT_PLAIN) if (json.includes(c)) return false;
  return true;
}

function allPlainBytes(json: Buffer): boolean {
  for (const c of NOT_PLAIN_BYTES) if (json.includes(c)) return false;
  return true;
}

/** What the token walk reads of the JSON, as a string or as its UTF-8 bytes. */
interface JsonSource {
  /** Index of the next `"` at or after `from`, or -1. */
  quote(from: number): number;
  /** Where the plain content of a string token starting at `from` stops (its closing `"` if any). */
  plainEnd(from: number): number;
  /** The text between two indexes (short pieces only). */
  text(from: number, to?: number): string;
  code(at: number): number;
  /** UTF-8 bytes of the plain content between the quotes at `open` and `close`. */
  contentBytes(open: number, close: number): number;
  /** The whole text through JSON.parse (a token that is not plain). */
  fullCheck(): Carried | null;
}

/**
 * Checks that `json` is a JSON array and measures what its first argument's `blob` / `body`
 * string carries. Returns that count, or null if the text is not a JSON array.
 *
 * Fast path (every ack socket.io-client's JSON.stringify writes for a chunk): each string token is
 * found with indexOf and its content consumed by PLAIN_CONTENT, or, when the text holds no
 * backslash and no control character at all, runs to the next quote. When every token is plain (no
 * escape, no control character), any content between its quotes is valid string content, so the
 * text is valid JSON exactly when its skeleton — the text with each long string replaced by a
 * short marker string — is; that skeleton is a few hundred bytes for a chunk ack. Any other
 * token (escapes, control characters, no closing quote) sends the whole text through JSON.parse,
 * as socket.io would.
 */
export function checkAckJson(json: string): Carried | null {
  if (json.charCodeAt(0) !== 0x5b /* [ */) return null;
  const plain = allPlain(json);
  const quote = (from: number): number => json.indexOf('"', from);
  return checkTokens({
    quote,
    plainEnd: plain
      ? quote
      : (from) => {
          PLAIN_CONTENT.lastIndex = from;
          PLAIN_CONTENT.test(json);
          return PLAIN_CONTENT.lastIndex;
        },
    text: (from, to) => json.slice(from, to),
    code: (at) => json.charCodeAt(at),
    contentBytes: (open, close) => Buffer.byteLength(json.slice(open + 1, close), "utf8"),
    fullCheck: () => fullCheck(json),
  });
}

/**
 * `checkAckJson` over the UTF-8 bytes of the JSON (a WebSocket text message, whose UTF-8 ws has
 * already validated), without decoding the long strings. Bytes holding an escape or a control
 * character are decoded and checked as text.
 */
export function checkAckBytes(json: Buffer): Carried | null {
  if (json[0] !== 0x5b /* [ */) return null;
  if (!allPlainBytes(json)) return checkAckJson(json.toString("utf8"));
  const quote = (from: number): number => json.indexOf(0x22 /* " */, from);
  return checkTokens({
    quote,
    plainEnd: quote,
    text: (from, to) => json.toString("utf8", from, to),
    code: (at) => json[at] ?? NaN,
    contentBytes: (open, close) => close - open - 1,
    fullCheck: () => fullCheck(json.toString("utf8")),
  });
}

/** The token walk of `checkAckJson` (which see), over either source. */
function checkTokens(src: JsonSource): Carried | null {
  const longs: { open: number; close: number }[] = [];
  let skeleton = "";
  let from = 0;
  for (;;) {
    const open = src.quote(from);
    if (open < 0) break;
    const close = src.plainEnd(open + 1);
    if (close < 0 || src.code(close) !== 0x22 /* " */) return src.fullCheck();
    if (close - open - 1 > LONG_STRING) {
      skeleton += `${src.text(from, open)}"${MARK}${MARK}${longs.length}"`;
      longs.push({ open, close });
    } else {
      skeleton += src.text(from, close + 1);
    }
    from = close + 1;
  }
  skeleton += src.text(from);
  const parsed = parseArray(skeleton);
  if (!parsed) return null;
  const found = carriedString(parsed[0]);
  if (found === null) return NOTHING;
  if (!found.value.startsWith(MARK)) return carriedBy(found.key, found.value);
  const long = longs[Number(found.value.slice(1))];
  if (!long) return NOTHING;
  if (found.key === "body") {
    return { bytes: src.contentBytes(long.open, long.close), carriage: "inline" };
  }
  const bytes = base64Bytes(
    long.close - long.open - 1,
    src.code(long.close - 1),
    src.code(long.close - 2),
  );
  return { bytes, carriage: "base64" };
}

function fullCheck(json: string): Carried | null {
  const parsed = parseArray(json);
  if (!parsed) return null;
  const found = carriedString(parsed[0]);
  return found === null ? NOTHING : carriedBy(found.key, found.value);
}

function parseArray(text: string): unknown[] | null {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** `blob` of a get_blob answer, else `body` of a get_skill answer, when it is a string. */
function carriedString(answer: unknown): { key: "blob" | "body"; value: string } | null {
  if (typeof answer !== "object" || answer === null) return null;
  const a = answer as { blob?: unknown; body?: unknown };
  if (a.blob !== undefined)
    return typeof a.blob === "string" ? { key: "blob", value: a.blob } : null;
  return typeof a.body === "string" ? { key: "body", value: a.body } : null;
}
