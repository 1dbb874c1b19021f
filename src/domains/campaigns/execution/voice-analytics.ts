/**
 * A campaign call's after-call analysis, kept on its attempt: `execution_data.voice_analytics`
 * (`sentiment_score`, `sentiment`, `summary`), written when the analysis completes — some seconds
 * after the attempt itself finished. A merge in SQL, so it never undoes what the attempt's own
 * settlement wrote; only the execution row is touched (the last lock of the executor's lock order).
 */
import { eq, sql } from 'drizzle-orm';
import type { Executor } from '../../../db/client.js';
import { campaignExecutions } from '../../../db/schema/index.js';
import type { Tenant } from '../../../db/tenant.js';
import { withUpdatedAt } from '../../../db/touch.js';
import type { CallRow } from '../../calls/reads.js';
import { announceProgress } from '../events.js';

export interface VoiceAnalytics {
  sentiment_score: number | null;
  sentiment: string | null;
  summary: string | null;
}

export async function keepVoiceAnalytics(
  tx: Executor,
  tenant: Tenant,
  call: Pick<CallRow, 'id' | 'campaignId'>,
  analytics: VoiceAnalytics,
): Promise<void> {
  if (call.campaignId === null) return;
  const updated = await tx
    .update(campaignExecutions)
    .set(
      withUpdatedAt({
        executionData: sql`${campaignExecutions.executionData} || jsonb_build_object('voice_analytics', ${JSON.stringify(analytics)}::jsonb)`,
      }),
    )
    .where(tenant.where(campaignExecutions, eq(campaignExecutions.callId, call.id)))
    .returning({ campaignId: campaignExecutions.campaignId });
  if (updated.length > 0) await announceProgress(tx, tenant.organizationId, call.campaignId);
}
