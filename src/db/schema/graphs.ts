/**
 * Assistant graphs: nodes (each an assistant) and conditional edges between them. The sessions that
 * walk a graph live in `graph-sessions.ts`.
 */
import { sql } from 'drizzle-orm';
import {
  boolean,
  check,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { assistants } from './assistants.js';
import { oneOf } from './checks.js';
import { timestamps } from './columns.js';
import { organizationColumn, users } from './identity.js';

export const NODE_TYPES = ['entry', 'standard', 'exit', 'escalation'] as const;
export type NodeType = (typeof NODE_TYPES)[number];
export const CONDITION_TYPES = ['intent', 'natural_language', 'mathematical', 'state_variable'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

export const assistantGraphs = pgTable(
  'assistant_graphs',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    name: text('name').notNull(),
    description: text('description'),
    isActive: boolean('is_active').notNull().default(true),
    configuration: jsonb('configuration').$type<Record<string, unknown>>().notNull().default({}),
    createdByUserId: integer('created_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    ...timestamps,
  },
  (t) => [
    // Also the target of same-organization foreign keys (a phone number's graph must be its own).
    uniqueIndex('assistant_graphs_organization_id_key').on(t.organizationId, t.id),
  ],
);

export const graphNodes = pgTable(
  'graph_nodes',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    graphId: integer('graph_id')
      .notNull()
      .references(() => assistantGraphs.id, { onDelete: 'cascade' }),
    assistantId: integer('assistant_id').notNull(),
    nodeType: text('node_type').$type<NodeType>().notNull(),
    /** `{x, y}` on the designer's canvas. */
    position: jsonb('position').$type<{ x: number; y: number }>().notNull().default({ x: 0, y: 0 }),
    /** Per-node settings (e.g. an escalation node's `transfer_number`). */
    configuration: jsonb('configuration').$type<Record<string, unknown>>().notNull().default({}),
    /** The node's index in the structure it was saved with (responses keep that order). */
    ordinal: integer('ordinal').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('graph_nodes_graph_idx').on(t.graphId, t.ordinal),
    index('graph_nodes_assistant_idx').on(t.assistantId),
    // The assistant must be of the graph's organization, and cannot be deleted while a node uses it.
    foreignKey({
      name: 'graph_nodes_assistant_fk',
      columns: [t.organizationId, t.assistantId],
      foreignColumns: [assistants.organizationId, assistants.id],
    }),
    check('graph_nodes_type_check', oneOf(t.nodeType, NODE_TYPES)),
  ],
);

export const graphEdges = pgTable(
  'graph_edges',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    graphId: integer('graph_id')
      .notNull()
      .references(() => assistantGraphs.id, { onDelete: 'cascade' }),
    fromNodeId: integer('from_node_id')
      .notNull()
      .references(() => graphNodes.id, { onDelete: 'cascade' }),
    toNodeId: integer('to_node_id')
      .notNull()
      .references(() => graphNodes.id, { onDelete: 'cascade' }),
    conditionType: text('condition_type').$type<ConditionType>().notNull(),
    intentPattern: text('intent_pattern'),
    naturalLanguageTrigger: text('natural_language_trigger'),
    mathematicalExpression: text('mathematical_expression'),
    stateVariableCondition: text('state_variable_condition'),
    conditionLogic: text('condition_logic').$type<'AND' | 'OR'>().notNull().default('AND'),
    priority: integer('priority').notNull().default(0),
    isActive: boolean('is_active').notNull().default(true),
    handoffSentence: text('handoff_sentence'),
    description: text('description'),
    ordinal: integer('ordinal').notNull().default(0),
    ...timestamps,
  },
  (t) => [
    index('graph_edges_graph_idx').on(t.graphId, t.ordinal),
    index('graph_edges_from_idx').on(t.fromNodeId),
    check('graph_edges_condition_type_check', oneOf(t.conditionType, CONDITION_TYPES)),
    check('graph_edges_logic_check', sql`${t.conditionLogic} in ('AND', 'OR')`),
  ],
);
