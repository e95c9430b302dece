/**
 * The "text MIME" rule of the SKILL channel (protocol.md §7.8), shared by the Computer
 * (text within the budget is inlined as `body`) and the Agent (a text handle is drained into
 * `body`): top-level type `text`; or a `+json` / `+xml` / `+yaml` suffix; or one of the listed
 * essences. Everything else is binary. Parameters after `;` are ignored; case-insensitive.
 */
const TEXT_ESSENCES = new Set([
  "application/json",
  "application/xml",
  "application/yaml",
  "application/toml",
  "application/javascript",
]);

export function isTextMime(mime: string): boolean {
  const essence = (mime.split(";")[0] ?? "").trim().toLowerCase();
  if (essence.startsWith("text/")) return true;
  if (/\+(json|xml|yaml)$/.test(essence)) return true;
  return TEXT_ESSENCES.has(essence);
}
