/** Not written yet. */
import { SkipSection, type Ctx } from "../lib/context.ts";

export interface ComputerCostData {
  smallBytes: number;
  bigBytes: number;
  chunkBytes: number;
  perChunk: {
    small: { computerMs: number; cpuMs: number; p50Ms: number; chunks: number };
    big: { computerMs: number; cpuMs: number; p50Ms: number; chunks: number };
    ratio: number;
  };
  eld: {
    p99Ms: number;
    maxMs: number;
    seconds: number;
    hashSeconds: number;
    otherChunks: number;
    otherP99Ms: number;
  };
  notes: string[];
}

export async function runComputerCost(_ctx: Ctx): Promise<ComputerCostData> {
  throw new SkipSection("not implemented yet");
}
