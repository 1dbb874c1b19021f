/**
 * The one statement behind the graph analytics (analytics.ts): the window's figures as sums of the
 * rollup rows (rollups.ts) plus a scan of the sessions of the window's first, partial hour, formatted
 * into the answer's JSON. Each figure is a sum over sessions, so the two parts simply add up:
 *
 * - The bounds (`windowBoundsSql`): the window's start `since` (`now - days`, as the full scan always
 *   had it), the first whole UTC hour and the first whole UTC day from it on. Day rows from that day
 *   on, hour rows from that hour up to that day, and a scan of the sessions started from `since` up
 *   to that hour cover the window's sessions once each (the window has no end: a session started
 *   "later than now" with an explicit time is in it, as it always was).
 * - The scan needs no per-session ordering, because a session's transitions form one chain (each
 *   leaves the node the one before it entered: sessions.ts moves a session under its row lock). With
 *   times in microseconds from each session's start, the finished visits of node X number
 *   #from(X) + #ended_at(X) and last Σ from(X) − Σ to(X) + Σ ended_at(X) + Σ open visits' entry times
 *   at X (subtracted in Σ to(X) but never left); the sessions that entered X are those that left X,
 *   plus those at X, minus those that did both.
 * - Means are divided exactly (numeric, from whole microseconds) and rounded half away from zero.
 */
import { type SQL, sql } from 'drizzle-orm';
import { micros } from './rollups.js';

/** How many (from, to) pairs `most_used_transitions` lists. */
export const MOST_USED_TRANSITIONS_LIMIT = 10;

/** Where a window starts, and the first whole UTC hour and day from there on (exact UTC timestamps, as text). */
export interface WindowBounds {
  since: string;
  firstHour: string;
  firstDay: string;
}

/**
 * The bounds of the window of `days` ending at `now` (`now - days`, in the session's calendar, as the
 * full scan always had it), as exact ISO texts (microseconds kept). Computed apart so that the
 * analytics statement gets them as parameters: the planner then sees how few sessions the partial
 * hour holds (bounds computed inside the statement made it guess a ninth of the graph's sessions,
 * cost the plan high, and switch on JIT compilation: over a second at 1M transitions).
 */
