/**
 * Section 6, consistency under rewrites. A writer process rewrites a resource (atomic rename, or
 * in place) at increasing rates while, in one office, the Agent pulls it whole with the SDK's
 * default settings and an auditor pulls raw chunks at random offsets. Two kinds of resource: a raw
 * file, and a SKILL.md, whose served bytes are its body with the frontmatter stripped (a derived
 * resource; the writer keeps the frontmatter and rewrites the body). Afterwards every delivery and
 * every audited chunk is checked against the versions the writer wrote (each version's bytes can be
 * recomputed from its seed):
 * - a delivery is verified when its bytes hash to the sha256 the SDK verified AND that sha256 is a
 *   version the writer wrote; bytes that disagree with their sha256 are corrupt (must be 0: the run
 *   fails otherwise);
 * - an audited chunk whose reported sha256 is a written version must carry exactly that version's
 *   bytes at its offset (D18); one that does not fails the run. A sha256 of no written version
 *   (content hashed mid-write) is counted as unverifiable, not hidden.
 */
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { spawnChild } from "../lib/ipc.ts";
import { contentAt, writeContent } from "../lib/data.ts";
import { IntegrityError } from "../lib/integrity.ts";
import { summarize } from "../lib/stats.ts";
import type { Ctx } from "../lib/context.ts";
import type { AuditRecord, AuditResult, ChurnResult } from "../stack/agent-side.ts";
import { getHandle, resourcePath, sharedStack } from "../stack/harness.ts";

export interface RewriteRow {
  /** A raw file, or a SKILL.md body (frontmatter stripped). */
  resource: "raw" | "skill-md";
  mode: "atomic" | "inplace";
  /** Rewrites per second asked, and versions actually written. */
  rate: number;
  versions: number;
  deliveries: number;
  verified: number;
  corrupt: number;
  /** Deliveries of a sha256 no writer wrote (a snapshot taken mid-write). */
  unknownVersion: number;
  gaveUp: Record<string, number>;
  firstError: string | null;
  restartsPerDownload: number;
  secondsToVerified: { p50: number; p99: number; max: number };
  chunksAudited: number;
  /** Audited chunks whose bytes disagree with the version their sha256 names (must be 0). */
  chunksDisagreeing: number;
  chunksUnverifiable: number;
  /** Chunk requests the Computer refused during the rewrites (by error and 4018 reason). */
  auditorErrors: Record<string, number>;
}

export interface RewritesData {
  fileBytes: number;
  seconds: number;
  rows: RewriteRow[];
  notes: string[];
}

const FRONTMATTER = "---\nname: rewrite\ndescription: A SKILL.md rewritten while pulled\n---\n";

