/**
 * One or more of our Computers (computer/computer.ts `startComputer`) in one process, serving a
 * skill home through the real SKILL service (the Computer's default services for `skills`). Besides `stats` (whose event-loop delay is measured
 * inside this very process, i.e. inside the Computer), it reports the Computer's own per-chunk
 * time from its metrics registry (`a2c_computer_blob_chunk_seconds`), read in-process instead of
 * scraped: the Computer has no HTTP listener.
 */
import { join } from "node:path";
import { serve } from "../lib/ipc.ts";
import { startComputer, type RunningComputer, type TransportMode } from "@a2c-smcp/computer";

interface StartArgs {
  url: string;
  token: string;
  skills: string;
  stateDir: string;
  maxHttpBufferSize: number;
  maxSize: number;
  workers?: number;
  /** `"stock"`: the Computer's `--stock-transport`; `{ off }`: without those fast paths (bench section transport). */
  transport?: TransportMode;
  computers: Array<{ name: string; office: string }>;
  /** Where uploads land (one folder per Computer under it), and the largest upload. */
  landingRoot?: string;
  uploadMaxBytes?: number;
}

const running: RunningComputer[] = [];

serve({
  start: async (raw) => {
    const a = raw as StartArgs;
    for (const c of a.computers) {
      running.push(
        await startComputer({
          server: a.url,
          office: c.office,
          name: c.name,
          token: a.token,
          stateDir: a.stateDir,
          maxHttpBufferSize: a.maxHttpBufferSize,
          maxSize: a.maxSize,
          ...(a.workers !== undefined ? { workers: a.workers } : {}),
          ...(a.transport ? { transport: a.transport } : {}),
          startTimeoutMs: 30_000,
          skills: a.skills,
          ...(a.landingRoot !== undefined ? { landingRoot: join(a.landingRoot, c.name) } : {}),
          ...(a.uploadMaxBytes !== undefined ? { upload: { maxBytes: a.uploadMaxBytes } } : {}),
        }),
      );
    }
    return { names: running.map((r) => r.name) };
  },
  /** Sum and count of the chunk-time histogram over every Computer of this process. */
  "chunk-time": async () => {
    let sum = 0;
    let count = 0;
    for (const r of running) {
      const m = await r.metrics.chunkSeconds.get();
      for (const v of m.values) {
        if (v.metricName?.endsWith("_sum")) sum += v.value;
        if (v.metricName?.endsWith("_count")) count += v.value;
      }
    }
    return { sum, count };
  },
  /** Whole-resource hash computations so far, by path (pool / inline / bytes). */
  "hash-computations": async () => {
    const byPath: Record<string, number> = {};
    for (const r of running) {
      for (const v of (await r.metrics.hashComputations.get()).values) {
        const path = String(v.labels.path ?? "?");
        byPath[path] = (byPath[path] ?? 0) + v.value;
      }
    }
    return byPath;
  },
  /** Nice offset of every Computer's hash threads from the next hash on (bench computerCost). */
  "hash-nice": async (raw) => {
    for (const r of running) r.hashCache.hashNice = raw as number;
    return null;
  },
  stop: async () => {
    await Promise.all(running.map((r) => r.close()));
    running.length = 0;
    return null;
  },
});
