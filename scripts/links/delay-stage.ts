/**
 * `delay-stage.ts --listen HOST:PORT --target HOST:PORT --delay-ms D [--max-held-bytes N]`: the
 * userspace delay stage (delay-line.ts says what it does and why), run by the harness inside a
 * namespace. Prints `listening HOST:PORT` once it accepts connections.
 */
import { createServer, connect } from "node:net";
import { parseArgs } from "node:util";
import { delayedPipe } from "./delay-line.ts";

function hostPort(flag: string, text: string | undefined): { host: string; port: number } {
  const m = /^(.+):(\d+)$/.exec(text ?? "");
  if (!m) throw new Error(`--${flag} must be HOST:PORT, got ${JSON.stringify(text)}`);
  return { host: m[1]!, port: Number(m[2]) };
}

const { values } = parseArgs({
  options: {
    listen: { type: "string" },
    target: { type: "string" },
    "delay-ms": { type: "string" },
    "max-held-bytes": { type: "string" },
  },
});
const listen = hostPort("listen", values.listen);
const target = hostPort("target", values.target);
const delayMs = Number(values["delay-ms"]);
const maxHeldBytes = Number(values["max-held-bytes"] ?? 8 * 1024 * 1024);
if (!(delayMs >= 0) || !(maxHeldBytes > 0)) {
  console.error("--delay-ms must be >= 0 and --max-held-bytes > 0");
  process.exit(2);
}

const server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
  const upstream = connect({ ...target, allowHalfOpen: true, noDelay: true });
  delayedPipe(client, upstream, { delayMs, maxHeldBytes });
  delayedPipe(upstream, client, { delayMs, maxHeldBytes });
});
server.listen(listen.port, listen.host, () => {
  console.log(`listening ${listen.host}:${listen.port}`);
});
process.on("SIGTERM", () => process.exit(0));
