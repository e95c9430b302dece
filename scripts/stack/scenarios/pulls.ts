/**
 * Binary pulls through `client:get_blob`: the PNG and the big file, serially in the spec's base64
 * carriage (`binary: false`) and with a window of 8 in the SDK's default binary carriage (D19),
 * and a resource rewritten while it is being pulled. Each detail line names the carriage used.
 */
import { readFileSync } from "node:fs";
import { readBlobWithInfo } from "../../../agent/index.ts";
import { rewriteFileAtomically, type DemoFile } from "../demo-data.ts";
import { pngSize } from "../../demo/png.ts";
import { check, sha256, type Outcome, type Scenario, type ScenarioContext } from "./context.ts";

/** Pulls each file by handle with `window` chunks in flight, checking bytes against the manifest. */
async function pullFiles(
  ctx: ScenarioContext,
  computer: string,
  files: DemoFile[],
  window: number,
  binary: boolean,
): Promise<Outcome> {
  const total = files.reduce((n, f) => n + f.size, 0);
  let before = 0;
  let restarts = 0;
  let requests = 0;
  const carriages = new Set<string>();
  for (const f of files) {
    const ret = await ctx.client.getSkillRaw(computer, f.skill, f.rel_path);
    check(ret.blob_handle !== undefined && ret.body === undefined, `${f.rel_path}: no handle`);
    check(ret.mime_type === f.mime, `${f.rel_path}: mime_type ${ret.mime_type} ≠ ${f.mime}`);
    check(ret.sha256 === f.sha256 && ret.total_size === f.size, `${f.rel_path}: wrong sha/size`);
    const { value, info } = await readBlobWithInfo(ctx.client, computer, ret.blob_handle, {
      window,
      binary,
      expectedSha256: ret.sha256,
      expectedSize: ret.total_size,
      signal: ctx.signal,
      onProgress: (p) => ctx.progress(before + p.bytes, total),
    });
    // Verify against the generator, not only against what the Computer claimed.
    check(value.length === f.size, `${f.rel_path}: ${value.length} B ≠ ${f.size}`);
    check(sha256(value) === f.sha256, `${f.rel_path}: sha256 of the bytes ≠ generated`);
    if (f.mime === "image/png") check(pngSize(value) !== null, `${f.rel_path}: not a PNG`);
    before += f.size;
    restarts += info.stats.restarts;
    requests += info.stats.requests;
    carriages.add(info.carriage ?? "cache");
  }
  return {
    bytes: total,
    verified: true,
    restarts,
    detail: `${files.map((f) => f.rel_path).join(" + ")} from ${computer}, ${requests} get_blob requests, window ${window}, ${[...carriages].join(" + ")} carriage`,
  };
}

export const pullSerial: Scenario = (ctx) =>
  pullFiles(
    ctx,
    ctx.computer,
    [ctx.plan.manifest.files.logo, ctx.plan.manifest.files.big],
    1,
    false,
  );

/** With several Computers per office the windowed pull goes to the last one. */
export const pullWindow8: Scenario = (ctx) =>
  pullFiles(
    ctx,
    ctx.plan.computers[ctx.plan.computers.length - 1] ?? ctx.computer,
    [ctx.plan.manifest.files.logo, ctx.plan.manifest.files.big],
    8,
    true,
  );

/**
 * Starts a pull, rewrites the file (atomic rename, a new version) as soon as the first bytes
 * arrive, and expects the Agent to notice the new sha256, restart from offset 0 and end verified
 * on the new version: never a splice of the two.
 */
export const rewriteDuringPull: Scenario = async (ctx) => {
  const f = ctx.plan.manifest.files.rewrite;
  // The version on disk now (a rerun against kept data may find an earlier rewrite).
  const oldSha = sha256(readFileSync(f.path));
  const ret = await ctx.client.getSkillRaw(ctx.computer, f.skill, f.rel_path);
  check(ret.blob_handle !== undefined, "no handle");
  check(ret.sha256 === oldSha, "producer sha256 ≠ file on disk");
  let newSha: string | undefined;
  const { value, info } = await readBlobWithInfo(ctx.client, ctx.computer, ret.blob_handle, {
    window: 4,
    signal: ctx.signal,
    onProgress: (p) => {
      ctx.progress(p.bytes, p.total);
      if (newSha === undefined && p.bytes > 0) newSha = rewriteFileAtomically(f.path, f.size);
    },
  });
  check(newSha !== undefined, "the pull finished before any progress was reported");
  const got = sha256(value);
  check(got === info.sha256, "bytes do not match the sha256 the pull ended on (spliced?)");
  check(got === newSha, got === oldSha ? "ended on the old version" : "ended on neither version");
  check(info.stats.restarts >= 1, "no restart although the source changed mid-read");
  return {
    bytes: value.length,
    verified: true,
    restarts: info.stats.restarts,
    detail: `rewritten after the first chunk; restarted ${info.stats.restarts}×, ended on the new version (${info.carriage ?? "cache"} carriage)`,
  };
};
