/**
 * Generated text assets of the kinds a skill package carries (JSON, Markdown, CSV, logs), for the
 * compressed-carriage measurements (docs/decisions.md D63, D64). Deterministic from a seed, with
 * the entropy of real files rather than of a toy: words drawn Zipf-like from a 4,000-word
 * vocabulary of made-up words, random identifiers (hex ids, which do not compress), timestamps,
 * amounts and free-text fields, so gzip shrinks them about as much as it shrinks real ones (2.5–4×
 * prose, 5–10× logs and pretty JSON; the codecs section reports what it measured). Each kind is
 * written in pieces with a running state (an id, a clock), so no two pieces of one file repeat.
 */
import { createHash } from "node:crypto";
import { closeSync, openSync, writeSync } from "node:fs";

export type TextKind = "json" | "markdown" | "csv" | "log";
export const TEXT_KINDS: readonly TextKind[] = ["json", "markdown", "csv", "log"];

/** The file name extension of each kind (the Computer's MIME table maps it to a text type). */
export const TEXT_EXTENSION: Readonly<Record<TextKind, string>> = {
  json: "json",
  markdown: "md",
  csv: "csv",
  log: "log",
};

/** A small, fast, seeded PRNG (mulberry32): the same seed gives the same file on every machine. */
class Random {
  #s: number;
  constructor(seed: string) {
    this.#s = createHash("sha256").update(seed).digest().readUInt32LE(0);
  }
  /** In [0, 1). */
  next(): number {
    this.#s = (this.#s + 0x6d2b79f5) >>> 0;
    let t = this.#s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  hex(n: number): string {
    let s = "";
    for (let i = 0; i < n; i++) s += "0123456789abcdef"[Math.floor(this.next() * 16)];
    return s;
  }
}

const ONSETS = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w"];
const CLUSTERS = ["br", "ch", "cl", "dr", "fl", "gr", "pl", "pr", "sh", "sl", "st", "th", "tr"];
const VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "io", "ou", "y"];
const CODAS = ["", "", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "rt", "x"];

/** The vocabulary and a Zipf-like sampler (rank r drawn with weight 1 / (r + 2)). */
class Words {
  readonly #words: string[] = [];
  readonly #cumulative: number[] = [];

  constructor(rng: Random, count: number) {
    const seen = new Set<string>();
    while (this.#words.length < count) {
      const syllables = rng.int(1, 4);
      let w = "";
      for (let i = 0; i < syllables; i++) {
        w += rng.next() < 0.3 ? rng.pick(CLUSTERS) : rng.pick(ONSETS);
        w += rng.pick(VOWELS) + rng.pick(CODAS);
      }
      if (!seen.has(w)) {
        seen.add(w);
        this.#words.push(w);
      }
    }
    let sum = 0;
    for (let r = 0; r < count; r++) this.#cumulative.push((sum += 1 / (r + 2)));
  }

  word(rng: Random): string {
    const target = rng.next() * this.#cumulative[this.#cumulative.length - 1]!;
    let lo = 0;
    let hi = this.#cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#cumulative[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    return this.#words[lo]!;
  }

  sentence(rng: Random, min = 6, max = 22): string {
    const n = rng.int(min, max);
    const parts: string[] = [];
    for (let i = 0; i < n; i++) {
      let w = this.word(rng);
      if (i === 0) w = w[0]!.toUpperCase() + w.slice(1);
      if (i < n - 1 && rng.next() < 0.08) w += ",";
      parts.push(w);
    }
    return parts.join(" ") + (rng.next() < 0.9 ? "." : "?");
  }
}

interface State {
  rng: Random;
  words: Words;
  /** Entities a real file names again and again: people, places, components, routes, tags. */
  people: string[];
  places: string[];
  components: string[];
  routes: string[];
  tags: string[];
  /** Message templates of the log (a real service logs a few dozen kinds of line). */
  messages: string[];
  /** A running record number and clock (ms since the epoch), so pieces never repeat. */
  seq: number;
  clock: number;
}

const STATUSES = ["active", "pending", "suspended", "closed", "archived"];
const LEVELS = ["INFO", "INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARN", "ERROR"];
const METHODS = ["GET", "GET", "GET", "POST", "PUT", "DELETE"];
const HTTP_CODES = [200, 200, 200, 200, 201, 204, 304, 400, 404, 500];

function isoTime(st: State): string {
  st.clock += st.rng.int(1, 4000);
  return new Date(st.clock).toISOString();
}

function jsonPiece(st: State): string {
  const { rng, words } = st;
  const records: unknown[] = [];
  for (let i = 0; i < 8; i++) {
    st.seq++;
    const owner = rng.pick(st.people);
    records.push({
      id: `${rng.hex(8)}-${rng.hex(4)}-${rng.hex(4)}-${rng.hex(4)}-${rng.hex(12)}`,
      seq: st.seq,
      created_at: isoTime(st),
      status: rng.pick(STATUSES),
      owner: { name: owner, email: `${owner.replace(" ", ".")}@example.com` },
      location: rng.pick(st.places),
      score: Math.round(rng.next() * 100_000) / 1000,
      tags: Array.from({ length: rng.int(0, 4) }, () => rng.pick(st.tags)),
      description: words.sentence(rng, 4, 16),
    });
  }
  // Pretty-printed, as JSON files in a package usually are; one array element per record.
  return records.map((r) => "  " + JSON.stringify(r, null, 2).replace(/\n/g, "\n  ")).join(",\n");
}

