import assert from "node:assert/strict";
import { test } from "node:test";
import type { AgentClient } from "../../agent/client.ts";
import {
  BlobGoneError,
  BlobNotAccessibleError,
  ChunkContractError,
  ForbiddenError,
} from "../../agent/errors.ts";
import {
  COMPUTER,
  answerFor,
  blobError,
  useFakeComputer,
  testBytes,
  type FakeServer,
} from "../support/agent-fake-computer.ts";

let fake: FakeServer;
let agent: AgentClient;

useFakeComputer((f, a) => {
  fake = f;
  agent = a;
});

async function count(fn: () => Promise<unknown>): Promise<number> {
  const n = fake.blobRequests().length;
  await fn().catch(() => undefined);
  return fake.blobRequests().length - n;
}

for (const reason of ["invalid_handle", "forbidden", "some_future_reason"]) {
  void test(`4018 ${reason} is final: typed error, no retry`, async () => {
    fake.on("client:get_blob", () => blobError(reason));
    await assert.rejects(agent.readBlob(COMPUTER, "e", { window: 8 }), (err: unknown) => {
      assert.ok(err instanceof BlobNotAccessibleError);
      assert.ok(!(err instanceof BlobGoneError));
      assert.equal(err.code, 4018);
      assert.equal(err.reason, reason);
      return true;
    });
    assert.equal(await count(() => agent.readBlob(COMPUTER, "e", { window: 8 })), 1);
  });
}

void test("4018 gone: BlobGoneError (go back to the producer), no retry", async () => {
  const bytes = testBytes(5000);
  fake.on("client:get_blob", (req) =>
    (req.chunk_offset as number) >= 2000 ? blobError("gone") : answerFor(bytes, req),
  );
  await assert.rejects(
    agent.readBlob(COMPUTER, "g", { chunkBytes: 1000, window: 1 }),
    BlobGoneError,
  );
  assert.equal(
    await count(() => agent.readBlob(COMPUTER, "g", { chunkBytes: 1000, window: 1 })),
    3,
  );
});

void test("4018 range mid-read: re-learns the size from offset 0", async () => {
  const big = testBytes(6000, 2);
  const small = testBytes(2500, 3);
  let shrunk = false;
  fake.on("client:get_blob", (req) => {
    if (!shrunk && (req.chunk_offset as number) >= 3000) shrunk = true;
    // After the shrink, the Computer serves the small version (and says range past its end).
    return answerFor(shrunk ? small : big, req);
  });
  const got = await agent.readBlob(COMPUTER, "r", { chunkBytes: 1000, window: 1 });
  assert.deepEqual(got, small);
});

void test("4018 range on offset 0 is final", async () => {
  fake.on("client:get_blob", () => blobError("range"));
  await assert.rejects(agent.readBlob(COMPUTER, "r0"), BlobNotAccessibleError);
});

void test("first chunk failing with window 8 sends exactly one request", async () => {
  fake.on("client:get_blob", () => ({ code: 403, message: "no" }));
  const n = await count(() => agent.readBlob(COMPUTER, "f", { window: 8, chunkBytes: 10 }));
  assert.equal(n, 1);
  await assert.rejects(agent.readBlob(COMPUTER, "f", { window: 8 }), ForbiddenError);
});

const bytes = testBytes(4000, 9);
const violations: [string, (req: Record<string, unknown>) => Record<string, unknown>][] = [
  [
    "answer at another offset than asked",
    (req) => {
      const off = req.chunk_offset as number;
      return answerFor(bytes, off === 2000 ? { ...req, chunk_offset: 1000 } : req);
    },
  ],
  [
    "empty chunk without eof",
    (req) => {
      const a = answerFor(bytes, req);
      if (req.chunk_offset === 2000) Object.assign(a, { blob: "", eof: false });
      return a;
    },
  ],
  [
    "chunk overrunning total_size",
    (req) => {
      const a = answerFor(bytes, req);
      if (req.chunk_offset === 3000) a.blob = testBytes(1500).toString("base64");
      return a;
    },
  ],
  ["eof true before the end", (req) => ({ ...answerFor(bytes, req), eof: true })],
  ["eof false at the end", (req) => ({ ...answerFor(bytes, req), eof: false })],
  [
    "more bytes than asked",
    (req) => {
      const a = answerFor(bytes, req);
      if (req.chunk_offset === 1000) {
        a.blob = bytes.subarray(1000, 2500).toString("base64");
      }
      return a;
    },
  ],
  [
    "blob that is not base64",
    (req) => {
      const a = answerFor(bytes, req);
      if (req.chunk_offset === 1000) a.blob = "%%%%" + (a.blob as string).slice(4);
      return a;
    },
  ],
];

for (const [name, script] of violations) {
  void test(`contract violation rejected: ${name}`, async () => {
    fake.on("client:get_blob", script);
    await assert.rejects(
      agent.readBlob(COMPUTER, "v", { chunkBytes: 1000, window: 4 }),
      ChunkContractError,
    );
  });
}

void test("an answer that breaks the schema is an InvalidResponseError", async () => {
  fake.on("client:get_blob", (req) => ({ ...answerFor(bytes, req), sha256: "nope" }));
  await assert.rejects(agent.readBlob(COMPUTER, "s"), { name: "InvalidResponseError" });
});
