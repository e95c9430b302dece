// @pure
/**
 * Each fast path's probe (computer/transport/index.ts `FAST_PATHS`) checks behaviour on the
 * installed libraries' real classes, so a library upgrade that keeps the members but changes what
 * they do is caught: here the behaviour is changed for the length of one probe call, on the real
 * classes, and put back.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { NodeWebSocket } from "engine.io-client";
import { Manager } from "socket.io-client";
import { FAST_PATHS, type FastPathName } from "../../../computer/transport/index.ts";

/** Runs `name`'s probe with `key` of `target` replaced by `value` (deleted when undefined). */
function probeWith(name: FastPathName, target: object, key: string, value: unknown): unknown {
  const saved = Object.getOwnPropertyDescriptor(target, key);
  assert.ok(saved, `${key} is not there to change`);
  if (value === undefined) delete (target as Record<string, unknown>)[key];
  else Object.defineProperty(target, key, { ...saved, value });
  try {
    return FAST_PATHS.find((p) => p.name === name)!.probe();
  } finally {
    Object.defineProperty(target, key, saved);
  }
}

void test("every probe passes with the installed libraries", () => {
  for (const path of FAST_PATHS) assert.equal(path.probe(), null, path.name);
});

void test("batch_writes: a Manager that writes a packet's parts on separate turns", () => {
  const split = function (this: { engine: { write(part: unknown): void } }, p: unknown): void {
    const parts = (
      this as unknown as { encoder: { encode(p: unknown): unknown[] } }
    ).encoder.encode(p);
    this.engine.write(parts[0]);
    for (const part of parts.slice(1)) setImmediate(() => this.engine.write(part));
  };
  const reason = probeWith("batch_writes", Manager.prototype, "_packet", split);
  assert.match(String(reason), /not one send of 2 packets/);
});

void test("batch_writes: a WebSocket transport that sends after write returns", () => {
  // `write` is the WebSocket transport's base class's.
  let owner: object = NodeWebSocket.prototype;
  while (!Object.hasOwn(owner, "write")) owner = Object.getPrototypeOf(owner) as object;
  const write = (NodeWebSocket.prototype as unknown as Record<string, unknown>).write as (
    this: unknown,
    packets: unknown[],
  ) => void;
  const later = function (this: unknown, packets: unknown[]): void {
    setImmediate(() => write.call(this, packets));
  };
  const reason = probeWith("batch_writes", owner, "write", later);
  assert.match(String(reason), /not both sends inside one cork/);
});
