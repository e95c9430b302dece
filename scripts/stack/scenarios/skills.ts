/** SKILL channel scenarios: list, inline SKILL.md, a text resource drained from a handle. */
import { check, sha256, type Scenario } from "./context.ts";

export const listSkills: Scenario = async ({ client, plan, computer }) => {
  const names: string[] = [];
  // Every Computer of the office serves the same home: each must list every demo skill.
  for (const c of plan.computers) {
    const skills = await client.getSkills(c);
    for (const s of skills) {
      check(s.name && s.source && s.path && s.description, `${c}: ref ${s.name} misses a field`);
      check(!("body" in s), `${c}: get_skills returned a body for ${s.name}`);
    }
    const listed = new Set(skills.map((s) => s.name));
    for (const want of plan.manifest.skills) check(listed.has(want), `${c}: ${want} not listed`);
    if (c === computer) names.push(...skills.map((s) => s.name));
  }
  return {
    bytes: 0,
    verified: null,
    restarts: 0,
    detail: `${names.length} skills on ${plan.computers.length} computer(s): ${names.join(", ")}`,
  };
};

export const skillInline: Scenario = async ({ client, plan, computer }) => {
  const want = plan.manifest.files.skillMd;
  const ret = await client.getSkillRaw(computer, want.skill);
  check(ret.rel_path === "SKILL.md", `rel_path echoed as ${ret.rel_path}`);
  check(ret.mime_type === "text/markdown", `mime_type ${ret.mime_type}`);
  check(ret.body !== undefined && ret.blob_handle === undefined, "SKILL.md not inline");
  check(!ret.body.startsWith("---"), "frontmatter not stripped");
  const actual = sha256(ret.body);
  check(actual === want.sha256, `body sha256 ${actual.slice(0, 12)} ≠ generated`);
  check(ret.sha256 === want.sha256 && ret.total_size === want.size, "sha256/total_size wrong");
  return {
    bytes: ret.total_size,
    verified: true,
    restarts: 0,
    detail: `inline body, ${ret.total_size} B, frontmatter stripped`,
  };
};

export const skillOverBudget: Scenario = async ({ client, plan, computer, progress }) => {
  const small = plan.manifest.files.notes;
  const big = plan.manifest.files.guide;
  const inline = await client.getSkillRaw(computer, small.skill, small.rel_path);
  check(inline.body !== undefined, `${small.rel_path} (${small.size} B) should be inline`);
  check(sha256(inline.body) === small.sha256, `${small.rel_path} body sha256 mismatch`);
  const raw = await client.getSkillRaw(computer, big.skill, big.rel_path);
  check(
    raw.body === undefined && raw.blob_handle !== undefined,
    `${big.rel_path} (${big.size} B) over the budget must come as a handle`,
  );
  check(raw.mime_type === big.mime, `mime_type ${raw.mime_type}`);
  // The SDK drains a text handle into `body`, verifying against the producer's sha256.
  progress(0, big.size);
  const drained = await client.getSkill(computer, big.skill, big.rel_path, {
    pull: { onProgress: (p) => progress(p.bytes, p.total) },
  });
  check(drained.body !== undefined, "handle not drained into body");
  check(sha256(drained.body) === big.sha256, "drained body sha256 ≠ generated");
  return {
    bytes: big.size + small.size,
    verified: true,
    restarts: 0,
    detail: `${small.size} B inline; ${big.size} B via handle, drained to body (SDK defaults: binary carriage asked)`,
  };
};
