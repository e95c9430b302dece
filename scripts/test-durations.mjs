/**
 * A reporter of scripts/run-tests.ts: how long each test file's top-level tests took, as one
 * JSON object `{file: ms}` at the end of the run. The runner starts the longest files first
 * next time.
 */
export default async function* durations(source) {
  const byFile = {};
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { file, nesting, details } = event.data;
    if (!file || nesting !== 0) continue;
    byFile[file] = Math.round((byFile[file] ?? 0) + (details?.duration_ms ?? 0));
  }
  yield JSON.stringify(byFile);
}
