/**
 * Auth: wrong, empty, over-long tokens and an office-scoped token joining another
 * office are refused with a clear error — against the Server as its own process, logging at
 * trace level through its production logger — and neither the Server's nor the Computer's log
 * output ever contains a token (the real ones, nor the wrong ones clients tried).
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { io, type Socket } from "socket.io-client";
import { NAMESPACE, PROTOCOL_VERSION } from "../../protocol/index.ts";
import { spawnComputerProc, spawnServer, type Proc } from "../support/reliability-procs.ts";
import { writeSkill } from "../support/reliability-stack.ts";

const OPEN = "open-secret-token-7f3a9c1e5b";
const SCOPED = "scoped-secret-token-2d8e4f6a0c";
const WRONG = [
  "wrong-secret-token-9b1d3f5a7c",
  OPEN.slice(0, -1),
  `${OPEN}x`,
  "x".repeat(70_000) + "-overlong-marker",
];
let dir: string;
let server: { proc: Proc; url: string };
let computer: Proc;
const sockets: Socket[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "a2c-rel-auth-"));
  await mkdir(join(dir, "home"), { recursive: true });
  await writeSkill(join(dir, "home"), "alpha", {});
  await writeFile(join(dir, "tokens"), `${OPEN}\n${SCOPED} office-a\n`);
  server = await spawnServer(0, { A2C_TOKENS_FILE: join(dir, "tokens"), A2C_LOG_LEVEL: "trace" });
  computer = await spawnComputerProc({
    url: server.url,
    office: "office-a",
    name: "pc",
    token: SCOPED,
    skills: join(dir, "home"),
    stateDir: join(dir, "state"),
    env: { A2C_LOG_LEVEL: "trace" },
  });
  await computer.waitFor(/joined office/);
});
after(async () => {
  for (const s of sockets) s.disconnect();
  await computer?.kill("SIGTERM");
  await server?.proc.kill("SIGTERM");
  await rm(dir, { recursive: true, force: true });
});

function connect(auth: Record<string, unknown>): Promise<{ socket: Socket; refused?: unknown }> {
  const socket = io(`${server.url}${NAMESPACE}`, {
    query: { a2c_version: PROTOCOL_VERSION },
    auth,
    transports: ["polling", "websocket"],
    forceNew: true,
    reconnection: false,
  });
  sockets.push(socket);
  return new Promise((resolve) => {
    socket.once("connect", () => resolve({ socket }));
    socket.once("connect_error", (err: Error & { data?: unknown }) =>
      resolve({ socket, refused: err.data ?? err.message }),
    );
  });
}

void test("bad tokens are refused with a flat 401", async () => {
  for (const token of [...WRONG, "", null, 12345, { token: OPEN }]) {
    const { refused } = await connect(token === null ? {} : { token });
    assert.ok(refused !== undefined, `token ${JSON.stringify(token)?.slice(0, 40)} refused`);
    assert.equal(
      typeof refused,
      "object",
      `a flat error for ${JSON.stringify(token)?.slice(0, 40)}`,
    );
    const e = refused as { code?: unknown; message?: unknown };
    assert.equal(e.code, 401);
    assert.equal(typeof e.message, "string");
    assert.ok(!JSON.stringify(refused).includes(OPEN), "the answer echoes no token");
  }
});

void test("an office-scoped token joins its office only", async () => {
  const { socket, refused } = await connect({ token: SCOPED });
  assert.equal(refused, undefined);
  const join = (office: string): Promise<unknown[]> =>
    new Promise((r) =>
      socket.emit(
        "server:join_office",
        { role: "agent", name: "agent-x", office_id: office },
        (...a: unknown[]) => r(a),
      ),
    );
  for (const office of ["office-b", "office-a ", "OFFICE-A", "office-a\u0000"]) {
    const [ok, reason] = await join(office);
    assert.equal(ok, false, `joining ${JSON.stringify(office)} is refused`);
    assert.equal(typeof reason, "string");
    assert.ok((reason as string).length > 0, "with a reason");
  }
  assert.deepEqual(await join("office-a"), [true, null]);
});

void test("no token in any log line of the Server or the Computer", async () => {
  // Make both processes write everything they have (trace level), then read it.
  await computer.kill("SIGTERM");
  await server.proc.kill("SIGTERM");
  const logs = server.proc.output() + computer.output();
  assert.ok(logs.length > 0, "the processes logged");
  for (const secret of [OPEN, SCOPED, ...WRONG.slice(0, 1), "overlong-marker"]) {
    assert.ok(!logs.includes(secret), `log contains ${secret.slice(0, 12)}…`);
  }
});
