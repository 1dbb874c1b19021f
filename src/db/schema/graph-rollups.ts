/**
 * Graph analytics rollups (domains/graphs, `analytics.ts` reads, `rollups.ts` writes): what the
 * sessions of a graph added up to, per UTC hour and per UTC day **of the session's start**, per node
 * and per pair of nodes. Everything a session does (its start, its transitions, its end) is added to
 * the rows of the hour and the day it started in, by the transaction that records it, because the
 * analytics window selects sessions by their start and counts all they did. So GET /analytics sums a
 * few hundred rows instead of scanning every transition. Times are kept in whole microseconds (the
 * timestamps' own precision) so that means come out exact. Migration 0018 backfilled them.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  foreignKey,
  integer,
  pgTable,
  primaryKey,
  smallint,
  timestamp,
} from 'drizzle-orm/pg-core';
import { assistantGraphs } from './graphs.js';
import { organizationColumn } from './identity.js';

/** A rollup covers one UTC hour (1) or one UTC day (24). */
export const GRAPH_ROLLUP_SPANS = [1, 24] as const;
export type GraphRollupSpan = (typeof GRAPH_ROLLUP_SPANS)[number];

/** The key of a rollup row besides what it counts: organization, graph and period. */
const rollupKey = {
  organizationId: organizationColumn(),
  graphId: integer('graph_id').notNull(),
  hours: smallint('hours').$type<GraphRollupSpan>().notNull(),
  /** The start of the UTC hour or day the sessions counted here started in. */
  periodStart: timestamp('period_start', { withTimezone: true }).notNull(),
};

/** Per node (a plain id: history outlives a structure update that removes the node). */
export const graphNodeRollups = pgTable(
  'graph_node_rollups',
  {
    ...rollupKey,
    nodeId: integer('node_id').notNull(),
    /** Sessions that started at the node (the entry node when they started). */
    sessionsStarted: integer('sessions_started').notNull().default(0),
    /** Distinct sessions that entered the node, by starting there or moving there. */
    sessionsEntered: integer('sessions_entered').notNull().default(0),
    /** Sessions that ended at the node. */
    sessionsEnded: integer('sessions_ended').notNull().default(0),
    /** Durations (start to end) of the sessions that ended at the node, in microseconds. */
    sessionMicros: bigint('session_micros', { mode: 'number' }).notNull().default(0),
    /** Finished visits (left by a transition or by the session's end), and their total microseconds. */
    visits: integer('visits').notNull().default(0),
    visitMicros: bigint('visit_micros', { mode: 'number' }).notNull().default(0),
  },
  (t) => [
    primaryKey({
      name: 'graph_node_rollups_pkey',
      columns: [t.organizationId, t.graphId, t.hours, t.periodStart, t.nodeId],
    }),
    foreignKey({
      name: 'graph_node_rollups_graph_fk',
      columns: [t.organizationId, t.graphId],
      foreignColumns: [assistantGraphs.organizationId, assistantGraphs.id],
    }).onDelete('cascade'),
    check('graph_node_rollups_hours_check', sql`${t.hours} in (1, 24)`),
  ],
);

/** Per pair of nodes moved between (two edges between the same nodes add up, as the analytics count them). */
export const graphTransitionRollups = pgTable(
  'graph_transition_rollups',
  {
    ...rollupKey,
    fromNodeId: integer('from_node_id').notNull(),
    toNodeId: integer('to_node_id').notNull(),
    transitions: integer('transitions').notNull().default(0),
  },
  (t) => [
    primaryKey({
      name: 'graph_transition_rollups_pkey',
      columns: [t.organizationId, t.graphId, t.hours, t.periodStart, t.fromNodeId, t.toNodeId],
    }),
    foreignKey({
      name: 'graph_transition_rollups_graph_fk',
      columns: [t.organizationId, t.graphId],
      foreignColumns: [assistantGraphs.organizationId, assistantGraphs.id],
    }).onDelete('cascade'),
    check('graph_transition_rollups_hours_check', sql`${t.hours} in (1, 24)`),
  ],
);
