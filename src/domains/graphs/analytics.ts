/**
 * Graph analytics (GET /api/v1/assistant-graphs/{graph_id}/analytics): how conversations walked a
 * graph over the last `days`, read from the rollups the sessions store keeps as it writes
 * (rollups.ts, `db/schema/graph-rollups.ts`), so the answer costs about the same at a million
 * transitions as at a thousand. The definitions (docs/graphs.md, "Sessions and analytics"):
 *
 * - The window is the sessions *started* in the last `days` (`started_at >= now() - days`); the
 *   transitions counted are all the transitions of those sessions.
 * - `avg_session_duration`: mean of `ended_at - started_at` over the window's ended sessions, in
 *   seconds (2 decimals); 0 when none has ended.
 * - `most_used_transitions`: the 10 most frequent (from node, to node) pairs, count descending (then
 *   node ids ascending); `percentage` = 100 × count / total_transitions, 2 decimals.
 * - `node_usage_stats`, keyed by node id — every node of the graph's current structure (zeros when
 *   unused), plus nodes visited in the window that a structure update has since removed:
 *   `sessions_started`: distinct sessions that entered the node, by starting there or moving there;
 *   `avg_time_in_node`: mean seconds per visit (from entering to the next transition, or to the
 *   session's end), visits still open excluded, 0 when none (2 decimals);
 *   `exit_rate`: sessions that ended at the node / sessions that entered it (0..1, 4 decimals).
 * - A node's name is its assistant's name, or `node <id>` when the node no longer exists.
 *
 * Every figure is a sum over the window's sessions (a mean is a sum over a count), and the rollups
 * hold those sums per hour and per UTC day of the sessions' start. The window's start is rarely on
 * an hour, so the answer adds: the day rows of the whole UTC days from the window's start on, the
 * hour rows of the whole hours before the first of those days, and a scan of the few sessions that
 * started in the window's first, partial hour. The answer is exactly the full scan's (the property
 * test checks it against that statement, kept in test/support/graph-analytics-oracle.ts).
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { assistantGraphs } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { notFound } from '../errors.js';
import { analyticsSql, type WindowBounds, windowBoundsSql } from './analytics-sql.js';

export { MOST_USED_TRANSITIONS_LIMIT } from './analytics-sql.js';

export interface TransitionUsage {
  from_node: string;
  to_node: string;
  count: number;
  percentage: number;
}

export interface NodeUsage {
  node_name: string;
  sessions_started: number;
  avg_time_in_node: number;
  exit_rate: number;
}

export interface GraphAnalytics {
  graph_id: number;
  graph_name: string;
  period_days: number;
  total_sessions: number;
  total_transitions: number;
  avg_session_duration: number;
  most_used_transitions: TransitionUsage[];
  node_usage_stats: Record<string, NodeUsage>;
}

export class GraphAnalyticsService {
  /** `now` pins the clock (tests); by default the window ends at the database's `now()`, as it always has. */
  constructor(private readonly deps: { db: Db; now?: () => Date }) {}

  /** Analytics of one of the organization's graphs over the sessions started in the last `days`. */
  async compute(tenant: Tenant, graphId: number, days: number): Promise<GraphAnalytics> {
    if (!Number.isInteger(days) || days < 1 || days > 365) throw new RangeError('days must be 1..365');
    const [graph] = await this.deps.db
      .select({ id: assistantGraphs.id, name: assistantGraphs.name })
      .from(assistantGraphs)
      .where(and(tenant.owns(assistantGraphs), eq(assistantGraphs.id, graphId)));
    if (!graph) throw notFound('Graph not found');
    const now = this.deps.now?.();
    const clock = now === undefined ? sql`now()` : sql`${now.toISOString()}::timestamptz`;
    const bounds = (await this.deps.db.execute(windowBoundsSql(days, clock))) as unknown as {
      rows: WindowBounds[];
    };
    const result = (await this.deps.db.execute(
      analyticsSql(tenant.organizationId, graph.id, bounds.rows[0]!),
    )) as unknown as { rows: Array<Record<string, unknown>> };
    const row = result.rows[0]!;
    return {
      graph_id: graph.id,
      graph_name: graph.name,
      period_days: days,
      total_sessions: Number(row.total_sessions),
      total_transitions: Number(row.total_transitions),
      avg_session_duration: Number(row.avg_session_duration),
      most_used_transitions: (parseJson(row.most_used_transitions) as TransitionUsage[] | null) ?? [],
      node_usage_stats: (parseJson(row.node_usage_stats) as Record<string, NodeUsage> | null) ?? {},
    };
  }
}

/** Both drivers parse `json` columns; a string would mean one did not. */
function parseJson(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}
