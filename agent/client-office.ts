/**
 * The office layer of `AgentClient` (docs/protocol.md, "Offices"): joining one office, tracking its
 * Computers from `notify:*` (and from `server:list_room` when asked), rejoining after a
 * reconnect, and waiting for a Computer to be present. Kept apart from the socket plumbing
 * (`client-connection.ts`) and the request methods (`client.ts`) so each reads in one sitting.
 */
import type { Socket } from "socket.io-client";
import {
  EnterOfficeNotificationSchema,
  Events,
  ListRoomRetSchema,
  parseJoinRefusal,
  UpdateComputerConfigReqSchema,
  type A2CSkillRef,
  type SMCPTool,
  type SessionInfo,
} from "@a2c-smcp/protocol";
import { ClientConnection, type RequestOptions } from "./client-connection.ts";
import {
  DisconnectedError,
  JoinOfficeError,
  RequestTimeoutError,
  abortError,
  asError,
} from "./errors.ts";

/** Rejoin attempts after a reconnect when the Server still holds our old seat. */
export const REJOIN_ATTEMPTS = 8;

/** Longest wait between two tries of a join refused for a reason that passes (D55). */
export const JOIN_RETRY_MAX_MS = 2_000;

/** Options of `joinOffice`. */
export interface JoinOfficeOptions {
  /**
   * How long a join refused for a reason that passes (`registry_unavailable`, ...: D55) is tried
   * again, with a backoff of 250 ms doubling to `JOIN_RETRY_MAX_MS`; a join lost to a dropped
   * connection is tried again once socket.io has reconnected. Default: the client's
   * `requestTimeoutMs`; 0 = no retry. Other refusals are thrown at once.
   */
  retryForMs?: number;
  signal?: AbortSignal;
}

