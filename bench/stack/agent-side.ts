/** Placeholder seam (replaced when agent/client.ts lands). */
import type { Handler } from "../lib/ipc.ts";
import type { FetchChunk } from "../lib/driver.ts";

export const stackHandlers: Record<string, Handler> = {};

export function stackFetcher(
  _agent: number,
  _handle: string,
  _carriage: "base64" | "binary",
): FetchChunk {
  throw new Error("the stack's Agent SDK is not available yet");
}
