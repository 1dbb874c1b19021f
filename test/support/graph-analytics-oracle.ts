/**
 * The oracle of the graph analytics: the full-scan statement that computed GET
 * /assistant-graphs/{graph_id}/analytics before the rollups (src/domains/graphs/analytics.ts up to
 * migration 0018), kept as it was — only its clock is a parameter, so a test can pin `now` — to
 * check the rollups against it (test/graph-analytics-property.test.ts) and to time it beside them
 * (bench/graph-analytics.ts). Not used by the platform.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Db } from '../../src/db/client.js';
import { MOST_USED_TRANSITIONS_LIMIT } from '../../src/domains/graphs/analytics.js';

/** The answer's figures, as the statement returns them (the service adds the graph's id, name and `days`). */
export interface ScanFigures {
  total_sessions: number;
  total_transitions: number;
  avg_session_duration: number;
  most_used_transitions: unknown[];
  node_usage_stats: Record<string, unknown>;
}

/**
 * The one statement behind the analytics (one row of `AnalyticsRow` columns). It reads the window's
 * transitions once, joined to their sessions, into two hash aggregates (grouping sets): (from, to)
 * pairs with their counts and time sums, and (session, node left) pairs for the distinct counts.
 * No per-session ordering (window functions, sorts) is needed, because a session's transitions form
 * one chain (each leaves the node the one before it entered: sessions.ts moves a session under its
 * row lock), so with times measured from each session's start:
 * - a visit of node X ends with a transition from X or the session ending at X, so the finished
 *   visits of X number #from(X) + #ended_at(X), and they last
 *   Σ from(X) − Σ to(X) + Σ ended_at(X) + Σ open visits' entry times at X (they are subtracted in Σ to(X)
 *   but never left; a session's start is time 0 and adds nothing);
 * - the nodes a session visited are the nodes it left plus the node it is at, so the sessions
 *   that entered X are those that left X, plus those at X, minus those that did both.
 */
