/**
 * The pull on shaped links (the harness of scripts/links/, our shipped build), with default
 * settings, a few seconds of transfer each:
 * - a download from a Computer on a 2 Mbit/s uplink completes with nothing an honest client must
 *   not see, and its answers do not wait in a queue of its own making (a queue that, on a longer
 *   download, outgrows the 30 s deadlines);
 * - a `tool_call` to that Computer during a pull over a 20 Mbit/s uplink answers within the bound
 *   (p95 ≤ idle p95 + 250 ms);
 * - a reader on a 2 Mbit/s downlink gets no `busy`, and the Server holds ≤ 2 MiB for it.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { DownloadResult, ProbeSample } from "../../scripts/links/agent-driver.ts";
import { counterDelta, readCounter, total } from "../../scripts/links/metrics.ts";
import { startStackOnLinks, type StackOnLinks } from "../../scripts/links/stack.ts";
import { linksUnavailable } from "../../scripts/links/system.ts";
import { openLinks, type Links } from "../../scripts/links/topology.ts";
import { fileDigests } from "../../bench/lib/data.ts";
import { writeRandomFile, writeSkill } from "../support/agent-stack.ts";

const MiB = 1024 * 1024;
const unavailable = linksUnavailable();

void describe("the pull on shaped links", { skip: unavailable ?? false }, () => {
  let links: Links;
  let dir: string;
  let home: string;
  const files = new Map<string, string>();
  let seq = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "a2c-shaped-"));
    home = join(dir, "home");
    const root = await writeSkill(home, "files", "Files.");
    for (const [name, size] of [
      ["1.5m.bin", 1.5 * MiB],
      ["3m.bin", 3 * MiB],
      ["24m.bin", 24 * MiB],
    ] as const) {
      files.set(name, await writeRandomFile(join(root, name), size));
    }
    links = await openLinks({ agents: 1, computers: 1 });
  });
  after(async () => {
    await links?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function withStack<T>(fn: (s: StackOnLinks) => Promise<T>): Promise<T> {
    const s = await startStackOnLinks(links, { skills: home, workDir: join(dir, `w${seq++}`) });
    try {
      return await fn(s);
    } finally {
      await s.close();
    }
  }

  /** A default download of `name` by agent-0 from computer-0, checked against the file. */
  async function download(s: StackOnLinks, name: string): Promise<DownloadResult> {
    const agent = s.agents[0]!;
    const h = await agent.handle({ skill: "files", relPath: name });
    const dest = join(dir, `got-${seq++}`);
    const dl = await agent.download({ ...h, dest, deadlineMs: 120_000 });
    assert.ok(dl.ok, `download of ${name}: ${dl.error ?? ""}`);
    // Busy answers and timeouts are counted on the client's getBlobChunk: it must have seen them.
    assert.ok(dl.chunks.requests > 0, "the pull's chunk requests were not seen on the client");
    assert.equal(fileDigests(dest, 4 * MiB).sha256, files.get(name));
    rmSync(dest);
    return dl;
  }

  /** Busy answers, timeouts and resumes the download met, as the Agent and the Server saw them. */
  function dishonest(dl: DownloadResult, m0: string, m1: string): Record<string, unknown> {
    const relay = counterDelta(
      readCounter(m0, "a2c_relay_requests_total"),
      readCounter(m1, "a2c_relay_requests_total"),
    );
    return {
      chunkFailures: dl.chunks.failures,
      resumes: dl.stats.resumes ?? 0,
      serverRefusals: total(
        counterDelta(
          readCounter(m0, "a2c_limit_refusals_total"),
          readCounter(m1, "a2c_limit_refusals_total"),
        ),
      ),
      relayNotAnswered: Object.entries(relay).filter(([k]) => !k.includes("outcome=answered")),
    };
  }
  const CLEAN = { chunkFailures: {}, resumes: 0, serverRefusals: 0, relayNotAnswered: [] };

  void test("a download from a Computer on a 2 Mbit/s uplink completes with default settings", async () => {
    await links.shape("downlink", null);
    await links.shape("uplink", { rateMbit: 2 });
    await withStack(async (s) => {
      const m0 = await s.metrics();
      const dl = await download(s, "1.5m.bin");
      const m1 = await s.metrics();
      assert.deepEqual(dishonest(dl, m0, m1), CLEAN);
      // Each chunk's time at the Server, from forwarding the request to the Computer's answer:
      // the answers must not queue behind the pull's own (what becomes a relay timeout once a
      // longer download's queue passes 30 s).
      const buckets = counterDelta(
        readCounter(m0, "a2c_relay_latency_seconds_bucket"),
        readCounter(m1, "a2c_relay_latency_seconds_bucket"),
      );
      const within1s = buckets["event=client:get_blob,le=1"] ?? 0;
      const all = buckets["event=client:get_blob,le=+Inf"] ?? 0;
      assert.ok(all > 0);
      assert.ok(
        within1s >= 0.95 * all,
        `${all - within1s} of ${all} chunk answers took over 1 s at the Server's relay`,
      );
    });
  });

  void test("a tool_call during a pull over a 20 Mbit/s uplink answers within the bound", async (t) => {
    await links.shape("downlink", null);
    await links.shape("uplink", { rateMbit: 20 });
    await withStack(async (s) => {
      const agent = s.agents[0]!;
      const p95 = (xs: ProbeSample[]): number => {
        assert.ok(
          xs.every((x) => x.ok),
          JSON.stringify(xs.filter((x) => !x.ok)),
        );
        const sorted = xs.map((x) => x.ms).sort((a, b) => a - b);
        return sorted[Math.ceil(0.95 * sorted.length) - 1]!;
      };
      const idle = p95(await agent.probeRun(20, ["tool_call"]));
      // About 10 s of pull and 60 tool_calls: the p95 is the fourth worst, not the second.
      const probe = await agent.probeStart(150, ["tool_call"]);
      const dl = await download(s, "24m.bin");
      const end = dl.startedAt + dl.seconds * 1000;
      const during = (await agent.probeStop(probe)).filter((x) => x.at <= end);
      assert.ok(during.length >= 20, `${during.length} tool_calls during the pull`);
      const busy = p95(during);
      t.diagnostic(
        `tool_call p95 ${busy.toFixed(0)} ms during the pull, ${idle.toFixed(0)} ms idle`,
      );
      assert.ok(
        busy <= idle + 250,
        `tool_call p95 ${busy.toFixed(0)} ms during the pull, ${idle.toFixed(0)} ms idle`,
      );
    });
  });

  void test("a reader on a 2 Mbit/s downlink gets no busy", async () => {
    await links.shape("uplink", null);
    await links.shape("downlink", { rateMbit: 2 });
    await withStack(async (s) => {
      const m0 = await s.metrics();
      const gauge = await s.serverTool.gaugeStart(
        s.metricsUrl,
        "a2c_outbound_largest_queue_bytes",
        100,
      );
      const dl = await download(s, "3m.bin");
      const queued = await s.serverTool.gaugeStop(gauge);
      const m1 = await s.metrics();
      assert.deepEqual(dishonest(dl, m0, m1), CLEAN);
      assert.ok(queued.samples > 10);
      assert.ok(
        queued.max <= 2 * MiB,
        `the Server held up to ${(queued.max / MiB).toFixed(2)} MiB for the reader`,
      );
    });
  });
});
