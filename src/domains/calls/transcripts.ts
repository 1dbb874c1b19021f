/**
 * SQL of call transcripts: segments are stored in the order they were spoken, and their words join
 * the call's search document as they arrive, so a call is findable by what was said while it runs.
 */
import { asc, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import {
  callSearchDocuments,
  calls,
  callTranscriptSegments,
  type TranscriptSpeaker,
} from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';

export type TranscriptSegmentRow = typeof callTranscriptSegments.$inferSelect;

export interface NewTranscriptSegment {
  speaker: TranscriptSpeaker;
  text: string;
  startedAt: Date;
  endedAt: Date;
}

/**
 * Appends segments after those the call already has and adds their words to its search document,
 * in one transaction. The call row is locked, so concurrent appends to one call take turns and
 * positions stay 1, 2, 3… without gaps or repeats. Undefined when the call is not the organization's.
 */
export async function appendTranscriptSegments(
  ex: Executor,
  tenant: Tenant,
  callId: number,
  segments: readonly NewTranscriptSegment[],
): Promise<TranscriptSegmentRow[] | undefined> {
  return ex.transaction(async (tx) => {
    const [call] = await tx
      .select({ id: calls.id, assistantId: calls.assistantId })
      .from(calls)
      .where(tenant.where(calls, eq(calls.id, callId)))
      .for('update');
    if (!call) return undefined;
    if (segments.length === 0) return [];
    const [last] = await tx
      .select({ position: sql<number>`coalesce(max(${callTranscriptSegments.position}), 0)::int` })
      .from(callTranscriptSegments)
      .where(tenant.where(callTranscriptSegments, eq(callTranscriptSegments.callId, callId)));
    const first = (last?.position ?? 0) + 1;
    const rows = await tx
      .insert(callTranscriptSegments)
      .values(
        segments.map((segment, index) => ({
          organizationId: tenant.organizationId,
          callId,
          position: first + index,
          speaker: segment.speaker,
          text: segment.text,
          startedAt: segment.startedAt,
          endedAt: segment.endedAt,
        })),
      )
      .returning();
    // Transcript words weigh less than phone numbers (weight A) in the ranking.
    const words = segments.map((segment) => segment.text).join('\n');
    await tx
      .insert(callSearchDocuments)
      .values({
        callId,
        organizationId: tenant.organizationId,
        assistantId: call.assistantId,
        document: sql`setweight(to_tsvector('english', ${words}), 'C')`,
      })
      .onConflictDoUpdate({
        target: callSearchDocuments.callId,
        set: { document: sql`${callSearchDocuments.document} || excluded.document` },
      });
    return rows;
  });
}

/** A call's transcript in spoken order. */
export async function transcriptOf(
  ex: Executor,
  tenant: Tenant,
  callId: number,
): Promise<TranscriptSegmentRow[]> {
  return ex
    .select()
    .from(callTranscriptSegments)
    .where(tenant.where(callTranscriptSegments, eq(callTranscriptSegments.callId, callId)))
    .orderBy(asc(callTranscriptSegments.position));
}