export function fullScanAnalyticsSql(
  organizationId: number,
  graphId: number,
  days: number,
  now: SQL = sql`now()`,
): SQL {
  const since = sql`${now} - make_interval(days => ${days}::int)`;
  const inWindow = (alias: string) =>
    sql`${sql.raw(alias)}.graph_id = ${graphId}::int and ${sql.raw(alias)}.organization_id = ${organizationId}::int`;
  return sql`
    with at_node as (
      -- the window's sessions by the node they are at (ended there, or still there)
      select gs.current_node_id as node_id,
             count(*)::int as sessions,
             count(*) filter (where gs.ended_at is not null)::int as ended,
             sum(date_part('epoch', gs.ended_at - gs.started_at)) filter (where gs.ended_at is not null) as ended_seconds,
             sum(date_part('epoch', gs.node_entered_at - gs.started_at)) filter (where gs.ended_at is null) as open_seconds
      from graph_sessions gs
      where ${inWindow('gs')} and gs.started_at >= ${since}
      group by gs.current_node_id
    ),
    moves as (
      -- One pass over the window's transitions, two hash aggregates (grouping sets): (from, to) pairs
      -- (by_session 0), and (session, node it left) pairs (1), counted per node here.
      select by_session, from_node_id, to_node_id,
             sum(n)::int as n, sum(seconds) as seconds,
             count(*)::int as sessions, count(*) filter (where from_node_id = current_node_id)::int as back
      from (select grouping(tr.from_node_id, tr.to_node_id) as by_session,
                   tr.from_node_id, tr.to_node_id, gs.current_node_id,
                   count(*) as n,
                   sum(date_part('epoch', tr.transitioned_at - gs.started_at)) as seconds
            from graph_transitions tr
            join graph_sessions gs on gs.id = tr.session_id
            where ${inWindow('tr')} and tr.transitioned_at >= ${since}
              and ${inWindow('gs')} and gs.started_at >= ${since}
            group by grouping sets ((tr.from_node_id, tr.to_node_id),
                                    (tr.session_id, tr.from_node_id, gs.current_node_id))) as grouped
      group by by_session, from_node_id, to_node_id
    ),
    pairs as (
      select from_node_id, to_node_id, n, seconds from moves where by_session = 0
    ),
    flows as (
      select node_id, sum(out_n)::int as out_n, sum(out_seconds) as out_seconds, sum(in_seconds) as in_seconds
      from (select from_node_id as node_id, n as out_n, seconds as out_seconds, 0::float8 as in_seconds from pairs
            union all
            select to_node_id, 0, 0::float8, seconds from pairs) as ends_of_pairs
      group by node_id
    ),
    leavers as (
      select from_node_id as node_id, sessions, back from moves where by_session <> 0
    ),
    nodes as (
      select n.id, a.name, n.ordinal from graph_nodes n join assistants a on a.id = n.assistant_id
      where ${inWindow('n')}
    ),
    ids as (
      select id from nodes
      union select node_id from at_node where node_id is not null
      union select node_id from flows
    ),
    per_node as (
      select ids.id as node_id,
             coalesce(nodes.name, 'node ' || ids.id) as node_name,
             nodes.ordinal,
             coalesce(leavers.sessions, 0) + coalesce(at_node.sessions, 0) - coalesce(leavers.back, 0) as entered,
             coalesce(at_node.ended, 0) as ended,
             coalesce(flows.out_n, 0) + coalesce(at_node.ended, 0) as finished_visits,
             coalesce(flows.out_seconds, 0) - coalesce(flows.in_seconds, 0)
               + coalesce(at_node.ended_seconds, 0) + coalesce(at_node.open_seconds, 0) as finished_seconds
      from ids
      left join nodes on nodes.id = ids.id
      left join at_node on at_node.node_id = ids.id
      left join flows on flows.node_id = ids.id
      left join leavers on leavers.node_id = ids.id
    ),
    totals as (
      select (select coalesce(sum(sessions), 0)::int from at_node) as sessions,
             (select coalesce(sum(n), 0)::int from pairs) as transitions,
             (select coalesce(round((sum(ended_seconds) / nullif(sum(ended), 0))::numeric, 2), 0)::float8
                from at_node) as avg_duration
    )
    select
      totals.sessions as total_sessions,
      totals.transitions as total_transitions,
      totals.avg_duration as avg_session_duration,
      (select json_agg(json_build_object(
                'from_node', coalesce(fn.name, 'node ' || p.from_node_id),
                'to_node', coalesce(tn.name, 'node ' || p.to_node_id),
                'count', p.n,
                'percentage', round(100.0 * p.n / totals.transitions, 2)::float8)
              order by p.n desc, p.from_node_id, p.to_node_id)
         from (select * from pairs order by n desc, from_node_id, to_node_id
               limit ${MOST_USED_TRANSITIONS_LIMIT}::int) p
         left join nodes fn on fn.id = p.from_node_id
         left join nodes tn on tn.id = p.to_node_id) as most_used_transitions,
      (select json_object_agg(pn.node_id::text, json_build_object(
                'node_name', pn.node_name,
                'sessions_started', pn.entered,
                'avg_time_in_node', case when pn.finished_visits = 0 then 0
                                         else round((pn.finished_seconds / pn.finished_visits)::numeric, 2)::float8 end,
                'exit_rate', case when pn.entered = 0 then 0
                                  else round(pn.ended::numeric / pn.entered, 4)::float8 end)
              order by pn.ordinal nulls last, pn.node_id)
         from per_node pn) as node_usage_stats
    from totals
  `;
}

/** Runs the full scan as the service ran it (its `work_mem`, in its own transaction). */
export async function fullScanAnalytics(
  db: Db,
  organizationId: number,
  graphId: number,
  days: number,
  now?: Date,
): Promise<ScanFigures> {
  const clock = now === undefined ? sql`now()` : sql`${now.toISOString()}::timestamptz`;
  const result = await db.transaction(async (tx) => {
    await tx.execute(sql.raw(`set local work_mem = '64MB'`));
    return (await tx.execute(fullScanAnalyticsSql(organizationId, graphId, days, clock))) as unknown as {
      rows: Array<Record<string, unknown>>;
    };
  });
  const row = result.rows[0]!;
  const json = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value);
  return {
    total_sessions: Number(row.total_sessions),
    total_transitions: Number(row.total_transitions),
    avg_session_duration: Number(row.avg_session_duration),
    most_used_transitions: (json(row.most_used_transitions) as unknown[] | null) ?? [],
    node_usage_stats: (json(row.node_usage_stats) as Record<string, unknown> | null) ?? {},
  };
}
