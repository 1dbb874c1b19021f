/** The JSON of a graph, its nodes and its edges (platform-api.md "Assistant graph"), and of a conversation session. */
import { Type } from 'typebox';
import { iso, Nullable, NullableTimestamp, OpenObject, Timestamp } from '../../lib/schema.js';
import type { FullGraph } from './service.js';
import type { GraphSessionDetails } from './sessions.js';
import type { EdgeRow, GraphCounted, NodeRow } from './store.js';

// The same values as NODE_TYPES and CONDITION_TYPES (db/schema/graphs.ts), as literals TypeBox can type.
export const NodeType = Type.Union([
  Type.Literal('entry'),
  Type.Literal('standard'),
  Type.Literal('exit'),
  Type.Literal('escalation'),
]);
export const ConditionType = Type.Union([
  Type.Literal('intent'),
  Type.Literal('natural_language'),
  Type.Literal('mathematical'),
  Type.Literal('state_variable'),
]);
export const ConditionLogic = Type.Union([Type.Literal('AND'), Type.Literal('OR')]);

export const Position = Type.Object(
  { x: Type.Number(), y: Type.Number() },
  { additionalProperties: false, description: 'Where the node sits on the designer canvas' },
);

export const NodeOut = Type.Object(
  {
    id: Type.Integer(),
    graph_id: Type.Integer(),
    assistant_id: Type.Integer(),
    assistant_name: Type.String(),
    assistant_description: Nullable(Type.String()),
    node_type: NodeType,
    position: Position,
    configuration: OpenObject,
    created_at: Timestamp,
  },
  { title: 'GraphNode' },
);

export const EdgeOut = Type.Object(
  {
    id: Type.Integer(),
    graph_id: Type.Integer(),
    from_node_id: Type.Integer({ description: 'The stored id of the node the edge leaves' }),
    to_node_id: Type.Integer({ description: 'The stored id of the node the edge enters' }),
    condition_type: ConditionType,
    intent_pattern: Nullable(Type.String()),
    natural_language_trigger: Nullable(Type.String()),
    mathematical_expression: Nullable(Type.String()),
    state_variable_condition: Nullable(Type.String()),
    condition_logic: ConditionLogic,
    priority: Type.Integer(),
    is_active: Type.Boolean(),
    handoff_sentence: Nullable(Type.String()),
    description: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'GraphEdge' },
);

export const GraphOut = Type.Object(
  {
    id: Type.Integer(),
    organization_id: Type.Integer(),
    name: Type.String(),
    description: Nullable(Type.String()),
    is_active: Type.Boolean(),
    configuration: OpenObject,
    nodes: Type.Array(NodeOut, { description: 'Empty in list responses' }),
    edges: Type.Array(EdgeOut, { description: 'Empty in list responses' }),
    total_nodes: Type.Integer(),
    total_edges: Type.Integer(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Graph' },
);

function nodeView(node: NodeRow) {
  return {
    id: node.id,
    graph_id: node.graphId,
    assistant_id: node.assistantId,
    assistant_name: node.assistantName,
    assistant_description: node.assistantDescription,
    node_type: node.nodeType,
    position: node.position,
    configuration: node.configuration,
    created_at: node.createdAt.toISOString(),
  };
}

function edgeView(edge: EdgeRow) {
  return {
    id: edge.id,
    graph_id: edge.graphId,
    from_node_id: edge.fromNodeId,
    to_node_id: edge.toNodeId,
    condition_type: edge.conditionType,
    intent_pattern: edge.intentPattern,
    natural_language_trigger: edge.naturalLanguageTrigger,
    mathematical_expression: edge.mathematicalExpression,
    state_variable_condition: edge.stateVariableCondition,
    condition_logic: edge.conditionLogic,
    priority: edge.priority,
    is_active: edge.isActive,
    handoff_sentence: edge.handoffSentence,
    description: edge.description,
    created_at: edge.createdAt.toISOString(),
    updated_at: edge.updatedAt.toISOString(),
  };
}

function metadataView(graph: FullGraph['graph']) {
  return {
    id: graph.id,
    organization_id: graph.organizationId,
    name: graph.name,
    description: graph.description,
    is_active: graph.isActive,
    configuration: graph.configuration,
  };
}

/** A graph with every node and edge. */
export function graphView({ graph, nodes, edges }: FullGraph) {
  return {
    ...metadataView(graph),
    nodes: nodes.map(nodeView),
    edges: edges.map(edgeView),
    total_nodes: nodes.length,
    total_edges: edges.length,
    created_at: graph.createdAt.toISOString(),
    updated_at: graph.updatedAt.toISOString(),
  };
}

/** A graph as listed: no nodes or edges, their counts still exact. */
export function graphListView(graph: GraphCounted) {
  return {
    ...metadataView(graph),
    nodes: [],
    edges: [],
    total_nodes: graph.totalNodes,
    total_edges: graph.totalEdges,
    created_at: graph.createdAt.toISOString(),
    updated_at: graph.updatedAt.toISOString(),
  };
}

export const SessionOut = Type.Object(
  {
    id: Type.Integer(),
    call_sid: Nullable(Type.String()),
    graph_id: Type.Integer(),
    current_node_id: Nullable(Type.Integer()),
    context: OpenObject,
    started_at: Timestamp,
    ended_at: NullableTimestamp,
    is_active: Type.Boolean({ description: 'True until ended_at is set' }),
    current_assistant_name: Nullable(Type.String()),
    graph_name: Type.String(),
  },
  { title: 'GraphSession' },
);

export function sessionView(row: GraphSessionDetails) {
  return {
    id: row.id,
    call_sid: row.callSid,
    graph_id: row.graphId,
    current_node_id: row.currentNodeId,
    context: row.context,
    started_at: iso(row.startedAt),
    ended_at: iso(row.endedAt),
    is_active: row.endedAt === null,
    current_assistant_name: row.currentAssistantName,
    graph_name: row.graphName,
  };
}
