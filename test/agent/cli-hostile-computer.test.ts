/**
 * A Computer that lies or overwhelms, with the CLI as its victim (a process against a scripted
 * Computer on a real socket.io Server; the shipped build; docs/configuration.md, "Agent CLI"): a
 * 256 MiB text skill file with `-o` streams to the file at bounded memory (it used to be drained into memory first);
 * one claimed over the in-memory bound without `-o` is refused before any chunk; a download onto
 * a full disk (a 1 MiB tmpfs in a private mount namespace) and past the file-size limit (`ulimit
 * -f`) exits 6 naming the cause, and leaves what was at the path; a sideband beyond the bound
 * says to use `--out`. Peak memory is the process's own maximum RSS (GNU time).
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { roleCommand } from "../../scripts/launch/roles.ts";
import { REPO_ROOT } from "../support/agent-stack.ts";
import {
  OFFICE,
  answerFor,
  sha256,
  skillAnswer,
  useFakeServer,
  useTempDir,
  testBytes,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

/** The shipped CLI, as `a2c-agent` runs it (node with its shebang's flags). */
const CLI = roleCommand("agent");
const MiB = 1024 * 1024;

let fake: FakeServer;
let dir: string;
/** Every served resource by handle: its bytes, what it claims, and its MIME type. */
const served = new Map<string, { bytes: Buffer; total?: number; mime: string }>();

function text(size: number): Buffer {
  return Buffer.alloc(size, "A line of a large text skill file, the same again and again.\n");
}

served.set("big-text", { bytes: text(256 * MiB), mime: "text/plain" });
served.set("small-text", { bytes: text(MiB), mime: "text/plain" });
served.set("four-mib", { bytes: testBytes(4 * MiB, 3), mime: "text/plain" });
served.set("claims-huge", { bytes: text(MiB), total: 300 * MiB, mime: "text/plain" });
useFakeServer((f) => {
  fake = f;
  fake.on("client:get_skill", (req) => {
    const s = served.get(req.rel_path as string)!;
    return skillAnswer(req, s.bytes, { mime: s.mime, ...(s.total ? { total: s.total } : {}) });
  });
  fake.on("client:get_blob", (req) => {
    const s = served.get(req.blob_handle as string)!;
    return answerFor(s.bytes, req, { mime: s.mime });
  });
});
useTempDir("cli-hostile-", (d) => (dir = d));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Peak resident memory of the CLI process, bytes. */
  peakRss: number;
}

/**
 * Runs the CLI through `sh -c`: `setup` (shell commands) first, then the CLI under GNU time,
 * then `after` (shell commands that may inspect what the CLI left, in the same namespaces).
 */
function runCli(args: string[], shell: { setup?: string; after?: string; unshare?: boolean } = {}) {
  const rss = join(dir, `rss-${Math.random().toString(36).slice(2)}`);
  const quote = (w: string): string => `'${w.replaceAll("'", "'\\''")}'`;
  const cli = ["/usr/bin/time", "-o", rss, "-f", "%M", ...CLI, ...args];
  const script = [
    shell.setup ?? "true",
    `${cli.map(quote).join(" ")} && code=0 || code=$?`,
    shell.after ?? "true",
    "exit $code",
  ].join("\n");
  const argv = shell.unshare ? ["unshare", "--mount", "sh", "-ec", script] : ["sh", "-ec", script];
  return new Promise<Run>((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: REPO_ROOT,
      env: { ...process.env, A2C_LOG_LEVEL: "silent" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => {
      void readFile(rss, "utf8").then(
        (kib) => resolve({ code, stdout, stderr, peakRss: Number(kib.trim()) * 1024 }),
        () => resolve({ code, stdout, stderr, peakRss: Number.NaN }),
      );
    });
  });
}

const base = (): string[] => ["--server", fake.url, "--office", OFFICE];

/** Whether this process may mount a tmpfs in a mount namespace of its own (root, util-linux). */
const canMount =
  spawnSync("unshare", ["--mount", "sh", "-ec", "d=$(mktemp -d); mount -t tmpfs tmpfs $d"], {
    stdio: "ignore",
  }).status === 0;

void test("skill -o of a 256 MiB text file streams to the file: verified, bounded memory", async () => {
  const small = await runCli([
    ...base(),
    "skill",
    "pc",
    "s",
    "small-text",
    "-o",
    join(dir, "s.txt"),
  ]);
  assert.equal(small.code, 0, small.stderr);
  const file = join(dir, "big.txt");
  const big = await runCli([...base(), "skill", "pc", "s", "big-text", "-o", file]);
  assert.equal(big.code, 0, big.stderr);
  const h = createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
  assert.equal(h, sha256(served.get("big-text")!.bytes));
  await rm(file);
  const growth = big.peakRss - small.peakRss;
  console.log(
    `CLI peak RSS: 1 MiB text ${(small.peakRss / MiB).toFixed(0)} MiB, ` +
      `256 MiB text ${(big.peakRss / MiB).toFixed(0)} MiB`,
  );
  assert.ok(growth < 96 * MiB, `peak RSS grew by ${(growth / MiB).toFixed(0)} MiB`);
});