function markdownPiece(st: State): string {
  const { rng, words } = st;
  st.seq++;
  const out: string[] = [`## ${st.seq}. ${words.sentence(rng, 2, 6).slice(0, -1)}`, ""];
  for (let p = rng.int(2, 4); p > 0; p--) {
    const sentences = Array.from({ length: rng.int(2, 6) }, () => words.sentence(rng));
    out.push(sentences.join(" "), "");
  }
  const extra = rng.next();
  if (extra < 0.35) {
    for (let i = rng.int(3, 6); i > 0; i--) out.push(`- ${words.sentence(rng, 3, 10)}`);
    out.push("");
  } else if (extra < 0.55) {
    out.push("```sh");
    for (let i = rng.int(2, 5); i > 0; i--) {
      out.push(`${rng.pick(st.components)} --${rng.pick(st.tags)} ${rng.pick(st.routes)}`);
    }
    out.push("```", "");
  } else if (extra < 0.7) {
    out.push("| name | count | note |", "|---|---|---|");
    for (let i = rng.int(2, 5); i > 0; i--) {
      out.push(`| ${rng.pick(st.people)} | ${rng.int(0, 9999)} | ${words.sentence(rng, 2, 5)} |`);
    }
    out.push("");
  }
  return out.join("\n") + "\n";
}

function csvPiece(st: State): string {
  const { rng, words } = st;
  const rows: string[] = [];
  for (let i = 0; i < 24; i++) {
    st.seq++;
    const when = isoTime(st).slice(0, 10);
    rows.push(
      [
        st.seq,
        when,
        rng.pick(STATUSES),
        rng.pick(st.places),
        rng.pick(st.people),
        (rng.next() * 10_000).toFixed(2),
        rng.int(1, 500),
        rng.next() < 0.5 ? "true" : "false",
        rng.next() < 0.7 ? "" : `"${words.sentence(rng, 2, 7)}"`,
      ].join(","),
    );
  }
  return rows.join("\n") + "\n";
}

function logPiece(st: State): string {
  const { rng } = st;
  const lines: string[] = [];
  for (let i = 0; i < 16; i++) {
    const level = rng.pick(LEVELS);
    const route = rng.pick(st.routes).replace("{id}", String(rng.int(1, 99999)));
    lines.push(
      `${isoTime(st)} ${level.padEnd(5)} [${rng.pick(st.components)}] ${rng.pick(METHODS)} ${route} ` +
        `status=${rng.pick(HTTP_CODES)} latency_ms=${rng.int(1, 2500)} ` +
        `req_id=${rng.hex(16)} user=${rng.pick(st.people).replace(" ", ".")} ` +
        `msg="${rng.pick(st.messages)}"`,
    );
  }
  return lines.join("\n") + "\n";
}

const PIECES: Readonly<Record<TextKind, (st: State) => string>> = {
  json: jsonPiece,
  markdown: markdownPiece,
  csv: csvPiece,
  log: logPiece,
};

const HEADS: Readonly<Record<TextKind, string>> = {
  json: "[\n",
  markdown: "# Generated notes\n\n",
  csv: "seq,date,status,city,person,amount,quantity,flag,note\n",
  log: "",
};

/** `bytes` of generated text of `kind` (exactly that long; the last piece is cut). */
export function textContent(kind: TextKind, seed: string, bytes: number): Buffer {
  const rng = new Random(`${kind}:${seed}`);
  const words = new Words(rng, 4000);
  const many = (n: number, make: () => string): string[] => Array.from({ length: n }, make);
  const st: State = {
    rng,
    words,
    people: many(300, () => `${words.word(rng)} ${words.word(rng)}`),
    places: many(80, () => words.word(rng)),
    components: many(12, () => words.word(rng)),
    routes: many(40, () => `/api/v1/${words.word(rng)}/{id}/${words.word(rng)}`),
    tags: many(50, () => words.word(rng)),
    messages: many(40, () => words.sentence(rng, 3, 9)),
    seq: 0,
    clock: Date.UTC(2026, 0, 1),
  };
  const out = Buffer.allocUnsafe(bytes);
  let at = out.write(HEADS[kind], 0, "utf8");
  const separator = kind === "json" ? ",\n" : "";
  let first = true;
  while (at < bytes) {
    const piece = (first ? "" : separator) + PIECES[kind](st);
    first = false;
    at += out.write(piece, at, "utf8");
  }
  return out.subarray(0, bytes);
}

/** Writes `bytes` of generated text of `kind` to `path` and returns its sha256. */
export function writeText(path: string, kind: TextKind, seed: string, bytes: number): string {
  const content = textContent(kind, seed, bytes);
  const fd = openSync(path, "w");
  try {
    for (let at = 0; at < content.length;) {
      at += writeSync(fd, content, at, content.length - at);
    }
  } finally {
    closeSync(fd);
  }
  return createHash("sha256").update(content).digest("hex");
}
