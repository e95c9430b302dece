/** piscina worker for the micro section: the offloaded variants of sha256 and base64. */
import { createHash } from "node:crypto";

export interface MicroTask {
  op: "sha256" | "base64";
  /** A standalone Uint8Array (cloned), or a SharedArrayBuffer view given by offset/length. */
  data?: Uint8Array;
  shared?: SharedArrayBuffer;
  offset?: number;
  length?: number;
}

export default function run(task: MicroTask): string {
  const bytes = task.shared
    ? new Uint8Array(task.shared, task.offset ?? 0, task.length ?? 0)
    : (task.data ?? new Uint8Array(0));
  if (task.op === "sha256") return createHash("sha256").update(bytes).digest("hex");
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}
