/**
 * An upload a tool then reads: the Agent hands a file to its Computer (`client:put_blob`, the
 * SDK's defaults), and the demo MCP server's `sha256_file` tool reads the stored file back by the
 * landing path the final ack named, as a tool call would take any uploaded input.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { check, sha256, type Scenario } from "./context.ts";

const READ_TOOL = "demo__sha256_file";
/** Several chunks at any chunk size the path picks, and an odd length. */
const UPLOAD_BYTES = 3 * 1024 * 1024 + 4321;

export const uploadReadBack: Scenario = async ({ client, plan, computer, progress, signal }) => {
  mkdirSync(plan.workDir, { recursive: true });
  const file = join(plan.workDir, "upload.bin");
  const bytes = randomBytes(UPLOAD_BYTES);
  writeFileSync(file, bytes);
  const want = sha256(bytes);
  try {
    const up = await client.uploadBlob(computer, file, {
      nameHint: "report v1.bin",
      signal,
      onProgress: (p) => progress(p.bytes, p.total),
    });
    check(up.sha256 === want && up.totalSize === UPLOAD_BYTES, "the final ack echoed another file");
    const name = basename(up.landingPath);
    check(name.endsWith("_report_v1.bin"), `landing name ${name} lacks the sanitized hint`);
    const result = await client.callTool(computer, READ_TOOL, { path: up.landingPath }, { signal });
    const text = result.content.find((c) => c.type === "text") as { text?: string } | undefined;
    check(!result.isError, `${READ_TOOL} failed: ${text?.text ?? "no text"}`);
    const [digest, size] = (text?.text ?? "").split(/\s+/);
    check(digest === want, `${READ_TOOL} read other bytes at ${up.landingPath}`);
    check(Number(size) === UPLOAD_BYTES, `${READ_TOOL} read ${size} bytes, not ${UPLOAD_BYTES}`);
    return {
      bytes: UPLOAD_BYTES,
      verified: true,
      restarts: up.stats.restarts,
      detail: `uploaded as ${name} (${up.stats.requests} put_blob chunks, ${up.carriage} carriage); ${READ_TOOL} read it back: sha256 equal`,
    };
  } finally {
    rmSync(file, { force: true });
  }
};