export async function runRewrites(ctx: Ctx): Promise<RewritesData> {
  const { plan } = ctx;
  const size = plan.rewriteFileBytes;
  const rows: RewriteRow[] = [];
  const stack = await sharedStack(ctx, { maxHttpBufferSize: 1_000_000, offices: 1 });
  const writer = await spawnChild("writer", "bench/procs/writer.ts");
  try {
    const seat = stack.seats[0]!;
    for (const resource of ["raw", "skill-md"] as const) {
      for (const mode of ["atomic", "inplace"] as const) {
        const name = resource === "raw" ? `rewrite-${mode}.bin` : `rewrite-${mode}/SKILL.md`;
        const path = resourcePath(ctx, name);
        mkdirSync(dirname(path), { recursive: true });
        const prefix = resource === "raw" ? "" : FRONTMATTER;
        for (const rate of plan.rewriteRates) {
          const label = `${resource === "raw" ? "" : "SKILL.md "}${mode} ${rate}/s`;
          const seedPrefix = `${resource}-${mode}-${rate}`;
          const seed0 = `${seedPrefix}-0`;
          const sha0 = writeContent(path, seed0, size, "w", prefix);
          const h = await getHandle(seat, name);
          if (h.sha256 !== sha0)
            throw new IntegrityError(`get_skill reported ${h.sha256} for a fresh ${name}`);
          const [w, churn, audit] = await Promise.all([
            writer.call<{ versions: Array<{ seed: string; sha256: string }> }>("run", {
              path,
              mode,
              rate,
              size,
              durationMs: plan.rewriteMs,
              seedPrefix,
              prefix,
            }),
            seat.child.call<ChurnResult>("sdk-churn", {
              agent: seat.index,
              handle: h.handle,
              durationMs: plan.rewriteMs,
            }),
            seat.child.call<AuditResult>("audit", {
              agent: seat.index,
              handle: h.handle,
              durationMs: plan.rewriteMs,
              chunkBytes: 64 * 1024,
              totalSize: size,
              window: 2,
            }),
          ]);
          const seeds = new Map<string, string>([
            [sha0, seed0],
            ...w.versions.map((v) => [v.sha256, v.seed] as [string, string]),
          ]);
          const row = judge(ctx, label, w.versions.length, seeds, churn, audit.records);
          rows.push({ ...row, resource, mode, rate, auditorErrors: audit.errors });
          ctx.log(
            `rewrites ${label} (SDK defaults, binary carriage): ${row.verified}/${row.deliveries} verified, ${row.corrupt} corrupt, ${row.restartsPerDownload.toFixed(2)} restarts/download, ${row.chunksAudited} chunks audited, ${row.chunksDisagreeing} disagreeing`,
          );
        }
      }
    }
  } finally {
    await writer.close();
  }
  const notes = [
    "Atomic: the writer writes a temp file and renames it over the resource (new inode). In place: one pwrite of the whole new content over the old file (same inode and size).",
    "Each run starts from a fresh version 0; the Agent's handle is minted for that version and stays valid across rewrites (it names the skill file, not a version).",
    "SKILL.md rows: the file is a fixed frontmatter and then the version's bytes; the Computer serves the body (frontmatter stripped, D21), which is what every sha256 and chunk is checked against.",
  ];
  return { fileBytes: size, seconds: plan.rewriteMs / 1000, rows, notes };
}

/** The row's counts; `label` names it in integrity failures. */
function judge(
  ctx: Ctx,
  label: string,
  versions: number,
  seeds: Map<string, string>,
  churn: ChurnResult,
  audit: AuditRecord[],
): Omit<RewriteRow, "resource" | "mode" | "rate" | "auditorErrors"> {
  let verified = 0;
  let corrupt = 0;
  let unknownVersion = 0;
  for (const d of churn.deliveries) {
    if (d.digest !== d.sha256) {
      corrupt++;
      ctx.ledger.fail(
        `rewrites ${label}: SDK delivered bytes with sha256 ${d.digest} under ${d.sha256}`,
      );
    } else if (seeds.has(d.sha256)) verified++;
    else unknownVersion++;
  }
  let disagreeing = 0;
  let unverifiable = 0;
  for (const [offset, length, sha, digest] of audit) {
    const seed = seeds.get(sha);
    if (!seed) {
      unverifiable++;
      continue;
    }
    const expected = createHash("sha256")
      .update(contentAt(seed, offset, Buffer.allocUnsafe(length)))
      .digest("hex");
    if (expected !== digest) {
      disagreeing++;
      if (disagreeing <= 3)
        ctx.ledger.fail(
          `rewrites ${label}: chunk at ${offset} served under ${sha} carries other bytes (D18)`,
        );
    }
  }
  ctx.ledger.add(audit.length - unverifiable, 0, verified);
  const times = summarize(churn.deliveries.map((d) => d.seconds));
  const restarts = churn.deliveries.reduce((s, d) => s + d.restarts, 0);
  return {
    versions,
    deliveries: churn.deliveries.length,
    verified,
    corrupt,
    unknownVersion,
    gaveUp: churn.gaveUp,
    firstError: churn.firstError,
    restartsPerDownload: churn.deliveries.length ? restarts / churn.deliveries.length : NaN,
    secondsToVerified: { p50: times.p50, p99: times.p99, max: times.max },
    chunksAudited: audit.length,
    chunksDisagreeing: disagreeing,
    chunksUnverifiable: unverifiable,
  };
}
