/**
 * `waitForComputer` when the Computer joins while the Agent's `server:list_room` is in flight
 * (the soak's "Agent and Computer start together": 2 of ~8 starts waited forever). The Server's
 * snapshot is taken before the Computer's join, and its `notify:enter_office` reaches the Agent
 *   (a) in the same transport read as the stale `list_room` answer, after it — one Server node:
 *       the ack is sent first, but both are decoded in one macrotask, so the notification is
 *       handled before the promise continuation that applies the snapshot; or
 *   (b) before the stale answer — a Redis registry, whose `list` is a round trip during which
 *       the join can complete and notify.
 * Either way the arrival is newer than the snapshot and must survive it: the Agent sees the
 * Computer, `waitForComputer` resolves, and no `computer_left` is invented.
 * A scripted Server (plain socket.io, polling only, so the batching of one poll response is
 * under the test's control) plays the office.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import { Server, type Socket } from "socket.io";
import { AgentClient } from "../../agent/client.ts";
import { NAMESPACE } from "../../protocol/index.ts";

const OFFICE = "office-race";

/** `answer` sends the snapshot taken on arrival; `enter` adds a Computer and notifies. */
type ListScript = (socket: Socket, answer: () => void, enter: (name: string) => void) => void;

/** An office Server whose n-th `server:list_room` (0-based) is answered by `scripts[n]`. */
async function scriptedServer(
  scripts: ListScript[],
): Promise<{ url: string; close(): Promise<void> }> {
  const http = createServer();
  // Polling only: packets the Server emits while no poll is pending go out together in the
  // next poll response (one read on the Agent), exactly what a busy Agent sees on a WebSocket.
  const io = new Server(http, { transports: ["polling"] });
  const computers = new Set<string>();
  let lists = 0;
  io.of(NAMESPACE).on("connection", (socket) => {
    socket.on("server:join_office", (_req: unknown, ack: (ok: boolean, r: null) => void) => {
      void socket.join(OFFICE);
      ack(true, null);
    });
    socket.on("server:list_room", (req: { req_id: string }, ack: (a: unknown) => void) => {
      const snapshot = [...computers]; // taken now, before anything the script does
      const answer = (): void =>
        ack({
          req_id: req.req_id,
          sessions: snapshot.map((name, i) => ({
            sid: `sid-${i}`,
            name,
            role: "computer",
            office_id: OFFICE,
          })),
        });
      const enter = (name: string): void => {
        computers.add(name);
        socket.emit("notify:enter_office", { office_id: OFFICE, computer: name });
      };
      const script = scripts[lists++];
      if (script) script(socket, answer, enter);
      else answer();
    });
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => void io.close(() => r())),
  };
}

/** Something the Agent ignores (another office), to occupy the pending poll. */
function filler(socket: Socket): void {
  socket.emit("notify:enter_office", { office_id: "another-office", computer: "elsewhere" });
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups) await c();
});

async function agentIn(url: string): Promise<{ agent: AgentClient; events: string[] }> {
  const agent = new AgentClient({ url, name: "agent-race", requestTimeoutMs: 5_000 });
  cleanups.push(() => agent.close());
  const events: string[] = [];
  agent.on("computer_joined", (c) => events.push(`joined ${c}`));
  agent.on("computer_left", (c) => events.push(`left ${c}`));
  await agent.connect();
  return { agent, events };
}

for (const [name, script] of [
  [
    "(a) stale list_room answer, then the enter notification in the same poll response",
    (socket: Socket, answer: () => void, enter: (name: string) => void): void => {
      filler(socket); // goes out on the pending poll: what follows is batched
      answer();
      enter("pc");
    },
  ],
  [
    "(b) the enter notification before the stale list_room answer",
    (_socket: Socket, answer: () => void, enter: (name: string) => void): void => {
      enter("pc");
      answer();
    },
  ],
] as const) {
  void test(`waitForComputer: ${name}`, async () => {
    // list_room #0 is joinOffice's own refresh (empty office); #1 is waitForComputer's.
    const server = await scriptedServer([(_s, answer) => answer(), script]);
    cleanups.push(() => server.close());
    const { agent, events } = await agentIn(server.url);
    await agent.joinOffice(OFFICE);
    assert.deepEqual(agent.computers, []);
    await agent.waitForComputer("pc", { timeoutMs: 5_000 });
    assert.deepEqual(agent.computers, ["pc"]);
    assert.deepEqual(events, ["joined pc"], "the arrival is kept: no invented computer_left");
  });
}
