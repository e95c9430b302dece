/**
 * A parser of the Prometheus text exposition format (version 0.0.4) and the naming rules of
 * Prometheus' own guide ("Metric and label naming"), for tests of `/metrics`: every family has
 * HELP and TYPE before its samples, counters end in `_total` and nothing else does, only
 * histograms and summaries have `_bucket` / `_sum` / `_count` series, units are base units
 * (`_seconds`, `_bytes`), histogram buckets are cumulative and end in `+Inf` = `_count`.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string | undefined;
  type: string | undefined;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

function parseValue(text: string): number {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (text === "NaN") return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value ${text}`);
  return Number(text);
}

function parseLabels(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (text === undefined || text.trim() === "") return out;
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const m = LABEL.exec(text);
    if (!m) throw new Error(`bad labels {${text}}`);
    if (m[1]! in out) throw new Error(`label ${m[1]} twice in {${text}}`);
    out[m[1]!] = m[2]!.replace(/\\(.)/g, (_all, c: string) => (c === "n" ? "\n" : c));
    if (m[3] === "") break;
  }
  return out;
}

/** The family a sample name belongs to, given the families declared so far. */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const direct = families.get(name);
  if (direct) return direct;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  const base = m ? families.get(m[1]!) : undefined;
  return base && (base.type === "histogram" || base.type === "summary") ? base : undefined;
}

/** Parses the exposition text; throws on anything malformed. */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  const declare = (name: string): Family => {
    if (!METRIC_NAME.test(name)) throw new Error(`bad metric name ${name}`);
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, help: undefined, type: undefined, samples: [] }));
    if (f.samples.length > 0) throw new Error(`${name}: HELP/TYPE after its samples`);
    return f;
  };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const f = declare(meta[2]!);
      if (meta[1] === "HELP") {
        if (f.help !== undefined) throw new Error(`${f.name}: two HELP lines`);
        f.help = meta[3];
      } else {
        if (f.type !== undefined) throw new Error(`${f.name}: two TYPE lines`);
        if (!TYPES.has(meta[3]!)) throw new Error(`${f.name}: unknown type ${meta[3]}`);
        f.type = meta[3];
      }
      continue;
    }
    if (line.startsWith("#")) continue; // a comment
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const family = familyOf(m[1]!, families);
    if (!family) throw new Error(`${m[1]}: sample without HELP/TYPE`);
    const labels = parseLabels(m[2]);
    for (const l of Object.keys(labels)) {
      if (!LABEL_NAME.test(l) || l.startsWith("__")) throw new Error(`${m[1]}: bad label ${l}`);
    }
    const key = `${m[1]}{${JSON.stringify(Object.entries(labels).sort())}}`;
    if (seen.has(key)) throw new Error(`duplicate series ${key}`);
    seen.add(key);
    family.samples.push({ name: m[1]!, labels, value: parseValue(m[3]!) });
  }
  return families;
}

/** Prometheus naming rules a family breaks (empty when it follows them). */
export function namingProblems(f: Family): string[] {
  const out: string[] = [];
  if (!f.help) out.push(`${f.name}: no HELP text`);
  if (f.type === "counter" && !f.name.endsWith("_total"))
    out.push(`${f.name}: counter without _total`);
  if (f.type !== "counter" && f.name.endsWith("_total"))
    out.push(`${f.name}: _total on a ${f.type}`);
  if (f.type !== "histogram" && f.type !== "summary" && /_(bucket|sum|count)$/.test(f.name)) {
    out.push(`${f.name}: _bucket/_sum/_count suffix on a ${f.type}`);
  }
  if (
    /(_ms|_milliseconds|_us|_microseconds|_minutes|_hours|_kb|_mb|_kib|_mib|_bits)(_|$)/.test(
      f.name,
    )
  ) {
    out.push(`${f.name}: not a base unit (seconds, bytes)`);
  }
  if (/(latency|duration|time|wait|seconds)/.test(f.name) && f.type === "histogram") {
    if (!f.name.endsWith("_seconds")) out.push(`${f.name}: a duration histogram not in _seconds`);
  }
  if (f.type === "histogram") out.push(...bucketProblems(f));
  return out;
}

function bucketProblems(f: Family): string[] {
  const out: string[] = [];
  const bySeries = new Map<string, { le: number; v: number }[]>();
  const counts = new Map<string, number>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) out.push(`${f.name}: bucket without le`);
      const list = bySeries.get(key) ?? [];
      list.push({ le: parseValue(le ?? "NaN"), v: s.value });
      bySeries.set(key, list);
    } else if (s.name === `${f.name}_count`) counts.set(key, s.value);
  }
  for (const [key, list] of bySeries) {
    for (let i = 1; i < list.length; i++) {
      if (list[i]!.le <= list[i - 1]!.le || list[i]!.v < list[i - 1]!.v) {
        out.push(`${f.name}${key}: buckets not cumulative in le order`);
      }
    }
    const last = list.at(-1);
    if (last?.le !== Number.POSITIVE_INFINITY) out.push(`${f.name}${key}: no +Inf bucket`);
    else if (counts.get(key) !== last.v) out.push(`${f.name}${key}: +Inf bucket ≠ _count`);
  }
  return out;
}
