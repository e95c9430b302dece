/**
 * Each fast path's probe says why when what it relies on is gone or behaves differently (as a
 * library upgrade could make it): the internal is taken away or changed for the length of one
 * probe call, on the real installed classes, and put back.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ReadBuffer } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { linearReadBufferUnavailable } from "../../../computer/transport/mcp-read-buffer.ts";
import { batchedWritesUnavailable } from "../../../computer/transport/batched-writes.ts";
import { engineWs, Manager } from "../../../computer/transport/client-stack.ts";
import { inPlaceMaskingUnavailable } from "../../../computer/transport/in-place-masking.ts";
import { lentBuffersUnavailable } from "../../../computer/transport/lent-buffers.ts";

/** Runs `probe` with `key` of `target` replaced by `value` (absent when undefined), then restores it. */
function without(target: object, key: string, value: unknown, probe: () => unknown): unknown {
  const saved = Object.getOwnPropertyDescriptor(target, key);
  assert.ok(saved, `${key} is not there to take away`);
  if (value === undefined) delete (target as Record<string, unknown>)[key];
  else Object.defineProperty(target, key, { ...saved, value });
  try {
    return probe();
  } finally {
    Object.defineProperty(target, key, saved);
  }
}

const ws = engineWs();
if (typeof ws === "string") throw new Error(ws);

void test("all probes pass with the installed libraries", () => {
  for (const probe of [
    batchedWritesUnavailable,
    inPlaceMaskingUnavailable,
    lentBuffersUnavailable,
    linearReadBufferUnavailable,
  ]) {
    assert.equal(probe(), undefined, probe.name);
  }
});

void test("batch_writes: a Manager without _packet", () => {
  const reason = without(Manager.prototype, "_packet", undefined, batchedWritesUnavailable);
  assert.match(String(reason), /Manager has no _packet/);
});

void test("mask_in_place: a ws Sender.frame that copies writable data too", () => {
  const frame = ws.Sender.frame!.bind(ws.Sender);
  const copying = (data: Buffer, options: Record<string, unknown>) =>
    frame(data, { ...options, readOnly: true });
  const reason = without(ws.Sender, "frame", copying, inPlaceMaskingUnavailable);
  assert.match(String(reason), /no longer masks writable data in place/);
});

void test("mask_in_place: a ws Sender without dispatch", () => {
  const reason = without(ws.Sender.prototype, "dispatch", undefined, inPlaceMaskingUnavailable);
  assert.match(String(reason), /Sender has no dispatch/);
});

void test("lend_buffers: a ws WebSocket without bufferedAmount", () => {
  const reason = without(
    ws.WebSocket.prototype,
    "bufferedAmount",
    undefined,
    lentBuffersUnavailable,
  );
  assert.match(String(reason), /no bufferedAmount/);
});

void test("mcp_read_buffer: an SDK read buffer without readMessage", () => {
  const reason = without(
    ReadBuffer.prototype,
    "readMessage",
    undefined,
    linearReadBufferUnavailable,
  );
  assert.match(String(reason), /_readBuffer with append\/readMessage\/clear/);
});
