/**
 * The link goals for uploads, judged on the paths section's upload cases
 * (bench/sections/paths-upload.ts): the share of the plain TCP flow an upload reaches on a shaped
 * Agent uplink, the same Agent's small requests meanwhile, and what the Server holds for an
 * upload to a Computer behind a slow downlink.
 */
import type { PathsData } from "./sections/paths.ts";
import type { UploadPathCase } from "./sections/paths-upload.ts";
import type { Goal, Report } from "./report/types.ts";
import { MiB, formatBytes } from "./lib/stats.ts";

const LATENCY_MARGIN_MS = 250;
const HELD_BOUND = 2 * MiB;

function absent(r: Report): string {
  const o = r.sections.paths;
  if (!o) return "section paths was not run (--only)";
  if (o.status === "skipped") return `section paths skipped: ${o.reason}`;
  if (o.status === "failed") return `section paths failed: ${o.error}`;
  return "the run's plan has no upload case";
}

function cases(r: Report, direction: UploadPathCase["direction"]): UploadPathCase[] {
  const o = r.sections.paths;
  const d = o?.status === "done" ? (o.data as PathsData) : null;
  return (d?.uploads ?? []).filter((c) => c.build === "ours" && c.direction === direction);
}

const notMeasured = (id: string, text: string, why: string): Goal => ({
  id,
  text,
  status: "not measured",
  measured: "–",
  evidence: "",
  why,
});

function utilizationGoal(r: Report): Goal {
  const id = "upload-links-utilization";
  const text =
    "Uploads on an Agent uplink of 2–200 Mbit/s, with and without a 100 ms round trip, reach ≥ 90 % of the link (of a plain TCP flow on the same path)";
  const cs = cases(r, "agentUplink");
  if (cs.length === 0) return notMeasured(id, text, absent(r));
  const bad = cs.filter((c) => !c.ok || c.ofCeiling < 0.9);
  return {
    id,
    text,
    status: bad.length === 0 ? "met" : "missed",
    measured: cs
      .map((c) => `${c.id} ${c.ok ? `${(100 * c.ofCeiling).toFixed(0)}%` : "failed"}`)
      .join("; "),
    evidence:
      "SDK uploadBlob with default options of clamp(rate × 10 s, 4, 256 MiB), hashing included, over the plain TCP flow's rate past its slow start on the same path just before (bench paths section, one run per case).",
    ...(bad.length === 0
      ? {}
      : {
          why: "the upload keeps less in flight than the path's bandwidth-delay product (the path controller's budget, or the Computer's per-chunk work read as queue), or the source's hashing and the first chunk alone weigh on a short transfer.",
        }),
  };
}

function latencyGoal(r: Report): Goal {
  const id = "upload-links-latency";
  const text = `During an upload, the same Agent's small requests: p95 ≤ idle + ${LATENCY_MARGIN_MS} ms on every shaped path`;
  const cs = [...cases(r, "agentUplink"), ...cases(r, "computerDownlink")];
  if (cs.length === 0) return notMeasured(id, text, absent(r));
  const over = (c: UploadPathCase): boolean =>
    c.during.failed > 0 || c.during.p95 > c.idle.p95 + LATENCY_MARGIN_MS;
  const bad = cs.filter(over);
  return {
    id,
    text,
    status: bad.length === 0 ? "met" : "missed",
    measured: cs
      .map((c) => `${c.id} ${c.during.p95.toFixed(0)}/${c.idle.p95.toFixed(0)} ms`)
      .join("; "),
    evidence:
      "A tool_call or get_skills every 300 ms from the uploading Agent to the same Computer during the upload; p95 during / idle before.",
    ...(bad.length === 0
      ? {}
      : {
          why: "a small request queues behind the upload's chunks in the Agent's own socket (its kernel send queue is in the section's table) and behind the queue the upload keeps on the path.",
        }),
  };
}

function heldGoal(r: Report): Goal {
  const id = "upload-links-server-held";
  const text = `The Server holds ≤ ${formatBytes(HELD_BOUND)} for an upload to a Computer behind a 2 Mbit/s downlink`;
  const cs = cases(r, "computerDownlink");
  if (cs.length === 0) return notMeasured(id, text, absent(r));
  const bad = cs.filter((c) => !c.ok || c.serverHeldMaxBytes > HELD_BOUND);
  return {
    id,
    text,
    status: bad.length === 0 ? "met" : "missed",
    measured: cs
      .map(
        (c) =>
          `${c.id}: queued at most ${formatBytes(c.serverHeldMaxBytes)} (${c.serverHeldSamples} samples), kernel Send-Q to the Computer at most ${formatBytes(c.serverSendQMaxBytes)}`,
      )
      .join("; "),
    evidence:
      "The Server's largest per-connection queue (a2c_outbound_largest_queue_bytes, its session meter) sampled every 100 ms during the upload; the kernel's send queue toward the Computer (ss Send-Q) beside it, which the process does not hold but the host does.",
    ...(bad.length === 0
      ? {}
      : {
          why: "the Agent sends faster than the Computer's downlink takes, and the Server queues the difference up to its upload bound (--max-unread-bytes).",
        }),
  };
}

export function uploadLinkGoals(r: Report): Goal[] {
  return [utilizationGoal(r), latencyGoal(r), heldGoal(r)];
}
