/**
 * SQL of call search: PostgreSQL full-text search over each call's search document (phone numbers
 * and transcript, GIN-indexed) and over assistant names (GIN expression index), ranked. Assistant
 * names are matched on the assistants table rather than copied into every call's document, so
 * renaming an assistant changes its calls' results at once without rewriting them.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { assistants, callSearchDocuments, calls } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import type { CallSearchQuery } from './search-terms.js';

/**
 * What a call gains when its assistant's name matches. `ts_rank` gives about 0.6 for a matching
 * phone number (weight A) and 0.1–0.3 for transcript words (weight C), so a named assistant ranks
 * between the two, and a call matching in both ways above either.
 */
const ASSISTANT_NAME_SCORE = 0.5;

export interface CallMatch {
  callId: number;
  score: number;
}

function tsquery(query: CallSearchQuery): SQL {
  return query.kind === 'number'
    ? sql`to_tsquery('simple', ${`${query.digits}:*`})`
    : sql`websearch_to_tsquery('english', ${query.text})`;
}

/** The organization's best-matching calls, best first (newest first among equals). */
export async function searchCalls(
  ex: Executor,
  tenant: Tenant,
  query: CallSearchQuery,
  limit: number,
): Promise<CallMatch[]> {
  const result = await ex.execute(searchSql(tenant, query, limit));
  return (result as unknown as { rows: Array<{ call_id: number; score: number }> }).rows.map((row) => ({
    callId: Number(row.call_id),
    score: Number(row.score),
  }));
}

/** The search statement (the benchmark shows its plan). */
export function searchSql(tenant: Tenant, query: CallSearchQuery, limit: number): SQL {
  // The query expression is repeated rather than joined from a CTE so each use is a constant the
  // planner can hand to the GIN index.
  const q = tsquery(query);
  return sql`
    with matched as (
      select ${callSearchDocuments.callId} as call_id, ts_rank(${callSearchDocuments.document}, ${q}) as score
      from ${callSearchDocuments}
      where ${tenant.owns(callSearchDocuments)} and ${callSearchDocuments.document} @@ ${q}
      union all
      select ${calls.id}, ${ASSISTANT_NAME_SCORE}::real
      from ${calls}
      where ${tenant.owns(calls)} and ${calls.assistantId} = any(array(
        select ${assistants.id} from ${assistants}
        where ${tenant.owns(assistants)} and to_tsvector('english', ${assistants.name}) @@ ${q}))
    )
    select call_id, sum(score)::float8 as score from matched
    group by call_id
    order by score desc, call_id desc
    limit ${limit}`;
}
