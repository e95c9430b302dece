/**
 * Which source files ran a function while some code ran: V8's precise coverage, counting calls.
 * Used by the get_blob trace (test/repo/get-blob-trace.ts) and proved on a fixture by
 * test/repo/trace-calls.test.ts.
 */
import { Session } from "node:inspector/promises";
import type { Profiler } from "node:inspector";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

/** The coverage V8 counted while `run` ran (counts start at zero when it starts). */
export async function callsDuring(run: () => Promise<unknown>): Promise<Profiler.ScriptCoverage[]> {
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
    await session.post("Profiler.takePreciseCoverage"); // counts from here
    await run();
    const { result } = await session.post("Profiler.takePreciseCoverage");
    await session.post("Profiler.stopPreciseCoverage");
    return result;
  } finally {
    session.disconnect();
  }
}

/**
 * What runs when a module is imported rather than called: its top level, which V8 reports as the
 * function named "" whose range starts at 0, and what tsx's compiler adds to keep names (the
 * `__name` helper and the class static blocks that call it). The two additions are called only
 * by the module's own code, so they ran beside the top level or beside a function counted anyway.
 */
function runsAtImport(f: Profiler.FunctionCoverage): boolean {
  if (f.functionName === "") return f.ranges[0]?.startOffset === 0;
  return f.functionName === "__name" || f.functionName === "<static_initializer>";
}

/**
 * The files under `root` (paths relative to it, sorted; none under node_modules) in which any
 * function other than the module's top level was called: every such function counts, wherever
 * V8 lists it.
 */
export function filesThatRan(scripts: Profiler.ScriptCoverage[], root: string): string[] {
  const files = new Set<string>();
  for (const script of scripts) {
    if (!script.url.startsWith("file:")) continue;
    const path = relative(root, fileURLToPath(script.url));
    if (path.startsWith("..") || path.split("/").includes("node_modules")) continue;
    const called = script.functions.some(
      (f) => !runsAtImport(f) && f.ranges.some((r) => r.count > 0),
    );
    if (called) files.add(path);
  }
  return [...files].sort();
}
