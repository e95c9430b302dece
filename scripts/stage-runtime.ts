/**
 * Writes the production tree of the Docker image's final stage into a directory: the root
 * package.json and package-lock.json, and for each workspace package exactly the files
 * `npm pack` publishes (package.json, README.md, dist/). `npm ci --omit=dev` in that directory
 * then installs the lockfile's production dependencies and links the bins; no TypeScript
 * source, tsx or dev tool is in it. The Dockerfile's build stage runs this after the build, and
 * test/packaging/docker-runtime.test.ts runs the image's commands on the same tree.
 *
 * Usage: node --conditions=@a2c-smcp/source --import tsx scripts/stage-runtime.ts OUT_DIR
 * (after `npm run build`).
 */
import { execFile } from "node:child_process";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";

const REPO_ROOT = resolve(import.meta.dirname, "..");

interface PackEntry {
  name: string;
  files: { path: string }[];
}

/** The workspace folders of the root package.json, by package name. */
async function workspaceFolders(root: string): Promise<Map<string, string>> {
  const rootPkg = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
    workspaces: string[];
  };
  const byName = new Map<string, string>();
  for (const folder of rootPkg.workspaces) {
    const pkg = JSON.parse(await readFile(join(root, folder, "package.json"), "utf8")) as {
      name: string;
    };
    byName.set(pkg.name, folder);
  }
  return byName;
}

/** Copies the runtime tree of the built repo at `root` into `out`; returns the files copied. */
export async function stageRuntime(out: string, root = REPO_ROOT): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    "npm",
    ["pack", "--workspaces", "--dry-run", "--json", "--ignore-scripts"],
    { cwd: root, maxBuffer: 16 * 1024 * 1024 },
  );
  const folders = await workspaceFolders(root);
  const files = ["package.json", "package-lock.json"];
  for (const entry of JSON.parse(stdout) as PackEntry[]) {
    const folder = folders.get(entry.name);
    if (!folder) throw new Error(`npm pack listed ${entry.name}, which is no workspace`);
    files.push(...entry.files.map((f) => join(folder, f.path)));
  }
  for (const file of files) {
    await mkdir(dirname(join(out, file)), { recursive: true });
    await copyFile(join(root, file), join(out, file));
  }
  return files;
}

if (import.meta.filename === resolve(process.argv[1] ?? "")) {
  const out = process.argv[2];
  if (!out) {
    process.stderr.write("usage: scripts/stage-runtime.ts OUT_DIR\n");
    process.exit(2);
  }
  const files = await stageRuntime(resolve(out));
  process.stdout.write(`${files.length} files staged in ${resolve(out)}\n`);
}
