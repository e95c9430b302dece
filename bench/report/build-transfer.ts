/** Report blocks of sections 2–4: ceiling, chunk sweep and direct HTTP baseline. */
import type { CeilingData } from "../sections/ceiling.ts";
import type { DirectData } from "../sections/direct.ts";
import type { SweepData, SweepPoint } from "../sections/sweep.ts";
import type { PointResult } from "../lib/measure.ts";
import { formatBytes } from "../lib/stats.ts";
import type { Block } from "./doc.ts";
import { f1, ms, pct } from "./format.ts";
import { lineChart, type Series } from "./svg.ts";

type Carriage = "base64" | "binary";

function find<T extends PointResult>(
  points: readonly T[],
  carriage: Carriage,
  size: number,
  window: number,
): T | undefined {
  return points.find(
    (p) => p.carriage === carriage && p.chunkBytes === size && p.window === window,
  );
}

function cost(p: PointResult, role: string): string {
  const c = p.costs.find((x) => x.name === role);
  return c ? `${c.cpuPercent.toFixed(0)}%` : "–";
}

/** Rows: chunk sizes; columns: windows; cell from `cell`. */
function grid<T extends PointResult>(
  points: readonly T[],
  carriage: Carriage,
  sizes: readonly number[],
  windows: readonly number[],
  cell: (p: T) => string,
  marks: (size: number) => string | null = () => null,
): Block {
  return {
    kind: "table",
    head: ["chunk", ...windows.map((w) => `window ${w}`)],
    rows: sizes.map((s) => {
      const mark = marks(s);
      return [
        formatBytes(s),
        ...windows.map((w) => {
          if (mark) return mark;
          const p = find(points, carriage, s, w);
          return p ? cell(p) : "–";
        }),
      ];
    }),
  };
}

/** Per-point detail at one window: latency and the CPU of each process. */
function detail(
  points: readonly PointResult[],
  carriage: Carriage,
  window: number,
  roles: string[],
): Block {
  const rows = points
    .filter((p) => p.carriage === carriage && p.window === window)
    .sort((a, b) => a.chunkBytes - b.chunkBytes)
    .map((p) => [
      formatBytes(p.chunkBytes),
      f1(p.mbps),
      ms(p.p50Ms),
      ms(p.p99Ms),
      ...roles.map((r) => cost(p, r)),
      String(p.chunks),
    ]);
  return {
    kind: "table",
    head: ["chunk", "MB/s", "p50 ms", "p99 ms", ...roles.map((r) => `${r} CPU`), "chunks verified"],
    rows,
  };
}

function windowSeries(
  points: readonly PointResult[],
  carriage: Carriage,
  windows: readonly number[],
  suffix: string,
  dashed: boolean,
): Series[] {
  return windows.map((w, i) => ({
    name: `w${w} ${suffix}`,
    color: i,
    dashed,
    points: points
      .filter((p) => p.carriage === carriage && p.window === w)
      .map((p) => ({ x: p.chunkBytes, y: p.mbps })),
  }));
}

export function ceilingBlocks(d: CeilingData, windows: readonly number[]): Block[] {
  const blocks: Block[] = [
    {
      kind: "para",
      text: `Bare socket.io relay, three processes, WebSocket after the polling handshake, bufferutil when installed. Resource ${formatBytes(d.fileBytes)}; MB/s = 10^6 bytes/s of verified chunk bytes.`,
    },
  ];
  for (const carriage of ["base64", "binary"] as const) {
    const sizes = d.sizes[carriage].map((s) => s.bytes);
    blocks.push({ kind: "heading", level: 3, text: `Ceiling, ${carriage}: MB/s` });
    blocks.push(grid(d.points, carriage, sizes, windows, (p) => f1(p.mbps)));
    blocks.push({ kind: "para", text: `Latency and CPU at window 8 (${carriage}):` });
    blocks.push(detail(d.points, carriage, 8, ["agent", "server", "computer"]));
  }
  return blocks;
}

