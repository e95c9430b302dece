/**
 * A Server node as its own process, for the crash test (it gets SIGKILLed). Env: REDIS_URL,
 * A2C_REDIS_PREFIX. Prints `listening on URL` like `server/main.ts`.
 */
import { startNodeFromEnv } from "./cluster-harness.ts";

const node = await startNodeFromEnv();
process.stdout.write(`listening on ${node.url}\n`);
