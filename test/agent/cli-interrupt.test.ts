/**
 * Ctrl-C (SIGINT) and SIGTERM to the CLI as a process: it keeps what it wrote for `-c` in the
 * partial file, says so, and exits 130 (143 for SIGTERM). The
 * Computer (a real socket joined to a real Server) answers the chunks that start in the first half
 * of the blob and never the rest, so the download is stuck mid-way when the signal comes, whatever
 * the machine's speed (the chunk sizes are the pull's, so where exactly it stops is not known).
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer, type AddressInfo, type Socket as TcpSocket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { answerFor, testBytes } from "../support/agent-fake-computer.ts";
import { startCli } from "../support/cli-process.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";

const OFFICE = "office-int";
const SIZE = 64 * 16384; // 64 chunks of 16 KiB
const bytes = testBytes(SIZE, 5);
let h: ServerHarness;
let dir: string;

before(async () => {
  h = await ServerHarness.start();
  dir = await mkdtemp(join(tmpdir(), "cli-interrupt-"));
  const pc = await h.computer(OFFICE, "pc");
  pc.on("client:get_blob", (req: Record<string, unknown>, ack: (a: unknown) => void) => {
    if ((req.chunk_offset as number) < SIZE / 2) ack(answerFor(bytes, req));
  });
});
after(async () => {
  await h.close();
  await rm(dir, { recursive: true, force: true });
});

for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const) {
  void test(`${signal} mid-download: the partial file is kept for -c, the line says so, exit ${code}`, async () => {
    const file = join(dir, "stuck.bin");
    const cli = startCli([
      ...["--server", h.url, "--office", OFFICE, "--token", TEST_TOKEN],
      ...["blob", "pc", "h", "-o", file, "--chunk-bytes", "16384"],
    ]);
    await cli.stderrLine(/^stuck\.bin: +5\d% [\d.]+ KiB\/1\.0 MiB /);
    cli.child.kill(signal);
    const r = await cli.done;
    assert.equal(r.code, code);
    assert.equal(r.stdout, "");
    const last = r.stderr.split("\n").at(-2)!;
    const held =
      /the partial download \(([\d.]+) KiB of 1\.0 MiB\) is kept in (\S+) \(-c resumes it\)$/.exec(
        last,
      );
    assert.ok(
      last.startsWith(`a2c-agent: interrupted: ${file} was not written;`) && held,
      `the last line: ${last}`,
    );
    assert.ok(Number(held[1]) >= 512 && Number(held[1]) < 1024, `${held[1]} KiB held`);
    assert.equal(held[2], `${file}.a2c-part`);
    assert.deepEqual(await readdir(dir), ["stuck.bin.a2c-part"], "the partial file only");
    await rm(held[2]);
  });
}

void test("Ctrl-C while connecting: says where it was, exits 130", async () => {
  const sockets: TcpSocket[] = [];
  const silent = createServer((s) => void sockets.push(s));
  await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  try {
    const connected = new Promise((r) => silent.once("connection", r));
    const cli = startCli(["--server", url, "--office", OFFICE, "computers"]);
    await connected;
    cli.child.kill("SIGINT");
    const r = await cli.done;
    assert.deepEqual(
      { code: r.code, stdout: r.stdout, stderr: r.stderr },
      { code: 130, stdout: "", stderr: `a2c-agent: interrupted while connecting to ${url}\n` },
    );
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  }
});
