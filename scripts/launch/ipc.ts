/**
 * Parent ↔ child request/answer over Node's IPC channel: a child serves named commands, the
 * parent calls them and awaits the answers (or the child's death). The links harness's drivers
 * (scripts/links/) and the bench's load processes (bench/lib/ipc.ts adds the cost commands) speak
 * it.
 */
import type { ChildProcess } from "node:child_process";

interface RequestMsg {
  kind: "req";
  id: number;
  cmd: string;
  args: unknown;
}
interface AnswerMsg {
  kind: "ans";
  id: number;
  ok: boolean;
  value?: unknown;
  error?: { name: string; message: string; stack?: string };
}
interface ReadyMsg {
  kind: "ready";
}
/** Every message either side sends. */
export type Msg = RequestMsg | AnswerMsg | ReadyMsg;

export type Handler = (args: unknown) => Promise<unknown>;

/**
 * Child side: answers the parent's commands with `handlers`, then announces readiness. The child
 * exits when the parent goes away (IPC disconnect).
 */
export function serve(handlers: Record<string, Handler>): void {
  if (!process.send) throw new Error("serve() must run in a child forked with an IPC channel");
  process.on("message", (raw: Msg) => {
    if (raw.kind !== "req") return;
    const handler = handlers[raw.cmd];
    const reply = (msg: AnswerMsg): void => {
      if (process.connected) process.send?.(msg);
    };
    if (!handler) {
      reply({
        kind: "ans",
        id: raw.id,
        ok: false,
        error: { name: "Error", message: `unknown command ${raw.cmd}` },
      });
      return;
    }
    handler(raw.args).then(
      (value) => reply({ kind: "ans", id: raw.id, ok: true, value }),
      (err: unknown) => {
        const e = err instanceof Error ? err : new Error(String(err));
        reply({
          kind: "ans",
          id: raw.id,
          ok: false,
          error: { name: e.name, message: e.message, stack: e.stack },
        });
      },
    );
  });
  process.on("disconnect", () => process.exit(0));
  process.send({ kind: "ready" } satisfies ReadyMsg);
}

/** Parent side handle on one child process. */
export class Child {
  readonly name: string;
  readonly proc: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  private exited: Error | null = null;
  private stderrTail = "";

  /**
   * `errors`: error classes to rebuild by name from a child's failure (others come back as
   * `Error`), so a caller can tell them apart with `instanceof`.
   */
  constructor(
    name: string,
    proc: ChildProcess,
    private readonly errors: Record<string, new (message: string) => Error> = {},
  ) {
    this.name = name;
    this.proc = proc;
    proc.stderr?.on("data", (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString("utf8")).slice(-4000);
      if (process.env.A2C_BENCH_VERBOSE) process.stderr.write(`[${name}] ${d.toString("utf8")}`);
    });
    proc.on("message", (msg: Msg) => {
      if (msg.kind !== "ans") return;
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.ok) p.resolve(msg.value);
      else p.reject(rebuildError(this.name, msg.error, this.errors));
    });
    proc.on("exit", (code, signal) => {
      this.exited = new Error(
        `${name} exited (code ${String(code)}, signal ${String(signal)})${this.stderrTail ? `: ${this.stderrTail}` : ""}`,
      );
      for (const p of this.pending.values()) p.reject(this.exited);
      this.pending.clear();
    });
  }

  get pid(): number {
    return this.proc.pid ?? -1;
  }

  /** Sends one command and waits for its answer (or the child's death). */
  call<T>(cmd: string, args: unknown = null): Promise<T> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.proc.send({ kind: "req", id, cmd, args } satisfies RequestMsg);
    });
  }

  /** Ends the child: IPC disconnect (the child exits on it), then SIGKILL if it lingers. */
  async close(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.proc.once("exit", () => resolve()));
    if (this.proc.connected) this.proc.disconnect();
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 5000);
    await gone;
    clearTimeout(timer);
  }
}

function rebuildError(
  child: string,
  e: AnswerMsg["error"],
  errors: Record<string, new (message: string) => Error>,
): Error {
  const message = `${child}: ${e?.message ?? "unknown error"}`;
  const Rebuilt = e?.name !== undefined ? errors[e.name] : undefined;
  const err = Rebuilt ? new Rebuilt(message) : new Error(message);
  if (e?.stack) err.stack = `${err.name}: ${message}\n--- in child ---\n${e.stack}`;
  return err;
}
