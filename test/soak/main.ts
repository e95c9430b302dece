/**
 * `npm run soak -- [--minutes 10] [--out reports/soak-<ts>]`: mixed traffic against a stack in
 * child processes (Server, three Computers with the demo MCP server), for N minutes:
 *   - load Agents (offices soak-load-1/2): verified pulls, tool calls with sidebanded PNGs,
 *     SKILL.md reads, downloads cancelled midway;
 *   - a probe Agent (office soak-probe) pulling 64 KiB chunks one at a time: p99 chunk latency
 *     unloaded (first 10% of the run) vs under load (goal ≤ 2x);
 *   - RSS of every process sampled each second; at the end, open file descriptors per process
 *     (/proc/<pid>/fd) and this process's active handles.
 * Writes report.md, report.json and rss.svg, and exits 1 when RSS or fds grow beyond the stated
 * bounds or any transfer fails verification.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { AgentClient } from "../../agent/client.ts";
import { writeDemoMcpConfig } from "../../scripts/stack/demo-data.ts";
import {
  ROOT,
  rssOf,
  spawnComputerProc,
  spawnServer,
  type Proc,
} from "../support/reliability-procs.ts";
import { writeSkill } from "../support/reliability-stack.ts";

const TOKEN = randomBytes(16).toString("hex");
/** Bounds (stated in the report): RSS of the last quarter ≤ first quarter × 1.5 + 48 MB; fds +16. */
const RSS_FACTOR = 1.5;
const RSS_SLACK = 48 * 1024 * 1024;
const FD_SLACK = 16;

const { values } = parseArgs({
  options: { minutes: { type: "string", default: "10" }, out: { type: "string" } },
});
const minutes = Number(values.minutes);
if (!(minutes > 0)) throw new Error("--minutes must be a positive number");
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const outDir = values.out ?? join(ROOT, "reports", `soak-${stamp}`);

function fdCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}
function p99(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] ?? NaN;
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0;

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "a2c-soak-"));
  const home = join(dir, "home");
  const root = await writeSkill(home, "data", {});
  const files: Record<string, { size: number; sha: string }> = {};
  for (const [name, size] of [
    ["f1.bin", 1 << 20],
    ["f4.bin", 4 << 20],
  ] as const) {
    const bytes = randomBytes(size);
    writeFileSync(join(root, name), bytes);
    files[name] = { size, sha: createHash("sha256").update(bytes).digest("hex") };
  }
  writeDemoMcpConfig(join(dir, "mcp.json"), ROOT);
  const env = { A2C_LOG_LEVEL: "warn" };
  const server = await spawnServer(0, { A2C_TOKENS: TOKEN, ...env });
  const procs: Record<string, Proc> = { server: server.proc };
  const offices = ["soak-probe", "soak-load-1", "soak-load-2"];
  for (const office of offices) {
    procs[office] = spawnComputerProc({
      url: server.url,
      office,
      name: "pc",
      token: TOKEN,
      skills: home,
      stateDir: join(dir, `state-${office}`),
      env,
      extra: ["--mcp-config", join(dir, "mcp.json")],
    });
  }
  const agents = await Promise.all(
    offices.map(async (office) => {
      const a = new AgentClient({ url: server.url, token: TOKEN, name: `agent-${office}` });
      await a.connect();
      await a.joinOffice(office);
      await a.waitForComputer("pc", { timeoutMs: 120_000 });
      return a;
    }),
  );
  const [probe, ...loaders] = agents as [AgentClient, ...AgentClient[]];
  const counts = { pulls: 0, tools: 0, pngs: 0, skills: 0, cancels: 0, failures: [] as string[] };
  const samples: { t: number; rss: Record<string, number> }[] = [];
  const t0 = Date.now();
  const endAt = t0 + minutes * 60_000;
  const baselineEnd = t0 + Math.max(10_000, minutes * 6_000);
  let loadOn = false;

  const sampler = setInterval(() => {
    const rss: Record<string, number> = {};
    for (const [k, p] of Object.entries(procs)) rss[k] = rssOf(p.child.pid ?? 0);
    samples.push({ t: (Date.now() - t0) / 1000, rss });
  }, 1_000);

  // Probe: sequential 64 KiB chunks of f1.bin, latencies split by phase.
  const lat = { unloaded: [] as number[], loaded: [] as number[] };
  const probeHandle = (await probe.getSkill("pc", "data", "f1.bin")).blob_handle!;
  const probeLoop = (async () => {
    let offset = 0;
    while (Date.now() < endAt) {
      const s = performance.now();
      await probe.getBlobChunk("pc", probeHandle, { offset, maxChunkBytes: 65_536, binary: false });
      const ms = performance.now() - s;
      if (Date.now() < baselineEnd) lat.unloaded.push(ms);
      else if (loadOn) lat.loaded.push(ms);
      offset = (offset + 65_536) % files["f1.bin"]!.size;
    }
  })();

  const loadLoop = async (agent: AgentClient, seed: number): Promise<void> => {
    let i = seed;
    while (Date.now() < endAt) {
      const kind = i++ % 4;
      try {
        if (kind === 0) {
          const ret = await agent.getSkill("pc", "data", "f4.bin");
          const { sha } = files["f4.bin"]!;
          const data = await agent.readBlob("pc", ret.blob_handle!, { expectedSha256: sha });
          if (createHash("sha256").update(data).digest("hex") !== sha) throw new Error("sha");
          counts.pulls++;
        } else if (kind === 1) {
          const res = await agent.callTool("pc", "demo__png", { width: 256, height: 256 });
          const img = res.content.find((c) => c.type === "image") as { data?: string } | undefined;
          if (res.isError || !img?.data) throw new Error("png tool call failed");
          counts.tools++;
          counts.pngs++;
        } else if (kind === 2) {
          const skill = await agent.getSkill("pc", "data");
          if (!skill.body?.includes("Body.")) throw new Error("SKILL.md body");
          counts.skills++;
        } else {
          const ret = await agent.getSkill("pc", "data", "f4.bin");
          const ac = new AbortController();
          const p = agent.readBlob("pc", ret.blob_handle!, {
            signal: ac.signal,
            onProgress: (pr) => pr.bytes > 1 << 20 && ac.abort(),
          });
          await p.then(
            () => undefined,
            (err: unknown) => {
              if ((err as Error).name !== "AbortError") throw err;
            },
          );
          counts.cancels++;
        }
      } catch (err) {
        counts.failures.push(`${kind}: ${(err as Error).message}`);
      }
    }
  };

  await new Promise((r) => setTimeout(r, Math.max(0, baselineEnd - Date.now())));
  loadOn = true;
  for (const [k, p] of Object.entries(procs)) fdStart[k] = fdCount(p.child.pid ?? 0);
  const loadStartSample = samples.length;
  const loads = loaders.flatMap((a, k) => [loadLoop(a, k), loadLoop(a, k + 2)]);
  await Promise.all([probeLoop, ...loads]);
  loadOn = false;
  // fds after warm-up vs at the end (after a quiet second).
  await new Promise((r) => setTimeout(r, 1_000));
  clearInterval(sampler);
  const fds: Record<string, number> = {};
  for (const [k, p] of Object.entries(procs)) fds[k] = fdCount(p.child.pid ?? 0);
  const fdsStartSampleNote = "fds at the end; start figures were sampled at load start";

  const verdicts: string[] = [];
  const rssReport: Record<string, { first: number; last: number; max: number; ok: boolean }> = {};
  const loaded = samples.slice(loadStartSample);
  const q = Math.max(1, Math.floor(loaded.length / 4));
  for (const k of Object.keys(procs)) {
    const first = median(loaded.slice(0, q).map((s) => s.rss[k] ?? 0));
    const last = median(loaded.slice(-q).map((s) => s.rss[k] ?? 0));
    const max = Math.max(...samples.map((s) => s.rss[k] ?? 0));
    const ok = last <= first * RSS_FACTOR + RSS_SLACK;
    rssReport[k] = { first, last, max, ok };
    if (!ok) verdicts.push(`${k}: RSS grew ${first} → ${last}`);
  }
  for (const [k, n] of Object.entries(fds))
    if (n > (fdStart[k] ?? n) + FD_SLACK) verdicts.push(`${k}: fds grew ${fdStart[k]} → ${n}`);
  if (counts.failures.length > 0) verdicts.push(`${counts.failures.length} transfers failed`);
  const ratio = p99(lat.loaded) / p99(lat.unloaded);

  const report = {
    minutes,
    bounds: { rss: `last quarter ≤ first quarter × ${RSS_FACTOR} + 48 MB`, fds: `+${FD_SLACK}` },
    counts,
    latency_ms: {
      unloaded_p99: p99(lat.unloaded),
      loaded_p99: p99(lat.loaded),
      ratio,
      samples: [lat.unloaded.length, lat.loaded.length],
      goal: "ratio ≤ 2",
    },
    rss: rssReport,
    fds: { start: fdStart, end: fds, note: fdsStartSampleNote },
    active_handles_soak_process: (
      process as unknown as { _getActiveHandles(): unknown[] }
    )._getActiveHandles().length,
    verdicts,
    ok: verdicts.length === 0,
  };
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, "report.json"), JSON.stringify({ ...report, samples }, null, 2));
  writeFileSync(join(outDir, "rss.svg"), svg(samples, Object.keys(procs)));
  writeFileSync(join(outDir, "report.md"), markdown(report));
  console.log(`soak report: ${outDir} (${report.ok ? "ok" : "FAILED: " + verdicts.join("; ")})`);

  await Promise.all(agents.map((a) => a.close()));
  for (const p of Object.values(procs)) await p.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
  return report.ok ? 0 : 1;
}

