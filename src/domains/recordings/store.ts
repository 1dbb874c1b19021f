/** SQL of call recordings: one row per call, saying where its bytes are and how far they got. */
import { eq } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { callRecordings } from '../../db/schema/recordings.js';
import type { Tenant } from '../../db/tenant.js';

export type RecordingRow = typeof callRecordings.$inferSelect;

/** A call's recording as it starts; undefined when the call already has one. The caller checks the call is the organization's. */
export async function insertRecording(
  ex: Executor,
  tenant: Tenant,
  values: { callId: number; storageKey: string; channels: 1 | 2; sampleRate: number },
): Promise<RecordingRow | undefined> {
  const [row] = await ex
    .insert(callRecordings)
    .values({
      ...values,
      organizationId: tenant.organizationId,
      status: 'recording',
      contentType: 'audio/wav',
    })
    .onConflictDoNothing({ target: callRecordings.callId })
    .returning();
  return row;
}

export async function findRecording(
  ex: Executor,
  tenant: Tenant,
  callId: number,
): Promise<RecordingRow | undefined> {
  const [row] = await ex
    .select()
    .from(callRecordings)
    .where(tenant.where(callRecordings, eq(callRecordings.callId, callId)))
    .limit(1);
  return row;
}

/** Marks the recording stored whole; undefined when its row is gone (the call was deleted meanwhile). */
export async function completeRecording(
  ex: Executor,
  tenant: Tenant,
  id: number,
  result: { bytes: number; durationMs: number },
): Promise<RecordingRow | undefined> {
  const [row] = await ex
    .update(callRecordings)
    .set({ status: 'completed', bytes: result.bytes, durationMs: result.durationMs, completedAt: new Date() })
    .where(tenant.where(callRecordings, eq(callRecordings.id, id)))
    .returning();
  return row;
}

export async function failRecording(ex: Executor, tenant: Tenant, id: number, error: string): Promise<void> {
  await ex
    .update(callRecordings)
    .set({ status: 'failed', error: error.slice(0, 500), completedAt: new Date() })
    .where(tenant.where(callRecordings, eq(callRecordings.id, id)));
}

/**
 * A signed recording URL names a call but no organization: the signature, checked before this
 * runs, is the authority, so the lookup is by call id alone.
 */
export const unscoped = {
  async recordingOfCall(ex: Executor, callId: number): Promise<RecordingRow | undefined> {
    const [row] = await ex.select().from(callRecordings).where(eq(callRecordings.callId, callId)).limit(1);
    return row;
  },
};
