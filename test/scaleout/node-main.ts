/**
 * A Server node as its own process, for the crash test (it gets SIGKILLed) and the two-node
 * measurement. Env: REDIS_URL (empty: a plain in-memory node), A2C_REDIS_PREFIX,
 * A2C_REDIS_ADAPTER (`classic` | `sharded`). Prints `listening on URL` like `server/main.ts`.
 */
import { startServer } from "../../server/server.ts";
import { TOKEN, quiet, startNodeFromEnv } from "./cluster-harness.ts";

const url = process.env.REDIS_URL
  ? (await startNodeFromEnv()).url
  : (await startServer({ port: 0, tokens: [TOKEN], logger: quiet })).url;
process.stdout.write(`listening on ${url}\n`);
