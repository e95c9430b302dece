/**
 * A TypeScript script of this repo (a bench or soak process, the stack's scripted Agent, a
 * preload) as one JavaScript file plain node runs: esbuild bundles the script with the repo's
 * own modules it imports, and leaves every package import (`@a2c-smcp/agent`, socket.io, …) to
 * node, which resolves `@a2c-smcp/*` to the packages' built `dist/` — the shipped build, as an
 * application embedding our packages loads it. Bundles are cached in
 * `node_modules/.cache/a2c-scripts/` and redone when one of their inputs changes.
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type * as esbuildModule from "esbuild";
import type { Plugin } from "esbuild";

type Esbuild = typeof esbuildModule;

export const REPO_ROOT = resolve(import.meta.dirname, "../..");
const CACHE = join(REPO_ROOT, "node_modules/.cache/a2c-scripts");

/**
 * A bundled module's `import.meta` would be the bundle's, in the cache folder: each module gets
 * its own source file's URL, path and folder instead (esbuild's `define`, on the syntax tree, so
 * a string that merely mentions them is left alone), so paths it derives from them hold.
 */
export function ownImportMeta(esbuild: Esbuild): Plugin {
  return {
    name: "own-import-meta",
    setup(b) {
      b.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (args) => {
        if (args.path.includes(`${"/"}node_modules${"/"}`)) return undefined;
        const source = readFileSync(args.path, "utf8");
        if (!source.includes("import.meta")) return undefined;
        const { code } = await esbuild.transform(source, {
          loader: /\.[cm]?ts$/.test(args.path) ? "ts" : "js",
          format: "esm",
          target: "node20",
          sourcefile: args.path,
          // Kept through the bundle, so a stack trace still names the source's own lines.
          sourcemap: "inline",
          define: {
            "import.meta.url": JSON.stringify(pathToFileURL(args.path).href),
            "import.meta.dirname": JSON.stringify(dirname(args.path)),
            "import.meta.filename": JSON.stringify(args.path),
          },
        });
        return { contents: code, loader: "js", resolveDir: dirname(args.path) };
      });
    },
  };
}

/**
 * An ESM bundle's first line when it carries CommonJS packages: they `require` Node's built-ins
 * (and what is left outside), and an ES module has no `require` of its own.
 */
export const REQUIRE_BANNER = {
  js: "import { createRequire as bundleCreateRequire } from 'node:module'; const require = bundleCreateRequire(import.meta.url);",
};

interface Inputs {
  [path: string]: number;
}

function fresh(out: string, inputsFile: string): boolean {
  try {
    statSync(out);
    const inputs = JSON.parse(readFileSync(inputsFile, "utf8")) as Inputs;
    return Object.entries(inputs).every(([p, mtime]) => statSync(p).mtimeMs === mtime);
  } catch {
    return false;
  }
}

/** Compiles of this process under way, by entry: two callers of one script share one. */
const compiling = new Map<string, Promise<string>>();
/** Compiles under way: esbuild's service process is stopped when none is left. */
let active = 0;

/**
 * The path of the runnable JavaScript for `script` (a path from the repo root, or absolute),
 * compiled now if a source changed since the last compile (of any process).
 */
export function compileScript(script: string): Promise<string> {
  const entry = resolve(REPO_ROOT, script);
  let p = compiling.get(entry);
  if (!p) {
    p = compile(entry).finally(() => compiling.delete(entry));
    compiling.set(entry, p);
  }
  return p;
}

/** Runs `work` with esbuild, loaded on first use and its service process stopped after. */
export async function withEsbuild<T>(work: (esbuild: Esbuild) => Promise<T>): Promise<T> {
  // Loaded here, not at the top: processes that only start roles never need the compiler.
  const esbuild = await import("esbuild");
  active++;
  try {
    return await work(esbuild);
  } finally {
    // esbuild keeps a service process per parent: one left running would outlive the work.
    if (--active === 0) await esbuild.stop();
  }
}

/**
 * `script` as one JavaScript file that needs nothing but node: every package it imports is
 * inside (for a machine with no checkout and no node_modules, like a container).
 */
export async function compileStandalone(script: string, outFile: string): Promise<void> {
  mkdirSync(dirname(outFile), { recursive: true });
  const tmp = `${outFile}.${process.pid}.tmp`;
  await withEsbuild((esbuild) =>
    esbuild.build({
      entryPoints: [resolve(REPO_ROOT, script)],
      outfile: tmp,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      logLevel: "error",
      plugins: [ownImportMeta(esbuild)],
      banner: REQUIRE_BANNER,
    }),
  );
  renameSync(tmp, outFile);
}

/** The name of what `compileScript` writes for `entry` (an absolute path): its repo path, flat. */
function outputName(entry: string): string {
  return relative(REPO_ROOT, entry)
    .replace(/\.[cm]?[jt]s$/, "")
    .replaceAll("/", "__");
}

/**
 * Whether the module whose `import.meta.url` is `url` is the script this process runs: started
 * from its source (tsx) or as `compileScript`'s output of it. A script that is also imported
 * runs its main only then.
 */
export function isEntryModule(url: string): boolean {
  const arg = process.argv[1];
  if (!arg) return false;
  const file = fileURLToPath(url);
  return resolve(arg) === file || basename(arg) === `${outputName(file)}.mjs`;
}

async function compile(entry: string): Promise<string> {
  const name = outputName(entry);
  const out = join(CACHE, `${name}.mjs`);
  const inputsFile = join(CACHE, `${name}.inputs.json`);
  if (fresh(out, inputsFile)) return out;
  mkdirSync(CACHE, { recursive: true });
  // Another process may compile the same script at once: each writes its own file and renames.
  const tmp = `${out}.${process.pid}.tmp`;
  const result = await withEsbuild((esbuild) =>
    esbuild.build({
      entryPoints: [entry],
      outfile: tmp,
      bundle: true,
      packages: "external",
      platform: "node",
      format: "esm",
      target: "node20",
      absWorkingDir: REPO_ROOT,
      metafile: true,
      logLevel: "error",
      plugins: [ownImportMeta(esbuild)],
    }),
  );
  const inputs: Inputs = {};
  for (const input of Object.keys(result.metafile.inputs)) {
    const path = resolve(REPO_ROOT, input);
    inputs[path] = statSync(path).mtimeMs;
  }
  renameSync(tmp, out);
  writeFileSync(inputsFile, JSON.stringify(inputs));
  return out;
}
