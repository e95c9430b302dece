/**
 * `joinOffice` across a dropped connection (D55, D56): a Server node that fences closes its
 * connections below socket.io, and one of them may carry an Agent's join that is in flight. The
 * SDK's client reconnects by itself, so the join goes on over the new connection within
 * `retryForMs` instead of failing with `DisconnectedError` (seen once in the Redis-faults test,
 * where the fence fell between two tries of a refused join: "Not connected to the Server"). The
 * real Server closes the connection the moment the join arrives, or before the join is asked,
 * so each interleaving is forced, not hoped for.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AgentClient } from "../../agent/client.ts";
import { DisconnectedError } from "../../agent/errors.ts";
import { Events, NAMESPACE } from "../../protocol/index.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";

let h: ServerHarness;
/** Joins the Server has received, per office; the first `dropJoins` of each close the connection. */
const joins = new Map<string, number>();
let dropJoins = 0;

before(async () => {
  h = await ServerHarness.start();
  h.server.io.of(NAMESPACE).on("connection", (socket) => {
    // Runs before the Server's own handler: the join is in flight when the connection goes.
    socket.onAny((event: string, req: { office_id?: string }) => {
      if (event !== Events.JoinOffice) return;
      const office = req.office_id ?? "";
      const n = (joins.get(office) ?? 0) + 1;
      joins.set(office, n);
      if (n <= dropJoins) socket.conn.close();
    });
  });
});
after(() => h.close());

function agent(name: string): AgentClient {
  return new AgentClient({
    url: h.url,
    token: TEST_TOKEN,
    name,
    reconnectionDelayMs: 50,
    reconnectionDelayMaxMs: 50,
  });
}

void test("a join whose connection drops is sent again after the reconnect, and lands", async () => {
  dropJoins = 1;
  const a = agent("rejoiner");
  try {
    await a.connect();
    let drops = 0;
    a.on("disconnected", () => drops++);
    await a.joinOffice("office-drop", undefined, { retryForMs: 10_000 });
    assert.equal(drops, 1, "the connection dropped under the join");
    assert.equal(joins.get("office-drop"), 2, "the join was sent again");
    assert.equal(a.officeId, "office-drop");
    assert.deepEqual(await a.refreshComputers(), []);
  } finally {
    await a.close();
  }
});

void test("a join asked while the client reconnects is sent once it has, and lands", async () => {
  dropJoins = 0;
  const a = agent("late-joiner");
  try {
    await a.connect();
    const disconnected = new Promise<void>((r) => a.once("disconnected", () => r()));
    const id = [...h.server.io.of(NAMESPACE).sockets.keys()].at(-1)!;
    h.server.io.of(NAMESPACE).sockets.get(id)!.conn.close();
    await disconnected;
    assert.equal(a.connected, false);
    await a.joinOffice("office-late", undefined, { retryForMs: 10_000 });
    assert.equal(joins.get("office-late"), 1, "sent once, on the new connection");
    assert.equal(a.officeId, "office-late");
  } finally {
    await a.close();
  }
});

void test("without retries (retryForMs 0) the dropped join fails at once, typed", async () => {
  dropJoins = 1;
  const a = agent("no-retry");
  try {
    await a.connect();
    await assert.rejects(
      a.joinOffice("office-no-retry", undefined, { retryForMs: 0 }),
      DisconnectedError,
    );
    assert.equal(joins.get("office-no-retry"), 1);
    assert.equal(a.officeId, undefined);
  } finally {
    await a.close();
  }
});

void test("a client closed while its join waits for the reconnect rejects, typed", async () => {
  dropJoins = 1;
  const a = new AgentClient({
    url: h.url,
    token: TEST_TOKEN,
    name: "closer",
    // socket.io waits this long before reconnecting: the join waits, then the client closes.
    reconnectionDelayMs: 60_000,
    reconnectionDelayMaxMs: 60_000,
  });
  await a.connect();
  const disconnected = new Promise<void>((r) => a.once("disconnected", () => r()));
  const join = a.joinOffice("office-close", undefined, { retryForMs: 30_000 });
  await disconnected;
  await a.close();
  await assert.rejects(join, DisconnectedError);
});
