/**
 * The slow-consumer attack, as a hostile client runs it (raw frames, test/support/raw-client.ts):
 * join an office as its Agent, mint a handle for a big file, stop reading the TCP socket, and
 * keep asking for chunks with a huge `max_chunk_bytes` until the Server drops the connection or
 * the caller stops. Used by test/reliability/slow-consumer-flood.test.ts and the soak's slow role.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { RawClient } from "./raw-client.ts";

export interface SlowConsumerOptions {
  url: string;
  path?: string;
  token: string;
  office: string;
  /** The Agent name to join as (the office's one Agent). */
  name: string;
  computer: string;
  /** The skill and file to mint a handle for (`client:get_skill`). */
  skill: string;
  relPath: string;
  /** Requests a second while not reading. Default 200. */
  rate?: number;
  /** Resolves when the round must end even if the Server has not dropped the client. */
  stop: Promise<unknown>;
}

export interface SlowConsumerRound {
  /** Requests sent after the client stopped reading. */
  sent: number;
  /** Whether the Server closed the connection (rather than `stop` ending the round). */
  dropped: boolean;
  /** From the moment the client stopped reading until its connection was gone (ms). */
  heldMs: number;
}

let seq = 0;

export async function slowConsumerRound(o: SlowConsumerOptions): Promise<SlowConsumerRound> {
  const client = await RawClient.connect(o.url, o.path ?? "/socket.io/", { token: o.token });
  try {
    // Right after a drop the office may still list the previous session for a moment.
    for (let attempt = 0; ; attempt++) {
      const [ok, reason] = await client.join("agent", o.office, o.name);
      if (ok === true) break;
      if (attempt >= 50) throw new Error(`join refused: ${String(reason)}`);
      await sleep(100);
    }
    const [skill] = await client.request("client:get_skill", {
      agent: o.name,
      req_id: `slow-${process.pid}-${++seq}`,
      computer: o.computer,
      name: o.skill,
      rel_path: o.relPath,
    });
    const handle = (skill as { blob_handle?: string }).blob_handle;
    if (!handle) throw new Error(`no handle for ${o.relPath}: ${JSON.stringify(skill)}`);
    client.stopReading();
    const started = performance.now();
    let sent = 0;
    const perTick = Math.max(1, Math.round((o.rate ?? 200) / 100));
    const flood = setInterval(() => {
      for (let i = 0; i < perTick; i++, sent++) {
        client.emit("client:get_blob", {
          agent: o.name,
          req_id: `slow-${process.pid}-${++seq}`,
          computer: o.computer,
          blob_handle: handle,
          chunk_offset: 0,
          max_chunk_bytes: 1e9,
        });
      }
    }, 10);
    const dropped = await Promise.race([client.closed.then(() => true), o.stop.then(() => false)]);
    clearInterval(flood);
    return { sent, dropped, heldMs: performance.now() - started };
  } finally {
    client.close();
  }
}
