/**
 * Keeping the graph analytics rollups (`db/schema/graph-rollups.ts`) true: the sessions store
 * (sessions.ts) calls these inside the transaction that starts, moves or ends a session, so the
 * rollups never disagree with the sessions and transitions. Everything a session does is added — to
 * the hour row and the UTC-day row of the session's start, in one upsert per table — because the
 * analytics select sessions by when they started and count everything those sessions did.
 *
 * The figures are computed in SQL from the session's row, not in JavaScript: timestamps carry
 * microseconds that a `Date` drops, and the means must come out exact. Rows are upserted in key
 * order (span, then node), so two transactions adding to the same rows lock them in the same order
 * and never deadlock.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';

/** The two spans of every session, and the start of the hour or UTC day its start falls in. */
const SPANS = sql.raw('cross join (values (1::smallint), (24::smallint)) as span(hours)');
const periodOf = (startedAt: string) =>
  sql.raw(`date_trunc(case when span.hours = 1 then 'hour' else 'day' end, ${startedAt}, 'UTC')`);

/** Whole microseconds of an interval (`extract` is exact: numeric). */
export const micros = (interval: string) => `(extract(epoch from (${interval})) * 1000000)::bigint`;

const NODE_COLUMNS = sql.raw(`organization_id, graph_id, hours, period_start, node_id, sessions_started,
  sessions_entered, sessions_ended, session_micros, visits, visit_micros`);
const ADD_NODE_FIGURES =
  sql.raw(`on conflict (organization_id, graph_id, hours, period_start, node_id) do update set
  sessions_started = r.sessions_started + excluded.sessions_started,
  sessions_entered = r.sessions_entered + excluded.sessions_entered,
  sessions_ended = r.sessions_ended + excluded.sessions_ended,
  session_micros = r.session_micros + excluded.session_micros,
  visits = r.visits + excluded.visits,
  visit_micros = r.visit_micros + excluded.visit_micros`);

/** A session has just started (at its current node, the entry node): one start, one entry. */
export async function rollUpStart(ex: Executor, sessionId: number): Promise<void> {
  await ex.execute(sql`
    insert into graph_node_rollups as r (${NODE_COLUMNS})
    select gs.organization_id, gs.graph_id, span.hours, ${periodOf('gs.started_at')}, gs.current_node_id, 1, 1, 0, 0, 0, 0
    from graph_sessions gs ${SPANS}
    where gs.id = ${sessionId} and gs.current_node_id is not null
    order by span.hours
    ${ADD_NODE_FIGURES}`);
}

/**
 * The session is about to move to `toNodeId` at `at` (the time the transition will record: never
 * before the current node was entered). Runs before the move, under the session's row lock, while
 * the row still says where the session is and since when: the visit of the current node ends (one
 * finished visit, its microseconds), the target is entered (counted once per session: not when the
 * session has been there before — the nodes it visited are the nodes it left plus the one it is
 * at), and the pair of nodes gets one transition.
 */
export async function rollUpTransition(
  ex: Executor,
  sessionId: number,
  toNodeId: number,
  at: SQL,
): Promise<void> {
  const moving = sql`
    select gs.organization_id, gs.graph_id, gs.started_at, gs.current_node_id,
           ${sql.raw(micros('greatest(m.at, gs.node_entered_at) - gs.node_entered_at'))} as visit_micros,
           gs.current_node_id <> ${toNodeId}::int
             and not exists (select 1 from graph_transitions tr
                             where tr.session_id = gs.id and tr.from_node_id = ${toNodeId}::int) as first_visit
    from graph_sessions gs cross join (select ${at} as at) as m
    where gs.id = ${sessionId} and gs.current_node_id is not null`;
  await ex.execute(sql`
    with moving as (${moving}),
    deltas as (
      select current_node_id as node_id, 0 as entered, 1 as visits, visit_micros from moving
      union all
      select ${toNodeId}::int, 1, 0, 0::bigint from moving where first_visit
    )
    insert into graph_node_rollups as r (${NODE_COLUMNS})
    select m.organization_id, m.graph_id, span.hours, ${periodOf('m.started_at')}, d.node_id,
           0, d.entered, 0, 0, d.visits, d.visit_micros
    from moving m cross join deltas d ${SPANS}
    order by span.hours, d.node_id
    ${ADD_NODE_FIGURES}`);
  await ex.execute(sql`
    insert into graph_transition_rollups as r
      (organization_id, graph_id, hours, period_start, from_node_id, to_node_id, transitions)
    select gs.organization_id, gs.graph_id, span.hours, ${periodOf('gs.started_at')}, gs.current_node_id, ${toNodeId}::int, 1
    from graph_sessions gs ${SPANS}
    where gs.id = ${sessionId} and gs.current_node_id is not null
    order by span.hours
    on conflict (organization_id, graph_id, hours, period_start, from_node_id, to_node_id) do update
    set transitions = r.transitions + excluded.transitions`);
}

/**
 * The session has just ended (its row has `ended_at`): it ended at its current node, lasted from its
 * start to its end, and its visit of that node is finished.
 */
export async function rollUpEnd(ex: Executor, sessionId: number): Promise<void> {
  await ex.execute(sql`
    insert into graph_node_rollups as r (${NODE_COLUMNS})
    select gs.organization_id, gs.graph_id, span.hours, ${periodOf('gs.started_at')}, gs.current_node_id, 0, 0, 1,
           ${sql.raw(micros('gs.ended_at - gs.started_at'))}, 1, ${sql.raw(micros('gs.ended_at - gs.node_entered_at'))}
    from graph_sessions gs ${SPANS}
    where gs.id = ${sessionId} and gs.ended_at is not null and gs.current_node_id is not null
    order by span.hours
    ${ADD_NODE_FIGURES}`);
}
