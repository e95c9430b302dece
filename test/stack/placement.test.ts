// @pure
/**
 * `--nodes N` placement: with several nodes every Agent has a Computer of its office on another
 * node (its requests cross the Redis bus), the nodes share the processes evenly, and one node
 * keeps everything where it was.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseStackOptions } from "../../scripts/stack/options.ts";
import { agentNode, computerNode, nodeName, otherNode } from "../../scripts/stack/placement.ts";

/** Processes per node differ by at most one. */
function balanced(nodesOf: number[], nodes: number): boolean {
  const load = new Array<number>(nodes).fill(0);
  for (const n of nodesOf) load[n]!++;
  return Math.max(...load) - Math.min(...load) <= 1;
}

void test("with several nodes each office's first Computer is on another node than its Agent", () => {
  for (const nodes of [2, 3, 8]) {
    for (const agents of [2, 3, 5, 16]) {
      const offices = Array.from({ length: agents }, (_, i) => i);
      for (const i of offices) {
        const a = agentNode(i, nodes);
        assert.notEqual(computerNode(i, 0, nodes), a, `office ${i + 1} on ${nodes} nodes`);
        assert.notEqual(otherNode(a, nodes), a, "the probe's intruder uses another node");
      }
      // Spread evenly, Agents and Computers alike (round-robin).
      assert.ok(
        balanced(
          offices.map((i) => agentNode(i, nodes)),
          nodes,
        ),
      );
      for (const k of [0, 1, 2]) {
        assert.ok(
          balanced(
            offices.map((i) => computerNode(i, k, nodes)),
            nodes,
          ),
        );
      }
    }
  }
  // Two Computers per office on two nodes: one path crosses the bus, one stays on the node.
  assert.deepEqual(
    [0, 1].map((k) => computerNode(0, k, 2)),
    [1, 0],
  );
  assert.deepEqual(
    [0, 1].map((i) => nodeName(i, 2)),
    ["server-a", "server-b"],
  );
});

void test("one node: everything on it, named as before", () => {
  for (let i = 0; i < 4; i++) {
    assert.equal(agentNode(i, 1), 0);
    assert.equal(computerNode(i, 1, 1), 0);
    assert.equal(otherNode(0, 1), 0);
  }
  assert.equal(nodeName(0, 1), "server");
});

void test("--nodes defaults to 1 and is bounded", () => {
  assert.equal(parseStackOptions([]).nodes, 1);
  assert.equal(parseStackOptions(["--nodes", "2"]).nodes, 2);
  assert.throws(() => parseStackOptions(["--nodes", "0"]), /--nodes must be an integer >= 1/);
  assert.throws(() => parseStackOptions(["--nodes", "9"]), /--nodes must be <= 8/);
  assert.throws(() => parseStackOptions(["--nodes", "x"]), /--nodes/);
});
