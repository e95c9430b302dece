/** The final verdict: a summary table for people, the same data as JSON for machines. */
import { SCENARIOS, type ScenarioResult } from "./plan.ts";
import { formatBytes, rate } from "./progress.ts";

export interface StackReport {
  ok: boolean;
  /** Wall time of the whole run (start of the Server to the last result). */
  ms: number;
  /** The first Server node (the only one without --nodes). */
  server: { url: string; pid: number };
  /** Every Server node; `name` is what `node` below refers to. */
  nodes: { name: string; url: string; pid: number }[];
  /** The redis-server the stack started for several nodes; null with one node. */
  redis: { url: string; pid: number } | null;
  computers: { name: string; office: string; pid: number; node: string }[];
  agents: { name: string; office: string; pid: number; node: string }[];
  results: ScenarioResult[];
  /** Scenarios that were planned but never reported (an Agent died or the run was aborted). */
  missing: { id: string; agent: string }[];
  /** Where the child processes' logs are (kept after a failure or with --keep). */
  logDir: string | null;
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  ");
}

/**
 * `agent-1` → `server-a → server-b`: the node of the Agent and of its office's Computers, for the
 * summary of a several-node run (which paths crossed the Redis bus).
 */
function routes(report: StackReport): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of report.agents) {
    const cs = report.computers.filter((c) => c.office === a.office).map((c) => c.node);
    out.set(a.name, `${a.node} → ${[...new Set(cs)].join(",")}`);
  }
  return out;
}

export function renderSummary(report: StackReport): string {
  const route = report.nodes.length > 1 ? routes(report) : null;
  const order = new Map(SCENARIOS.map((s, i) => [s.id, i]));
  const title = new Map(SCENARIOS.map((s) => [s.id, s.title]));
  const sorted = [...report.results].sort(
    (a, b) => (order.get(a.id) ?? 99) - (order.get(b.id) ?? 99),
  );
  const rows = sorted.map((r) => [
    r.id,
    route ? `${r.agent} (${route.get(r.agent) ?? "?"})` : r.agent,
    r.bytes ? formatBytes(r.bytes) : "-",
    rate(r.bytes, r.ms),
    r.verified === null ? "n/a" : r.verified ? "yes" : "NO",
    String(r.restarts),
    r.ok ? "PASS" : `FAIL: ${r.detail}`,
  ]);
  for (const m of report.missing) {
    rows.push([m.id, m.agent, "-", "-", "-", "-", "FAIL: no result (Agent stopped)"]);
  }
  const header = [
    "scenario",
    route ? "agent (node → computers' nodes)" : "agent",
    "bytes",
    "MB/s",
    "sha256",
    "restarts",
    "result",
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const lines = [pad(header, widths), widths.map((w) => "-".repeat(w)).join("  ")];
  for (const r of rows) lines.push(pad(r, widths));
  const passed = report.results.filter((r) => r.ok).length;
  const total = report.results.length + report.missing.length;
  lines.push("");
  const where =
    report.nodes.length > 1
      ? ` on ${report.nodes.length} Server nodes (${report.nodes.map((n) => n.name).join(", ")}) sharing ${report.redis?.url ?? "Redis"}`
      : "";
  lines.push(
    `${report.ok ? "PASS" : "FAIL"}: ${passed}/${total} scenarios passed in ${(report.ms / 1000).toFixed(1)} s${where}`,
  );
  const details = sorted.filter((r) => r.ok && r.detail);
  if (details.length > 0) {
    lines.push("");
    lines.push("What each scenario checked:");
    for (const r of details)
      lines.push(`  ${r.id.padEnd(20)} ${title.get(r.id) ?? ""}: ${r.detail}`);
  }
  return lines.join("\n") + "\n";
}
