/**
 * Which Server node each process of the stack talks to (`--nodes N`).
 *
 * Agent i is on node i mod N; Computer k of office i on node (i + 1 + k) mod N. With N >= 2 every
 * office's first Computer is therefore on another node than its Agent: each Agent reaches it
 * through the Redis bus (the path scale-out must keep exact), while the nodes carry equal loads.
 * A second Computer per office lands back on the Agent's node when N = 2, so both paths run.
 * With N = 1 everything is on the one node, as before.
 */

/** `server` alone; `server-a`, `server-b`, ... when there are several. */
export function nodeName(index: number, nodes: number): string {
  return nodes === 1 ? "server" : `server-${String.fromCharCode(97 + index)}`;
}

export function agentNode(office: number, nodes: number): number {
  return office % nodes;
}

export function computerNode(office: number, k: number, nodes: number): number {
  return (office + 1 + k) % nodes;
}

/** A node other than `node` (the same one when there is only one). */
export function otherNode(node: number, nodes: number): number {
  return (node + 1) % nodes;
}
