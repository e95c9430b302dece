// @pure
/**
 * Fuzz: 10,000 random and mutated handles are all `4018 invalid_handle`, decided before
 * any file-system access: the engine opens no file and the producer is never asked.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import fc from "fast-check";
import { blobReq, engineFixture } from "./support/test-producer.ts";

const fx = engineFixture();
after(() => fx.close());

void test("10,000 random and mutated handles: invalid_handle, no file opened", async () => {
  const path = join(fx.dir, "target.bin");
  writeFileSync(path, "secret bytes");
  const valid = fx.fileHandle(path);
  const raw = Buffer.from(valid, "base64url");
  const b64url = fc.stringMatching(/^[A-Za-z0-9_-]{0,300}$/);
  const mutated = fc
    .record({
      at: fc.nat({ max: raw.length - 1 }),
      xor: fc.integer({ min: 1, max: 255 }),
      cut: fc.nat({ max: raw.length - 1 }),
      rot: fc.integer({ min: 1, max: raw.length - 1 }),
      op: fc.constantFrom("flip", "cut", "append", "swap", "std"),
    })
    .map(({ at, xor, cut, rot, op }) => {
      const b = Buffer.from(raw);
      switch (op) {
        case "flip":
          b[at]! ^= xor;
          return b.toString("base64url");
        case "cut":
          return b.subarray(0, cut).toString("base64url");
        case "append":
          return Buffer.concat([b, Buffer.from([xor])]).toString("base64url");
        case "swap":
          return Buffer.concat([b.subarray(rot), b.subarray(0, rot)]).toString("base64url");
        default:
          return b.toString("base64");
      }
    });
  const candidates = fc.sample(
    fc.oneof(b64url, mutated, fc.string({ maxLength: 200 }), fc.base64String({ maxLength: 400 })),
    { numRuns: 10_000, seed: 4018 },
  );
  const opensBefore = await fx.fileOpens();
  let checked = 0;
  for (const h of candidates) {
    if (h === valid) continue;
    const ret = await fx.engine.getBlob(blobReq(h));
    assert.deepEqual(ret, {
      code: 4018,
      message: "Blob not accessible",
      details: { reason: "invalid_handle" },
    });
    checked++;
  }
  assert.ok(checked >= 9_990, `checked ${checked}`);
  assert.equal(await fx.fileOpens(), opensBefore, "no file opened");
  assert.equal(fx.producer.resolves, 0, "the producer was never asked");
  // The valid handle still works, and does open the file.
  const ok = await fx.engine.getBlob(blobReq(valid));
  assert.equal((ok as { total_size: number }).total_size, 12);
  assert.equal(await fx.fileOpens(), opensBefore + 1);
});
