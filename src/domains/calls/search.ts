/**
 * SQL of call search: PostgreSQL full-text search over each call's search document (phone numbers
 * and transcript, GIN-indexed) and over assistant names (GIN expression index), ranked. Assistant
 * names are matched on the assistants table rather than copied into every call's document, so
 * renaming an assistant changes its calls' results at once without rewriting them.
 *
 * The rule: **the newest 1,000 matching calls, ranked by relevance; ties newest first.** A call
 * matches when its document matches or its assistant's name does; "newest" is the order calls were
 * created in (`call_id`). A word said on a fifth of a million calls is then ranked on 1,000
 * documents, not 200,000; a selective query (a number, a rare word) has fewer than 1,000 matches,
 * so its answer is the exact best `limit` of all of them.
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
/** How many of the newest matching calls are ranked (the rule above). Above the largest `limit`. */
export const SEARCH_WINDOW = 1000;
/** The newest documents tested to tell a common query from a selective one. */
const PROBE_DOCUMENTS = 1000;
/**
 * Matches among the probed documents from which walking the newest documents beats the GIN index:
 * at 4 % the walk expects to read 25,000 documents for 1,000 matches, about what the index path
 * costs for a query with that many matches in all.
 */
const COMMON_QUERY_HITS = 40;
/** Most documents the newest-first walk reads before handing over to the GIN index. */
const WALK_DOCUMENTS = 25_000;

export interface CallMatch {
  callId: number;
  score: number;
}

function tsquery(query: CallSearchQuery): SQL {
  return query.kind === 'number'
    ? sql`to_tsquery('simple', ${`${query.digits}:*`})`
    : sql`websearch_to_tsquery('english', ${query.text})`;
}

/** The organization's best-matching calls among its newest 1,000 matches, best first. */
export async function searchCalls(
  ex: Executor,
  tenant: Tenant,
  query: CallSearchQuery,
  limit: number,
): Promise<CallMatch[]> {
  // The planner's cost counts every branch, also those a one-time filter never runs (the GIN
  // fallback of a common word is costed at some 200,000 rows), which crosses jit_above_cost: JIT
  // then compiled for 150 ms a statement that runs in 15 (docs/performance.md). No JIT here.
  const result = await ex.transaction(async (tx) => {
    await tx.execute(sql`set local jit = off`);
    return tx.execute(searchSql(tenant, query, limit));
  });
  return (result as unknown as { rows: Array<{ call_id: number; score: number }> }).rows.map((row) => ({
    callId: Number(row.call_id),
    score: Number(row.score),
  }));
}

/**
 * The search statement (the benchmark shows its plan). A call's score is its document's `ts_rank`
 * plus ASSISTANT_NAME_SCORE when its assistant's name matches.
 *
 * `words`, the newest 1,000 matching documents, comes one of two ways, chosen inside the statement
 * by `probe` (how many of the organization's newest 1,000 documents match):
 * - common query (40 or more): `walked` reads the documents newest first along the
 *   (organization_id, call_id) index, testing each, until it has 1,000 — about 5,000 documents for
 *   a word said on a fifth of the calls;
 * - selective query, or a walk that read 25,000 documents without finding 1,000 (a word common
 *   lately but rare before): `by_index` takes every match from the GIN index (ids only), keeps the
 *   newest 1,000 and reads their documents. Either way `words` is exactly the newest 1,000 matching
 *   documents (a short walk saw every document newer than its last match), so the plan changes the
 *   cost, never the answer.
 *
 * Matches by assistant name are found without ranking every call of a matching assistant:
 * `named_newest` is the newest 1,000 calls of the matching assistants, ids only, from the
 * (assistant_id, call_id) index. The window's oldest call (`window_floor`) is the 1,000th newest of
 * `words` ∪ `named_newest`: the newest 1,000 of a union are among the newest 1,000 of each part.
 * The candidates are then `words` and the newest `limit` of `named_newest`, both from the floor
 * up, and they hold the whole answer:
 * - a window call whose document matches is in `words` (fewer than 1,000 matching calls are newer);
 * - a window call in the answer that matches by name only scores exactly the bonus, so every newer
 *   call of a matching assistant — all in the window, which is the newest matches — scores as much
 *   or more and, newer, ranks above it: fewer than `limit` are newer, so it is among the newest
 *   `limit` of the matching assistants' calls.
 */
