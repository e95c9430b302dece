/**
 * What a download prints off a TTY, from the CLI as a process against a real stack: a progress
 * line every 10 % and a final line (file, size, sha256 verified, carriage, the content-codings the
 * chunks came in and the wire bytes per byte, time, MB/s, round trip) on stderr, nothing on stdout; `--quiet` prints nothing at all, `--json` only the JSON
 * summary (with the pull's statistics) on stdout.
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { MIN_CHUNK_BYTES } from "../../agent/path-controller.ts";
import { runCli } from "../support/agent-stack.ts";
import { useDownloadStack } from "../support/cli-process.ts";

const CHUNK = 16384; // the pull's ceiling (--chunk-bytes)
const SIZE = 16 * CHUNK; // 16 chunks of the ceiling, or more
const ds = useDownloadStack(SIZE);

function download(file: string, ...extra: string[]): ReturnType<typeof runCli> {
  return runCli([...ds.args(file), "--chunk-bytes", String(CHUNK), ...extra]);
}

void test("off a TTY: a line every 10 %, then the final line", async () => {
  const file = join(ds.stack.dir, "plain.bin");
  const r = await download(file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "");
  const lines = r.stderr.split("\n");
  assert.equal(lines.pop(), "", "stderr ends with a line end");
  const final = lines.pop()!;
  assert.match(
    final,
    new RegExp(
      `^wrote ${file}: 256\\.0 KiB \\(262144 bytes\\), sha256 ${ds.sha} verified, ` +
        "binary carriage, identity, 1\\.00 wire bytes per byte, \\d+\\.\\d+ s, \\d+\\.\\d MB/s, " +
        "rtt [\\d.]+ m?s$",
    ),
  );
  // Printed when the tens digit of the percentage changes; no chunk (at most 16 KiB) carries 10 %,
  // so every tens digit has its line, whatever sizes the pull asked.
  const percents = lines.map((l) => {
    const m = /^plain\.bin: +(\d+)% [\d.]+ KiB\/256\.0 KiB \d+\.\d MB\/s ETA (\d+s|--)$/.exec(l);
    assert.ok(m, `progress line: ${l}`);
    return Number(m[1]);
  });
  assert.deepEqual(
    percents.map((p) => Math.floor(p / 10)),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    percents.join(" "),
  );
  assert.equal((await readFile(file)).length, SIZE);
});

void test("--base64: the final line says so", async () => {
  const file = join(ds.stack.dir, "spec.bin");
  const r = await download(file, "--base64");
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stderr,
    /verified, base64 carriage, identity, 1\.33 wire bytes per byte, \d+\.\d+ s, \d+\.\d MB\/s, rtt [\d.]+ m?s\n$/,
  );
  assert.equal((await readFile(file)).length, SIZE);
});

void test("--quiet: nothing on stdout or stderr", async () => {
  const file = join(ds.stack.dir, "quiet.bin");
  assert.deepEqual(await download(file, "--quiet"), { code: 0, stdout: "", stderr: "" });
  assert.equal((await readFile(file)).length, SIZE);
});

void test("--json: one JSON object on stdout, nothing on stderr", async () => {
  const file = join(ds.stack.dir, "json.bin");
  const r = await download(file, "--json");
  assert.equal(r.code, 0);
  assert.equal(r.stderr, "");
  const { stats, ...answer } = JSON.parse(r.stdout) as { stats: Record<string, unknown> };
  assert.deepEqual(answer, {
    name: "files",
    rel_path: "data.bin",
    mime_type: "application/octet-stream",
    total_size: SIZE,
    sha256: ds.sha,
    file,
    carriage: "binary",
  });
  // The pull's statistics: nothing asked twice. The requests are chunks of 8 KiB (the least the
  // path asks) to 16 KiB (the ceiling): startup's first ones are smaller when a loaded machine
  // delays the first answers (16 in all on an idle one, 17 seen in CI).
  const requests = stats.requests as number;
  assert.ok(requests >= SIZE / CHUNK && requests <= SIZE / MIN_CHUNK_BYTES, `${requests} requests`);
  assert.deepEqual(
    { ...stats, rate_bytes_per_s: 0, rtt_ms: 0, elapsed_ms: 0 },
    {
      requests,
      bytes_received: SIZE,
      // Random bytes: the Computer answers every chunk identity (D64).
      wire_bytes: SIZE,
      wire_bytes_per_byte: 1,
      codings: { identity: requests },
      busy: 0,
      timeouts: 0,
      resumes: 0,
      restarts: 0,
      rate_bytes_per_s: 0,
      rtt_ms: 0,
      elapsed_ms: 0,
      from_cache: false,
      resumed_from: 0,
    },
  );
  assert.ok((stats.rate_bytes_per_s as number) > 0 && (stats.rtt_ms as number) > 0);
  assert.equal(r.stdout.split("\n").length, 2, "one line");
});

void test("text: the final line names the coding and the wire bytes per byte", async () => {
  const s = ds.stack;
  const lines = Array.from({ length: 8000 }, (_, i) => `- item ${i}: status ok, ${i % 13} retries`);
  await writeFile(join(s.home, "user", "files", "notes.md"), lines.join("\n"));
  const file = join(s.dir, "notes.out");
  const args = (...extra: string[]): string[] => [
    ...["--server", s.url, "--office", s.office, "--token", s.token],
    ...["skill", "pc", "files", "notes.md", "-o", file, ...extra],
  ];
  const r = await runCli(args());
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /verified, binary carriage, br, 0\.\d\d wire bytes per byte, /);
  const off = await runCli(args("--no-compress"));
  assert.equal(off.code, 0, off.stderr);
  assert.match(off.stderr, /verified, binary carriage, identity, 1\.00 wire bytes per byte, /);
});
