/**
 * Computer configuration inputs (`client:get_config` → `inputs[]`). This stack's Computer serves
 * no `get_config`; the schema is here so that every role reads a `pickString` input the way
 * protocol 0.3.2 defines it.
 */
import { z } from "zod";

/** One choice: `label` is shown, `value` is injected. Duplicates are allowed. */
export const PickStringOptionSchema = z.looseObject({
  label: z.string().min(1),
  value: z.string().min(1),
});
export type PickStringOption = z.infer<typeof PickStringOptionSchema>;

/**
 * A `pickString` input (0.3.2, breaking: `options` is no longer `string[]`, and that old form is
 * refused with an error naming the new shape). A `default` present and non-null must be some
 * option's `value`; an explicit null means no default.
 */
export const PickStringInputSchema = z
  .looseObject({
    id: z.string().min(1),
    type: z.literal("pickString"),
    description: z.string().optional(),
    options: z
      .array(
        z.unknown().transform((o, ctx) => {
          const parsed = PickStringOptionSchema.safeParse(o);
          if (parsed.success) return parsed.data;
          ctx.addIssue({
            code: "custom",
            message:
              typeof o === "string"
                ? "pickString options are [{label, value}] objects since protocol 0.3.2, not strings"
                : "a pickString option is {label, value} with both non-empty",
          });
          return z.NEVER;
        }),
      )
      .min(1),
    default: z.string().nullable().optional(),
  })
  .refine(
    (i) =>
      i.default === undefined || i.default === null || i.options.some((o) => o.value === i.default),
    { message: "default must be the value of one of the options" },
  );
export type PickStringInput = z.infer<typeof PickStringInputSchema>;

/**
 * The value a `pickString` input injects: the stored choice, which must be some option's value
 * (no fallback, upstream's InvalidSelectionError), else `default`, else the first option's value.
 */
export function resolvePickString(
  input: PickStringInput,
  stored: string | undefined,
): { ok: true; value: string } | { ok: false; message: string } {
  if (stored !== undefined) {
    if (input.options.some((o) => o.value === stored)) return { ok: true, value: stored };
    return { ok: false, message: `'${stored}' is not one of the options of input '${input.id}'` };
  }
  return { ok: true, value: input.default ?? input.options[0]!.value };
}
