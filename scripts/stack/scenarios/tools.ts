/**
 * tool_call scenarios against the demo MCP server (bundle_id `demo`): the binary sideband (a large
 * PNG by handle, a small one inline), cancelling a slow call, and a call that times out.
 */
import {
  CANCEL_GRACE_MS,
  DEFAULT_TOOL_TIMEOUT_MARGIN_MS,
  readBlobWithInfo,
} from "../../../agent/index.ts";
import { encodePng, pngSize } from "../../demo/png.ts";
import type { CallToolResult } from "../../../protocol/index.ts";
import { check, sha256, type Scenario } from "./context.ts";

const PNG_TOOL = "demo__png";
/** See toolCancel. */
const CANCEL_DELAY_MS = 500;
const SLOW_TOOL = "demo__slow";

interface ImageItem {
  type: string;
  data?: string;
  mimeType?: string;
  _meta?: { a2c_blob_handle?: string; a2c_total_size?: number; a2c_sha256?: string };
}

function imageOf(result: CallToolResult): ImageItem {
  check(!result.isError, `tool failed: ${JSON.stringify(result.content).slice(0, 160)}`);
  const item = result.content.find((c) => c.type === "image") as ImageItem | undefined;
  check(item, "no image item in the result");
  return item;
}

export const toolPng: Scenario = async ({ client, computer, progress, signal }) => {
  const tools = await client.getTools(computer);
  const names = new Set(tools.map((t) => t.name));
  check(
    names.has(PNG_TOOL) && names.has(SLOW_TOOL),
    `demo tools missing: ${[...names].join(", ")}`,
  );

  // Large: the Computer clears `data` and hands out a handle (`_meta.a2c_*`).
  const big = { width: 1024, height: 768, noise: true };
  const bigPng = encodePng({
    width: big.width,
    height: big.height,
    noiseSeed: big.width * 7919 + big.height,
  });
  const raw = imageOf(await client.callTool(computer, PNG_TOOL, big, { restore: false }));
  const meta = raw._meta ?? {};
  check(typeof meta.a2c_blob_handle === "string", "large PNG was not sidebanded");
  check(!raw.data, "sidebanded item still carries inline data");
  check(raw.mimeType === "image/png", `mimeType ${raw.mimeType}`);
  check(
    meta.a2c_total_size === bigPng.length,
    `a2c_total_size ${meta.a2c_total_size} ≠ ${bigPng.length}`,
  );
  check(meta.a2c_sha256 === sha256(bigPng), "a2c_sha256 ≠ sha256 of the PNG the tool makes");
  const { value, info } = await readBlobWithInfo(client, computer, meta.a2c_blob_handle, {
    expectedSha256: meta.a2c_sha256,
    expectedSize: meta.a2c_total_size,
    signal,
    onProgress: (p) => progress(p.bytes, p.total),
  });
  check(value.equals(bigPng), "pulled PNG bytes differ from the tool's PNG");
  // The SDK's default path restores the item in place, as if it had been inline.
  const restored = imageOf(await client.callTool(computer, PNG_TOOL, big));
  check(
    restored.data && sha256(Buffer.from(restored.data, "base64")) === sha256(bigPng),
    "restore failed",
  );
  check(restored._meta?.a2c_blob_handle === undefined, "restored item keeps its a2c_* keys");

  // Small: under the inline budget, untouched.
  const small = encodePng({ width: 8, height: 8 });
  const inline = imageOf(await client.callTool(computer, PNG_TOOL, { width: 8, height: 8 }));
  check(inline._meta?.a2c_blob_handle === undefined, "small PNG was sidebanded");
  const bytes = Buffer.from(inline.data ?? "", "base64");
  check(bytes.equals(small) && pngSize(bytes)?.width === 8, "inline PNG bytes wrong");
  return {
    bytes: value.length * 2 + bytes.length,
    verified: true,
    restarts: info.stats.restarts,
    detail: `${bigPng.length} B PNG by handle (pulled in ${info.carriage ?? "no"} carriage + SDK restore), ${bytes.length} B PNG inline`,
  };
};

/**
 * Cancels a 30 s call once it is running. WHY the delay and the repeats: a cancel for a `req_id`
 * the Computer has not seen yet is a silent no-op by the spec, and no event tells the Agent that
 * the call started. So the cancel goes out after 500 ms (far more than loopback needs) and is
 * repeated every 250 ms until the answer arrives; a cancel for a call already cancelled or
 * finished is a no-op too, so the repeats are harmless on a slow machine.
 */
export const toolCancel: Scenario = async ({ client, computer }) => {
  const abort = new AbortController();
  const started = Date.now();
  let reqId = "";
  let repeat: NodeJS.Timeout | undefined;
  const timer = setTimeout(() => {
    abort.abort(); // the SDK emits server:tool_call_cancel and waits its grace for the answer
    repeat = setInterval(() => client.cancelToolCall(reqId), 250);
  }, CANCEL_DELAY_MS);
  let result: CallToolResult;
  try {
    result = await client.callTool(
      computer,
      SLOW_TOOL,
      { ms: 30_000 },
      { timeout: 60, signal: abort.signal, onRequestId: (id) => (reqId = id) },
    );
  } finally {
    clearTimeout(timer);
    clearInterval(repeat);
  }
  const ms = Date.now() - started;
  check(result.isError === true, "cancelled call did not report isError");
  check(
    result.meta?.a2c_cancelled === true,
    `no meta.a2c_cancelled: ${JSON.stringify(result.meta)}`,
  );
  // The SDK answers by itself (also a2c_cancelled) once its grace after the cancel runs out;
  // an answer before that came from the Computer, which interrupted the call.
  check(
    ms < CANCEL_DELAY_MS + CANCEL_GRACE_MS,
    `cancel took ${ms} ms: the Computer did not answer it`,
  );
  return {
    bytes: 0,
    verified: null,
    restarts: 0,
    detail: `a2c_cancelled after ${ms} ms (tool would run 30 s)`,
  };
};

/** A 30 s tool with `timeout: 1`: the Computer must interrupt it and mark the result. */
export const toolTimeout: Scenario = async ({ client, computer }) => {
  const started = Date.now();
  const result = await client.callTool(computer, SLOW_TOOL, { ms: 30_000 }, { timeout: 1 });
  const ms = Date.now() - started;
  check(result.isError === true, "timed-out call did not report isError");
  check(result.meta?.a2c_timeout === true, `no meta.a2c_timeout: ${JSON.stringify(result.meta)}`);
  // The SDK's own timeout (also a2c_timeout) fires at timeout + margin; earlier means the
  // Computer enforced the timeout and interrupted the tool.
  check(
    ms < 1000 + DEFAULT_TOOL_TIMEOUT_MARGIN_MS,
    `timeout answer took ${ms} ms: not the Computer's`,
  );
  return {
    bytes: 0,
    verified: null,
    restarts: 0,
    detail: `a2c_timeout after ${ms} ms (timeout 1 s, tool would run 30 s)`,
  };
};
