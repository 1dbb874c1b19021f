/**
 * The platform-wide lookups of call records (see `unscoped` below for why each may read across
 * organizations).
 */
import { and, asc, eq, isNotNull, sql } from 'drizzle-orm';
import { unscopedStatement } from '../../db/built.js';
import type { Executor } from '../../db/client.js';
import { oneOf } from '../../db/schema/checks.js';
import { callEvents, calls, callTranscriptSegments, FINAL_CALL_STATUSES } from '../../db/schema/index.js';
import { configVersionOfRowIn } from '../runtime/versioned-cache.js';
import { assistantWebhookUrl, type CallRow, type CallWithWebhook } from './store.js';

/**
 * Carrier webhooks arrive before we know the organization: these lookups are platform-wide on
 * purpose. What they find is trusted only after the webhook's signature is verified with that
 * organization's credentials (the campaign sweep also asks whether any call holds a carrier id).
 * A SIP agent starting up holds calls of every organization: it asks which its previous life left.
 */
export const unscoped = {
  async callById(ex: Executor, id: number): Promise<CallRow | undefined> {
    const [row] = await ex.select().from(calls).where(eq(calls.id, id)).limit(1);
    return row;
  },

  /**
   * The `sip_trunk` calls not final yet that the SIP agent `agent` (`host:port`) holds by their
   * record, each with the last moment anything was recorded of it (the row, its events, its
   * transcript): how long it is known to have lasted.
   */
  async sipCallsHeldBy(ex: Executor, agent: string): Promise<Array<{ call: CallRow; lastKnownAt: Date }>> {
    const lastEvent = sql`select max(${callEvents.createdAt}) from ${callEvents} where ${callEvents.callId} = ${calls.id}`;
    const lastSaid = sql`select max(${callTranscriptSegments.endedAt}) from ${callTranscriptSegments}
      where ${callTranscriptSegments.callId} = ${calls.id}`;
    return ex
      .select({
        call: calls,
        lastKnownAt: sql<Date>`greatest(${calls.updatedAt}, (${lastEvent}), (${lastSaid}))`.mapWith(
          calls.updatedAt,
        ),
      })
      .from(calls)
      .where(
        and(
          // Written as the partial index's predicate (calls_sip_agent_live_idx), so the planner uses it.
          sql`${calls.provider} = 'sip_trunk' and not ${oneOf(calls.status, FINAL_CALL_STATUSES)}`,
          isNotNull(calls.callSid),
          sql`${calls.callMeta}->>'sip_agent' = ${agent}`,
        ),
      )
      .orderBy(asc(calls.id));
  },

  async callBySid(ex: Executor, provider: string, callSid: string): Promise<CallRow | undefined> {
    const [row] = await ex
      .select()
      .from(calls)
      .where(and(eq(calls.provider, provider), eq(calls.callSid, callSid)))
      .limit(1);
    return row;
  },

  /**
   * A call found by our id or by the carrier's, with its organization's configuration version
   * (runtime/versioned-cache.ts) and its assistant's `webhook_url` read in the same statement: a
   * carrier callback verifies its signature with credentials kept in memory at that version, at no
   * statement of its own, and may move the call by one more (CallService.applyReportedStatus).
   */
  async callWithConfigVersion(
    ex: Executor,
    by: { id: number } | { provider: string; callSid: string },
  ): Promise<(CallWithWebhook & { configVersion: number }) | undefined> {
    const [row] = await ('id' in by ? callWithConfigVersionById(ex, by) : callWithConfigVersionBySid(ex, by));
    return row;
  },
};

const callWithConfigVersionOf = (ex: Executor) =>
  ex
    .select({ call: calls, webhookUrl: assistantWebhookUrl, configVersion: configVersionOfRowIn('calls') })
    .from(calls);
const callWithConfigVersionById = unscopedStatement((ex) =>
  callWithConfigVersionOf(ex)
    .where(eq(calls.id, sql.placeholder('id')))
    .limit(1),
);
const callWithConfigVersionBySid = unscopedStatement((ex) =>
  callWithConfigVersionOf(ex)
    .where(
      and(eq(calls.provider, sql.placeholder('provider')), eq(calls.callSid, sql.placeholder('callSid'))),
    )
    .limit(1),
);
