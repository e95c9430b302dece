// @pure
/**
 * The engine's check of where an opened descriptor lives (D18 with the SKILL sandbox): a file
 * renamed over after the open is `replaced` (the engine opens again: a legitimate atomic rewrite
 * must not be refused), a descriptor that resolves outside the checked path is `elsewhere`
 * (`4018 forbidden`).
 */
import assert from "node:assert/strict";
import { mkdtemp, open, rename, rm, symlink, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { descriptorLocation } from "../../computer/blob/descriptors.ts";

void test("same file → same; renamed over after the open → replaced; resolved elsewhere → elsewhere", async () => {
  const dir = await mkdtemp(join(tmpdir(), "descriptor-location-"));
  try {
    const path = join(dir, "data.bin");
    await writeFile(path, "v1");
    const fh = await open(path, "r");
    try {
      assert.equal(descriptorLocation(fh.fd, path), "same");
      await writeFile(join(dir, "tmp"), "v2");
      await rename(join(dir, "tmp"), path); // atomic rewrite while the descriptor is open
      assert.equal(descriptorLocation(fh.fd, path), "replaced");
    } finally {
      await fh.close();
    }

    // A directory component swapped for a symlink: the descriptor lives outside the checked path.
    await mkdir(join(dir, "outside"));
    await writeFile(join(dir, "outside", "secret"), "s");
    await symlink(join(dir, "outside"), join(dir, "pkg"));
    const fh2 = await open(join(dir, "pkg", "secret"), "r");
    try {
      assert.equal(descriptorLocation(fh2.fd, join(dir, "pkg", "secret")), "elsewhere");
    } finally {
      await fh2.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
