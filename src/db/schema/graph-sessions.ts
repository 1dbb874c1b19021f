/**
 * The conversation sessions that walk an assistant graph, with every transition recorded for
 * analytics. Apart from `graphs.ts` because a session points at its call: `calls` → phone numbers →
 * graphs would otherwise import each other in a circle.
 */
import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { assistantGraphs } from './graphs.js';
import { organizationColumn } from './identity.js';
import { calls } from './telephony.js';

/** One conversation walking a graph (usually one call). */
export const graphSessions = pgTable(
  'graph_sessions',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    graphId: integer('graph_id')
      .notNull()
      .references(() => assistantGraphs.id, { onDelete: 'cascade' }),
    callSid: text('call_sid'),
    callId: integer('call_id').references(() => calls.id, { onDelete: 'set null' }),
    /** Kept as a plain id: a structure update replaces nodes, and history must survive it. */
    currentNodeId: integer('current_node_id'),
    /** The session's shared state: assistants read and write it; state_variable conditions test it. */
    context: jsonb('context').$type<Record<string, unknown>>().notNull().default({}),
    /** Turns so far, and turns in the current node (for `turn_count` / `node_turn_count`). */
    turnCount: integer('turn_count').notNull().default(0),
    nodeTurnCount: integer('node_turn_count').notNull().default(0),
    /** When the session entered its current node (for `time_in_node`). */
    nodeEnteredAt: timestamp('node_entered_at', { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
    endedAt: timestamp('ended_at', { withTimezone: true }),
    /** How it ended: exit, escalation, hangup… */
    endReason: text('end_reason'),
  },
  (t) => [
    index('graph_sessions_graph_started_idx').on(t.graphId, t.startedAt),
    index('graph_sessions_call_sid_idx').on(t.organizationId, t.callSid),
    index('graph_sessions_active_idx').on(t.graphId).where(sql`${t.endedAt} is null`),
  ],
);

/** Every move of a session from one node to another, with the edge and the reason it fired. */
export const graphTransitions = pgTable(
  'graph_transitions',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    sessionId: integer('session_id')
      .notNull()
      .references(() => graphSessions.id, { onDelete: 'cascade' }),
    graphId: integer('graph_id').notNull(),
    fromNodeId: integer('from_node_id').notNull(),
    toNodeId: integer('to_node_id').notNull(),
    edgeId: integer('edge_id'),
    reason: text('reason').notNull(),
    transitionedAt: timestamp('transitioned_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('graph_transitions_graph_time_idx').on(t.graphId, t.transitionedAt),
    index('graph_transitions_session_idx').on(t.sessionId, t.transitionedAt),
  ],
);
