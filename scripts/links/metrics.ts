/**
 * Reading a role's `/metrics` text (Prometheus exposition): the samples of one metric, with their
 * labels, and the difference between two readings of counters.
 */

export interface MetricSample {
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Every sample of `name` (exactly that series name) in an exposition text. */
export function samplesOf(text: string, name: string): MetricSample[] {
  const out: MetricSample[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = LINE.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(LABEL)) labels[l[1]!] = l[2]!;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

/** A counter's samples keyed by their labels (`k=v,k=v`, sorted). */
export type CounterReading = Record<string, number>;

function labelKey(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(",");
}

export function readCounter(text: string, name: string): CounterReading {
  const out: CounterReading = {};
  for (const s of samplesOf(text, name)) out[labelKey(s.labels)] = s.value;
  return out;
}

/** What each labelled series of a counter gained between two readings (only those that did). */
export function counterDelta(before: CounterReading, after: CounterReading): CounterReading {
  const out: CounterReading = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

/** The sum of a reading's series. */
export function total(r: CounterReading): number {
  return Object.values(r).reduce((a, b) => a + b, 0);
}
