/**
 * The rewriter of section 6: rewrites one resource at a fixed rate, either by atomic rename (write
 * a temp file, rename it over the resource) or in place (one positional write of the whole new
 * content over the old, same size). Every version has its own seed, so its bytes at any offset can
 * be recomputed later; the answer lists every version written with its sha256. With a `prefix`
 * (a SKILL.md's frontmatter, the same for every version) the file is the prefix and then the
 * version's bytes, and the sha256 is of the version's bytes alone: what the Computer serves.
 */
import { renameSync, openSync, writeSync, closeSync } from "node:fs";
import { dirname, join } from "node:path";
import { createHash } from "node:crypto";
import { serve } from "../lib/ipc.ts";
import { contentAt } from "../lib/data.ts";

interface RunArgs {
  path: string;
  mode: "atomic" | "inplace";
  rate: number;
  size: number;
  durationMs: number;
  seedPrefix: string;
  prefix?: string;
}

function writeVersion(a: RunArgs, seed: string): string {
  const head = Buffer.from(a.prefix ?? "");
  const bytes = Buffer.allocUnsafe(head.length + a.size);
  head.copy(bytes);
  const body = contentAt(seed, 0, bytes.subarray(head.length));
  if (a.mode === "atomic") {
    const tmp = join(dirname(a.path), `.rewrite-${process.pid}.tmp`);
    const fd = openSync(tmp, "w");
    try {
      writeSync(fd, bytes, 0, bytes.length, 0);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, a.path);
  } else {
    const fd = openSync(a.path, "r+");
    try {
      writeSync(fd, bytes, 0, bytes.length, 0);
    } finally {
      closeSync(fd);
    }
  }
  return createHash("sha256").update(body).digest("hex");
}

serve({
  run: async (raw) => {
    const a = raw as RunArgs;
    const versions: Array<{ seed: string; sha256: string }> = [];
    const start = performance.now();
    const interval = 1000 / a.rate;
    for (let k = 1; ; k++) {
      const due = start + k * interval;
      if (due > start + a.durationMs) break;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const seed = `${a.seedPrefix}-${k}`;
      versions.push({ seed, sha256: writeVersion(a, seed) });
    }
    return { versions, seconds: (performance.now() - start) / 1000 };
  },
});