/** The wait before try `attempt + 1` of a refused join: doubling, capped, ±25 %. */
function joinRetryDelay(attempt: number): number {
  const base = Math.min(JOIN_RETRY_MAX_MS, 250 * 2 ** Math.min(attempt - 1, 16));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Office membership and Computer tracking on top of the connection. */
export abstract class OfficeClient extends ClientConnection {
  private office: string | undefined;
  private readonly present = new Set<string>();
  /**
   * Enter/leave notifications are numbered; while a `server:list_room` is in flight, the latest
   * number per Computer is kept, so `refreshComputers` can tell an arrival newer than its request
   * from the snapshot's stale view (see there). Emptied whenever no refresh is in flight.
   */
  private notifySeq = 0;
  private refreshing = 0;
  private readonly notifiedDuringRefresh = new Map<string, number>();

  /** The office joined (kept across reconnects), if any. */
  get officeId(): string | undefined {
    return this.office;
  }

  /** Computers currently known to be in the office. */
  get computers(): string[] {
    return [...this.present];
  }

  // ---------------------------------------------------------------------------------------------
  // Office

  /**
   * Joins `officeId` as the Agent; `(false, reason)` is a `JoinOfficeError`, thrown at once for a
   * refusal that will not pass and after `opts.retryForMs` of retries for one that will (D55).
   */
  async joinOffice(officeId: string, name?: string, opts: JoinOfficeOptions = {}): Promise<void> {
    if (name !== undefined) this.name = name;
    const deadline = Date.now() + (opts.retryForMs ?? this.requestTimeoutMs);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.sendJoin(officeId);
        break;
      } catch (err) {
        // A Server node that fences (D56) closes our connection while a refused join waits for
        // its next try: socket.io reconnects by itself, so the join goes on over the new one.
        if (err instanceof DisconnectedError && !this.fatal && this.socket) {
          if (await this.reconnectedBy(deadline, opts.signal)) continue;
          throw err;
        }
        const delayMs = joinRetryDelay(attempt);
        if (!this.refusedForNow(err, attempt, delayMs) || Date.now() + delayMs > deadline) {
          throw err;
        }
        await sleep(delayMs, opts.signal);
      }
    }
    this.office = officeId;
    this.joined = true;
    await this.refreshComputers();
  }

  /**
   * Resolves true once the socket is connected again, false at `deadline`; rejects when the
   * client stops for good or `signal` aborts.
   */
  private reconnectedBy(deadline: number, signal?: AbortSignal): Promise<boolean> {
    const socket = this.socket;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (socket?.connected) return Promise.resolve(true);
    if (!socket || Date.now() >= deadline) return Promise.resolve(false);
    return new Promise<boolean>((resolve, reject) => {
      const done = (err: Error | null, connected = false): void => {
        clearTimeout(timer);
        socket.off("connect", onConnect);
        this.off("closed", onClosed);
        signal?.removeEventListener("abort", onAbort);
        if (err) reject(err);
        else resolve(connected);
      };
      const onConnect = (): void => done(null, true);
      const onClosed = (err: unknown): void =>
        done(err === undefined ? new DisconnectedError("client closed") : asError(err));
      const onAbort = (): void => done(abortError(signal!));
      const timer = setTimeout(() => done(null), deadline - Date.now());
      socket.on("connect", onConnect);
      this.on("closed", onClosed);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private async sendJoin(officeId: string): Promise<void> {
    const [ok, reason] = await this.emitWithAck(
      Events.JoinOffice,
      { role: "agent", name: this.name, office_id: officeId },
      this.requestTimeoutMs,
    );
    if (ok !== true) {
      throw new JoinOfficeError(typeof reason === "string" && reason ? reason : "refused");
    }
  }

  /**
   * True when `err` is a join refused for a reason that passes (D55); logged at attempts 1, 2,
   * 4, 8, ... so a long outage is visible without a line per try.
   */
  private refusedForNow(err: unknown, attempt: number, retryInMs: number): boolean {
    if (!(err instanceof JoinOfficeError) || !parseJoinRefusal(err.reason).transient) return false;
    if ((attempt & (attempt - 1)) === 0) {
      this.logger.warn(
        { reason: err.reason, attempt, retryInMs },
        "join refused for now; retrying",
      );
    }
    return true;
  }

  /** Leaves the office (and stops tracking its Computers). */
  async leaveOffice(): Promise<void> {
    const office = this.office;
    if (!office) return;
    this.office = undefined;
    this.joined = false;
    this.present.clear();
    await this.emitWithAck(Events.LeaveOffice, { office_id: office }, this.requestTimeoutMs);
  }

  /** `server:list_room`: the sessions of our office. */
  async listRoom(opts: RequestOptions = {}): Promise<SessionInfo[]> {
    const office = this.requireOffice();
    const [answer] = await this.emitWithAck(
      Events.ListRoom,
      { agent: this.name, req_id: this.nextReqId(), office_id: office },
      opts.timeoutMs ?? this.requestTimeoutMs,
      opts.signal,
    );
    return this.parseAnswer(Events.ListRoom, answer, ListRoomRetSchema).sessions;
  }

  /**
   * Re-reads the office from the Server and emits joined/left for every difference.
   *
   * The snapshot can be older than a notification the Agent has already applied: a Computer
   * that joins just after the Server took the snapshot has its `notify:enter_office` sent right
   * behind the answer, and when both arrive in one read (a starved Agent, a poll response) the
   * notification is handled before this method's continuation runs; with a Redis registry the
   * notification can even arrive before the answer. Applying the snapshot then would delete a
   * Computer that is there and emit a false `computer_left` — and a `waitForComputer` would wait
   * for an arrival that already happened (seen in the soak). So a Computer with an enter/leave
   * notification since the request was sent keeps the notification's verdict; the snapshot
   * decides for every other Computer. (A notification sent before the snapshot was taken agrees
   * with it, or is followed by a newer one, so trusting it is never wrong.)
   */
  async refreshComputers(opts: RequestOptions = {}): Promise<string[]> {
    const office = this.requireOffice();
    const since = this.notifySeq;
    this.refreshing++;
    try {
      const sessions = await this.listRoom(opts);
      if (this.office !== office) return this.computers;
      const newer = (c: string): boolean => (this.notifiedDuringRefresh.get(c) ?? 0) > since;
      const now = new Set(
        sessions.filter((s) => s.role === "computer" && s.office_id === office).map((s) => s.name),
      );
      for (const c of [...this.present]) {
        if (!now.has(c) && !newer(c)) {
          this.present.delete(c);
          this.emit("computer_left", c);
        }
      }
      for (const c of now) {
        if (!this.present.has(c) && !newer(c)) {
          this.present.add(c);
          this.computerEntered(c);
        }
      }
      return this.computers;
    } finally {
      if (--this.refreshing === 0) this.notifiedDuringRefresh.clear();
    }
  }

  /** Numbers an enter/leave notification for `c` (see `refreshComputers`). */
  private noteNotification(c: string): void {
    this.notifySeq++;
    if (this.refreshing > 0) this.notifiedDuringRefresh.set(c, this.notifySeq);
  }

  private requireOffice(): string {
    if (!this.office) throw new Error("join an office first (joinOffice)");
    return this.office;
  }

  private computerEntered(c: string): void {
    this.emit("computer_joined", c);
    if (this.opts.autoRefresh) this.autoTools(c);
  }

  private autoTools(c: string): void {
    this.getTools(c).then(
      (tools) => this.emit("tools", c, tools),
      (err: unknown) => this.refreshFailed(c, err),
    );
  }

  private refreshFailed(c: string | null, err: unknown): void {
    this.logger.warn({ computer: c, err: String(err) }, "refresh failed");
    this.emit("refresh_error", c, err);
  }

  protected override wireNotifications(socket: Socket): void {
    const mine = (raw: unknown): string | undefined => {
      const n = EnterOfficeNotificationSchema.safeParse(raw);
      if (!n.success || n.data.office_id !== this.office) return undefined;
      return n.data.computer ?? undefined;
    };
    socket.on(Events.EnterOfficeNotify, (raw: unknown) => {
      const c = mine(raw);
      if (c === undefined) return;
      this.noteNotification(c);
      this.present.add(c);
      this.computerEntered(c);
    });
    socket.on(Events.LeaveOfficeNotify, (raw: unknown) => {
      const c = mine(raw);
      if (c === undefined) return;
      this.noteNotification(c);
      this.present.delete(c);
      this.emit("computer_left", c);
    });
    const update = (
      event: string,
      emit: "skills_updated" | "tools_updated" | "config_updated" | "desktop_updated",
    ): void => {
      socket.on(event, (raw: unknown) => {
        const n = UpdateComputerConfigReqSchema.safeParse(raw);
        if (!n.success || !this.office) return;
        const c = n.data.computer;
        this.emit(emit, c);
        if (!this.opts.autoRefresh) return;
        if (emit === "skills_updated") {
          this.getSkills(c).then(
            (skills) => this.emit("skills", c, skills),
            (err: unknown) => this.refreshFailed(c, err),
          );
        } else if (emit === "tools_updated") {
          this.autoTools(c);
        }
      });
    };
    update(Events.UpdateSkillsNotify, "skills_updated");
    update(Events.UpdateToolListNotify, "tools_updated");
    update(Events.UpdateConfigNotify, "config_updated");
    update(Events.UpdateDesktopNotify, "desktop_updated");
  }

  /** After socket.io reconnected: rejoin the office, re-read its Computers. */
  protected override async onReconnect(): Promise<void> {
    if (!this.everConnected) return;
    const office = this.office;
    if (!office) {
      this.emit("reconnected");
      return;
    }
    // The Server may not have noticed our old session's end yet (`agent_present`): retry the
    // join a few times with a backoff while this connection lasts; a refusal that passes
    // (`registry_unavailable`, D55) is retried for as long as the connection lasts.
    const socket = this.socket;
    let refused = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.sendJoin(office);
        if (this.office !== office) return;
        this.joined = true;
        await this.refreshComputers();
        this.emit("reconnected");
        return;
      } catch (err) {
        const passingDelayMs = joinRetryDelay(attempt + 1);
        const passing = this.refusedForNow(err, attempt + 1, passingDelayMs);
        const retry =
          socket?.connected &&
          (passing || (err instanceof JoinOfficeError && refused++ < REJOIN_ATTEMPTS));
        if (!retry) {
          this.refreshFailed(null, err);
          return;
        }
        const delayMs = passing ? passingDelayMs : Math.min(250 * 2 ** (refused - 1), 5000);
        await new Promise((r) => setTimeout(r, delayMs));
        if (this.socket !== socket || !socket.connected || this.office !== office) return;
      }
    }
  }

  /**
   * Resolves once we are connected and joined and `computer` is in the office. Asks the Server
   * first (a stale local view must not say "present" for a Computer that just dropped).
   */
  async waitForComputer(
    computer: string,
    opts: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<void> {
    const { signal } = opts;
    if (this.fatal) throw this.fatal;
    if (this.joined) {
      try {
        await this.refreshComputers(signal ? { signal } : {});
      } catch (err) {
        if (!(err instanceof DisconnectedError || err instanceof RequestTimeoutError)) throw err;
      }
    }
    if (this.joined && this.present.has(computer)) return;
    await new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (this.joined && this.present.has(computer)) done();
      };
      const onClosed = (err: unknown): void =>
        done(err === undefined ? new DisconnectedError("client closed") : asError(err));
      const onAbort = (): void => done(abortError(signal!));
      const timer =
        opts.timeoutMs !== undefined
          ? setTimeout(
              () =>
                done(
                  new RequestTimeoutError(`waiting for Computer '${computer}'`, opts.timeoutMs!),
                ),
              opts.timeoutMs,
            )
          : undefined;
      const done = (err?: Error): void => {
        clearTimeout(timer);
        this.off("computer_joined", check);
        this.off("reconnected", check);
        this.off("closed", onClosed);
        signal?.removeEventListener("abort", onAbort);
        if (err !== undefined) reject(err);
        else resolve();
      };
      this.on("computer_joined", check);
      this.on("reconnected", check);
      this.on("closed", onClosed);
      signal?.addEventListener("abort", onAbort, { once: true });
      check();
    });
  }

  /** `client:get_tools` (the request layer); used by `autoRefresh`. */
  abstract getTools(computer: string, opts?: RequestOptions): Promise<SMCPTool[]>;

  /** `client:get_skills` (the request layer); used by `autoRefresh`. */
  abstract getSkills(computer: string, opts?: RequestOptions): Promise<A2CSkillRef[]>;
}
