/**
 * Section 7, the Server's HTTP surface under autocannon (HTTP/1.1, 10 connections): `/healthz`,
 * `/metrics`, and the Engine.IO polling handshake (version gate included). Every handshake opens
 * an Engine.IO session that no client ever polls again; the section counts the half-open sessions
 * left behind and waits for the Server's heartbeat to close them all. That Server runs with a short
 * heartbeat (1 s + 2 s) so the clean-up is observable in seconds; with the defaults (25 s + 60 s)
 * the same sessions live 85 s.
 */
import { createRequire } from "node:module";
import { PROTOCOL_VERSION } from "../../protocol/index.ts";
import type { Ctx } from "../lib/context.ts";
import { startStack } from "../stack/harness.ts";

/** The part of autocannon's result this section reads (autocannon ships no types). */
interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
}
type Cannon = (opts: {
  url: string;
  connections: number;
  duration: number;
}) => Promise<CannonResult>;
const autocannon = createRequire(import.meta.url)("autocannon") as Cannon;

export interface HttpRow {
  target: string;
  path: string;
  reqPerSec: number;
  total: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

export interface HttpData {
  connections: number;
  seconds: number;
  rows: HttpRow[];
  sessions: {
    afterRun: number;
    cleanedAfterSeconds: number | null;
    rssBeforeBytes: number;
    rssPeakBytes: number;
    rssAfterBytes: number;
  };
  notes: string[];
}

const HEARTBEAT = { pingIntervalMs: 1000, pingTimeoutMs: 2000 };

export async function runHttpSurface(ctx: Ctx): Promise<HttpData> {
  const stack = await startStack(ctx, {
    maxHttpBufferSize: 1_000_000,
    offices: 0,
    withClients: false,
    ...HEARTBEAT,
  });
  try {
    const { url, server } = stack;
    // Correctness before speed: each target answers what it should.
    const health = await fetch(`${url}/healthz`);
    if (health.status !== 200) throw new Error(`/healthz answered ${health.status}`);
    await health.json();
    const metrics = await (await fetch(`${url}/metrics`)).text();
    if (!/^# (HELP|TYPE) /m.test(metrics)) throw new Error("/metrics is not Prometheus text");
    const handshakePath = `/socket.io/?EIO=4&transport=polling&a2c_version=${PROTOCOL_VERSION}`;
    const hs = await fetch(`${url}${handshakePath}`);
    const hsBody = await hs.text();
    if (hs.status !== 200 || !hsBody.startsWith("0{"))
      throw new Error(`handshake answered ${hs.status}: ${hsBody.slice(0, 80)}`);
    const gate = await fetch(`${url}/socket.io/?EIO=4&transport=polling`);
    if (gate.status !== 400)
      throw new Error(`handshake without a2c_version answered ${gate.status}, expected 400`);
    await gate.text();

    const seconds = ctx.plan.autocannonSec;
    const rows: HttpRow[] = [];
    const rssBefore = (await server.stats()).rssBytes;
    let rssPeak = rssBefore;
    let afterRun = 0;
    for (const [target, path] of [
      ["healthz", "/healthz"],
      ["metrics", "/metrics"],
      ["Engine.IO handshake", handshakePath],
    ] as const) {
      const r = await autocannon({ url: `${url}${path}`, connections: 10, duration: seconds });
      rows.push({
        target,
        path,
        reqPerSec: r.requests.average,
        total: r.requests.total,
        p50Ms: r.latency.p50,
        p99Ms: r.latency.p99,
        non2xx: r.non2xx,
        errors: r.errors + r.timeouts,
      });
      if (r.non2xx > 0 || r.errors > 0)
        throw new Error(`${target}: ${r.non2xx} non-2xx answers, ${r.errors} errors under load`);
      ctx.log(`http ${target}: ${r.requests.average.toFixed(0)} req/s, p99 ${r.latency.p99} ms`);
      if (target === "Engine.IO handshake") {
        afterRun = await server.call<number>("sessions");
        rssPeak = Math.max(rssPeak, (await server.stats()).rssBytes);
      }
    }
    // Wait for the heartbeat to close every half-open session (polled, bounded).
    const t0 = performance.now();
    let cleanedAfterSeconds: number | null = null;
    const limitMs = (HEARTBEAT.pingIntervalMs + HEARTBEAT.pingTimeoutMs) * 4 + 5000;
    while (performance.now() - t0 < limitMs) {
      if ((await server.call<number>("sessions")) === 0) {
        cleanedAfterSeconds = (performance.now() - t0) / 1000;
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    if (cleanedAfterSeconds === null)
      throw new Error("half-open Engine.IO sessions were not cleaned up by the heartbeat");
    const rssAfter = (await server.stats()).rssBytes;
    return {
      connections: 10,
      seconds,
      rows,
      sessions: {
        afterRun,
        cleanedAfterSeconds,
        rssBeforeBytes: rssBefore,
        rssPeakBytes: rssPeak,
        rssAfterBytes: rssAfter,
      },
      notes: [
        `The Server ran with pingInterval ${HEARTBEAT.pingIntervalMs} ms and pingTimeout ${HEARTBEAT.pingTimeoutMs} ms so the clean-up shows within seconds; with the defaults (25 s + 60 s) each half-open session lives about 85 s, so a handshake flood of R req/s holds about 85·R sessions (about 5 KiB of heap each on this machine type). A per-IP handshake rate limit in front of the Server bounds that.`,
        "autocannon runs in the bench's parent process and shares the 2 cores with the Server.",
      ],
    };
  } finally {
    await stack.close();
  }
}
