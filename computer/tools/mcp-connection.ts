/**
 * One configured MCP server, spoken to through `@modelcontextprotocol/sdk`: started (stdio child
 * process or Streamable HTTP), its tool list kept current (`tools/list` with cursors, refreshed on
 * `notifications/tools/list_changed`), restarted with exponential back-off when it dies.
 *
 * While a server is restarting its last known tools stay listed, so a call to one of them gets a
 * clear "server unavailable" isError rather than a "tool not found"; the list changes only when the
 * server itself reports a different one.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolResult as McpCallToolResult,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type Tool,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import { PROTOCOL_VERSION } from "@a2c-smcp/protocol";
import { isStdio, type McpServerConfig } from "./mcp-config.ts";
import { StdioClientTransport } from "./mcp-stdio.ts";
import { ServerUnavailableError } from "./results.ts";

export type ConnectionState = "starting" | "ready" | "restarting" | "closed";

export interface ConnectionEvents {
  /** The tool list differs from the last one reported (including the first successful listing). */
  toolsChanged(bundleId: string): void;
  /** Connected (first time or after a restart). */
  up(bundleId: string, client: Client): void;
  /** The server went away (process died, transport closed). */
  down(bundleId: string): void;
  /** `notifications/resources/list_changed` or `notifications/resources/updated`. */
  resourcesChanged(bundleId: string, uri?: string): void;
}

export interface ConnectionOptions {
  bundleId: string;
  config: McpServerConfig;
  log: Logger;
  events: ConnectionEvents;
  /** First restart delay; doubles per consecutive failure. Default 500 ms. */
  restartBaseMs?: number;
  /** Largest restart delay. Default 30 s. */
  restartMaxMs?: number;
  /** Timeout of initialize and tools/list. Default 30 s. */
  requestTimeoutMs?: number;
  /** Largest single JSON-RPC message accepted from a stdio server. */
  maxMessageBytes?: number;
}

/** A server that stays up this long resets the back-off. */
const STABLE_MS = 10_000;

export class McpConnection {
  readonly bundleId: string;
  private readonly opts: ConnectionOptions;
  private readonly log: Logger;
  private client: Client | null = null;
  private _state: ConnectionState = "starting";
  private _tools: Tool[] = [];
  private toolsKey = "";
  private failures = 0;
  private upSince = 0;
  private restartTimer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private refreshAgain = false;
  private _pid: number | null = null;

  constructor(opts: ConnectionOptions) {
    this.opts = opts;
    this.bundleId = opts.bundleId;
    this.log = opts.log.child({ mcp_server: opts.bundleId });
  }

  get state(): ConnectionState {
    return this._state;
  }

  get tools(): readonly Tool[] {
    return this._tools;
  }

  /** The child process id of a stdio server while it runs (diagnostics and tests). */
  get pid(): number | null {
    return this._pid;
  }

