/**
 * Live progress: one line per Agent (current scenario, bytes, rate). On a TTY the block of lines is
 * redrawn in place with ANSI cursor moves; otherwise plain lines are printed on every scenario
 * start/end and at most every 2 s per Agent while bytes move (logs stay readable in CI).
 */
import type { ScenarioResult } from "./plan.ts";

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1048576).toFixed(1)} MiB`;
}

/** Decimal megabytes per second, as benchmarks quote them ("-" when too small to mean much). */
export function rate(bytes: number, ms: number): string {
  if (bytes < 64 * 1024 || ms <= 0) return "-";
  return `${(bytes / 1e6 / (ms / 1000)).toFixed(1)}`;
}

interface Lane {
  agent: string;
  total: number;
  done: number;
  failed: number;
  scenario: string;
  bytes: number;
  size: number;
  startedAt: number;
  lastPrinted: number;
  state: "waiting" | "running" | "finished";
}

export class ProgressView {
  readonly #out: NodeJS.WritableStream;
  readonly #tty: boolean;
  readonly #lanes = new Map<string, Lane>();
  #drawn = 0;
  #lastFrame = "";
  #timer: NodeJS.Timeout | undefined;

  constructor(out: NodeJS.WritableStream, tty: boolean, plan: ReadonlyMap<string, number>) {
    this.#out = out;
    this.#tty = tty;
    for (const [agent, total] of plan) {
      this.#lanes.set(agent, {
        agent,
        total,
        done: 0,
        failed: 0,
        scenario: "",
        bytes: 0,
        size: 0,
        startedAt: 0,
        lastPrinted: 0,
        state: "waiting",
      });
    }
    if (tty) {
      this.#timer = setInterval(() => this.#redraw(), 200);
      this.#timer.unref();
    }
  }

  start(agent: string, id: string): void {
    const lane = this.#lanes.get(agent);
    if (!lane) return;
    Object.assign(lane, {
      scenario: id,
      bytes: 0,
      size: 0,
      startedAt: Date.now(),
      state: "running",
    });
    if (!this.#tty) this.#print(lane);
  }

  progress(agent: string, id: string, bytes: number, total: number): void {
    const lane = this.#lanes.get(agent);
    if (!lane || lane.scenario !== id) return;
    lane.bytes = bytes;
    lane.size = total;
    if (!this.#tty && Date.now() - lane.lastPrinted >= 2000) this.#print(lane);
  }

  result(agent: string, r: ScenarioResult): void {
    const lane = this.#lanes.get(agent);
    if (!lane) return;
    lane.done++;
    if (!r.ok) lane.failed++;
    if (lane.done >= lane.total) lane.state = "finished";
    if (!this.#tty) {
      this.#out.write(
        `${agent.padEnd(9)} ${r.ok ? "PASS" : "FAIL"} ${r.id} (${(r.ms / 1000).toFixed(1)} s${
          r.bytes ? `, ${formatBytes(r.bytes)}, ${rate(r.bytes, r.ms)} MB/s` : ""
        })${r.ok ? "" : `: ${r.detail}`}\n`,
      );
    }
  }

  /** Final redraw; stops the timer. */
  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#tty) this.#redraw();
  }

  #line(lane: Lane): string {
    const head = `${lane.agent.padEnd(9)} [${lane.done}/${lane.total}]`;
    if (lane.state === "waiting") return `${head} waiting for office`;
    if (lane.state === "finished") {
      return `${head} finished${lane.failed ? `, ${lane.failed} failed` : ", all passed"}`;
    }
    const ms = Date.now() - lane.startedAt;
    const moved = lane.size
      ? ` ${formatBytes(lane.bytes)} / ${formatBytes(lane.size)}  ${rate(lane.bytes, ms)} MB/s`
      : "";
    return `${head} ${lane.scenario.padEnd(20)}${moved}`;
  }

  #print(lane: Lane): void {
    lane.lastPrinted = Date.now();
    this.#out.write(`${this.#line(lane)}\n`);
  }

  #redraw(): void {
    const lines = [...this.#lanes.values()].map((l) => this.#line(l));
    const frame = lines.join("\n");
    if (frame === this.#lastFrame) return;
    this.#lastFrame = frame;
    // Cursor up over the previous block, then rewrite every line and clear its tail.
    let text = this.#drawn ? `\x1b[${this.#drawn}A` : "";
    for (const line of lines) text += `\r${line}\x1b[K\n`;
    this.#drawn = lines.length;
    this.#out.write(text);
  }
}
