/** The upload section's goals: the SDK and the CLI upload against their download, the Computer's RSS. */
import type { SectionOutcome } from "./lib/context.ts";
import { absentWhy, judged } from "./goal-parts.ts";
import { formatBytes, MiB } from "./lib/stats.ts";
import type { UploadCaseId, UploadData } from "./sections/upload.ts";
import type { Goal, Report } from "./report/types.ts";

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

function rowText(d: UploadData, id: UploadCaseId): string {
  const r = d.rows.find((x) => x.id === id);
  return r ? `${r.mbps.median.toFixed(1)} MB/s (${r.carriage})` : "–";
}

function ratioGoal(
  d: UploadData | null,
  o: SectionOutcome | undefined,
  g: {
    id: string;
    text: string;
    least: number;
    pick: (d: UploadData) => { median: number; reps: number[] };
    up: UploadCaseId;
    down: UploadCaseId;
  },
): Goal {
  if (!d)
    return {
      id: g.id,
      text: g.text,
      status: "not measured",
      measured: "–",
      evidence: "",
      why: absentWhy(o, "upload"),
    };
  const x = g.pick(d);
  const met = x.median >= g.least;
  return judged({
    id: g.id,
    text: g.text,
    met,
    measured: `${pct(x.median)} (per round ${x.reps.map(pct).join(", ")}): upload ${rowText(d, g.up)} vs download ${rowText(d, g.down)}`,
    evidence: `Section upload: ${formatBytes(d.fileBytes)} file, ${d.rounds} interleaved rounds, the median of the per-round ratios${d.fileBytes < 256 * MiB ? " (a smaller file than the goal's 256 MiB: not judged at size)" : ""}.`,
    why: "the upload moves the same bytes the other way; compare its chunks and rewinds in the sweep: Server busy answers (rewinds) mean the in-flight budget overran the Server's per-connection bound, a slow chunk rate at small chunks means per-request cost.",
  });
}

export function uploadGoals(r: Report): Goal[] {
  const o = r.sections.upload;
  const d = o?.status === "done" ? (o.data as UploadData) : null;
  const rssText = "A 256 MiB upload grows the Computer's RSS by ≤ 64 MiB";
  const rss: Goal = d
    ? {
        id: "upload-rss",
        text: rssText,
        status: d.rss.growthBytes <= 64 * MiB ? "met" : "missed",
        measured: `${formatBytes(d.rss.growthBytes)} (${formatBytes(d.rss.beforeBytes)} → ${formatBytes(d.rss.peakBytes)}) during a ${formatBytes(d.rss.fileBytes)} upload`,
        evidence:
          "Section upload: the Computer process's VmRSS sampled every 20 ms during the first SDK upload (defaults).",
        ...(d.rss.growthBytes <= 64 * MiB
          ? {}
          : {
              why: "the store holds chunks in memory instead of streaming them to disk, or the Server delivers faster than the Computer writes: check the Computer's write queue.",
            }),
      }
    : {
        id: "upload-rss",
        text: rssText,
        status: "not measured",
        measured: "–",
        evidence: "",
        why: absentWhy(o, "upload"),
      };
  return [
    ratioGoal(d, o, {
      id: "upload-sdk-binary",
      text: "SDK upload ≥ 0.9× the SDK download of the same 256 MiB file, defaults (binary carriage)",
      least: 0.9,
      pick: (x) => x.ratios.sdkBinary,
      up: "sdk-put-binary",
      down: "sdk-get-binary",
    }),
    ratioGoal(d, o, {
      id: "upload-sdk-base64",
      text: "SDK upload ≥ 0.9× the SDK download of the same 256 MiB file, base64",
      least: 0.9,
      pick: (x) => x.ratios.sdkBase64,
      up: "sdk-put-base64",
      down: "sdk-get-base64",
    }),
    ratioGoal(d, o, {
      id: "upload-cli",
      text: "CLI put ≥ 0.8× CLI download of the same 256 MiB file",
      least: 0.8,
      pick: (x) => x.ratios.cli,
      up: "cli-put",
      down: "cli-get",
    }),
    rss,
  ];
}
