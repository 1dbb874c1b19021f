/** SQL of call analyses: one row per call, `pending` until the after-call job settles it once. */
import { and, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import {
  type AnalysisStatus,
  callAnalyses,
  callTranscriptSegments,
  type Sentiment,
} from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';

export type AnalysisRow = typeof callAnalyses.$inferSelect;

/** What a finished analysis holds. */
export interface AnalysisResult {
  summary: string;
  sentiment: Sentiment;
  sentimentScore: number;
  /** Absent when the assistant asks for no structured data. */
  structuredData?: unknown;
  structuredDataError?: string | null;
  provider: string;
}

/**
 * The call's row, `pending` or settled at once as `skipped` (with why); nothing when the call has one
 * already (a final status is applied once, but a row never changes its mind).
 */
export async function insertAnalysis(
  ex: Executor,
  tenant: Tenant,
  callId: number,
  values: { status: Extract<AnalysisStatus, 'pending' | 'skipped'>; error?: string },
): Promise<AnalysisRow | undefined> {
  const [row] = await ex
    .insert(callAnalyses)
    .values({
      callId,
      organizationId: tenant.organizationId,
      status: values.status,
      error: values.error ?? null,
      ...(values.status === 'skipped' ? { completedAt: new Date() } : {}),
    })
    .onConflictDoNothing()
    .returning();
  return row;
}

export async function findAnalysis(
  ex: Executor,
  tenant: Tenant,
  callId: number,
): Promise<AnalysisRow | undefined> {
  const [row] = await ex
    .select()
    .from(callAnalyses)
    .where(tenant.where(callAnalyses, eq(callAnalyses.callId, callId)));
  return row;
}

/** Settles a pending row; undefined when it was settled already (the job ran twice). */
export async function settleAnalysis(
  ex: Executor,
  tenant: Tenant,
  callId: number,
  outcome:
    | { status: 'completed'; result: AnalysisResult }
    | { status: 'failed' | 'skipped'; error: string; provider?: string | null },
): Promise<AnalysisRow | undefined> {
  const changes =
    outcome.status === 'completed'
      ? {
          status: outcome.status,
          summary: outcome.result.summary,
          sentiment: outcome.result.sentiment,
          sentimentScore: outcome.result.sentimentScore,
          structuredData: outcome.result.structuredData ?? null,
          structuredDataError: outcome.result.structuredDataError ?? null,
          provider: outcome.result.provider,
          error: null,
        }
      : { status: outcome.status, error: outcome.error, provider: outcome.provider ?? null };
  const [row] = await ex
    .update(callAnalyses)
    .set({ ...changes, completedAt: new Date() })
    .where(
      and(tenant.owns(callAnalyses), eq(callAnalyses.callId, callId), eq(callAnalyses.status, 'pending')),
    )
    .returning();
  return row;
}

/** Why a call whose caller said nothing is not analysed. */
export const NOTHING_SAID = 'the caller said nothing';

/**
 * Settles a pending row as skipped, in one statement, when the call's transcript holds no word of the
 * caller: true when it did. A segment of tabs or other blanks counts as said here (`btrim` takes
 * spaces only, JavaScript's `trim` every blank), so this skips only calls the full check would skip.
 */
export async function skipIfNothingSaid(ex: Executor, tenant: Tenant, callId: number): Promise<boolean> {
  const said = sql`exists (select 1 from ${callTranscriptSegments} s
    where s.organization_id = ${callAnalyses.organizationId} and s.call_id = ${callAnalyses.callId}
      and s.speaker = 'user' and btrim(s.text) <> '')`;
  const settled = await ex
    .update(callAnalyses)
    .set({ status: 'skipped', error: NOTHING_SAID, provider: null, completedAt: new Date() })
    .where(
      tenant.where(
        callAnalyses,
        eq(callAnalyses.callId, callId),
        eq(callAnalyses.status, 'pending'),
        sql`not ${said}`,
      ),
    )
    .returning({ callId: callAnalyses.callId });
  return settled.length > 0;
}
