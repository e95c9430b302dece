/**
 * The CLI on a terminal (a pseudo-terminal through util-linux `script`): the progress bar is
 * drawn, ends its line, and the final line follows on its own, with no warning anywhere, at
 * window 16 (the default) and 64. Real Server and Computer.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { runCliTty, useDownloadStack } from "../support/cli-process.ts";

const SIZE = 2 * 1024 * 1024; // 128 chunks of 16 KiB: every window fills
const ds = useDownloadStack(SIZE);

for (const window of ["16", "64"]) {
  void test(`window ${window}: bar, its line ended, the final line, no warning`, async () => {
    const file = join(ds.stack.dir, `tty-${window}.bin`);
    const { code, screen } = await runCliTty([
      ...ds.args(file),
      ...["--chunk-bytes", "16384", "--window", window],
    ]);
    assert.equal(code, 0, screen);
    assert.doesNotMatch(screen, /Warning|MaxListeners/);
    // The last redraw is the full bar; its line ends before the final line starts.
    const full = `\rtty-${window}.bin [########################] 100% 2.0 MiB/2.0 MiB `;
    const end = screen.lastIndexOf(full);
    assert.ok(end >= 0, `a full bar was drawn:\n${JSON.stringify(screen)}`);
    const rest = screen.slice(end + full.length);
    assert.match(
      rest,
      new RegExp(
        "^\\d+\\.\\d MB/s ETA 0s\\x1b\\[K\\r\\n" +
          `wrote ${file}: 2\\.0 MiB \\(2097152 bytes\\), sha256 ${ds.sha} verified, ` +
          "binary carriage, identity, 1\\.00 wire bytes per byte, \\d+\\.\\d+ s, \\d+\\.\\d MB/s, rtt [\\d.]+ m?s\\r\\n$",
      ),
    );
    assert.equal((await readFile(file)).length, SIZE);
  });
}
