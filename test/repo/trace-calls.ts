/**
 * Which source files ran a function while some code ran, and how long each such function is in
 * its source: V8's precise coverage, counting calls, mapped back to the TypeScript through the
 * loader's source maps. Used by the get_blob trace (test/repo/get-blob-trace.ts) and proved on
 * a fixture by test/repo/trace-calls.test.ts.
 */
import { readFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import type { Profiler } from "node:inspector";
import { findSourceMap } from "node:module";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/** The coverage V8 counted while `run` ran (counts start at zero when it starts). */
export async function callsDuring(run: () => Promise<unknown>): Promise<Profiler.ScriptCoverage[]> {
  return (await traceDuring(run)).scripts;
}

/** The coverage, and the code V8 ran of each file script (what its offsets count in). */
export interface Trace {
  scripts: Profiler.ScriptCoverage[];
  code: Map<string, string>;
}

/** `callsDuring`, keeping the code of every `file:` script, for `functionsThatRan`. */
export async function traceDuring(run: () => Promise<unknown>): Promise<Trace> {
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
    await session.post("Profiler.takePreciseCoverage"); // counts from here
    await run();
    const { result } = await session.post("Profiler.takePreciseCoverage");
    await session.post("Profiler.stopPreciseCoverage");
    await session.post("Debugger.enable");
    const code = new Map<string, string>();
    for (const s of result) {
      if (!s.url.startsWith("file:") || s.url.includes("/node_modules/")) continue;
      const { scriptSource } = await session.post("Debugger.getScriptSource", {
        scriptId: s.scriptId,
      });
      code.set(s.url, scriptSource);
    }
    await session.post("Debugger.disable");
    return { scripts: result, code };
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

/** A repository file under `root`, relative to it, or undefined (elsewhere, node_modules). */
function repoPath(url: string, root: string): string | undefined {
  if (!url.startsWith("file:")) return undefined;
  const path = relative(root, fileURLToPath(url));
  if (path.startsWith("..") || path.split("/").includes("node_modules")) return undefined;
  return path;
}

/**
 * The files under `root` (paths relative to it, sorted; none under node_modules) in which any
 * function other than the module's top level was called: every such function counts, wherever
 * V8 lists it.
 */
export function filesThatRan(scripts: Profiler.ScriptCoverage[], root: string): string[] {
  const files = new Set<string>();
  for (const script of scripts) {
    const path = repoPath(script.url, root);
    if (path === undefined) continue;
    const called = script.functions.some(
      (f) => !runsAtImport(f) && f.ranges.some((r) => r.count > 0),
    );
    if (called) files.add(path);
  }
  return [...files].sort();
}

/** A function that ran, where it stands in its source and how many source lines it spans. */
export interface RanFunction {
  file: string;
  name: string;
  line: number;
  lines: number;
}

/** The function-like declarations of a TypeScript source: where each starts and ends (lines). */
function functionSpans(path: string): { line: number; col: number; end: number }[] {
  const text = readFileSync(path, "utf8");
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const spans: { line: number; col: number; end: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const at = file.getLineAndCharacterOfPosition(node.getStart(file));
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line;
      spans.push({ line: at.line, col: at.character, end });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return spans;
}

/** Line and column (0-based) of `offset` in `code`. */
function position(code: string, offset: number): { line: number; col: number } {
  let line = 0;
  let start = 0;
  for (let i = code.indexOf("\n"); i >= 0 && i < offset; i = code.indexOf("\n", i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, col: offset - start };
}

/**
 * Every function under `root` (in the files `only` takes) that was called during the trace (as
 * `filesThatRan` counts them; V8's own class-field initializers aside), with its length in source
 * lines: its start mapped back through the loader's source map to the TypeScript, and the
 * function declared there. One that cannot be found there is an error, not a function skipped.
 */
export function functionsThatRan(
  trace: Trace,
  root: string,
  only: (file: string) => boolean = () => true,
): RanFunction[] {
  const out: RanFunction[] = [];
  for (const script of trace.scripts) {
    const file = repoPath(script.url, root);
    const code = trace.code.get(script.url);
    const map = findSourceMap(script.url);
    if (file === undefined || !only(file) || code === undefined || !map) continue;
    const spans = functionSpans(fileURLToPath(script.url));
    for (const f of script.functions) {
      if (runsAtImport(f) || f.functionName.startsWith("<")) continue;
      if (!f.ranges.some((r) => r.count > 0)) continue;
      const at = position(code, f.ranges[0]!.startOffset);
      const entry = map.findEntry(at.line, at.col);
      if (!("originalLine" in entry)) throw new Error(`${file}: ${f.functionName} not mapped`);
      const { originalLine: line, originalColumn: col } = entry;
      const here = spans.filter((s) => s.line === line);
      // A function that ran and is not found would escape the bound on lengths: say so.
      if (here.length === 0) throw new Error(`${file}:${line + 1}: ${f.functionName} not found`);
      const span = here.reduce((a, b) => (Math.abs(b.col - col) < Math.abs(a.col - col) ? b : a));
      out.push({ file, name: f.functionName, line: line + 1, lines: span.end - span.line + 1 });
    }
  }
  return out;
}
