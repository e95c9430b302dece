/**
 * A Computer whose every answer comes `holdMs` later (a loaded Computer, a satellite hop as the
 * transfer sees it): a TCP relay in the Computer's host between it and the Server that holds
 * everything the Server sends for `holdMs` before passing it on, and passes the Computer's bytes
 * at once. Requests reach the Computer late, so each answer comes a constant time later, while TCP
 * on either side of the relay runs at the hosts' own round trip (unlike the packet delay line,
 * whose round trip TCP itself sees: its slow start then bounds any transfer).
 *
 * Usage: `hold-relay.ts --to HOST:PORT --hold-ms N`; prints `listening on PORT` (127.0.0.1).
 */
import { createServer, connect, type Socket } from "node:net";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { to: { type: "string" }, "hold-ms": { type: "string" } },
});
const [host, port] = (values.to ?? "").split(":");
const holdMs = Number(values["hold-ms"]);
if (!host || !port || !Number.isFinite(holdMs) || holdMs < 0) {
  process.stderr.write("usage: hold-relay.ts --to HOST:PORT --hold-ms N\n");
  process.exit(2);
}

/** Writes what `from` sends to `to` `holdMs` later, in order; ends `to` after the last. */
function holdInto(from: Socket, to: Socket): void {
  const held: { at: number; data: Buffer }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const flush = (): void => {
    timer = undefined;
    const now = performance.now();
    while (held.length > 0 && held[0]!.at <= now) to.write(held.shift()!.data);
    if (held.length > 0) timer = setTimeout(flush, held[0]!.at - now);
    else if (ended) to.end();
  };
  from.on("data", (data: Buffer) => {
    held.push({ at: performance.now() + holdMs, data });
    timer ??= setTimeout(flush, holdMs);
  });
  from.on("end", () => {
    ended = true;
    timer ??= setTimeout(flush, 0);
  });
  to.on("close", () => clearTimeout(timer));
}

const server = createServer((computer) => {
  const upstream = connect({ host, port: Number(port) });
  for (const s of [computer, upstream]) s.setNoDelay(true);
  computer.pipe(upstream);
  holdInto(upstream, computer);
  const close = (): void => {
    computer.destroy();
    upstream.destroy();
  };
  // The Server's end reaches the Computer after what is held (holdInto); either's failure, at once.
  computer.on("error", close).on("close", close);
  upstream.on("error", close);
});
server.listen(0, "127.0.0.1", () => {
  const a = server.address();
  process.stdout.write(`listening on ${typeof a === "object" && a ? a.port : "?"}\n`);
});
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => process.exit(0));
