// @pure
/**
 * Which errno codes are disk faults and how an episode is told (D57). ENOSPC is exercised for
 * real in storage-full.test.ts (a filled tmpfs); EDQUOT, EIO and EROFS cannot be provoked without
 * a quota or a failing device, so their classification is checked here on errno errors as Node
 * builds them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  StorageFaultError,
  StorageHealth,
  storageReason,
} from "../../computer/blob/storage-faults.ts";
import { logLines } from "../support/log-lines.ts";

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: failed, write`), { code, syscall: "write" });
}

void test("ENOSPC and EDQUOT are storage_full; EIO and EROFS storage_error; others are not faults", () => {
  assert.equal(storageReason(errno("ENOSPC")), "storage_full");
  assert.equal(storageReason(errno("EDQUOT")), "storage_full");
  assert.equal(storageReason(errno("EIO")), "storage_error");
  assert.equal(storageReason(errno("EROFS")), "storage_error");
  for (const other of ["ENOENT", "EACCES", "EEXIST", "EMFILE"]) {
    assert.equal(storageReason(errno(other)), null, other);
  }
  assert.equal(storageReason(new Error("no code")), null);
  assert.equal(storageReason(null), null);
});

void test("an episode logs once when it starts and once when it ends, whatever fails between", () => {
  const logs = logLines();
  const health = new StorageHealth("spool", "tool blobs fail", logs.logger, undefined);
  const other = errno("EACCES");
  assert.equal(health.failed(other), other, "not a disk fault: handed back as it was");
  assert.equal(health.failing, false);
  for (const code of ["EIO", "EIO", "ENOSPC"]) {
    const fault = health.failed(errno(code));
    assert.ok(fault instanceof StorageFaultError);
    assert.equal(fault.store, "spool");
  }
  assert.equal(health.failing, true);
  assert.equal(logs.count(/^spool: disk error; tool blobs fail/), 1);
  assert.equal(logs.count(/^spool: out of disk space/), 0, "the episode is logged once");
  health.ok();
  health.ok();
  assert.equal(logs.count("spool: writing again"), 1);
  assert.equal(logs.lines.at(-1)?.failures, 3);
  assert.equal(health.failing, false);
});
