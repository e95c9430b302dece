/**
 * A plain TCP flow across one shaped direction of the link harness: the ceiling a transfer on the
 * same path can reach (bench links section, test/links/harness.test.ts). One connection, one
 * stream of bytes from the direction's sending host (computer-0 on the uplink, the Server on the
 * downlink) to its receiver, timed by the receiver; the sender's TCP as the kernel sees it is
 * sampled while it runs, and the direction's queue counts what crossed the wire.
 */
import { startNsTool, type NsTool } from "./stack.ts";
import { tcpInfo, type TcpInfo } from "./system.ts";
import { queueDelta, type Direction, type Host, type Links } from "./topology.ts";

export interface PlainFlowResult {
  direction: Direction;
  bytes: number;
  /** From the receiver's connect call to the stream's end. */
  seconds: number;
  /** Payload bits per second over `seconds`. */
  bps: number;
  /**
   * Payload bits per second past slow start: `steadyEstimate` of the kernel's delivery-rate
   * samples taken once 30 % of the bytes were acknowledged and the receiver's marks.
   */
  steadyBps: number;
  steadyFrom: "kernel" | "receiver";
  /** Frames that left through the direction's queue (every header, retransmissions too). */
  wireBytes: number;
  wirePerPayloadByte: number;
  /** Packets the direction's queue dropped meanwhile (its sender sent them again). */
  drops: number;
  /** The sender's least round trip, ms, and its congestion control (kernel's view; null: none read). */
  minRttMs: number | null;
  congestion: string | null;
  /** The kernel's delivery-rate samples while the sender had data to send, bits/s. */
  deliveryRates: number[];
  /** The receiver's [ms from its connect call, bytes] marks: its first data, then every 256 KiB. */
  marks: Array<[number, number]>;
}

/** The share of the bytes after which the flow counts as past its start. */
const STEADY_FROM = 0.3;
const SAMPLE_MS = 200;

/** Payload rate between the first mark at or past `from` of the bytes and the last mark. */
export function steadyRate(marks: ReadonlyArray<[number, number]>, from = STEADY_FROM): number {
  const last = marks[marks.length - 1];
  const first = marks.find((m) => m[1] >= from * (last?.[1] ?? 0));
  if (!last || !first || last[0] <= first[0]) return NaN;
  return ((last[1] - first[1]) * 8) / ((last[0] - first[0]) / 1000);
}

/**
 * A flow's rate past slow start: the median of the kernel's delivery-rate samples (timed by the
 * kernel, so a starved process on a busy machine does not move it), or the receiver's rate from
 * 30 % of the bytes to the end when there are fewer than 3 samples or their median reads over 1.5×
 * what the receiver got (on a shaped Agent uplink without a round trip the sender's samples read
 * 6× and 175× the link's 2 Mbit/s: nothing arrives faster than the receiver reads it).
 */
export function steadyEstimate(
  kernelBps: number[],
  marks: ReadonlyArray<[number, number]>,
): { bps: number; from: "kernel" | "receiver" } {
  const sorted = [...kernelBps].sort((a, b) => a - b);
  const kernel = sorted.length >= 3 ? sorted[sorted.length >> 1]! : NaN;
  const received = steadyRate(marks);
  if (Number.isNaN(kernel) || kernel > 1.5 * received) return { bps: received, from: "receiver" };
  return { bps: kernel, from: "kernel" };
}

/**
 * Who sends a direction's flow (computer-0, agent-0 or the Server), who receives it, and the
 * address the receiver connects to.
 */
function flowEnds(
  links: Links,
  direction: Direction,
): { sender: Host; receiver: Host; target: string } {
  switch (direction) {
    case "uplink":
      return {
        sender: links.computers[0]!,
        receiver: links.server,
        target: links.computers[0]!.address,
      };
    case "downlink":
      return {
        sender: links.server,
        receiver: links.agents[0]!,
        target: links.server.addressForAgents,
      };
    case "agentUplink":
      return { sender: links.agents[0]!, receiver: links.server, target: links.agents[0]!.address };
    case "computerDownlink":
      return {
        sender: links.server,
        receiver: links.computers[0]!,
        target: links.server.addressForComputers,
      };
  }
}

/**
 * Runs one plain flow of `bytes` over `direction`; `tools` are ns-tools of the direction's
 * sender and receiver (`flowEnds`).
 */
export async function plainFlow(
  links: Links,
  direction: Direction,
  tools: { sender: NsTool; receiver: NsTool },
  bytes: number,
  port: number,
): Promise<PlainFlowResult> {
  const { sender, target } = flowEnds(links, direction);
  const listening = await tools.sender.tcpSource(port, bytes);
  const c0 = (await links.counters())[direction];
  const samples: TcpInfo[] = [];
  let done = false;
  const sampling = (async (): Promise<void> => {
    while (!done) {
      const info = await tcpInfo(sender.ns, listening).catch(() => null);
      if (info) samples.push(info);
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
    }
  })();
  const got = await tools.receiver.tcpSink(target, listening).finally(() => (done = true));
  await sampling;
  const { bytes: wireBytes, drops } = queueDelta(c0, (await links.counters())[direction]);
  const minRtts = samples.map((s) => s.minRttMs).filter((x) => Number.isFinite(x));
  const usable = (s: TcpInfo): boolean => !s.appLimited && Number.isFinite(s.deliveryRateBps);
  const late = samples
    .filter((s) => usable(s) && s.bytesAcked >= STEADY_FROM * bytes)
    .map((s) => s.deliveryRateBps);
  const steady = steadyEstimate(late, got.marks);
  return {
    direction,
    bytes: got.bytes,
    seconds: got.seconds,
    bps: (got.bytes * 8) / got.seconds,
    steadyBps: steady.bps,
    steadyFrom: steady.from,
    wireBytes,
    wirePerPayloadByte: got.bytes > 0 ? wireBytes / got.bytes : NaN,
    drops,
    minRttMs: minRtts.length > 0 ? Math.min(...minRtts) : null,
    congestion: samples[0]?.congestion ?? null,
    deliveryRates: samples.filter(usable).map((s) => s.deliveryRateBps),
    marks: got.marks,
  };
}

/** `plainFlow` with ns-tools of its own at the direction's two ends, closed when it is done. */
export async function plainFlowOnce(
  links: Links,
  direction: Direction,
  bytes: number,
): Promise<PlainFlowResult> {
  const { sender, receiver } = flowEnds(links, direction);
  const tools = await Promise.all([startNsTool(links, sender), startNsTool(links, receiver)]);
  try {
    return await plainFlow(links, direction, { sender: tools[0], receiver: tools[1] }, bytes, 0);
  } finally {
    await Promise.all(tools.map((t) => t.child.close()));
  }
}
