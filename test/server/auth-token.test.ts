// D4: token auth. The token comes from auth.token or an Authorization: Bearer header; wrong,
// empty, over-long or missing tokens get connect_error with data = flat {code: 401, message};
// a token scoped to office ids may join only those offices.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ServerHarness, ConnectRefused, joinOffice } from "../support/server-harness.ts";

const OPEN = "open-token-abcdef";
const SCOPED = "scoped-token-123456";
let h: ServerHarness;
before(async () => {
  h = await ServerHarness.start({
    tokens: [OPEN, { token: SCOPED, offices: ["office-a", "office-b"] }],
  });
});
after(() => h.close());

async function refusal(options: Parameters<ServerHarness["connect"]>[0]): Promise<unknown> {
  const err = await h.connect(options).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ConnectRefused, "connection must be refused");
  return err.data;
}

for (const [label, options] of [
  ["a wrong token", { token: "wrong-token" }],
  ["an empty token", { token: "" }],
  ["no token at all", { token: null }],
  ["an over-long token", { token: "x".repeat(100_000) }],
  ["a token of the wrong type", { token: null, auth: { token: 12345 } }],
  ["a prefix of a valid token", { token: OPEN.slice(0, -1) }],
  ["a wrong bearer header", { token: null, extraHeaders: { Authorization: "Bearer nope" } }],
] as const) {
  void test(`${label} is refused with a flat 401`, async () => {
    const data = (await refusal(options)) as { code: number; message: string };
    assert.equal(data.code, 401);
    assert.equal(typeof data.message, "string");
    assert.deepEqual(Object.keys(data).sort(), ["code", "message"]);
  });
}

void test("auth.token and an Authorization: Bearer header are both accepted", async () => {
  assert.ok((await h.connect({ token: OPEN })).connected);
  const viaHeader = await h.connect({
    token: null,
    extraHeaders: { Authorization: `Bearer ${OPEN}` },
  });
  assert.ok(viaHeader.connected);
  const wsHeader = await h.connect({
    token: null,
    transports: ["websocket"],
    extraHeaders: { Authorization: `Bearer ${SCOPED}` },
  });
  assert.ok(wsHeader.connected);
});

void test("a scoped token joins its offices only", async () => {
  const s = await h.connect({ token: SCOPED });
  const [ok, reason] = await joinOffice(s, { role: "computer", name: "pc", office_id: "office-c" });
  assert.equal(ok, false);
  assert.equal(typeof reason, "string");
  assert.deepEqual(await joinOffice(s, { role: "computer", name: "pc", office_id: "office-a" }), [
    true,
    null,
  ]);
  // Switching to another allowed office works; to a forbidden one is refused and keeps it in A.
  assert.deepEqual(await joinOffice(s, { role: "computer", name: "pc", office_id: "office-b" }), [
    true,
    null,
  ]);
  assert.equal(
    (await joinOffice(s, { role: "computer", name: "pc", office_id: "office-z" }))[0],
    false,
  );
});

void test("an unscoped token joins any office", async () => {
  const s = await h.connect({ token: OPEN });
  assert.deepEqual(await joinOffice(s, { role: "agent", name: "a", office_id: "office-c" }), [
    true,
    null,
  ]);
});
