/**
 * The figures a planner reads first, each in one line, from one run's data: the top of the
 * report. docs/results.md's table of the latest figures repeats these rows, in this order.
 */
import type { SectionOutcome } from "../lib/context.ts";
import { formatBytes, median } from "../lib/stats.ts";
import type { CapacityData } from "../sections/capacity.ts";
import type { LinkCaseRun, LinksData } from "../sections/links.ts";
import { isClean } from "../sections/links.ts";
import type { ManyAgentsData } from "../sections/many-agents.ts";
import type { SweepData } from "../sections/sweep.ts";
import type { UserViewData } from "../sections/user-view.ts";
import type { Report } from "./types.ts";

export interface KeyFigure {
  /** Stable name of the row. */
  id: string;
  figure: string;
  /** The value in words; null when this run did not measure it. */
  value: string | null;
}

function data<T>(o: SectionOutcome | undefined): T | null {
  return o?.status === "done" ? (o.data as T) : null;
}

const pct = (x: number): string => `${(100 * x).toFixed(0)}%`;
const mbps = (x: number): string => `${x.toFixed(x >= 100 ? 0 : 1)} MB/s`;

function loopback(r: Report): string | null {
  const sweep = data<SweepData>(r.sections.sweep);
  if (!sweep) return null;
  const words = (["binary", "base64"] as const).flatMap((carriage) => {
    const ratios = sweep.buffers
      .flatMap((b) => b.points)
      .filter((p) => p.carriage === carriage && p.ratio !== null)
      .map((p) => p.ratio ?? 0);
    return ratios.length > 0
      ? [`${carriage} ${pct(median(ratios))} (${ratios.length} points)`]
      : [];
  });
  return words.length > 0 ? words.join(", ") : null;
}

function oneAgent(r: Report): string | null {
  const uv = data<UserViewData>(r.sections.userView);
  const row = (id: string) => uv?.rows.find((x) => x.id === id);
  const sdk = row("sdk-binary");
  const cli = row("cli-binary");
  const bare = row("bare-binary");
  if (!uv || !sdk || !cli || !bare) return null;
  return `SDK into memory ${mbps(sdk.mbps.median)}; CLI to a file ${mbps(cli.mbps.median)}, ${pct(uv.cliVsBare.median)} of the bare relay's ${mbps(bare.mbps.median)} (${formatBytes(uv.fileBytes)}, binary carriage)`;
}

function perCore(r: Report): string | null {
  const c = data<CapacityData>(r.sections.capacity);
  if (!c) return null;
  const words = (["binary", "base64"] as const).flatMap((carriage) => {
    const cost = c.serverCost[carriage];
    return cost ? [`${carriage} ${mbps(cost.perCoreMbps)}`] : [];
  });
  return words.length > 0 ? `${words.join(", ")} per Server core` : null;
}

function manyAgents(r: Report): string | null {
  const d = data<ManyAgentsData>(r.sections.manyAgents);
  const last = d?.rows.at(-1);
  if (!last) return null;
  return `${last.agents} Agents at once: ${mbps(last.aggregateMbps)} in all, chunk p99 ${(last.p99Ms / 1000).toFixed(1)} s`;
}

/** Our build's runs of the rate matrix (the cases beside it count only for completion). */
function matrix(d: LinksData): Array<{ rate: number | null; direction: string; run: LinkCaseRun }> {
  return d.cases.flatMap((c) => {
    const run = c.runs.find((x) => x.build === "ours");
    return !c.extra && run ? [{ rate: c.rateMbit, direction: c.direction, run }] : [];
  });
}

function linkUtilization(r: Report): string | null {
  const d = data<LinksData>(r.sections.links);
  if (!d) return null;
  const all = d.cases.flatMap((c) => c.runs.filter((x) => x.build === "ours"));
  const clean = all.filter(isClean).length;
  const shaped = matrix(d).filter((x) => x.rate !== null && x.rate >= 2);
  const us = shaped.flatMap((x) =>
    x.run.download.ok && x.run.download.utilization !== null ? [x.run.download.utilization] : [],
  );
  const one = matrix(d).filter((x) => x.rate === 1 && x.run.download.utilization !== null);
  const range = us.length > 0 ? `${pct(Math.min(...us))}–${pct(Math.max(...us))}` : "–";
  const at1 =
    one.length > 0
      ? `; ${one.map((x) => pct(x.run.download.utilization ?? 0)).join(" / ")} at 1 Mbit/s`
      : "";
  return `${range} of the link from 2 to 200 Mbit/s, both directions${at1}; ${clean} of ${all.length} downloads with no busy, timeout or resume`;
}

function linkLatency(r: Report): string | null {
  const d = data<LinksData>(r.sections.links);
  if (!d) return null;
  const rows = matrix(d).filter((x) => x.rate === null || x.rate >= 2);
  if (rows.length === 0) return null;
  const added = rows.map((x) => ({
    ...x,
    ms: x.run.latency.during.all.p95 - x.run.latency.idle.all.p95,
    failed: x.run.latency.during.all.failed,
  }));
  const worst = added.reduce((a, b) => (b.ms > a.ms ? b : a));
  const failed = added.reduce((n, x) => n + x.failed, 0);
  const rate = worst.rate === null ? "unshaped" : `${worst.rate} Mbit/s`;
  return `p95 at most idle + ${worst.ms.toFixed(0)} ms from 2 Mbit/s up (the worst: ${worst.direction} ${rate}, ${worst.run.latency.during.all.p95.toFixed(0)} ms)${failed > 0 ? `; ${failed} failed` : ""}`;
}

function fairness(r: Report): string | null {
  const d = data<LinksData>(r.sections.links);
  const runs = (d?.fairness ?? []).flatMap((c) => c.runs.filter((x) => x.build === "ours"));
  if (runs.length === 0) return null;
  return `Jain index ${Math.min(...runs.map((x) => x.jain)).toFixed(2)} at worst (${runs.length} pairs of pulls on one 20 Mbit/s link)`;
}

export function keyFigures(r: Report): KeyFigure[] {
  const met = r.goals.filter((g) => g.status === "met").length;
  const measured = r.goals.filter((g) => g.status !== "not measured").length;
  return [
    {
      id: "loopback",
      figure: "Our stack against the bare socket.io relay on loopback, same chunk size and window",
      value: loopback(r),
    },
    { id: "one-agent", figure: "One Agent, default settings, one large file", value: oneAgent(r) },
    { id: "server-core", figure: "What one Server core relays", value: perCore(r) },
    { id: "many-agents", figure: "Many Agents through one Server", value: manyAgents(r) },
    {
      id: "links",
      figure: "A default download on a shaped link (Computer uplink, Agent downlink)",
      value: linkUtilization(r),
    },
    {
      id: "links-latency",
      figure: "The same Agent's small requests to that Computer during the download",
      value: linkLatency(r),
    },
    { id: "links-fairness", figure: "Two pulls sharing one link", value: fairness(r) },
    {
      id: "integrity",
      figure: "Bytes verified by sha256",
      value: `${(r.integrity.verifiedBytes / 2 ** 30).toFixed(1)} GiB in ${r.integrity.verifiedChunks.toLocaleString("en-US")} chunks, ${r.integrity.failures.length} failures`,
    },
    {
      id: "goals",
      figure: "Goals of the run",
      value: `${met} of ${measured} measured goals met${measured < r.goals.length ? ` (${r.goals.length - measured} not measured)` : ""}`,
    },
  ];
}
