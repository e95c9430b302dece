/**
 * Fire-and-forget events (docs/protocol.md, "Offices"; D6):
 * - `server:update_skills|update_tool_list|update_config|update_desktop {computer}` from a
 *   Computer → the matching `notify:*` to its office, sender skipped. Only a Computer in an office
 *   may announce, and only under its own name.
 * - `server:tool_call_cancel {agent, req_id}` from the office's Agent → `notify:tool_call_cancel`
 *   with the same payload to the office (its Computers), sender skipped.
 * No answer is defined; a client that asked for an ack gets an empty one, whatever happened, so
 * it never waits (D6). Refused events are logged, never echoed.
 */
import {
  Events,
  ToolCallCancelSchema,
  UPDATE_EVENTS,
  UpdateComputerConfigReqSchema,
} from "@a2c-smcp/protocol";
import { officeRoom, type SmcpNamespace, type SmcpSocket } from "./connection.ts";
import type { Logger } from "./log.ts";
import { takeAck } from "./relay.ts";

export type UpdateEvent = keyof typeof UPDATE_EVENTS;

export interface NotifierOptions {
  nsp: SmcpNamespace;
  logger: Logger;
}

export class Notifier {
  constructor(private readonly opts: NotifierOptions) {}

  update(event: UpdateEvent, socket: SmcpSocket, args: unknown[]): void {
    const { rest, ack } = takeAck(args);
    try {
      const parsed = rest.length === 1 ? UpdateComputerConfigReqSchema.safeParse(rest[0]) : null;
      const member = socket.data.member;
      if (!parsed?.success) {
        this.opts.logger.info({ event, sid: socket.id }, "invalid update payload ignored");
      } else if (member?.role !== "computer" || member.name !== parsed.data.computer) {
        this.opts.logger.warn(
          { event, sid: socket.id },
          "update refused: sender is not that Computer in an office",
        );
      } else {
        this.opts.nsp
          .to(officeRoom(member.officeId))
          .except(socket.id)
          .emit(UPDATE_EVENTS[event], rest[0]);
      }
    } finally {
      ack?.();
    }
  }

  cancel(socket: SmcpSocket, args: unknown[]): void {
    const { rest, ack } = takeAck(args);
    try {
      const parsed = rest.length === 1 ? ToolCallCancelSchema.safeParse(rest[0]) : null;
      const member = socket.data.member;
      if (!parsed?.success) {
        this.opts.logger.info({ sid: socket.id }, "invalid tool_call_cancel ignored");
      } else if (member?.role !== "agent" || member.name !== parsed.data.agent) {
        this.opts.logger.warn(
          { sid: socket.id },
          "tool_call_cancel refused: sender is not that office's Agent",
        );
      } else {
        // "broadcasts notify:tool_call_cancel (same payload) to that office skipping the sender".
        this.opts.nsp
          .to(officeRoom(member.officeId))
          .except(socket.id)
          .emit(Events.ToolCallCancelNotify, rest[0]);
      }
    } finally {
      ack?.();
    }
  }
}