export function windowBoundsSql(days: number, now: SQL): SQL {
  const utc = (at: string) => sql.raw(`to_char(${at} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);
  const ceilTo = (unit: 'hour' | 'day', step: string) =>
    `case when date_trunc('${unit}', since, 'UTC') = since then since
          else date_trunc('${unit}', since, 'UTC') + interval '${step}' end`;
  return sql`
    select ${utc('since')} as "since", ${utc(ceilTo('hour', '1 hour'))} as "firstHour",
           ${utc(ceilTo('day', '24 hours'))} as "firstDay"
    from (select ${now} - make_interval(days => ${days}::int) as since) as s`;
}

/** One row: total_sessions, total_transitions, avg_session_duration, most_used_transitions, node_usage_stats (json). */
export function analyticsSql(organizationId: number, graphId: number, bounds: WindowBounds): SQL {
  const ours = (alias: string) =>
    sql.raw(
      `${alias}.graph_id = ${Number(graphId)} and ${alias}.organization_id = ${Number(organizationId)}`,
    );
  const since = sql`${bounds.since}::timestamptz`;
  const firstHour = sql`${bounds.firstHour}::timestamptz`;
  const firstDay = sql`${bounds.firstDay}::timestamptz`;
  const covered = (alias: string) => {
    const r = sql.raw(alias);
    return sql`((${r}.hours = 24 and ${r}.period_start >= ${firstDay})
      or (${r}.hours = 1 and ${r}.period_start >= ${firstHour} and ${r}.period_start < ${firstDay}))`;
  };
  return sql`
    with
    rolled_nodes as (
      select r.node_id, sum(r.sessions_started) as started, sum(r.sessions_entered) as entered,
             sum(r.sessions_ended) as ended, sum(r.session_micros) as session_us,
             sum(r.visits) as visits, sum(r.visit_micros) as visit_us
      from graph_node_rollups r
      where ${ours('r')} and ${covered('r')}
      group by r.node_id
    ),
    rolled_pairs as (
      select r.from_node_id, r.to_node_id, sum(r.transitions) as n
      from graph_transition_rollups r
      where ${ours('r')} and ${covered('r')}
      group by r.from_node_id, r.to_node_id
    ),
    -- the window's first, partial hour: its sessions, scanned
    edge as (
      select gs.id, gs.current_node_id, gs.started_at, gs.ended_at, gs.node_entered_at
      from graph_sessions gs
      where ${ours('gs')} and gs.started_at >= ${since} and gs.started_at < ${firstHour}
    ),
    -- Lateral and kept from being flattened (offset 0), so each session's transitions are read through
    -- the session index whatever the planner estimates, never by hashing every transition of the graph.
    edge_moves as (
      select tr.session_id, tr.from_node_id, tr.to_node_id, e.current_node_id,
             ${sql.raw(micros('tr.transitioned_at - e.started_at'))} as at_us
      from edge e cross join lateral (
        select * from graph_transitions tr where tr.session_id = e.id and ${ours('tr')} offset 0
      ) as tr
    ),
    edge_at as (
      select current_node_id as node_id, count(*) as sessions,
             count(*) filter (where ended_at is not null) as ended,
             coalesce(sum(${sql.raw(micros('ended_at - started_at'))}) filter (where ended_at is not null), 0) as session_us,
             coalesce(sum(${sql.raw(micros('node_entered_at - started_at'))}) filter (where ended_at is null), 0) as open_us
      from edge where current_node_id is not null
      group by current_node_id
    ),
    edge_flows as (
      select node_id, sum(out_n) as out_n, sum(out_us) as out_us, sum(in_us) as in_us
      from (select from_node_id as node_id, 1 as out_n, at_us as out_us, 0::bigint as in_us from edge_moves
            union all
            select to_node_id, 0, 0::bigint, at_us from edge_moves) as ends_of_moves
      group by node_id
    ),
    edge_leavers as (
      select from_node_id as node_id, count(*) as sessions,
             count(*) filter (where from_node_id = current_node_id) as back
      from (select distinct session_id, from_node_id, current_node_id from edge_moves) as left_nodes
      group by from_node_id
    ),
    edge_nodes as (
      select ids.node_id,
             coalesce(l.sessions, 0) + coalesce(a.sessions, 0) - coalesce(l.back, 0) as entered,
             coalesce(a.ended, 0) as ended,
             coalesce(a.session_us, 0) as session_us,
             coalesce(f.out_n, 0) + coalesce(a.ended, 0) as visits,
             coalesce(f.out_us, 0) - coalesce(f.in_us, 0) + coalesce(a.session_us, 0) + coalesce(a.open_us, 0) as visit_us
      from (select node_id from edge_at union select node_id from edge_flows) as ids
      left join edge_at a on a.node_id = ids.node_id
      left join edge_flows f on f.node_id = ids.node_id
      left join edge_leavers l on l.node_id = ids.node_id
    ),
    -- both parts added up
    node_figures as (
      select node_id, sum(entered)::int as entered, sum(ended)::int as ended, sum(session_us) as session_us,
             sum(visits)::int as visits, sum(visit_us) as visit_us
      from (select node_id, entered, ended, session_us, visits, visit_us from rolled_nodes
            union all
            select node_id, entered, ended, session_us, visits, visit_us from edge_nodes) as parts
      group by node_id
    ),
    pairs as (
      select from_node_id, to_node_id, sum(n)::int as n
      from (select from_node_id, to_node_id, n from rolled_pairs
            union all
            select from_node_id, to_node_id, 1 from edge_moves) as parts
      group by from_node_id, to_node_id
    ),
    totals as (
      select ((select coalesce(sum(started), 0) from rolled_nodes) + (select count(*) from edge))::int as sessions,
             (select coalesce(sum(n), 0)::int from pairs) as transitions,
             (select coalesce(round(sum(session_us) / (nullif(sum(ended), 0) * 1000000::numeric), 2), 0)::float8
                from node_figures) as avg_duration
    ),
    nodes as (
      select n.id, a.name, n.ordinal from graph_nodes n join assistants a on a.id = n.assistant_id
      where ${ours('n')}
    ),
    per_node as (
      select ids.id as node_id,
             coalesce(nodes.name, 'node ' || ids.id) as node_name,
             nodes.ordinal,
             coalesce(nf.entered, 0) as entered,
             coalesce(nf.ended, 0) as ended,
             coalesce(nf.visits, 0) as visits,
             coalesce(nf.visit_us, 0) as visit_us
      from (select id from nodes union select node_id from node_figures) as ids
      left join nodes on nodes.id = ids.id
      left join node_figures nf on nf.node_id = ids.id
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
                'avg_time_in_node', case when pn.visits = 0 then 0
                                         else round(pn.visit_us / (pn.visits * 1000000::numeric), 2)::float8 end,
                'exit_rate', case when pn.entered = 0 then 0
                                  else round(pn.ended::numeric / pn.entered, 4)::float8 end)
              order by pn.ordinal nulls last, pn.node_id)
         from per_node pn) as node_usage_stats
    from totals
  `;
}
