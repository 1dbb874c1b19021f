/**
 * SQL of call search: PostgreSQL full-text search over each call's search document (phone numbers
 * and transcript, GIN-indexed) and over assistant names (GIN expression index), ranked. Assistant
 * names are matched on the assistants table rather than copied into every call's document, so
 * renaming an assistant changes its calls' results at once without rewriting them.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { assistants, callSearchDocuments } from '../../db/schema/index.js';
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

/**
 * The search statement (the benchmark shows its plan). A call's score is its document's `ts_rank`
 * plus ASSISTANT_NAME_SCORE when its assistant's name matches. The best `limit` calls are found
 * exactly from two short lists, neither of which ranks every call of a matching assistant:
 *
 * - `by_words`: the documents that match, scored in full (name bonus included), best `limit`;
 * - `by_name`: the newest `limit` calls of the matching assistants, then scored.
 *
 * A call in the true top `limit` is in one of them: if its document matches, fewer than `limit`
 * matching documents beat it; if only its assistant's name matches (score exactly the bonus), every
 * newer call of a matching assistant beats it (the same score and newer, or a higher score), so
 * fewer than `limit` are newer.
 */
export function searchSql(tenant: Tenant, query: CallSearchQuery, limit: number): SQL {
  // The query expression is repeated rather than joined from a CTE so each use is a constant the
  // planner can hand to the GIN index.
  const q = tsquery(query);
  const d = callSearchDocuments;
  const named = sql`array(select ${assistants.id} from ${assistants}
    where ${tenant.owns(assistants)} and to_tsvector('english', ${assistants.name}) @@ ${q})`;
  const score = sql`case when ${d.document} @@ ${q} then ts_rank(${d.document}, ${q}) else 0 end
    + case when ${d.assistantId} = any(${named}) then ${ASSISTANT_NAME_SCORE}::real else 0 end`;
  return sql`
    with by_words as (
      select ${d.callId} as call_id, ${score} as score
      from ${d}
      where ${tenant.owns(d)} and ${d.document} @@ ${q}
      order by score desc, call_id desc
      limit ${limit}
    ),
    newest_named as (
      -- Per matching assistant, its newest calls straight from the (assistant_id, call_id) index;
      -- no assistant matching is no work at all.
      select newest.call_id
      from unnest(${named}) as matching(id)
      cross join lateral (
        select ${d.callId} as call_id from ${d}
        where ${tenant.owns(d)} and ${d.assistantId} = matching.id
        order by ${d.callId} desc
        limit ${limit}
      ) as newest
      order by newest.call_id desc
      limit ${limit}
    ),
    by_name as (
      select ${d.callId} as call_id, ${score} as score
      from newest_named join ${d} on ${d.callId} = newest_named.call_id
    )
    select call_id, max(score)::float8 as score
    from (select * from by_words union all select * from by_name) as candidates
    group by call_id
    order by score desc, call_id desc
    limit ${limit}`;
}
