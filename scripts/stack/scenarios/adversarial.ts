/**
 * Scenarios where the stack must say no: forbidden paths (4017), forged handles (4018), and an
 * Agent probing another office (refused by the Server, never delivered).
 */
import { AgentClient } from "../../../agent/index.ts";
import { check, mustFail, wireCode, type Scenario } from "./context.ts";

export const forbiddenPath: Scenario = async ({ client, plan, computer }) => {
  const env = plan.manifest.files.skillenv;
  const seen: string[] = [];
  const cases: [string, string, string][] = [
    [env.skill, ".skillenv", "forbidden"],
    [env.skill, "assets/../.skillenv", "traversal"],
    [env.skill, "assets/.SKILLENV", "forbidden"],
    [env.skill, "../hello/SKILL.md", "traversal"],
    [env.skill, "/etc/passwd", "traversal"],
  ];
  for (const [skill, relPath, reason] of cases) {
    const err = await mustFail(`get_skill ${relPath}`, () =>
      client.getSkillRaw(computer, skill, relPath),
    );
    const w = wireCode(err);
    // `..` anywhere is traversal; a clean path to the secret is forbidden. Either way: 4017.
    check(w.code === 4017, `${relPath}: expected 4017, got ${w.name} ${w.code ?? ""}`);
    check(w.reason === reason, `${relPath}: reason ${w.reason} ≠ ${reason}`);
    check(!JSON.stringify(err).includes(plan.manifest.secret), `${relPath}: the secret leaked`);
    seen.push(`${relPath}→${w.reason}`);
  }
  return { bytes: 0, verified: null, restarts: 0, detail: `4017 for ${seen.join(", ")}` };
};

export const forgedHandle: Scenario = async ({ client, plan, computer }) => {
  const logo = plan.manifest.files.logo;
  const real = await client.getSkillRaw(computer, logo.skill, logo.rel_path);
  check(real.blob_handle, "no handle to tamper with");
  const h = real.blob_handle;
  // Flip one character in the middle: an authenticated handle must not survive it.
  const mid = Math.floor(h.length / 2);
  const flipped = h.slice(0, mid) + (h[mid] === "A" ? "B" : "A") + h.slice(mid + 1);
  const forged = [
    ["garbage", "xyz"],
    ["tampered", flipped],
    ["truncated", h.slice(0, Math.floor(h.length * 0.7))],
    [
      "path-like",
      Buffer.from('{"kind":"skill","name":"media","rel_path":".skillenv"}').toString("base64url"),
    ],
  ] as const;
  for (const [label, handle] of forged) {
    const err = await mustFail(`get_blob with a ${label} handle`, () =>
      client.getBlobChunk(computer, handle, { offset: 0, maxChunkBytes: 0, binary: false }),
    );
    const w = wireCode(err);
    check(w.code === 4018, `${label}: expected 4018, got ${w.name} ${w.code ?? ""}`);
    check(w.reason === "invalid_handle", `${label}: reason ${w.reason}`);
  }
  // The genuine handle still works, and a bad offset on it is `range`.
  const ok = await client.getBlobChunk(computer, h, {
    offset: 0,
    maxChunkBytes: 16,
    binary: false,
  });
  check(ok.sha256 === logo.sha256, "genuine handle: wrong sha256");
  const range = await mustFail("get_blob past the end", () =>
    client.getBlobChunk(computer, h, { offset: logo.size + 1, maxChunkBytes: 0, binary: false }),
  );
  check(wireCode(range).reason === "range", `past the end: ${wireCode(range).reason}`);
  return {
    bytes: 0,
    verified: null,
    restarts: 0,
    detail: `4018 invalid_handle for ${forged.map((f) => f[0]).join(", ")}; range past the end`,
  };
};

/**
 * The Agent of office A reaches for office B's Computer (must be 404: "no Computer of that name
 * in the sender's office, whether it exists elsewhere or not"), a fresh socket that joined no
 * office sends a request (4103), and a second Agent tries to join office A while its Agent is
 * there (refused: at most one Agent per office).
 */
export const crossOfficeProbe: Scenario = async ({ client, plan, computer }) => {
  const target = plan.neighbour.computer;
  const e1 = await mustFail(`get_skills to ${target} in another office`, () =>
    client.getSkills(target),
  );
  check(
    wireCode(e1).code === 404,
    `cross-office get_skills: ${wireCode(e1).name} ${wireCode(e1).code}`,
  );
  const e2 = await mustFail(`get_blob to ${target} in another office`, () =>
    client.getBlobChunk(target, "xyz", { offset: 0, maxChunkBytes: 0, binary: false }),
  );
  check(wireCode(e2).code === 404, `cross-office get_blob: ${wireCode(e2).code}`);

  // Through another node when there is one: the office rule must hold across nodes (D5).
  const intruderUrl = plan.otherServerUrl ?? plan.serverUrl;
  const intruder = new AgentClient({
    url: intruderUrl,
    token: plan.token,
    name: `${plan.agent}-intruder`,
  });
  try {
    await intruder.connect();
    const e3 = await mustFail("request before joining an office", () =>
      intruder.getSkills(computer),
    );
    check(
      wireCode(e3).code === 4103,
      `no-office request: ${wireCode(e3).name} ${wireCode(e3).code}`,
    );
    const e4 = await mustFail(`second Agent joining ${plan.officeId}`, () =>
      intruder.joinOffice(plan.officeId),
    );
    check(wireCode(e4).name === "JoinOfficeError", `second Agent: ${wireCode(e4).name}`);
  } finally {
    await intruder.close();
  }
  const bad = new AgentClient({
    url: plan.serverUrl,
    token: `${plan.token}x`,
    name: `${plan.agent}-badtoken`,
  });
  const e5 = await mustFail("connect with a wrong token", () => bad.connect());
  await bad.close();
  check(wireCode(e5).code === 401, `wrong token: ${wireCode(e5).name} ${wireCode(e5).code}`);
  return {
    bytes: 0,
    verified: null,
    restarts: 0,
    detail: `404 for ${target} (office ${plan.neighbour.officeId}); 4103 before join; 2nd Agent refused${
      intruderUrl === plan.serverUrl ? "" : ` (via ${intruderUrl})`
    }; bad token 401`,
  };
};
