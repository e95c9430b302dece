/** Flags of `npm run stack`. */
import { parseArgs } from "node:util";
import { DEFAULT_BIG_SIZE } from "./demo-data.ts";

export interface StackOptions {
  /** Scripted Agent processes; each one works in its own office. */
  agents: number;
  /** Computer processes per office. */
  computers: number;
  /** Leave the Server and Computers running after the scenarios; print how to connect. */
  keep: boolean;
  /** Final report as JSON on stdout (progress goes to stderr). */
  json: boolean;
  /** Server nodes; more than one share a Redis started by the stack. */
  nodes: number;
  /** First Server node's port; 0 picks a free one (other nodes always get free ports). */
  port: number;
  /** Size of the big demo file in bytes. */
  bigSize: number;
  /** Run only these scenario ids (all when empty). */
  only: string[];
  help: boolean;
}

/** Every node is a process on this machine; more than a few only competes for the same cores. */
export const MAX_NODES = 8;

export const USAGE = `Usage: npm run stack -- [options]

Starts a Server, Computers and scripted Agents as separate processes on loopback, runs every
transport scenario against them and prints a summary. Exit code 0 only when all passed.

  --agents N      scripted Agents, each in its own office (default 3, at least 2)
  --computers N   Computers per office (default 1)
  --nodes N       Server nodes (default 1, at most ${MAX_NODES}); with 2 or more the stack also starts
                  a redis-server, every node uses it (--redis), and each Agent reaches its
                  office's Computers through another node
  --keep          keep the Server and Computers running afterwards and print how to
                  connect the Agent CLI to them; Ctrl-C stops everything
  --json          print the final report as JSON on stdout (progress goes to stderr)
  --port P        port of the (first) Server node (default: a free port)
  --big-mib N     size of the big demo file in MiB (default 64)
  --only a,b      run only these scenarios (ids as in the summary table)
  -h, --help      this text
`;

function positiveInt(name: string, raw: string | undefined, fallback: number, min = 1): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    throw new Error(`--${name} must be an integer >= ${min} (got ${JSON.stringify(raw)})`);
  }
  return n;
}

export function parseStackOptions(argv: string[]): StackOptions {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      agents: { type: "string" },
      computers: { type: "string" },
      keep: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      nodes: { type: "string" },
      port: { type: "string" },
      "big-mib": { type: "string" },
      only: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  const port = positiveInt("port", values.port, 0, 0);
  if (port > 65535) throw new Error(`--port must be <= 65535 (got ${port})`);
  const nodes = positiveInt("nodes", values.nodes, 1);
  if (nodes > MAX_NODES) throw new Error(`--nodes must be <= ${MAX_NODES} (got ${nodes})`);
  return {
    // Two offices at least: the cross-office probe needs a neighbour whose Agent is present.
    agents: positiveInt("agents", values.agents, 3, 2),
    computers: positiveInt("computers", values.computers, 1),
    keep: values.keep,
    json: values.json,
    nodes,
    port,
    bigSize: positiveInt("big-mib", values["big-mib"], DEFAULT_BIG_SIZE / 1048576) * 1048576,
    only: (values.only ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    help: values.help,
  };
}