export function searchSql(tenant: Tenant, query: CallSearchQuery, limit: number): SQL {
  // The query expression is repeated rather than joined from a CTE so each use is a constant the
  // planner can hand to the GIN index.
  const q = tsquery(query);
  const d = callSearchDocuments;
  const named = sql`array(select ${assistants.id} from ${assistants}
    where ${tenant.owns(assistants)} and to_tsvector('english', ${assistants.name}) @@ ${q})`;
  // Along the (organization_id, call_id) index: however many newer calls other organizations have.
  const newestDocuments = (count: number) => sql`
    select ${d.organizationId}, ${d.callId}, ${d.assistantId}, ${d.document} from ${d}
    where ${tenant.ownsAlongIndex(d)}
    order by ${d.organizationId} desc, ${d.callId} desc
    limit ${count}`;
  const walkedCount = sql`(select count(*) from walked)`;
  return sql`
    with probe as (
      select count(*) as hits from (${newestDocuments(PROBE_DOCUMENTS)}) as newest
      where newest.document @@ ${q}
    ),
    walked as (
      select newest.call_id, newest.assistant_id, newest.document
      from (${newestDocuments(WALK_DOCUMENTS)}) as newest
      where (select hits from probe) >= ${COMMON_QUERY_HITS} and newest.document @@ ${q}
      -- The walk's own order (one organization), so the limit stops it rather than a sort.
      order by newest.organization_id desc, newest.call_id desc
      limit ${SEARCH_WINDOW}
    ),
    matching as materialized (
      -- Materialized so the planner cannot turn "newest matches" into a walk of its own: a common
      -- query reaches here only when the walk found too few.
      select ${d.callId} from ${d}
      where ${tenant.owns(d)} and ${d.document} @@ ${q} and ${walkedCount} < ${SEARCH_WINDOW}
    ),
    by_index as (
      select ${d.callId}, ${d.assistantId}, ${d.document}
      from (select call_id from matching order by call_id desc limit ${SEARCH_WINDOW}) as newest
      join ${d} on ${d.callId} = newest.call_id
    ),
    words as (
      select * from walked where ${walkedCount} >= ${SEARCH_WINDOW}
      union all
      select * from by_index
    ),
    named_newest as (
      -- Per matching assistant, its newest calls straight from the (assistant_id, call_id) index;
      -- no assistant matching is no work at all. "= any(array[…])" and the two-column order keep
      -- the planner on that index (see Tenant.ownsAlongIndex): walking the primary key instead
      -- passes every newer call of other assistants and organizations.
      select newest.call_id
      from unnest(${named}) as matching_assistant(id)
      cross join lateral (
        select ${d.callId} from ${d}
        where ${tenant.owns(d)} and ${d.assistantId} = any(array[matching_assistant.id])
        order by ${d.assistantId} desc, ${d.callId} desc
        limit ${SEARCH_WINDOW}
      ) as newest
      order by newest.call_id desc
      limit ${SEARCH_WINDOW}
    ),
    window_floor as (
      select coalesce((
        select call_id from (select call_id from words union select call_id from named_newest) as matches
        order by call_id desc
        offset ${SEARCH_WINDOW - 1} limit 1
      ), 0) as call_id
    ),
    candidates as (
      select * from words where call_id >= (select call_id from window_floor)
      union all
      select ${d.callId}, ${d.assistantId}, ${d.document}
      from (
        select call_id from named_newest
        where call_id >= (select call_id from window_floor)
        order by call_id desc
        limit ${limit}
      ) as newest_named
      join ${d} on ${d.callId} = newest_named.call_id
    )
    select call_id, max(score)::float8 as score
    from (
      select call_id,
        case when document @@ ${q} then ts_rank(document, ${q}) else 0 end
        + case when assistant_id = any(${named}) then ${ASSISTANT_NAME_SCORE}::real else 0 end as score
      from candidates
    ) as scored
    group by call_id
    order by score desc, call_id desc
    limit ${limit}`;
}
