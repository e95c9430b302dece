/** The largest sample of a time window (a monotonic deque: a sample evicts the older it beats). */
export class MaxFilter {
  constructor(private q: { at: number; v: number }[] = []) {}
  get value(): number {
    return this.q[0]?.v ?? 0;
  }
  add(at: number, v: number): void {
    const q = this.q;
    while (q.length > 0 && q[q.length - 1]!.v <= v) q.pop();
    q.push({ at, v });
  }
  /** Drops samples older than `window` before `now`, keeping the latest. */
  expire(now: number, window: number): void {
    while (this.q.length > 1 && this.q[0]!.at < now - window) this.q.shift();
  }
}
