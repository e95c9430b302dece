/** Report blocks of the upload section (bench/sections/upload.ts). */
import { formatBytes } from "../lib/stats.ts";
import type { UploadCaseId, UploadData } from "../sections/upload.ts";
import type { Block } from "./doc.ts";
import { f1, f2, pct } from "./format.ts";

export const UPLOAD_LABELS: Record<UploadCaseId, string> = {
  "sdk-put-binary": "SDK upload, defaults",
  "sdk-get-binary": "SDK download, defaults",
  "sdk-put-base64": "SDK upload, base64",
  "sdk-get-base64": "SDK download, base64",
  "upstream-put": "upstream's pattern (upload)",
  "cli-put": "CLI put",
  "cli-get": "CLI download",
};

const spread = (x: { median: number; reps: number[] }): string =>
  `${pct(x.median)} (${x.reps.map(pct).join(", ")})`;

export function uploadBlocks(d: UploadData): Block[] {
  return [
    {
      kind: "para",
      text: `One ${formatBytes(d.fileBytes)} file uploaded to and downloaded from one Computer through the Server (maxHttpBufferSize ${d.maxHttpBufferSize}), ${d.rounds} interleaved rounds (the order rotating), every stored and downloaded file verified by sha256 where it landed.`,
    },
    {
      kind: "table",
      head: ["way", "what is timed", "carriage", "median MB/s", "each round MB/s", "median s"],
      rows: d.rows.map((r) => [
        UPLOAD_LABELS[r.id],
        r.what,
        r.carriage,
        f1(r.mbps.median),
        r.mbps.reps.map((x) => x.toFixed(0)).join(", "),
        f2(r.seconds.median),
      ]),
    },
    {
      kind: "table",
      head: ["ratio (median of per-round pairs)", "value"],
      rows: [
        ["SDK upload / SDK download, defaults (binary)", spread(d.ratios.sdkBinary)],
        ["SDK upload / SDK download, base64", spread(d.ratios.sdkBase64)],
        ["CLI put / CLI download", spread(d.ratios.cli)],
        [
          "SDK upload defaults / upstream's pattern",
          `${f2(d.ratios.oursVsUpstream.median)}× (${d.ratios.oursVsUpstream.reps.map(f2).join(", ")})`,
        ],
      ],
    },
    {
      kind: "para",
      text: `The Computer's RSS during the first ${formatBytes(d.rss.fileBytes)} SDK upload (sampled every 20 ms from /proc): ${formatBytes(d.rss.beforeBytes)} before, ${formatBytes(d.rss.peakBytes)} at most, a growth of ${formatBytes(d.rss.growthBytes)}.`,
    },
    {
      kind: "table",
      head: ["carriage", "chunk", "MB/s", "chunks", "rewinds (Server busy)"],
      rows: d.sweep.points.map((p) => [
        p.carriage,
        `${formatBytes(p.chunkBytes)}${p.chunkBytes === d.sweep.fits[p.carriage] ? " (largest that fits)" : ""}`,
        f1(p.mbps),
        String(p.requests),
        String(p.rewinds),
      ]),
    },
  ];
}
