/**
 * Test harness for the tool service (`computer/tools/`): the demo MCP server over real stdio, a
 * real blob engine (handle codec + hash cache) as the minter, a temp state dir, and helpers to
 * call tools and drain sideband handles through `client:get_blob`.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { demoMcpCommand } from "../../scripts/demo/mcp-command.ts";
import { BlobEngine } from "../../computer/blob/engine.ts";
import { HandleCodec } from "../../computer/blob/handle.ts";
import { HashCache } from "../../computer/blob/hash-cache.ts";
import type { ComputerConfig } from "../../computer/contracts.ts";
import type { McpServers, StdioServerConfig } from "../../computer/tools/mcp-config.ts";
import { createToolService, type ToolService } from "../../computer/tools/service.ts";
import {
  CallToolResultSchema,
  type CallToolResult,
  type GetBlobRet,
  type SidebandMeta,
} from "../../protocol/index.ts";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Stdio config that runs the demo MCP server (scripts/demo/) on plain node. */
export async function demoServer(env?: Record<string, string>): Promise<StdioServerConfig> {
  return { ...(await demoMcpCommand()), cwd: REPO_ROOT, ...(env ? { env } : {}) };
}

export const quietLog = pino({ level: process.env.A2C_LOG_LEVEL ?? "silent" });

export interface ToolFixture {
  service: ToolService;
  engine: BlobEngine;
  config: ComputerConfig;
  dir: string;
  notifications: string[];
  call(
    tool: string,
    params?: Record<string, unknown>,
    timeout?: number,
    reqId?: string,
  ): Promise<CallToolResult>;
  /** Drains a handle through `client:get_blob` from offset 0 to eof. */
  pull(handle: string): Promise<{ bytes: Buffer; first: GetBlobRet }>;
  getBlobRaw(handle: string, offset?: number): ReturnType<BlobEngine["getBlob"]>;
  close(): Promise<void>;
}

export interface ToolFixtureOptions {
  config?: Partial<ComputerConfig>;
  servers?: McpServers;
  skillsHome?: string;
  spoolMaxBytes?: number;
  restartBaseMs?: number;
  /** Reuse a state dir (restart tests). */
  dir?: string;
  /** Handle key (restart tests share it). */
  key?: Buffer;
}

let reqCounter = 0;
export const nextReqId = (): string =>
  `req-${process.pid}-${++reqCounter}-${randomBytes(3).toString("hex")}`;

export async function toolFixture(opts: ToolFixtureOptions = {}): Promise<ToolFixture> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "a2c-tools-"));
  const config: ComputerConfig = {
    name: "tools-test",
    stateDir: dir,
    inlineBudget: 32 * 1024,
    maxSize: 100 * 1024 * 1024,
    maxHttpBufferSize: 1_000_000,
    ...opts.config,
  };
  const codec = new HandleCodec(opts.key ?? randomBytes(32));
  const engine = new BlobEngine({
    codec,
    hashCache: new HashCache({ pool: null }),
    maxHttpBufferSize: config.maxHttpBufferSize,
  });
  const service = await createToolService({
    config,
    servers: opts.servers ?? { demo: await demoServer() },
    minter: engine,
    log: quietLog,
    ...(opts.skillsHome ? { skillsHome: opts.skillsHome } : {}),
    ...(opts.spoolMaxBytes ? { spoolMaxBytes: opts.spoolMaxBytes } : {}),
    restartBaseMs: opts.restartBaseMs ?? 50,
  });
  for (const p of service.producers) engine.register(p);
  const notifications: string[] = [];
  service.attach?.((e) => notifications.push(e));
  const ctrl = new AbortController();
  const handler = service.handlers["client:tool_call"];
  assert.ok(handler);

  const getBlobRaw = (handle: string, offset = 0) =>
    engine.getBlob({
      agent: "agent",
      req_id: nextReqId(),
      computer: config.name,
      blob_handle: handle,
      chunk_offset: offset,
    });

  return {
    service,
    engine,
    config,
    dir,
    notifications,
    async call(tool, params = {}, timeout = 30, reqId = nextReqId()) {
      const ret = await handler(
        { agent: "agent", req_id: reqId, computer: config.name, tool_name: tool, params, timeout },
        { signal: ctrl.signal, log: quietLog },
      );
      // Always a valid CallToolResult, never a flat ErrorPayload (protocol.md §8.2).
      assert.ok(!("code" in ret && "message" in ret), `flat error: ${JSON.stringify(ret)}`);
      return CallToolResultSchema.parse(ret);
    },
    async pull(handle) {
      const parts: Buffer[] = [];
      let offset = 0;
      let first: GetBlobRet | undefined;
      for (;;) {
        const ret = await getBlobRaw(handle, offset);
        assert.ok(!("code" in ret), `get_blob failed: ${JSON.stringify(ret)}`);
        const chunk = ret;
        first ??= chunk;
        const bytes = Buffer.from(chunk.blob as string, "base64");
        parts.push(bytes);
        offset += bytes.length;
        if (chunk.eof) break;
      }
      return { bytes: Buffer.concat(parts), first: first };
    },
    getBlobRaw,
    async close() {
      ctrl.abort();
      await service.close();
      await engine.close();
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The sideband markers of content item `i` (asserts they are all there). */
export function sidebandOf(result: CallToolResult, i: number): Required<SidebandMeta> {
  const meta = result.content[i]?._meta;
  assert.ok(meta?.a2c_blob_handle, `content[${i}] has no a2c_blob_handle`);
  assert.equal(typeof meta.a2c_total_size, "number");
  assert.match(meta.a2c_sha256 ?? "", /^[0-9a-f]{64}$/);
  return meta as Required<SidebandMeta>;
}

export function textOf(result: CallToolResult): string {
  return result.content
    .map((c) => (c.type === "text" ? (c as { text: string }).text : ""))
    .join("\n");
}
