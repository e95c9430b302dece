/** Not written yet. */
import { SkipSection, type Ctx } from "../lib/context.ts";

export async function runCapacity(_ctx: Ctx): Promise<never> {
  throw new SkipSection("not implemented yet");
}
