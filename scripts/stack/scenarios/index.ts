/** Scenario id → implementation (ids and titles are in ../plan.ts). */
import { crossOfficeProbe, forbiddenPath, forgedHandle } from "./adversarial.ts";
import { cliDownload } from "./cli.ts";
import type { Scenario } from "./context.ts";
import { pullSerial, pullWindow8, rewriteDuringPull } from "./pulls.ts";
import { listSkills, skillInline, skillOverBudget } from "./skills.ts";
import { toolCancel, toolPng, toolTimeout } from "./tools.ts";
import { uploadReadBack } from "./uploads.ts";

export const SCENARIO_IMPLS: Readonly<Record<string, Scenario>> = {
  "list-skills": listSkills,
  "skill-inline": skillInline,
  "skill-over-budget": skillOverBudget,
  "pull-serial": pullSerial,
  "pull-window-8": pullWindow8,
  "cli-download": cliDownload,
  "tool-png": toolPng,
  "tool-cancel": toolCancel,
  "tool-timeout": toolTimeout,
  "upload-read-back": uploadReadBack,
  "rewrite-during-pull": rewriteDuringPull,
  "forbidden-path": forbiddenPath,
  "forged-handle": forgedHandle,
  "cross-office-probe": crossOfficeProbe,
};
