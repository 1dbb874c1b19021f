/**
 * What a status event changes in a call's `call_meta` besides its status (CallService.applyStatus):
 * who answered, the SIP trunk's final response (`sip_status`, `error`), why the platform ended it
 * (`error`), and which SIP agent holds it (`sip_agent`).
 */
import type { CarrierEvent } from '../../providers/carriers/types.js';
import { answeredByChange } from './answered-by.js';

type StatusEvent = Extract<CarrierEvent, { kind: 'call_status' }>;

/** The `call_meta` the event leaves on the call (none when it changes nothing there). */
export function statusMetaChange(
  callMeta: Record<string, unknown>,
  event: StatusEvent,
  final: boolean,
): { callMeta?: Record<string, unknown> } {
  let changed = answeredByChange(callMeta, event.answeredBy).callMeta;
  // A trunk's refusal stays on the call that it ended: `sip_status` 486, `error` "Busy Here".
  if (final && event.sip)
    changed = { ...(changed ?? callMeta), sip_status: event.sip.status, error: event.sip.reason };
  if (final && event.error) changed = { ...(changed ?? callMeta), error: event.error };
  const agent = sipAgentChange(callMeta, event);
  if (agent) changed = { ...(changed ?? callMeta), ...agent };
  return changed ? { callMeta: changed } : {};
}

/**
 * `sip_agent` when the event names a SIP agent the record does not: recorded even when the status
 * itself does not move (the agent's first report, as its INVITE goes out, repeats `queued`).
 */
export function sipAgentChange(
  callMeta: Record<string, unknown>,
  event: StatusEvent,
): { sip_agent: string } | undefined {
  return event.sipAgent && callMeta.sip_agent !== event.sipAgent ? { sip_agent: event.sipAgent } : undefined;
}
