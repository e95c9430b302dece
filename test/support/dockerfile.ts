/**
 * A small reader of our Dockerfile (no Docker engine runs here): its stages, each stage's
 * instructions with line continuations joined, ENV as a map, and exec-form commands. Enough for
 * the tests that check the file and run its final stage's commands without Docker.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface Instruction {
  op: string;
  args: string;
}

export interface Stage {
  name: string | undefined;
  from: string;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (pending === "" && (line === "" || line.startsWith("#"))) continue;
    if (line.startsWith("#")) continue; // a comment inside a continued instruction
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    logical.push(pending + line);
    pending = "";
  }
  const stages: Stage[] = [];
  for (const line of logical) {
    const m = /^(\w+)\s+(.*)$/s.exec(line);
    if (!m) throw new Error(`unreadable Dockerfile line: ${line}`);
    const op = m[1]!.toUpperCase();
    const args = m[2]!.trim();
    if (op === "FROM") {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!from) throw new Error(`unreadable FROM: ${args}`);
      stages.push({ from: from[1]!, name: from[2], instructions: [] });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`${op} before FROM`);
      stage.instructions.push({ op, args });
    }
  }
  return stages;
}

/** The repo's Dockerfile. */
export function repoDockerfile(root: string): Stage[] {
  return parseDockerfile(readFileSync(join(root, "Dockerfile"), "utf8"));
}

export function stageNamed(stages: Stage[], name: string): Stage {
  const stage = stages.find((s) => s.name === name);
  if (!stage) throw new Error(`no stage ${name}`);
  return stage;
}

/** The last instruction `op` of a stage, or undefined. */
export function last(stage: Stage, op: string): Instruction | undefined {
  return stage.instructions.filter((i) => i.op === op).at(-1);
}

/**
 * A stage's ENV (`K=V` pairs, later ones winning), `$NAME` / `${NAME}` expanded from earlier
 * values or from `base` (the base image's environment).
 */
export function stageEnv(stage: Stage, base: NodeJS.ProcessEnv = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { op, args } of stage.instructions) {
    if (op !== "ENV") continue;
    for (const m of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
      const value = m[2]!.replace(/^"|"$/g, "");
      env[m[1]!] = value.replace(
        /\$\{?(\w+)\}?/g,
        (_, name: string) => env[name] ?? base[name] ?? "",
      );
    }
  }
  return env;
}

/** `["a", "b"]` (exec form) → argv; shell form is refused (it would need a shell). */
export function execForm(args: string): string[] {
  const argv = JSON.parse(args) as unknown;
  if (!Array.isArray(argv) || !argv.every((a) => typeof a === "string")) {
    throw new Error(`not an exec-form command: ${args}`);
  }
  return argv;
}

/** HEALTHCHECK's options and its exec-form command. */
export function healthcheck(stage: Stage): { options: Record<string, string>; argv: string[] } {
  const hc = last(stage, "HEALTHCHECK");
  if (!hc) throw new Error("no HEALTHCHECK");
  const m = /^((?:--[\w-]+=\S+\s+)*)CMD\s+(\[.*\])$/s.exec(hc.args);
  if (!m) throw new Error(`HEALTHCHECK is not options + exec-form CMD: ${hc.args}`);
  const options = Object.fromEntries(
    [...m[1]!.matchAll(/--([\w-]+)=(\S+)/g)].map((o) => [o[1]!, o[2]!]),
  );
  return { options, argv: execForm(m[2]!) };
}