export function sweepBlocks(
  d: SweepData,
  ceiling: CeilingData | null,
  windows: readonly number[],
): Block[] {
  const blocks: Block[] = [
    {
      kind: "para",
      text: `Our stack: ${d.serverEntry}, ${d.computerEntry}, and the Agent SDK's \`getBlobChunk\` driven by the same windowed driver as the ceiling. Resource ${formatBytes(d.fileBytes)} served through the SKILL producer; handle length ${d.handleLength} characters. Ratio = stack MB/s / the bare relay's MB/s at the same carriage, chunk size and window, measured right before or after that point (the side that goes first alternates), so both sides see the same machine load; report.json also keeps the ratio to the ceiling section's point (\`sectionRatio\`), measured minutes apart.`,
    },
  ];
  for (const b of d.buffers) {
    for (const carriage of ["base64", "binary"] as const) {
      const sizes = b.sizes[carriage].map((s) => s.bytes);
      const marks = (size: number): string | null => {
        const s = b.sizes[carriage].find((x) => x.bytes === size);
        if (s && !s.fits[String(b.maxHttpBufferSize)])
          return `exceeds (${(s.messageBytes / 1e6).toFixed(2)} MB ack)`;
        if (size > b.caps[carriage]) return `clamped to ${formatBytes(b.caps[carriage])}`;
        return null;
      };
      const pts = b.points.filter((p) => p.carriage === carriage);
      const ws = b.maxHttpBufferSize === d.buffers[0]?.maxHttpBufferSize ? windows : b.windows;
      blocks.push({
        kind: "heading",
        level: 3,
        text: `Stack, ${carriage}, maxHttpBufferSize ${(b.maxHttpBufferSize / 1e6).toFixed(0)} MB: MB/s (ratio to ceiling)`,
      });
      blocks.push(
        grid(
          pts,
          carriage,
          sizes,
          ws,
          (p: SweepPoint) => `${f1(p.mbps)} (${p.ratio === null ? "–" : pct(p.ratio)})`,
          marks,
        ),
      );
      blocks.push({
        kind: "para",
        text: `The Computer's own clamp for ${carriage} at this buffer is ${formatBytes(b.caps[carriage])} (asked for more, it answered that many bytes).`,
      });
      blocks.push(
        detail(pts, carriage, ws.includes(8) ? 8 : (ws[ws.length - 1] ?? 1), [
          "agent",
          "server",
          "computer",
        ]),
      );
    }
  }
  const first = d.buffers[0];
  for (const carriage of ["base64", "binary"] as const) {
    const series: Series[] = [
      ...windowSeries(first?.points ?? [], carriage, windows, "stack", false),
      ...(ceiling ? windowSeries(ceiling.points, carriage, windows, "ceiling", true) : []),
    ];
    blocks.push({
      kind: "chart",
      file: `sweep-${carriage}.svg`,
      alt: `stack vs ceiling, ${carriage}`,
      svg: lineChart({
        title: `Chunk sweep, ${carriage}: stack (solid) vs bare relay ceiling (dashed), 1 MB buffer`,
        xLabel: "chunk size",
        yLabel: "MB/s",
        logX: true,
        xFormat: formatBytes,
        series,
      }),
    });
    blocks.push({
      kind: "chart",
      file: `ratio-${carriage}.svg`,
      alt: `ratio to ceiling, ${carriage}`,
      svg: lineChart({
        title: `Stack / ceiling, ${carriage} (goal: 85%)`,
        xLabel: "chunk size",
        yLabel: "ratio",
        logX: true,
        xFormat: formatBytes,
        yFormat: (y) => `${Math.round(y * 100)}%`,
        refLines: [{ y: 0.85, label: "85% goal" }],
        series: windows.map((w, i) => ({
          name: `w${w}`,
          color: i,
          points: (first?.points ?? [])
            .filter((p) => p.carriage === carriage && p.window === w && p.ratio !== null)
            .map((p) => ({ x: p.chunkBytes, y: p.ratio ?? 0 })),
        })),
      }),
    });
  }
  const sdkRuns = [...d.sdk, ...(d.sdkAtBest ?? [])];
  if (sdkRuns.length > 0) {
    blocks.push({
      kind: "heading",
      level: 3,
      text: "SDK whole reads: defaults vs the best sweep points (the default-settings goal)",
    });
    blocks.push({
      kind: "para",
      text: "The SDK's own pull loop (`readBlob`: windowed chunks, then the whole-resource sha256), one verified read per setting per round, settings interleaved with a rotating order; median of the rounds. The best raw sweep points only nominate the candidate settings: comparing an SDK whole read with a raw driver point would charge the defaults for the SDK's per-read work (first chunk alone, final hash) that any setting pays.",
    });
    blocks.push({
      kind: "table",
      head: ["setting", "chunk", "window", "median MB/s", "each read MB/s", "chunk p99 ms"],
      rows: sdkRuns.map((r) => [
        r.label,
        formatBytes(r.chunkBytes),
        String(r.window),
        f1(r.medianMbps ?? r.result.mbps),
        (r.perReadMbps ?? []).map((x) => x.toFixed(0)).join(", "),
        f1(r.result.latencyMs.p99),
      ]),
    });
  }
  return blocks;
}

export function directBlocks(
  d: DirectData,
  sweep: SweepData | null,
  windows: readonly number[],
): Block[] {
  const sizes = [...new Set(d.points.map((p) => p.chunkBytes))].sort((a, b) => a - b);
  const blocks: Block[] = [
    {
      kind: "para",
      text: "Plain HTTP/1.1 Range requests on loopback (keep-alive, one connection per request in flight), fresh Buffer per read on the server.",
    },
    grid(d.points, "binary", sizes, windows, (p) => f1(p.mbps)),
    detail(d.points, "binary", 8, ["agent", "server"]),
  ];
  const stack = sweep?.buffers[0]?.points ?? [];
  const series: Series[] = [
    {
      name: "HTTP Range w8",
      color: 0,
      points: d.points.filter((p) => p.window === 8).map((p) => ({ x: p.chunkBytes, y: p.mbps })),
    },
    {
      name: "stack base64 w8",
      color: 1,
      points: stack
        .filter((p) => p.window === 8 && p.carriage === "base64")
        .map((p) => ({ x: p.chunkBytes, y: p.mbps })),
    },
    {
      name: "stack binary w8",
      color: 2,
      points: stack
        .filter((p) => p.window === 8 && p.carriage === "binary")
        .map((p) => ({ x: p.chunkBytes, y: p.mbps })),
    },
  ];
  blocks.push({
    kind: "chart",
    file: "direct.svg",
    alt: "direct HTTP vs stack",
    svg: lineChart({
      title: "Direct HTTP Range vs our stack (window 8)",
      xLabel: "chunk size",
      yLabel: "MB/s",
      logX: true,
      xFormat: formatBytes,
      series,
    }),
  });
  return blocks;
}
