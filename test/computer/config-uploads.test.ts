// @pure
/**
 * The landing root and the upload bounds: `--landing-root` / `A2C_LANDING_ROOT` (absolute only;
 * read from flags and the environment, never from a file a project carries),
 * `--upload-idle-timeout` / `A2C_UPLOAD_IDLE_TIMEOUT` (seconds), `--upload-max-concurrent` /
 * `A2C_UPLOAD_MAX_CONCURRENT`, `--upload-max-bytes` / `A2C_UPLOAD_MAX_BYTES`. Flag over env; bad
 * input is a usage error; nothing set means upstream's defaults (120 s, 4, 100 MiB) and no root.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseComputerArgs, UsageError } from "../../computer/config.ts";

const base = ["--server", "http://127.0.0.1:1", "--office", "o", "--name", "n"];

void test("landing root: flag, env, flag over env, unset; absolute paths only", () => {
  assert.equal(
    parseComputerArgs([...base, "--landing-root", "/srv/land"], {})?.landingRoot,
    "/srv/land",
  );
  const env = { A2C_LANDING_ROOT: "/var/lib/a2c/landing" };
  assert.equal(parseComputerArgs(base, env)?.landingRoot, "/var/lib/a2c/landing");
  assert.equal(parseComputerArgs([...base, "--landing-root", "/x"], env)?.landingRoot, "/x");
  assert.equal(parseComputerArgs(base, {})?.landingRoot, undefined);
  assert.equal(parseComputerArgs(base, { A2C_LANDING_ROOT: "" })?.landingRoot, undefined);
  assert.equal(parseComputerArgs([...base, "--landing-root", " /t "], {})?.landingRoot, "/t");
  for (const bad of ["relative/path", "./here", "~/land"]) {
    assert.throws(() => parseComputerArgs([...base, "--landing-root", bad], {}), UsageError, bad);
    assert.throws(() => parseComputerArgs(base, { A2C_LANDING_ROOT: bad }), UsageError, bad);
  }
});

void test("upload bounds: upstream's variables, flags of the same meaning, seconds for the timeout", () => {
  const env = {
    A2C_UPLOAD_IDLE_TIMEOUT: "30",
    A2C_UPLOAD_MAX_CONCURRENT: "16",
    A2C_UPLOAD_MAX_BYTES: "1073741824",
  };
  assert.deepEqual(parseComputerArgs(base, env)?.upload, {
    idleTimeoutMs: 30_000,
    maxConcurrent: 16,
    maxBytes: 1073741824,
  });
  assert.deepEqual(
    parseComputerArgs([...base, "--upload-idle-timeout", "5", "--upload-max-concurrent", "2"], env)
      ?.upload,
    { idleTimeoutMs: 5000, maxConcurrent: 2, maxBytes: 1073741824 },
  );
  assert.deepEqual(parseComputerArgs([...base, "--upload-max-bytes", "17"], {})?.upload, {
    maxBytes: 17,
  });
  assert.equal(parseComputerArgs(base, {})?.upload, undefined);
  for (const bad of ["0", "-1", "1.5", "lots"]) {
    assert.throws(() => parseComputerArgs(base, { A2C_UPLOAD_MAX_CONCURRENT: bad }), UsageError);
    assert.throws(() => parseComputerArgs([...base, "--upload-idle-timeout", bad], {}), UsageError);
  }
});
