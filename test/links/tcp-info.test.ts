/**
 * What the link harness reads of a TCP connection from `ss -ti` (the kernel's round trips and
 * delivery rate), and a plain flow's rate past its slow start from those and the receiver's marks.
 * @pure
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { steadyEstimate, steadyRate } from "../../scripts/links/plain-flow.ts";
import { parseTcpInfo } from "../../scripts/links/system.ts";

const SS = `0      0      10.77.3.2:9001 10.77.4.10:38146
\t bbr wscale:10,10 rto:304 rtt:101.373/2.155 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:340 bytes_sent:432652447 bytes_retrans:901279 bytes_acked:431751168 segs_out:7072 bbr:(bw:19128539bps,mrtt:100.2,pacing_gain:1,cwnd_gain:2) send 38972597bps lastsnd:64 pacing_rate 18767254bps delivery_rate 19081410bps delivered:7071 app_limited busy:476ms minrtt:100.201 snd_wnd:1893376`;

void test("ss -ti: round trips, delivery rate, app-limited and congestion control", () => {
  assert.deepEqual(parseTcpInfo(SS), {
    rttMs: 101.373,
    minRttMs: 100.201,
    deliveryRateBps: 19081410,
    appLimited: true,
    bytesAcked: 431751168,
    congestion: "bbr",
  });
  assert.equal(parseTcpInfo(SS.replace(" app_limited", ""))?.appLimited, false);
  assert.equal(parseTcpInfo("ESTAB 0 0 a:1 b:2"), null);
});

void test("the steady rate runs from the first mark at 30 % of the bytes to the last", () => {
  // 1 MB in the first second (slow start), then 1 MB per second for 9 s.
  const marks: Array<[number, number]> = [[1000, 1e6]];
  for (let s = 2; s <= 10; s++) marks.push([s * 1000, s * 1e6]);
  assert.equal(steadyRate(marks), ((10e6 - 3e6) * 8) / 7);
  assert.ok(Number.isNaN(steadyRate([])));
});

void test("the steady rate is the kernel's median unless it reads over 1.5x what the receiver got", () => {
  const marks: Array<[number, number]> = [];
  for (let s = 1; s <= 10; s++) marks.push([s * 1000, s * 250_000]); // 2 Mbit/s
  const received = steadyRate(marks);
  assert.deepEqual(steadyEstimate([1.9e6, 1.8e6, 2.1e6], marks), { bps: 1.9e6, from: "kernel" });
  // What a shaped Agent uplink without a round trip gave: the sender's samples at 6x the link.
  assert.deepEqual(steadyEstimate([11e6, 12e6, 10e6], marks), { bps: received, from: "receiver" });
  assert.deepEqual(steadyEstimate([1.9e6, 2e6], marks), { bps: received, from: "receiver" });
});