void test("skill to stdout of a text claimed over the in-memory bound: exit 6 before any chunk", async () => {
  const n = fake.blobRequests().length;
  const r = await runCli([...base(), "skill", "pc", "s", "claims-huge"]);
  assert.equal(r.code, 6, r.stderr);
  assert.equal(r.stdout, "");
  assert.match(
    r.stderr,
    /the resource is 300\.0 MiB \(314572800 bytes\), over the in-memory bound of 256\.0 MiB/,
  );
  assert.match(r.stderr, /hint: -o FILE writes it to a file, whatever its size/);
  assert.equal(fake.blobRequests().length, n, "no chunk asked");
});

for (const [what, args] of [
  ["blob", ["blob", "pc", "four-mib", "-o"]],
  ["a text skill file", ["skill", "pc", "s", "four-mib", "-o"]],
] as const) {
  void test(
    `${what} onto a full disk: exit 6, what was at the path is left, no temp file`,
    {
      skip: canMount ? false : "needs root and util-linux unshare to mount a tmpfs",
    },
    async () => {
      const mnt = join(dir, `full-${what.length}`);
      const report = join(dir, `report-${what.length}`);
      const old = Buffer.from("the file that was here before\n".repeat(1000));
      await writeFile(join(dir, "old"), old);
      const target = join(mnt, "out");
      const r = await runCli([...base(), ...args, target], {
        unshare: true,
        setup: `mkdir -p ${mnt} && mount -t tmpfs -o size=1m tmpfs ${mnt} && cp ${join(dir, "old")} ${target}`,
        after: `ls -A ${mnt} > ${report}.ls; sha256sum ${target} > ${report}.sha`,
      });
      assert.equal(r.code, 6, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `cannot write '${target}': no space left on device \\(ENOSPC\\); ${target} was left as it was`,
        ),
      );
      assert.equal((await readFile(`${report}.ls`, "utf8")).trim(), "out", "no temp file left");
      assert.equal((await readFile(`${report}.sha`, "utf8")).split(" ")[0], sha256(old));
    },
  );
}

void test("past the file-size limit (EFBIG): exit 6, the resource is too large for the file system", async () => {
  const out = join(dir, "limited.bin");
  // dash counts ulimit -f in 512-byte blocks: 1 MiB.
  const r = await runCli([...base(), "blob", "pc", "four-mib", "-o", out], {
    setup: "ulimit -f 2048",
  });
  assert.equal(r.code, 6, r.stderr);
  assert.match(
    r.stderr,
    /the resource is 4\.0 MiB \(4194304 bytes\), more than the file system allows for one file/,
  );
  assert.deepEqual(
    (await readdir(dir)).filter((f) => f.includes("limited")),
    [],
  );
});

void test("a sideband item over the in-memory bound: exit 6 with the way out; --out streams it", async () => {
  const item = served.get("four-mib")!.bytes;
  fake.on("client:tool_call", (req) => {
    const huge = (req.params as { huge?: boolean }).huge === true;
    const meta = huge
      ? { a2c_blob_handle: "claims-huge", a2c_total_size: 300 * MiB, a2c_sha256: sha256(item) }
      : { a2c_blob_handle: "four-mib", a2c_total_size: item.length, a2c_sha256: sha256(item) };
    return { content: [{ type: "image", data: "", mimeType: "image/png", _meta: meta }] };
  });
  const r = await runCli([...base(), "call", "pc", "t", '{"huge":true}']);
  assert.equal(r.code, 6, r.stderr);
  assert.match(r.stderr, /content\[0\]: the resource is 300\.0 MiB .* over the in-memory bound/);
  assert.match(r.stderr, /hint: --out DIR writes sidebanded items to files, whatever their size/);
  const out = join(dir, "items");
  const ok = await runCli([...base(), "--json", "call", "pc", "t", "{}", "--out", out]);
  assert.equal(ok.code, 0, ok.stderr);
  const answer = JSON.parse(ok.stdout) as { files: { file: string; bytes: number }[] };
  assert.equal(answer.files[0]!.bytes, item.length);
  assert.equal(sha256(await readFile(answer.files[0]!.file)), sha256(item));
});
