/**
 * Sandbox races: while an Agent mints skill handles (get_skill) and pulls them
 * (get_blob) in a loop, a separate process keeps swapping the file — and the directory above it —
 * for symlinks to a file outside the package and to the package's `.skillenv`. Not one byte from
 * outside the package, and none of `.skillenv`, may ever reach the Agent (protocol.md §7.6, §7.9; D17).
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Events } from "../../protocol/index.ts";
import {
  ask,
  hygieneViolations,
  REL_OFFICE,
  seenErrors,
  startRelStack,
  watchProcess,
  type RelStack,
} from "../support/reliability-stack.ts";
import { TEST_TOKEN, type Socket } from "../support/server-harness.ts";

const SIZE = 40_000; // above the 32 KiB inline budget: served by handle
const RUN_MS = 6_000;
let stack: RelStack;
let agent: Socket;
let root: string;
const swappers: ChildProcess[] = [];
const watch = watchProcess();

// A tight loop in its own process (real concurrency with the Computer's checks and opens).
const SWAPPER = `
const fs = require("node:fs");
const [mode, path, aside, ...targets] = process.argv.slice(1);
let i = 0;
for (;;) {
  const target = targets[i++ % targets.length];
  try {
    if (mode === "file") {
      try { fs.unlinkSync(aside + ".l"); } catch {}
      fs.symlinkSync(target, aside + ".l");
      fs.renameSync(aside + ".l", path);          // file → symlink, atomically
      fs.copyFileSync(aside, aside + ".c");
      fs.renameSync(aside + ".c", path);          // symlink → regular file again
    } else {
      fs.renameSync(path, aside);                 // directory moved away
      fs.symlinkSync(target, path);               // directory → symlink
      fs.unlinkSync(path);
      fs.renameSync(aside, path);                 // directory back
    }
  } catch {}
}`;

before(async () => {
  stack = await startRelStack({
    skills: {
      race: {
        "f.txt": Buffer.alloc(SIZE, "i"),
        "sub/g.txt": Buffer.alloc(SIZE, "i"),
        ".skillenv": Buffer.alloc(SIZE, "E"),
        "sub/.skillenv": Buffer.alloc(SIZE, "E"),
      },
    },
  });
  root = join(stack.home, "user", "race");
  const outside = join(stack.dir, "outside");
  await mkdir(outside, { recursive: true });
  await writeFile(join(outside, "secret.txt"), Buffer.alloc(SIZE, "O"));
  await writeFile(join(outside, "g.txt"), Buffer.alloc(SIZE, "O"));
  await writeFile(join(stack.dir, "f.orig"), Buffer.alloc(SIZE, "i"));
  agent = await stack.harness.agent(REL_OFFICE, "agent-race");
  const run = (args: string[]): void => {
    swappers.push(spawn(process.execPath, ["-e", SWAPPER, ...args], { stdio: "ignore" }));
  };
  run([
    "file",
    join(root, "f.txt"),
    join(stack.dir, "f.orig"),
    join(outside, "secret.txt"),
    join(root, ".skillenv"),
  ]);
  run(["dir", join(root, "sub"), join(stack.dir, "sub.aside"), outside, root]);
});
after(async () => {
  for (const s of swappers) s.kill("SIGKILL");
  watch.stop();
  await stack?.close();
});

/** Checks every byte is an inside byte ('i'); returns how many bytes were checked. */
function assertInside(bytes: Buffer, what: string): number {
  for (const b of bytes) {
    if (b !== 0x69) assert.fail(`${what}: byte 0x${b.toString(16)} from outside the package`);
  }
  return bytes.length;
}

void test("symlink swaps between mint and pull: zero bytes from outside, .skillenv never read", async (t) => {
  const stats = { minted: 0, pulled: 0, refused: 0, bytes: 0 };
  const end = Date.now() + RUN_MS;
  let n = 0;
  while (Date.now() < end) {
    for (const rel of ["f.txt", "sub/g.txt", ".skillenv", "sub/.skillenv"]) {
      const call = { agent: "agent-race", req_id: `race-${++n}`, computer: "pc" };
      const got = (await ask(agent, Events.GetSkill, { ...call, name: "race", rel_path: rel })) as {
        code?: number;
        body?: string;
        blob_handle?: string;
      };
      if (rel.endsWith(".skillenv")) {
        assert.equal(got.code, 4017, `.skillenv is refused at mint (${JSON.stringify(got)})`);
        continue;
      }
      if (got.body !== undefined) stats.bytes += assertInside(Buffer.from(got.body), rel);
      if (!got.blob_handle) {
        stats.refused++;
        continue;
      }
      stats.minted++;
      // Pull a few times while the swapper keeps going.
      for (let k = 0; k < 3; k++) {
        const chunk = (await ask(agent, Events.GetBlob, {
          ...call,
          req_id: `race-${++n}`,
          blob_handle: got.blob_handle,
          chunk_offset: 0,
          max_chunk_bytes: 65_536,
        })) as { blob?: string; code?: number };
        if (chunk.blob === undefined) {
          stats.refused++;
          continue;
        }
        stats.pulled++;
        stats.bytes += assertInside(Buffer.from(chunk.blob, "base64"), `${rel} pull`);
      }
    }
  }
  t.diagnostic(JSON.stringify(stats));
  assert.ok(stats.minted > 0 && stats.pulled > 0, `the race ran: ${JSON.stringify(stats)}`);
  assert.deepEqual(watch.problems, []);
  assert.deepEqual(hygieneViolations(seenErrors, [TEST_TOKEN, stack.dir]), []);
});
