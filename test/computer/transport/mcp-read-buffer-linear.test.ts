/**
 * The linear stdio read buffer that replaces the MCP SDK's quadratic one: same framing contract
 * (newline-delimited JSON-RPC, CRLF tolerated, a message over the cap throws after clearing), it
 * is installed into the SDK's transport, and the probe of fast path `mcp_read_buffer` reports it
 * available with the installed SDK (fails loudly if an SDK upgrade renames the field).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  installLinearReadBuffer,
  LinearReadBuffer,
  linearReadBufferUnavailable,
} from "../../../computer/transport/mcp-read-buffer.ts";

const msg = (id: number, pad = "") => ({ jsonrpc: "2.0" as const, id, result: { pad } });

void test("messages split across chunks and several per chunk come out in order", () => {
  const rb = new LinearReadBuffer(1 << 20);
  const wire = Buffer.from(
    [msg(1, "a".repeat(5000)), msg(2), msg(3, "é✓")].map((m) => JSON.stringify(m)).join("\r\n") +
      "\n",
  );
  // Feed it in awkward pieces, including splits inside a multi-byte character.
  const out: unknown[] = [];
  for (let i = 0; i < wire.length; i += 7) {
    rb.append(wire.subarray(i, i + 7));
    for (let m = rb.readMessage(); m; m = rb.readMessage()) out.push(m);
  }
  assert.deepEqual(out, [msg(1, "a".repeat(5000)), msg(2), msg(3, "é✓")]);
  assert.equal(rb.readMessage(), null);
});

void test("a pending message over the cap throws and clears", () => {
  const rb = new LinearReadBuffer(100);
  rb.append(Buffer.from("x".repeat(60)));
  assert.throws(() => rb.append(Buffer.from("y".repeat(60))), /exceeded maximum size of 100/);
  rb.append(Buffer.from(`${JSON.stringify(msg(9))}\n`));
  assert.deepEqual(rb.readMessage(), msg(9));
});

void test("it is installed into the SDK's StdioClientTransport, and the probe finds it possible", () => {
  assert.equal(linearReadBufferUnavailable(), undefined);
  const t = new StdioClientTransport({ command: "true" });
  assert.equal(installLinearReadBuffer(t, 1000), true);
  assert.ok((t as unknown as { _readBuffer: unknown })._readBuffer instanceof LinearReadBuffer);
});