  /** First connection attempt; resolves either way (a failure schedules a restart). */
  async start(): Promise<void> {
    await this.connect();
  }

  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: { signal: AbortSignal; timeoutMs: number },
  ): Promise<McpCallToolResult> {
    const client = this.client;
    if (this._state !== "ready" || !client) throw new ServerUnavailableError(this.bundleId);
    const result = await client.callTool({ name, arguments: args }, undefined, {
      signal: options.signal,
      timeout: options.timeoutMs,
    });
    return result as McpCallToolResult;
  }

  /** The live client, for resource reads (skill staging). */
  get liveClient(): Client | null {
    return this._state === "ready" ? this.client : null;
  }

  async close(): Promise<void> {
    this._state = "closed";
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    const client = this.client;
    this.client = null;
    this._pid = null;
    await client?.close().catch(() => undefined);
  }

  private makeTransport(): Transport {
    const cfg = this.opts.config;
    if (isStdio(cfg)) {
      const transport = new StdioClientTransport({
        command: cfg.command,
        args: cfg.args,
        ...(cfg.env ? { env: cfg.env } : {}),
        ...(cfg.cwd ? { cwd: cfg.cwd } : {}),
        stderr: "pipe",
        ...(this.opts.maxMessageBytes ? { maxMessageBytes: this.opts.maxMessageBytes } : {}),
      });
      // The server's stderr is its log: forward it at debug level instead of inheriting it.
      transport.stderr?.on("data", (chunk: Buffer) =>
        this.log.debug({ stderr: chunk.toString("utf8").slice(0, 4096) }, "mcp server stderr"),
      );
      return transport;
    }
    return new StreamableHTTPClientTransport(new URL(cfg.url), {
      requestInit: cfg.headers ? { headers: cfg.headers } : {},
    });
  }

  private async connect(): Promise<void> {
    if (this._state === "closed") return;
    const client = new Client(
      { name: "a2c-computer", version: PROTOCOL_VERSION },
      { capabilities: {} },
    );
    const transport = this.makeTransport();
    client.onerror = (err) => this.log.debug({ err }, "mcp client error");
    client.onclose = () => {
      if (this.client === client) this.onDown();
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.refreshTools());
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () =>
      this.opts.events.resourcesChanged(this.bundleId),
    );
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) =>
      this.opts.events.resourcesChanged(this.bundleId, n.params.uri),
    );
    this.client = client;
    try {
      await client.connect(transport, { timeout: this.opts.requestTimeoutMs ?? 30_000 });
      if ((this._state as ConnectionState) === "closed") {
        await client.close().catch(() => undefined);
        return;
      }
      this._pid = transport instanceof StdioClientTransport ? transport.pid : null;
      await this.listTools(client);
    } catch (err) {
      this.log.error({ err }, "mcp server failed to start");
      if (this.client === client) {
        this.client = null;
        this._pid = null;
        await client.close().catch(() => undefined);
        this.scheduleRestart();
      }
      return;
    }
    if (this.client !== client) return; // died while listing; onDown already handled it
    this._state = "ready";
    this.upSince = Date.now();
    this.log.info({ tools: this._tools.length, pid: this._pid }, "mcp server ready");
    this.opts.events.up(this.bundleId, client);
  }

  private onDown(): void {
    if (this._state === "closed") return;
    this.log.warn("mcp server went away");
    this.client = null;
    this._pid = null;
    if (this._state === "ready") this.opts.events.down(this.bundleId);
    if (this.upSince > 0 && Date.now() - this.upSince >= STABLE_MS) this.failures = 0;
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this._state === "closed" || this.restartTimer) return;
    this._state = "restarting";
    const base = this.opts.restartBaseMs ?? 500;
    const max = this.opts.restartMaxMs ?? 30_000;
    const delay = Math.min(max, base * 2 ** Math.min(this.failures, 30));
    this.failures++;
    this.log.info({ delay_ms: delay, attempt: this.failures }, "mcp server restart scheduled");
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      void this.connect();
    }, delay);
    this.restartTimer.unref();
  }

  /** Serialized refresh: a notification during a listing triggers exactly one more listing. */
  private refreshTools(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        const client = this.liveClient;
        if (!client) break;
        await this.listTools(client).catch((err: unknown) =>
          this.log.warn({ err }, "tools/list failed"),
        );
      } while (this.refreshAgain);
      this.refreshing = null;
    })();
    return this.refreshing;
  }

  private async listTools(client: Client): Promise<void> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    const seen = new Set<string>();
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: this.opts.requestTimeoutMs ?? 30_000,
      });
      tools.push(...page.tools);
      cursor = page.nextCursor;
      // A server that repeats a cursor would loop forever.
      if (cursor !== undefined) {
        if (seen.has(cursor)) break;
        seen.add(cursor);
      }
    } while (cursor !== undefined);
    const key = JSON.stringify(tools);
    if (key === this.toolsKey) return;
    this.toolsKey = key;
    this._tools = tools;
    this.opts.events.toolsChanged(this.bundleId);
  }
}
