/**
 * No stale digest twice (computer/blob/hash-cache.ts, D71), against the Server and
 * the Computer as their own processes: a skill file rewritten through a shared mmap by a python3
 * process. The first write dirties the pages and moves the timestamps; the Computer hashes that
 * content and a pull verifies. The second write lands on pages that are still dirty, so neither
 * mtime nor ctime moves (the test checks it) and the Computer's signature is what it was: at most
 * one pull may fail its digest, the next `get_skill` names the new sha256 and its pull verifies.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import { spawnComputerProc, spawnServer, type Proc } from "../support/reliability-procs.ts";
import { writeSkill } from "../support/reliability-stack.ts";

const TOKEN = "stale-digest-token-5e2a9c71";
const OFFICE = "mmap-office";
const SIZE = 256 * 1024;
/** Rewrites the file through one shared mapping on each `fill` line; answers its timestamps. */
const MMAP_WRITER = `
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED)
for line in sys.stdin:
    m[0:len(m)] = os.urandom(len(m))
    s = os.fstat(fd)
    print(s.st_mtime_ns, s.st_ctime_ns, flush=True)
`;
const python = spawnSync("python3", ["-c", "import mmap"]).status === 0;

let dir: string;
let file: string;
let server: { proc: Proc; url: string } | undefined;
let pc: Proc | undefined;
let agent: AgentClient | undefined;
let writer: ChildProcessWithoutNullStreams | undefined;
let answers: AsyncIterator<string>;

before(async () => {
  if (!python) return;
  dir = await mkdtemp(join(tmpdir(), "a2c-rel-mmap-"));
  const root = await writeSkill(join(dir, "home"), "data", { "f.bin": randomBytes(SIZE) });
  file = join(root, "f.bin");
  await writeFile(join(dir, "writer.py"), MMAP_WRITER);
  writer = spawn("python3", [join(dir, "writer.py"), file]);
  answers = createInterface({ input: writer.stdout })[Symbol.asyncIterator]();
  server = await spawnServer(0, { A2C_TOKENS: TOKEN, A2C_LOG_LEVEL: "warn" });
  pc = await spawnComputerProc({
    url: server.url,
    office: OFFICE,
    name: "pc",
    token: TOKEN,
    skills: join(dir, "home"),
    stateDir: join(dir, "state"),
    env: { A2C_LOG_LEVEL: "warn" },
  });
  agent = new AgentClient({ url: server.url, token: TOKEN, name: "agent-mmap" });
  await agent.connect();
  await agent.joinOffice(OFFICE);
  await agent.waitForComputer("pc", { timeoutMs: 60_000 });
});
after(async () => {
  writer?.stdin.end();
  writer?.kill();
  await agent?.close();
  await pc?.kill("SIGTERM");
  await server?.proc.kill("SIGTERM");
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** New random bytes through the mapping; the file's mtime and ctime (ns) after it. */
async function fill(): Promise<string> {
  writer!.stdin.write("fill\n");
  const line = await answers.next();
  assert.ok(!line.done, "the mmap writer answered");
  return line.value;
}

const sha256Of = async (): Promise<string> =>
  createHash("sha256")
    .update(await readFile(file))
    .digest("hex");

/** get_skill, then a pull of its handle held to the digest it named. */
async function getAndPull(): Promise<{ named: string; ok: boolean; error?: string; ms?: number }> {
  const t0 = performance.now();
  const ret = await agent!.getSkillRaw("pc", "data", "f.bin");
  assert.ok(ret.blob_handle && ret.sha256);
  try {
    const bytes = await agent!.readBlob("pc", ret.blob_handle, {
      expectedSha256: ret.sha256,
      chunkBytes: 64 * 1024,
    });
    assert.equal(createHash("sha256").update(bytes).digest("hex"), ret.sha256);
    return { named: ret.sha256, ok: true, ms: Math.round(performance.now() - t0) };
  } catch (err) {
    return {
      named: ret.sha256,
      ok: false,
      error: (err as Error).message,
      ms: Math.round(performance.now() - t0),
    };
  }
}

void test(
  "a file rewritten through a shared mmap: at most one pull fails, then the new sha256",
  {
    skip: python ? false : "no python3 with mmap on this machine",
  },
  async (t) => {
    // Until the second write lands on still-dirty pages (a writeback in between would move the
    // timestamps, and the Computer would see a new signature: nothing stale to show).
    for (let attempt = 1; ; attempt++) {
      const t0 = performance.now();
      const first = await fill();
      const fresh = await getAndPull();
      assert.ok(fresh.ok, `the first content pulls and verifies: ${fresh.error}`);
      assert.equal(fresh.named, await sha256Of());
      t.diagnostic(`first content: ${Math.round(performance.now() - t0)} ms`);
      const second = await fill();
      if (second === first) break;
      assert.ok(attempt < 3, "the mapping's pages were written back before every second write");
    }
    const now = await sha256Of();
    const rounds = [];
    for (let i = 0; i < 3; i++) rounds.push(await getAndPull());
    t.diagnostic(
      JSON.stringify(
        rounds.map((r) => ({ named: r.named.slice(0, 8), ok: r.ok, ms: r.ms, error: r.error })),
      ),
    );
    const failed = rounds.filter((r) => !r.ok);
    assert.ok(failed.length <= 1, `${failed.length} pulls failed: ${failed[0]?.error}`);
    assert.equal(rounds[1]!.named, now, "the get_skill after it names the new sha256");
    assert.ok(rounds[1]!.ok && rounds[2]!.ok);
  },
);
