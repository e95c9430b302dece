/**
 * What crossing the Redis bus costs (server/redis/README.md). The bench's section twoNode
 * (`npm run bench -- --only twoNode`) is the maintained measure, with CPU and interleaved
 * rounds; this quick script also compares the sharded adapter. Not a test: run with
 *   node --conditions=@a2c-smcp/source --import tsx test/scaleout/measure-pull.ts [MiB=32] [rounds=3]
 * Server nodes are real processes; the Agent (SDK) and the real Computer share this process.
 * Points: one in-memory node; one Redis node (Agent and Computer on it); two Redis nodes with
 * the Agent on A and the Computer on B (classic and sharded Pub/Sub adapters). For each: whole
 * pull throughput (base64 and binary carriage, SDK defaults) and the round trip of one small
 * `client:get_blob` (p50/p95 of 300 sequential 1 KiB chunks).
 */
import { createHash } from "node:crypto";
import { AgentClient } from "../../agent/index.ts";
import { startRedis } from "../support/redis.ts";
import {
  TOKEN,
  computer,
  removeHome,
  skillHome,
  spawnNode,
  type NodeProcess,
} from "./cluster-harness.ts";

const mib = Number(process.argv[2] ?? 32);
const rounds = Number(process.argv[3] ?? 3);

function median(xs: number[]): number {
  const s = [...xs].sort((p, q) => p - q);
  return s[Math.floor(s.length / 2)] ?? NaN;
}
function pct(xs: number[], p: number): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))] ?? NaN;
}

// Production timing (the tests' short heartbeat would fence a node stalled by a busy machine).
const PROD = { nodeTtlMs: 6_000 };
const redis = await startRedis();
const home = await skillHome(mib * 1024 * 1024);
const rows: string[] = [];

async function point(
  label: string,
  agentNode: NodeProcess,
  computerNode: NodeProcess,
): Promise<void> {
  const office = `bench-${label.replace(/\W+/g, "-")}`;
  const pc = await computer(computerNode.url, office, "pc", home);
  const agent = new AgentClient({ url: agentNode.url, token: TOKEN, name: "bench-agent" });
  await agent.connect();
  await agent.joinOffice(office);
  try {
    const skill = await agent.getSkillRaw("pc", "big", "data.bin");
    const handle = (skill as { blob_handle: string }).blob_handle;
    const speeds: Record<string, number[]> = { base64: [], binary: [] };
    for (let r = 0; r < rounds; r += 1) {
      for (const binary of [false, true]) {
        const t0 = process.hrtime.bigint();
        const bytes = await agent.readBlob("pc", handle, { binary });
        const s = Number(process.hrtime.bigint() - t0) / 1e9;
        if (createHash("sha256").update(bytes).digest("hex") !== home.sha256) {
          throw new Error(`${label}: sha256 mismatch`);
        }
        speeds[binary ? "binary" : "base64"]!.push(bytes.length / 1024 / 1024 / s);
      }
    }
    const rtts: number[] = [];
    for (let i = 0; i < 300; i += 1) {
      const t0 = process.hrtime.bigint();
      await agent.getBlobChunk("pc", handle, {
        offset: (i * 1024) % (mib * 1024 * 1024),
        maxChunkBytes: 1024,
        binary: false,
      });
      rtts.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    rows.push(
      `| ${label} | ${median(speeds.base64!).toFixed(0)} | ${median(speeds.binary!).toFixed(0)} | ${pct(rtts, 50).toFixed(2)} | ${pct(rtts, 95).toFixed(2)} |`,
    );
  } finally {
    await agent.close();
    await pc.close();
  }
}

const nodes: NodeProcess[] = [];
try {
  const plain = await spawnNode("", "x");
  nodes.push(plain);
  await point("1 node, in-memory", plain, plain);
  const [a, b] = await Promise.all([
    spawnNode(redis.url, "c", "classic", PROD),
    spawnNode(redis.url, "c", "classic", PROD),
  ]);
  nodes.push(a, b);
  await point("1 node, Redis mode (same node)", a, a);
  await point("2 nodes, classic Pub/Sub (Agent on A, Computer on B)", a, b);
  const [sa, sb] = await Promise.all([
    spawnNode(redis.url, "s", "sharded", PROD),
    spawnNode(redis.url, "s", "sharded", PROD),
  ]);
  nodes.push(sa, sb);
  await point("2 nodes, sharded Pub/Sub (Agent on A, Computer on B)", sa, sb);
} finally {
  for (const n of nodes) await n.kill();
  await redis.stop();
  await removeHome(home);
}
console.log(
  `pull of ${mib} MiB, median of ${rounds}; SDK defaults (window 16; base64 64 KiB, binary 512 KiB chunks)`,
);
console.log("| point | base64 MiB/s | binary MiB/s | 1 KiB chunk p50 ms | p95 ms |");
console.log("|---|---|---|---|---|");
for (const r of rows) console.log(r);
process.exit(0);
