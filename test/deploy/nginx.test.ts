/**
 * The nginx example of docs/deploy.md, for real: `nginx -t` accepts it, and nginx started from
 * it (rewritten only to free loopback ports, a self-signed certificate and a temp prefix) in
 * front of a real Server carries an Agent's blob pull over WebSocket and over long-polling, TLS
 * verified, with the forwarding headers the doc promises. Skips only when nginx is not
 * installed here; `.ci/run` installs it, so CI never skips.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, watch } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { NAMESPACE } from "../../protocol/index.ts";
import { compileScript } from "../../scripts/launch/compile.ts";
import { ChildSet } from "../../scripts/stack/children.ts";
import {
  REPO_ROOT,
  inProcessComputer,
  startAgentStack,
  writeRandomFile,
  writeSkill,
  type AgentStack,
} from "../support/agent-stack.ts";
import { freePort } from "../support/packaging.ts";
import type { RunningComputer } from "../../computer/computer.ts";

const NGINX = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].find(existsSync);
const skip = NGINX ? false : "nginx is not installed here (apt-get install nginx; .ci/run does)";
const ASSET_BYTES = 3 * 1024 * 1024 + 4099;
const run = promisify(execFile);

interface Local {
  prefix: string;
  conf: string;
  tlsPort: number;
  httpPort: number;
}

/** Replaces `pattern` in `text`, which must match exactly `times` times (the example drifted?). */
function swap(text: string, pattern: RegExp, by: string, times = 1): string {
  const n = [...text.matchAll(new RegExp(pattern.source, `${pattern.flags.replace("g", "")}g`))]
    .length;
  assert.equal(n, times, `docs/deploy/nginx.conf: ${pattern} matched ${n} times`);
  return text.replace(new RegExp(pattern.source, `${pattern.flags.replace("g", "")}g`), by);
}

/** The example config on free loopback ports, one upstream node, our certificate, `prefix`. */
async function localConfig(prefix: string, upstream: string): Promise<Local> {
  const [tlsPort, httpPort] = [await freePort(), await freePort()];
  let text = await readFile(join(REPO_ROOT, "docs/deploy/nginx.conf"), "utf8");
  text = swap(text, /listen 443 ssl;/, `listen 127.0.0.1:${tlsPort} ssl;`);
  text = swap(text, /listen 80;/, `listen 127.0.0.1:${httpPort};`);
  text = swap(text, /^\s*server 127\.0\.0\.1:\d+;\n/m, "", 2);
  text = swap(text, /keepalive 32;/, `server ${upstream};\n        keepalive 32;`);
  text = swap(text, /ssl_certificate \S+;/, `ssl_certificate ${prefix}/cert.pem;`);
  text = swap(text, /ssl_certificate_key \S+;/, `ssl_certificate_key ${prefix}/key.pem;`);
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
    .map((k) => `${k}_temp_path ${prefix}/${k};`)
    .join(" ");
  text = swap(text, /^http \{$/m, `http {\n    access_log ${prefix}/access.log; ${temp}`);
  const conf = join(prefix, "nginx.conf");
  await writeFile(conf, text);
  await run("openssl", [
    ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"],
    ...["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
    ...["-keyout", join(prefix, "key.pem"), "-out", join(prefix, "cert.pem")],
  ]);
  return { prefix, conf, tlsPort, httpPort };
}

function nginxArgs(local: Local, extra: string[]): string[] {
  const { prefix, conf } = local;
  return ["-p", prefix, "-c", conf, "-e", join(prefix, "error.log"), ...extra];
}

let stack: AgentStack;
let computer: RunningComputer;
let local: Local;
let sha256: string;
const children = new ChildSet(tmpdir());
interface Seen {
  transport: string;
  headers: Record<string, unknown>;
}
/** What the Server saw of each Agent that came through the proxy, once it disconnected. */
const seen = new Map<string, (s: Seen) => void>();
const agentSeen = (name: string): Promise<Seen> => new Promise((r) => seen.set(name, r));

before(async () => {
  if (!NGINX) return;
  stack = await startAgentStack();
  await writeSkill(stack.home, "demo", "# Demo\n");
  sha256 = await writeRandomFile(join(stack.home, "user/demo/assets/blob.bin"), ASSET_BYTES);
  computer = await inProcessComputer(stack, "pc-1");
  stack.harness.server.io.of(NAMESPACE).on("connection", (socket) => {
    const { headers } = socket.handshake;
    if (!headers["x-forwarded-proto"]) return; // the Computer connects directly
    socket.on("server:join_office", (req: { name?: string }) => {
      // The transport at the end of the pull is the one the chunks travelled on.
      socket.on("disconnect", () => {
        seen.get(req.name ?? "")?.({ transport: socket.conn.transport.name, headers });
      });
    });
  });
  local = await localConfig(await mkdtemp(join(tmpdir(), "a2c-nginx-")), stack.url.slice(7));
});

after(async () => {
  await children.stopAll();
  await computer?.close();
  await stack?.close();
  if (local) await rm(local.prefix, { recursive: true, force: true });
});

void test("nginx -t accepts the example config", { skip }, async () => {
  const { stderr } = await run(NGINX!, nginxArgs(local, ["-t"]));
  assert.match(stderr, /test is successful/);
});

void test(
  "a blob pull through nginx over WebSocket and over polling, TLS verified",
  { skip },
  async () => {
    const pidFile = join(local.prefix, "nginx.pid");
    // nginx writes its pid file once it listens: that is the readiness event.
    const ready = new Promise<void>((resolve) => {
      const w = watch(local.prefix, (_e, name) => {
        if (name === "nginx.pid" && existsSync(pidFile)) {
          w.close();
          resolve();
        }
      });
    });
    const nginx = children.spawn({
      name: "nginx",
      command: NGINX!,
      args: nginxArgs(local, ["-g", `daemon off; pid ${pidFile};`]),
      cwd: local.prefix,
      env: process.env,
    });
    await Promise.race([
      ready,
      nginx.exited.then((code) => {
        throw new Error(`nginx exited ${code}:\n${nginx.tail().join("\n")}`);
      }),
    ]);

    const url = `https://localhost:${local.tlsPort}`;
    for (const mode of ["websocket", "polling"]) {
      const server = agentSeen(`agent-${mode}`);
      const out = join(local.prefix, `blob-${mode}.bin`);
      const { stdout } = await run(
        process.execPath,
        [
          await compileScript("test/deploy/fixtures/pull-through-proxy.ts"),
          ...[url, stack.token, stack.office, out, mode],
        ],
        { env: { ...process.env, NODE_EXTRA_CA_CERTS: join(local.prefix, "cert.pem") } },
      );
      assert.deepEqual(JSON.parse(stdout), { sha256, size: ASSET_BYTES, onDisk: sha256 }, mode);
      const agent = await server;
      assert.equal(agent.transport, mode, `agent-${mode}'s chunks travelled on ${mode}`);
      assert.equal(agent.headers["x-forwarded-proto"], "https");
      assert.equal(agent.headers["x-forwarded-for"], "127.0.0.1");
    }

    const redirect = await fetch(`http://127.0.0.1:${local.httpPort}/socket.io/`, {
      redirect: "manual",
    });
    assert.equal(redirect.status, 301, "plain HTTP is sent to HTTPS");
  },
);
