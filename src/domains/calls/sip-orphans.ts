/**
 * SIP calls left behind by a stopped process. A SIP trunk call lives in the process whose agent
 * holds its dialog (`call_meta.sip_agent`, the agent's `host:port`); a process killed mid-call ends
 * none of them, and no trunk will ever report on them. When an agent starts again under the same
 * address it holds no call yet, so every call still recorded as its own is an orphan of its previous
 * life: settled here through `applyStatus`, like any final status (events, webhooks, billing, and the
 * listeners — a campaign attempt on the call finishes).
 */
import type { Db } from '../../db/client.js';
import type { CallService } from './service.js';
import { unscoped } from './unscoped-store.js';

/** `call_meta.error` of an answered call ended so. */
export const STOPPED_DURING_CALL =
  'The platform stopped during the call: it ended then, its duration up to the last moment recorded';
/** `call_meta.error` of a call not answered yet. */
export const STOPPED_BEFORE_ANSWER = 'The platform stopped before the call was answered';

/**
 * Settles the calls recorded as held by `agent` that it does not hold now (`holds`: the calls it
 * took since it started): answered ones `completed`, lasting until the last moment known of them;
 * the others `failed`. The number settled.
 */
export async function settleOrphanedSipCalls(
  deps: { db: Db; calls: Pick<CallService, 'applyStatus'> },
  agent: string,
  holds: (callSid: string) => Promise<boolean>,
): Promise<number> {
  let settled = 0;
  for (const { call, lastKnownAt } of await unscoped.sipCallsHeldBy(deps.db, agent)) {
    // Never null here (the query asks for a call id); a call the agent has taken since is its own.
    if (!call.callSid || (await holds(call.callSid))) continue;
    const answered = call.status === 'in-progress';
    const since = call.startedAt ?? lastKnownAt;
    const seconds = Math.max(0, Math.round((lastKnownAt.getTime() - since.getTime()) / 1000));
    const changed = await deps.calls.applyStatus(call.organizationId, call.id, {
      kind: 'call_status',
      callSid: call.callSid,
      at: lastKnownAt,
      ...(answered
        ? { status: 'completed', durationSeconds: Math.max(1, seconds), error: STOPPED_DURING_CALL }
        : { status: 'failed', durationSeconds: 0, error: STOPPED_BEFORE_ANSWER }),
    });
    if (changed) settled += 1;
  }
  return settled;
}
