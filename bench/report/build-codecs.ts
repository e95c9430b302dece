/** Report blocks of the codecs section: the codec table and the modelled speed-up per link rate. */
import { CODECS, codecName, type CodecsData } from "../sections/codecs.ts";
import { formatBytes } from "../lib/stats.ts";
import type { Block } from "./doc.ts";
import { f1, f2 } from "./format.ts";

export function codecsBlocks(d: CodecsData): Block[] {
  const kinds = [...new Set(d.rows.map((r) => r.kind))];
  const largest = Math.max(...d.chunkSizes);
  const blocks: Block[] = [
    {
      kind: "para",
      text: `Ratio (decoded bytes per coded byte) per kind and chunk size; compress and decompress CPU ms per MB of resource bytes at ${formatBytes(largest)} chunks, median of ${d.reps} (the CPU at other chunk sizes is in report.json).`,
    },
    {
      kind: "table",
      head: [
        "codec",
        ...kinds.map((k) => `${k} ratio (${d.chunkSizes.map((c) => formatBytes(c)).join(" / ")})`),
        ...kinds.map((k) => `${k} compress / decompress ms per MB`),
      ],
      rows: CODECS.map((c) => {
        const of = (kind: string, chunk: number) =>
          d.rows.find(
            (r) =>
              r.coding === c.coding &&
              r.level === c.level &&
              r.kind === kind &&
              r.chunkBytes === chunk,
          );
        return [
          codecName(c),
          ...kinds.map((k) => d.chunkSizes.map((s) => f2(of(k, s)?.ratio ?? NaN)).join(" / ")),
          ...kinds.map((k) => {
            const r = of(k, largest);
            return r ? `${f1(r.compressMsPerMb)} / ${f1(r.decompressMsPerMb)}` : "–";
          }),
        ];
      }),
    },
    {
      kind: "para",
      text: `Modelled text speed-up over no coding per link rate (decoded MB/s over the link's rate; ${d.slots} compressions at once; ${formatBytes(largest)} chunks), and in brackets the cores the compressions take at that speed; the pick is the cheapest codec within 10 % of the best:`,
    },
    {
      kind: "table",
      head: ["link", ...CODECS.map(codecName), "best", "pick"],
      rows: d.rates.map((r) => [
        r.rateMbit >= 1000 ? `${r.rateMbit / 1000} Gbit/s` : `${r.rateMbit} Mbit/s`,
        ...CODECS.map(
          (c) => `${f2(r.speedup[codecName(c)] ?? NaN)}× (${f2(r.cores[codecName(c)] ?? NaN)})`,
        ),
        r.best,
        r.pick,
      ]),
    },
  ];
  return blocks;
}
