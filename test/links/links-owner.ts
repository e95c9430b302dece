/**
 * A process that owns a link topology and then ends badly, for the harness test's cleanup checks:
 * `exit` calls process.exit(0) without closing, `kill` SIGKILLs itself (nothing of it runs after).
 * It prints the topology's namespaces and the pid of a process it started in one, as one JSON line.
 */
import { openLinks } from "../../scripts/links/topology.ts";

const how = process.argv[2];
const links = await openLinks({ agents: 1, computers: 1, prefix: "lkt" });
const sleeper = links.spawn(links.agents[0]!, {
  name: "sleeper",
  command: process.execPath,
  args: ["-e", "setInterval(() => {}, 1000)"],
});
console.log(JSON.stringify({ namespaces: links.namespaces, pid: sleeper.pid }));
if (how === "kill") process.kill(process.pid, "SIGKILL");
else process.exit(0);
