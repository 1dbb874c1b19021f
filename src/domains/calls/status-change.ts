/**
 * What a status event does to a call record, decided from the call as read (pure): nothing, a SIP
 * agent's claim only, or a move forward — with the changes to write, the event to record, and for a
 * final status the billed duration and cost. CallService.applyStatus applies the decision; both its
 * paths (the locked transaction, and the one-statement move of a callback) decide with this.
 *
 * A status never moves back, so "nothing" decided on a call read earlier stays true later: the call
 * can only have moved further since (the SIP agent's claim aside, which depends on `call_meta`).
 */

import { type CallStatus, FINAL_CALL_STATUSES } from '../../db/schema/telephony.js';
import type { CarrierEvent } from '../../providers/carriers/types.js';
import { roundMoney } from '../billing/service.js';
import { sipAgentChange, statusMetaChange } from './status-meta.js';
import type { CallChanges, CallRow } from './store.js';

export type StatusEvent = Extract<CarrierEvent, { kind: 'call_status' }>;

/** Where a status sits in a call's life; a status never moves back. */
const STAGE: Record<CallStatus, number> = {
  queued: 0,
  ringing: 1,
  'in-progress': 2,
  completed: 3,
  busy: 3,
  'no-answer': 3,
  failed: 3,
  canceled: 3,
};

export type StatusChange =
  | { kind: 'none' }
  /** The status does not move; a SIP agent's claim on the call is recorded (its INVITE repeats `queued`). */
  | { kind: 'agent'; changes: CallChanges }
  | {
      kind: 'move';
      changes: CallChanges;
      final: boolean;
      /** Billed seconds and their price, for a final status (null otherwise). */
      duration: number | null;
      cost: number | null;
      /** The call event recorded with the move. */
      event: { type: string; data: Record<string, unknown> };
    };

export function statusChange(call: CallRow, event: StatusEvent, pricePerMinute: number): StatusChange {
  if (FINAL_CALL_STATUSES.includes(call.status)) return { kind: 'none' };
  if (
    STAGE[event.status] < STAGE[call.status] ||
    (event.status === call.status && event.durationSeconds === undefined)
  ) {
    const agent = sipAgentChange(call.callMeta, event);
    if (!agent) return { kind: 'none' };
    return {
      kind: 'agent',
      changes: { callMeta: { ...call.callMeta, ...agent }, callSid: call.callSid ?? event.callSid },
    };
  }
  // Carriers stamp events to the second, so an end may read earlier than a start we stamped.
  const stamped = event.at && !Number.isNaN(event.at.getTime()) ? event.at : new Date();
  const at = call.startedAt && stamped < call.startedAt ? call.startedAt : stamped;
  const final = FINAL_CALL_STATUSES.includes(event.status);
  const duration = final ? Math.max(0, Math.round(event.durationSeconds ?? 0)) : null;
  const cost = final ? roundMoney(((duration ?? 0) * pricePerMinute) / 60) : null;
  return {
    kind: 'move',
    changes: {
      status: event.status,
      callSid: call.callSid ?? event.callSid,
      ...statusMetaChange(call.callMeta, event, final),
      ...(event.status === 'in-progress' && !call.startedAt ? { startedAt: at } : {}),
      ...(final ? { endedAt: at, duration, cost } : {}),
      // The carrier's duration is what is billed, and its final stamp ends the call: the start is
      // the one that makes the record agree with both (an "answered" stamp may be lost, late, or
      // stamped with the end's second).
      ...(final && duration ? { startedAt: new Date(at.getTime() - duration * 1000) } : {}),
    },
    final,
    duration,
    cost,
    event: {
      type: `call.${event.status}`,
      data: {
        call_sid: event.callSid,
        ...(duration !== null ? { duration } : {}),
        ...(event.sip ? { sip_status: event.sip.status, sip_reason: event.sip.reason } : {}),
        ...(final && event.error ? { error: event.error } : {}),
      },
    },
  };
}
