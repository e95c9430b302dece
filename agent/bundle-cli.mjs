/**
 * Run after `tsc -b` (`npm run build`): bundles the built `a2c-agent` command (dist/cli.js and
 * everything it imports: the SDK, @a2c-smcp/protocol, socket.io-client, zod) into one file,
 * dist/a2c-agent.js, the package's bin. A command pays its module loading on every run: one
 * file to read and compile instead of about a hundred to resolve is a third less start-up time.
 * The SDK's own modules in dist/ stay as tsc wrote them. Left outside, loaded from node_modules
 * when present: ws's optional native add-ons, and pino (loaded on the first log line only).
 */
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

const dist = fileURLToPath(new URL("dist/", import.meta.url));

await build({
  entryPoints: [`${dist}cli.js`],
  outfile: `${dist}a2c-agent.js`,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["bufferutil", "utf-8-validate", "pino", "pino-pretty"],
  // The CommonJS modules inside (ws, debug) `require` Node's built-ins: give them a require.
  banner: {
    js: "import { createRequire as a2cCreateRequire } from 'node:module'; const require = a2cCreateRequire(import.meta.url);",
  },
  logLevel: "warning",
});
