/**
 * The client side of MCP's stdio transport (a server as a child process, newline-delimited
 * JSON-RPC on its stdin and stdout), written on the MCP SDK's public `Transport` interface.
 *
 * Why our own: the SDK's `StdioClientTransport` (v1.32) concatenates its whole pending buffer
 * with every 64 KiB pipe read and scans it again for a newline, so a 7 MB tool result (a 5 MB
 * screenshot in base64) costs ~110 copies of a growing buffer, seconds on a busy host. Here each
 * pipe read is scanned once and a message's pieces are joined once, when its newline arrives.
 *
 * Otherwise it behaves as the SDK's does: the child gets only the environment variables the SDK
 * deems safe to inherit (`getDefaultEnvironment`) plus the configured ones, no shell; a message
 * over `maxMessageBytes` is an error and closes the transport; a line that is not a JSON-RPC
 * message is reported to `onerror` and skipped; `close` ends stdin, then SIGTERM after 2 s, then
 * SIGKILL after 2 s more; `onclose` runs once the child has exited.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { PassThrough, type Stream } from "node:stream";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** The SDK's own default bound on one message. */
export const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024;
const CLOSE_STEP_MS = 2_000;
const NEWLINE = 0x0a;

export interface StdioServerProcess {
  command: string;
  args?: string[];
  /** Added to the safe inherited environment. */
  env?: Record<string, string>;
  cwd?: string;
  /** The child's stderr: piped to `stderr` (default), or inherited, or ignored. */
  stderr?: "pipe" | "inherit" | "ignore";
  /** Largest single message accepted from the server. */
  maxMessageBytes?: number;
}

export class StdioClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #params: StdioServerProcess;
  readonly #maxBytes: number;
  readonly #stderr: PassThrough | null;
  #child: ChildProcess | undefined;
  #started = false;
  /** Pieces of the message whose newline has not arrived yet. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  constructor(params: StdioServerProcess) {
    this.#params = params;
    this.#maxBytes = params.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    // Available before `start`, so nothing the server writes early is lost.
    this.#stderr = (params.stderr ?? "pipe") === "pipe" ? new PassThrough() : null;
  }

  /** The server's stderr while it is piped. */
  get stderr(): Stream | null {
    return this.#stderr;
  }

  /** The child's process id while it runs. */
  get pid(): number | null {
    return this.#child?.pid ?? null;
  }

  start(): Promise<void> {
    if (this.#started) throw new Error("StdioClientTransport already started");
    this.#started = true;
    return new Promise((resolve, reject) => {
      const p = this.#params;
      const child = spawn(p.command, p.args ?? [], {
        env: { ...getDefaultEnvironment(), ...p.env },
        stdio: ["pipe", "pipe", this.#stderr ? "pipe" : (p.stderr ?? "pipe")],
        shell: false,
        windowsHide: true,
        ...(p.cwd !== undefined ? { cwd: p.cwd } : {}),
      });
      this.#child = child;
      child.on("error", (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.on("spawn", () => resolve());
      child.on("close", () => {
        this.#child = undefined;
        this.#clear();
        this.onclose?.();
      });
      child.stdin?.on("error", (err) => this.onerror?.(err));
      child.stdout?.on("data", (chunk: Buffer) => this.#read(chunk));
      child.stdout?.on("error", (err) => this.onerror?.(err));
      if (this.#stderr) child.stderr?.pipe(this.#stderr);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin) return Promise.reject(new Error("Not connected"));
    return new Promise((resolve) => {
      if (stdin.write(`${JSON.stringify(message)}\n`)) resolve();
      else stdin.once("drain", resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.#child;
    this.#clear();
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    const within = (ms: number): Promise<void> =>
      Promise.race([exited, new Promise<void>((r) => setTimeout(r, ms).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // already closed
    }
    await within(CLOSE_STEP_MS);
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      if (signal === "SIGTERM") await within(CLOSE_STEP_MS);
    }
  }

  /** Scans one pipe read for newlines: each finished line is a message, the rest waits. */
  #read(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      const end = nl === -1 ? chunk.length : nl;
      if (this.#pendingBytes + (end - start) > this.#maxBytes) {
        this.#clear();
        this.onerror?.(new Error(`MCP message exceeded ${this.#maxBytes} bytes`));
        void this.close();
        return;
      }
      if (nl === -1) break;
      const piece = chunk.subarray(start, nl);
      const line = this.#pending.length === 0 ? piece : Buffer.concat([...this.#pending, piece]);
      this.#pending = [];
      this.#pendingBytes = 0;
      start = nl + 1;
      this.#deliver(line);
    }
    if (start < chunk.length) {
      this.#pending.push(chunk.subarray(start));
      this.#pendingBytes += chunk.length - start;
    }
  }

  #deliver(line: Buffer): void {
    let end = line.length;
    if (end > 0 && line[end - 1] === 0x0d) end--; // CRLF
    if (end === 0) return;
    let message: JSONRPCMessage;
    try {
      message = JSONRPCMessageSchema.parse(JSON.parse(line.toString("utf8", 0, end)));
    } catch (err) {
      this.onerror?.(err as Error);
      return;
    }
    this.onmessage?.(message);
  }

  #clear(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
  }
}
