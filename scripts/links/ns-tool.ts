/**
 * A helper process the harness starts inside a namespace (IPC commands, `bench/lib/ipc.ts`), for
 * what the harness's own process cannot reach from outside: the Server's `/metrics` on its
 * private address (read at once, or a gauge sampled while a case runs), and plain TCP transfers
 * and round trips that check the links themselves (the harness's test).
 */
import { createServer, connect, type Server, type Socket } from "node:net";
import { serve } from "../launch/ipc.ts";
import { samplesOf } from "./metrics.ts";

export interface GaugeSampling {
  samples: number;
  failures: number;
  max: number;
  last: number;
}

export interface SinkResult {
  bytes: number;
  /** From the connect call to the end of the stream. */
  seconds: number;
  /** [ms since the connect call, bytes received]: at the first data, then per `MARK_BYTES` more. */
  marks: Array<[number, number]>;
}

/** How often the sink notes its progress. */
const MARK_BYTES = 256 * 1024;

const servers: Server[] = [];
const samplers = new Map<number, { stop: () => GaugeSampling }>();
let nextSampler = 1;

async function fetchText(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return res.text();
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "0.0.0.0", () => {
      servers.push(server);
      const addr = server.address();
      resolve(typeof addr === "object" && addr ? addr.port : port);
    });
  });
}

/** Writes `bytes` to every connection, then ends it. */
function tcpSource(port: number, bytes: number): Promise<number> {
  const block = Buffer.alloc(64 * 1024, 0x5a);
  const server = createServer((sock) => {
    sock.on("error", () => sock.destroy());
    let left = bytes;
    const pump = (): void => {
      while (left > 0) {
        const n = Math.min(left, block.length);
        left -= n;
        if (!sock.write(n === block.length ? block : block.subarray(0, n))) {
          sock.once("drain", pump);
          return;
        }
      }
      sock.end();
    };
    pump();
  });
  return listen(server, port);
}

function tcpSink(host: string, port: number): Promise<SinkResult> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let bytes = 0;
    let nextMark = MARK_BYTES;
    const marks: Array<[number, number]> = [];
    const sock = connect(port, host);
    sock.on("data", (d: Buffer) => {
      bytes += d.length;
      // The first bytes are marked too: a flow's round trips count from its first data.
      if (bytes >= nextMark || marks.length === 0) {
        marks.push([performance.now() - t0, bytes]);
        nextMark = (Math.floor(bytes / MARK_BYTES) + 1) * MARK_BYTES;
      }
    });
    sock.on("error", reject);
    sock.on("end", () => {
      const seconds = (performance.now() - t0) / 1000;
      marks.push([seconds * 1000, bytes]);
      resolve({ bytes, seconds, marks });
      sock.destroy();
    });
  });
}

/** Answers every byte it reads with the same byte. */
function echoServer(port: number): Promise<number> {
  const server = createServer((sock) => {
    sock.setNoDelay(true);
    sock.on("error", () => sock.destroy());
    sock.on("data", (d: Buffer) => sock.write(d));
  });
  return listen(server, port);
}

/** Round trips of one byte through an echo server, one after the other. */
function roundTrips(host: string, port: number, samples: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const out: number[] = [];
    const sock: Socket = connect(port, host, () => {
      sock.setNoDelay(true);
      next();
    });
    let sent = 0;
    const next = (): void => {
      sent = performance.now();
      sock.write(Buffer.from([1]));
    };
    sock.on("error", reject);
    sock.on("data", (d: Buffer) => {
      for (let i = 0; i < d.length; i++) out.push(performance.now() - sent);
      if (out.length >= samples) {
        sock.destroy();
        resolve(out.slice(0, samples));
      } else next();
    });
  });
}

function startGauge(url: string, metric: string, intervalMs: number): number {
  const id = nextSampler++;
  const s: GaugeSampling = { samples: 0, failures: 0, max: 0, last: 0 };
  let stopped = false;
  const tick = async (): Promise<void> => {
    while (!stopped) {
      const started = performance.now();
      try {
        const values = samplesOf(await fetchText(url), metric).map((x) => x.value);
        const v = values.length > 0 ? Math.max(...values) : 0;
        s.samples++;
        s.last = v;
        s.max = Math.max(s.max, v);
      } catch {
        s.failures++;
      }
      const wait = intervalMs - (performance.now() - started);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  };
  void tick();
  samplers.set(id, {
    stop: () => {
      stopped = true;
      return s;
    },
  });
  return id;
}

serve({
  fetch: async (raw) => fetchText((raw as { url: string }).url),
  "gauge-start": async (raw) => {
    const { url, metric, intervalMs } = raw as { url: string; metric: string; intervalMs: number };
    return startGauge(url, metric, intervalMs);
  },
  "gauge-stop": async (raw) => {
    const id = raw as number;
    const s = samplers.get(id);
    if (!s) throw new Error(`no gauge sampling ${id}`);
    samplers.delete(id);
    return s.stop();
  },
  "tcp-source": async (raw) => {
    const { port, bytes } = raw as { port: number; bytes: number };
    return tcpSource(port, bytes);
  },
  "tcp-sink": async (raw) => {
    const { host, port } = raw as { host: string; port: number };
    return tcpSink(host, port);
  },
  "echo-server": async (raw) => echoServer((raw as { port: number }).port),
  rtt: async (raw) => {
    const { host, port, samples } = raw as { host: string; port: number; samples: number };
    return roundTrips(host, port, samples);
  },
});
