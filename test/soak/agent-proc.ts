/**
 * One soak Agent process (real users run their Agents in their own processes, so the probe's
 * latency must not include the loaders' base64 decoding and hashing on the same event loop).
 *
 *   --role probe  office soak-probe: 64 KiB base64 chunks of f1.bin one at a time, the whole run;
 *                 records [wall start ms, latency ms] of every chunk.
 *   --role mix    one office: two loops of verified 4 MiB pulls, PNG tool calls, SKILL.md reads
 *                 and pulls cancelled midway, during loaded phases.
 *   --role burst  office soak-burst: rounds of BURST `client:get_blob` fired at once (as the
 *                 reliability suite's 1,000 at once, test/reliability/load-burst.test.ts); every answer must
 *                 be a chunk or a clear busy (500, details.reason "busy").
 *   --role many   N Agents (offices soak-many-1..N): rounds of all N pulling f300k.bin at once,
 *                 verified (64 Agents pulling at once, as test/reliability/load-many-agents.test.ts).
 *   --role slow   office soak-slow: a slow consumer (test/support/slow-consumer.ts) — a raw
 *                 client that stops reading its socket and asks for f4.bin in huge chunks, about
 *                 200 a second, until the Server drops it, then again, for each loaded phase. A
 *                 round that outlives the Server's stall time (--stall-ms) by 10 s fails.
 * Loaders record the wall-time interval of every operation (round) as activity, so the analysis
 * can tell quiet probe samples from ones that overlapped load. Prints "ready" once connected,
 * waits for the schedule file, runs, writes --out (JSON) and exits.
 */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { AgentClient, ProtocolError } from "@a2c-smcp/agent";
import { slowConsumerRound } from "../support/slow-consumer.ts";
import { awaitSchedule, phaseAt, untilLoaded, type Schedule } from "./schedule.ts";

const { values: a } = parseArgs({
  options: {
    role: { type: "string" },
    url: { type: "string" },
    token: { type: "string" },
    office: { type: "string", default: "" },
    count: { type: "string", default: "64" },
    burst: { type: "string", default: "1000" },
    "stall-ms": { type: "string", default: "30000" },
    schedule: { type: "string" },
    out: { type: "string" },
    sums: { type: "string" },
  },
});
const sums = JSON.parse(a.sums ?? "{}") as Record<string, string>;

export interface AgentResult {
  role: string;
  lat?: [number, number][];
  activity: [number, number][];
  counts: Record<string, number>;
  failures: string[];
}
const result: AgentResult = { role: a.role ?? "", activity: [], counts: {}, failures: [] };
const inc = (k: string, n = 1): void => {
  result.counts[k] = (result.counts[k] ?? 0) + n;
};
const fail = (what: string, err: unknown): void => {
  if (result.failures.length < 50) result.failures.push(`${what}: ${(err as Error).message}`);
  inc("failures");
};

async function agentIn(office: string, name: string): Promise<AgentClient> {
  const agent = new AgentClient({ url: a.url!, token: a.token!, name });
  await agent.connect();
  await agent.joinOffice(office);
  await agent.waitForComputer("pc", { timeoutMs: 180_000 });
  return agent;
}

/** Runs `op` and records its wall interval as activity. */
async function active<T>(op: () => Promise<T>): Promise<T> {
  const from = Date.now();
  try {
    return await op();
  } finally {
    result.activity.push([from, Date.now()]);
  }
}

async function probe(agent: AgentClient, s: Schedule): Promise<void> {
  const handle = (await agent.getSkill("pc", "data", "f1.bin")).blob_handle!;
  const lat: [number, number][] = (result.lat = []);
  let offset = 0;
  while (Date.now() < s.end) {
    const wall = Date.now();
    const t = performance.now();
    await agent.getBlobChunk("pc", handle, { offset, maxChunkBytes: 65_536, binary: false });
    lat.push([wall, performance.now() - t]);
    offset = (offset + 65_536) % (1 << 20);
  }
}

async function mixLoop(agent: AgentClient, s: Schedule, seed: number): Promise<void> {
  let i = seed;
  while (await untilLoaded(s)) {
    const kind = i++ % 4;
    try {
      await active(async () => {
        if (kind === 0) {
          const ret = await agent.getSkill("pc", "data", "f4.bin");
          const data = await agent.readBlob("pc", ret.blob_handle!, { expectedSha256: sums.f4 });
          if (createHash("sha256").update(data).digest("hex") !== sums.f4) throw new Error("sha");
          inc("pulls");
        } else if (kind === 1) {
          const res = await agent.callTool("pc", "demo__png", { width: 256, height: 256 });
          const img = res.content.find((c) => c.type === "image") as { data?: string } | undefined;
          if (res.isError || !img?.data) throw new Error("png tool call failed");
          inc("pngs");
        } else if (kind === 2) {
          const skill = await agent.getSkill("pc", "data");
          if (!skill.body?.includes("Body.")) throw new Error("SKILL.md body");
          inc("skills");
        } else {
          const ret = await agent.getSkill("pc", "data", "f4.bin");
          const ac = new AbortController();
          await agent
            .readBlob("pc", ret.blob_handle!, {
              signal: ac.signal,
              onProgress: (pr) => pr.bytes > 1 << 20 && ac.abort(),
            })
            .catch((err: unknown) => {
              if ((err as Error).name !== "AbortError") throw err;
            });
          inc("cancels");
        }
      });
    } catch (err) {
      fail(`mix ${kind}`, err);
    }
  }
}