/** fds per process at load start (filled by the sampler hook below). */
const fdStart: Record<string, number> = {};

function svg(samples: { t: number; rss: Record<string, number> }[], keys: string[]): string {
  const W = 800;
  const H = 300;
  const maxT = Math.max(1, ...samples.map((s) => s.t));
  const maxR = Math.max(1, ...samples.flatMap((s) => keys.map((k) => s.rss[k] ?? 0)));
  const colors = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e"];
  const lines = keys.map((k, i) => {
    const pts = samples
      .map(
        (s) =>
          `${((s.t / maxT) * (W - 60) + 50).toFixed(1)},${(H - 30 - ((s.rss[k] ?? 0) / maxR) * (H - 50)).toFixed(1)}`,
      )
      .join(" ");
    return `<polyline fill="none" stroke="${colors[i % 4]}" points="${pts}"/><text x="${60 + i * 150}" y="15" fill="${colors[i % 4]}">${k}</text>`;
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">
<text x="5" y="${H / 2}">RSS</text><text x="${W / 2}" y="${H - 5}">seconds (max ${maxT.toFixed(0)}; RSS max ${(maxR / 1e6).toFixed(0)} MB)</text>
<line x1="50" y1="${H - 30}" x2="${W - 10}" y2="${H - 30}" stroke="#888"/><line x1="50" y1="20" x2="50" y2="${H - 30}" stroke="#888"/>
${lines.join("\n")}
</svg>
`;
}

function markdown(r: {
  minutes: number;
  counts: object;
  latency_ms: { unloaded_p99: number; loaded_p99: number; ratio: number; samples: number[] };
  rss: Record<string, { first: number; last: number; max: number; ok: boolean }>;
  fds: { start: Record<string, number>; end: Record<string, number> };
  verdicts: string[];
  ok: boolean;
}): string {
  const mb = (n: number): string => (n / 1e6).toFixed(1);
  return [
    `# Soak report (${r.minutes} min) — ${r.ok ? "PASS" : "FAIL"}`,
    "",
    `Traffic: \`${JSON.stringify(r.counts)}\``,
    "",
    `Probe p99 chunk latency: unloaded ${r.latency_ms.unloaded_p99.toFixed(1)} ms, under load ${r.latency_ms.loaded_p99.toFixed(1)} ms → ratio **${r.latency_ms.ratio.toFixed(2)}** (goal ≤ 2: ${r.latency_ms.ratio <= 2 ? "met" : "NOT MET"}; samples ${r.latency_ms.samples.join(" / ")})`,
    "",
    "| process | RSS first quarter (MB) | RSS last quarter (MB) | max (MB) | fds start | fds end | ok |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...Object.entries(r.rss).map(
      ([k, v]) =>
        `| ${k} | ${mb(v.first)} | ${mb(v.last)} | ${mb(v.max)} | ${r.fds.start[k]} | ${r.fds.end[k]} | ${v.ok ? "yes" : "NO"} |`,
    ),
    "",
    `Bounds: RSS last quarter ≤ first quarter × ${RSS_FACTOR} + 48 MB; fds ≤ start + ${FD_SLACK}.`,
    "",
    "![RSS](rss.svg)",
    "",
    r.verdicts.length
      ? `Verdicts:\n${r.verdicts.map((v) => `- ${v}`).join("\n")}`
      : "No violations.",
    "",
  ].join("\n");
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
