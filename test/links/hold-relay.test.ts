/**
 * The relay that makes a Computer's answers come late (scripts/links/hold-relay.ts), on
 * loopback: what the far side sends is held the whole time and arrives intact and in order, what
 * the near side sends passes at once, and the far side's end reaches the near side after what
 * was held.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { REPO_ROOT } from "../support/agent-stack.ts";

const HOLD_MS = 1500;

void test("held one way for the whole time, in order and intact; the other way at once", async (t) => {
  // The far side (the Server's place): answers each line at once, then ends after "bye".
  let farGotAt: number | undefined;
  const far = createServer((s: Socket) => {
    s.setEncoding("utf8");
    let text = "";
    s.on("data", (d: string) => {
      farGotAt ??= performance.now();
      text += d;
      if (text.includes("ping\n")) {
        text = text.replace("ping\n", "");
        for (let i = 0; i < 100; i++) s.write(`pong ${i}\n`);
      }
      if (text.includes("bye\n")) s.end("last\n");
    });
  });
  far.listen(0, "127.0.0.1");
  await once(far, "listening");
  t.after(() => far.close());
  const relay = spawn(
    process.execPath,
    [
      "--conditions=@a2c-smcp/source",
      "--import",
      "tsx",
      join(REPO_ROOT, "scripts/links/hold-relay.ts"),
      ...["--to", `127.0.0.1:${(far.address() as AddressInfo).port}`],
      ...["--hold-ms", String(HOLD_MS)],
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  t.after(async () => {
    relay.kill();
    if (relay.exitCode === null && relay.signalCode === null) await once(relay, "exit");
  });
  relay.stdout.setEncoding("utf8");
  const [line] = (await once(relay.stdout, "data")) as [string];
  const port = Number(/^listening on (\d+)/.exec(line)?.[1]);
  assert.ok(port > 0, line);

  const near = connect({ host: "127.0.0.1", port });
  await once(near, "connect");
  near.setEncoding("utf8");
  let got = "";
  const pongs = new Promise<number>((resolve) => {
    near.on("data", (d: string) => {
      got += d;
      if (got.includes("pong 99\n")) resolve(performance.now());
    });
  });
  const sentAt = performance.now();
  near.write("ping\n");
  const pongAt = await pongs;
  // The near side's bytes reached the far side long before the hold was over.
  assert.ok(farGotAt! - sentAt < HOLD_MS / 2, `far side got it after ${farGotAt! - sentAt} ms`);
  // Everything the far side answered was held the whole time, and arrives as it was sent.
  assert.ok(pongAt - farGotAt! >= HOLD_MS - 1, `answered after ${pongAt - farGotAt!} ms`);
  assert.equal(got, Array.from({ length: 100 }, (_, i) => `pong ${i}\n`).join(""));
  // The far side's end comes after what it sent last.
  near.write("bye\n");
  await once(near, "end");
  assert.ok(got.endsWith("pong 99\nlast\n"));
  near.destroy();
});