async function burst(agent: AgentClient, s: Schedule, n: number): Promise<void> {
  while (await untilLoaded(s)) {
    await active(async () => {
      const handle = (await agent.getSkill("pc", "data", "f1.bin")).blob_handle!;
      const answers = await Promise.allSettled(
        Array.from({ length: n }, (_, i) =>
          agent.getBlobChunk("pc", handle, {
            offset: (i * 65_536) % (1 << 20),
            maxChunkBytes: 65_536,
            binary: false,
          }),
        ),
      );
      inc("burst_rounds");
      for (const r of answers) {
        if (r.status === "fulfilled") inc("burst_chunks");
        else if (isBusy(r.reason)) inc("burst_busy");
        else fail("burst", r.reason);
      }
    }).catch((err: unknown) => fail("burst round", err));
    await sleep(2_000);
  }
}

function isBusy(err: unknown): boolean {
  return (
    err instanceof ProtocolError &&
    err.code === 500 &&
    (err.details as { reason?: unknown } | undefined)?.reason === "busy"
  );
}

/** Slow-consumer rounds through every loaded phase; each ends with the Server's drop. */
async function slow(s: Schedule, stallMs: number): Promise<void> {
  while (await untilLoaded(s)) {
    const phaseEnd = phaseAt(s, Date.now())?.to ?? Date.now();
    await active(async () => {
      const round = await slowConsumerRound({
        url: a.url!,
        token: a.token!,
        office: a.office ?? "",
        name: "agent-slow",
        computer: "pc",
        skill: "data",
        relPath: "f4.bin",
        stop: sleep(Math.max(0, phaseEnd - Date.now())),
      });
      inc("slow_rounds");
      inc("slow_requests", round.sent);
      if (round.dropped) inc("slow_dropped");
      else if (round.heldMs > stallMs + 10_000)
        throw new Error(`not dropped after ${Math.round(round.heldMs)} ms of not reading`);
    }).catch((err: unknown) => fail("slow round", err));
  }
}

async function many(agents: AgentClient[], s: Schedule): Promise<void> {
  while (await untilLoaded(s)) {
    // Which pulls make no progress, reported while the round lasts (the run's end stops a hung
    // process, test/soak/main.ts; these lines say where it hung).
    const state = agents.map(() => ({ stage: "getSkill", bytes: 0, at: Date.now() }));
    const watchdog = setInterval(() => {
      const stuck = state
        .map((x, k) => ({ k, ...x, idleMs: Date.now() - x.at }))
        .filter((x) => x.stage !== "done" && x.idleMs > 30_000);
      if (stuck.length > 0) process.stderr.write(`many stuck: ${JSON.stringify(stuck)}\n`);
    }, 30_000);
    await active(() =>
      Promise.all(
        agents.map(async (agent, k) => {
          const st = state[k]!;
          try {
            const ret = await agent.getSkill("pc", "data", "f300k.bin");
            Object.assign(st, { stage: "readBlob", at: Date.now() });
            const data = await agent.readBlob("pc", ret.blob_handle!, {
              expectedSha256: sums.f300k,
              onProgress: (p) => Object.assign(st, { bytes: p.bytes, at: Date.now() }),
            });
            if (createHash("sha256").update(data).digest("hex") !== sums.f300k)
              throw new Error("sha");
            inc("many_pulls");
          } catch (err) {
            fail("many", err);
          } finally {
            st.stage = "done";
          }
        }),
      ),
    ).finally(() => clearInterval(watchdog));
    inc("many_rounds");
    await sleep(2_000);
  }
}

async function main(): Promise<void> {
  const agents: AgentClient[] = [];
  if (a.role === "many") {
    const n = Number(a.count);
    for (let i = 0; i < n; i += 16) {
      const batch = Array.from({ length: Math.min(16, n - i) }, (_, k) => i + k + 1);
      agents.push(
        ...(await Promise.all(batch.map((k) => agentIn(`soak-many-${k}`, `agent-many-${k}`)))),
      );
    }
  } else if (a.role !== "slow") {
    const name = a.role === "probe" ? "agent-probe" : `agent-${a.office}`;
    agents.push(await agentIn(a.office ?? "", name));
  }
  process.stdout.write("ready\n");
  const s = await awaitSchedule(a.schedule!);
  const [first] = agents as [AgentClient];
  if (a.role === "probe") await probe(first, s);
  else if (a.role === "mix") await Promise.all([mixLoop(first, s, 0), mixLoop(first, s, 2)]);
  else if (a.role === "burst") await burst(first, s, Number(a.burst));
  else if (a.role === "many") await many(agents, s);
  else if (a.role === "slow") await slow(s, Number(a["stall-ms"]));
  else throw new Error(`unknown --role ${a.role}`);
  writeFileSync(a.out!, JSON.stringify(result));
  await Promise.all(agents.map((x) => x.close()));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`agent-proc ${a.role}: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
