/**
 * The shared process of the `@pure` test files (scripts/run-tests.ts): every one of them is
 * imported here, its tests and hooks inside a suite named after the file, so a `beforeEach` of
 * one file never runs around another's tests. A pure test starts no process and opens no
 * socket; this process refuses both, so a file tagged `@pure` that does either fails with a
 * message naming the tag instead of quietly sharing a process it should not.
 */
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";
import { describe } from "node:test";
import { pathToFileURL } from "node:url";

const REFUSED = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"];

function refuse(what: string): () => never {
  return () => {
    throw new Error(
      `${what} in a test file tagged @pure: pure tests start no process and open no socket ` +
        "(scripts/run-tests.ts); drop the tag so the file runs in a process of its own",
    );
  };
}

/** Makes every way to start a process or open a socket of this process throw. */
export function refuseProcessesAndSockets(): void {
  const cp = childProcess as unknown as Record<string, unknown>;
  for (const name of REFUSED) cp[name] = refuse(`child_process.${name}`);
  net.Server.prototype.listen = refuse("a listening socket");
  net.Socket.prototype.connect = refuse("a socket connection");
  // `import { spawn } from "node:child_process"` binds to the ESM view of the module: update it.
  syncBuiltinESMExports();
}

/** Imports each file (absolute paths) inside a suite named `names[i]`. */
export function runPureFiles(files: string[], names: string[]): void {
  refuseProcessesAndSockets();
  files.forEach((file, i) => {
    void describe(names[i] ?? file, async () => {
      await import(pathToFileURL(file).href);
    });
  });
}
