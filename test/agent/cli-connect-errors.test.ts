/**
 * Every way a connect fails, from the CLI as a process: one line naming the URL and the cause
 * (refused, DNS, timeout, TLS, HTTP status, version, auth), a hint where the fix is known, and
 * the exit code (4 transport, 3 refused by the Server). Real Servers on port 0, and for the
 * causes a Server cannot produce, real sockets that misbehave in exactly that way.
 */
import assert from "node:assert/strict";
import { createServer as createHttpServer } from "node:http";
import {
  createServer as createTcpServer,
  type AddressInfo,
  type Server,
  type Socket,
} from "node:net";
import { after, before, test } from "node:test";
import { PROTOCOL_VERSION } from "../../protocol/index.ts";
import { runCli } from "../support/agent-stack.ts";
import { ServerHarness, TEST_TOKEN } from "../support/server-harness.ts";

let server: ServerHarness;
let newer: ServerHarness;
const open: Server[] = [];
const sockets: Socket[] = [];

before(async () => {
  server = await ServerHarness.start();
  newer = await ServerHarness.start({ protocolVersion: "0.5.0" });
});
after(async () => {
  await server.close();
  await newer.close();
  for (const s of sockets) s.destroy();
  for (const s of open) await new Promise((r) => s.close(r));
});

/** Listens on 127.0.0.1:0 and returns `host:port`; the server and its sockets close after. */
async function listen<T extends Server>(s: T): Promise<string> {
  open.push(s);
  s.on("connection", (socket: Socket) => sockets.push(socket));
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return `127.0.0.1:${(s.address() as AddressInfo).port}`;
}

async function expectFailure(
  url: string,
  extra: string[],
  code: number,
  stderr: string,
): Promise<void> {
  const r = await runCli(["--server", url, "--office", "o", ...extra, "computers"]);
  assert.equal(r.stderr, stderr);
  assert.equal(r.stdout, "");
  assert.equal(r.code, code);
}

const token = ["--token", TEST_TOKEN];

void test("refused: nothing listens on the port", async () => {
  const closed = createTcpServer();
  const hostPort = await listen(closed);
  await new Promise((r) => closed.close(r));
  open.pop();
  const url = `http://${hostPort}`;
  await expectFailure(
    url,
    token,
    4,
    `a2c-agent: cannot connect to ${url}: connection refused (ECONNREFUSED)\n` +
      "hint: is the Server running, on that host and port?\n",
  );
});

void test("DNS: the host name does not resolve", async () => {
  // A label over 63 characters cannot be put in a DNS query: the resolver fails at once,
  // without sending one (no traffic leaves the machine).
  const url = `http://${"a".repeat(70)}.invalid`;
  await expectFailure(
    url,
    token,
    4,
    `a2c-agent: cannot connect to ${url}: host not found (ENOTFOUND)\n` +
      "hint: check the host name in --server\n",
  );
});

void test("timeout: the port accepts connections and never answers", async () => {
  const url = `http://${await listen(createTcpServer(() => undefined))}`;
  await expectFailure(
    url,
    [...token, "--connect-timeout", "1"],
    4,
    `a2c-agent: cannot connect to ${url}: no answer to the handshake within 1 s\n` +
      "hint: something accepts connections there but does not answer: is it the Server's port?\n",
  );
});

void test("TLS: https:// to a Server that speaks plain HTTP", async () => {
  const url = server.url.replace("http:", "https:");
  await expectFailure(
    url,
    token,
    4,
    `a2c-agent: cannot connect to ${url}: TLS handshake failed: the Server does not speak TLS there (EPROTO)\n` +
      `hint: the Server may speak plain HTTP: try ${server.url}\n`,
  );
});

void test("HTTP status: a web server that is not an A2C Server", async () => {
  const url = `http://${await listen(createHttpServer((_req, res) => res.writeHead(502).end()))}`;
  await expectFailure(
    url,
    token,
    4,
    `a2c-agent: cannot connect to ${url}: the handshake got HTTP 502\n`,
  );
});

void test("HTTP status: the Server, on another Engine.IO path", async () => {
  await expectFailure(
    server.url,
    [...token, "--path", "/elsewhere/"],
    3,
    `a2c-agent: cannot connect to ${server.url}: Not found (404)\n` +
      "hint: check --path (the Server's Engine.IO path, default /socket.io/)\n",
  );
});

void test("version: the Server speaks another protocol version (4008)", async () => {
  await expectFailure(
    newer.url,
    token,
    3,
    `a2c-agent: cannot connect to ${newer.url}: protocol version mismatch: the Server speaks 0.5.0 ` +
      `(accepts 0.5.0 to 0.5.999), this Agent ${PROTOCOL_VERSION} (4008)\n` +
      "hint: use an Agent of a version the Server accepts, or upgrade the Server\n",
  );
});

void test("auth: a wrong token, and none (401)", async () => {
  const hint = "hint: pass a token the Server accepts with --token or A2C_TOKEN\n";
  await expectFailure(
    server.url,
    ["--token", "wrong"],
    3,
    `a2c-agent: cannot connect to ${server.url}: the Server refused the token (401)\n${hint}`,
  );
  await expectFailure(
    server.url,
    [],
    3,
    `a2c-agent: cannot connect to ${server.url}: the Server needs a token (401)\n${hint}`,
  );
});

void test("--json: the cause as fields of the error object", async () => {
  const closed = createTcpServer();
  const url = `http://${await listen(closed)}`;
  await new Promise((r) => closed.close(r));
  open.pop();
  const r = await runCli(["--server", url, "--office", "o", "--json", "computers"]);
  assert.equal(r.code, 4);
  assert.deepEqual(JSON.parse(r.stdout), {
    error: {
      type: "ConnectError",
      message: `cannot connect to ${url}: connection refused (ECONNREFUSED)`,
      summary: `cannot connect to ${url}: connection refused (ECONNREFUSED)`,
      hint: "is the Server running, on that host and port?",
      code: "CONNECT_FAILED",
      url,
      reason: "refused",
      system_code: "ECONNREFUSED",
    },
    exit_code: 4,
  });
});
