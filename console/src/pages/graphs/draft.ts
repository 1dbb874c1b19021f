/**
 * The graph being edited: nodes and edges as the page holds them until "Save structure" sends them
 * all (PUT …/structure replaces every node and edge at once). Each item has a key of its own — the
 * stored id's, or a new one — because the API's edges name their ends by index into the nodes array
 * of the request, and an index changes when a node is removed. Also: how an edge's condition reads
 * in a label, and which node or edge an API problem (`edges.2.intent_pattern`) is about.
 */
import type { components } from '../../../../clients/typescript/src/index.js';
import type { FieldProblem } from '../../lib/api.js';

export type Graph = components['schemas']['Graph'];
export type GraphNode = components['schemas']['GraphNode'];
export type GraphEdge = components['schemas']['GraphEdge'];
export type Structure = components['schemas']['GraphStructure'];
export type Simulation = components['schemas']['GraphSimulation'];
export type Analytics = components['schemas']['GraphAnalytics'];
export type NodeType = GraphNode['node_type'];
export type ConditionType = GraphEdge['condition_type'];

export const NODE_TYPES: Array<{ value: NodeType; label: string }> = [
  { value: 'entry', label: 'Entry (where every conversation starts)' },
  { value: 'standard', label: 'Standard' },
  { value: 'exit', label: 'Exit (the conversation ends here)' },
  { value: 'escalation', label: 'Escalation (the call is transferred)' },
];

/** Each condition type and the edge field that holds its condition. */
export const CONDITIONS: Array<{
  value: ConditionType;
  label: string;
  field: ConditionField;
  short: string;
}> = [
  { value: 'intent', label: 'Keywords (intent)', field: 'intent_pattern', short: 'kw' },
  {
    value: 'natural_language',
    label: 'Natural language',
    field: 'natural_language_trigger',
    short: 'nl',
  },
  { value: 'mathematical', label: 'Mathematical', field: 'mathematical_expression', short: 'math' },
  { value: 'state_variable', label: 'State variable', field: 'state_variable_condition', short: 'state' },
];

export type ConditionField =
  | 'intent_pattern'
  | 'natural_language_trigger'
  | 'mathematical_expression'
  | 'state_variable_condition';

export interface DraftNode {
  key: string;
  /** The stored id, null until saved. */
  id: number | null;
  assistant_id: number;
  node_type: NodeType;
  position: { x: number; y: number };
  configuration: Record<string, unknown>;
}

export interface DraftEdge {
  key: string;
  id: number | null;
  from: string;
  to: string;
  condition_type: ConditionType;
  intent_pattern: string;
  natural_language_trigger: string;
  mathematical_expression: string;
  state_variable_condition: string;
  condition_logic: 'AND' | 'OR';
  priority: number;
  is_active: boolean;
  handoff_sentence: string;
  description: string;
}

export interface Draft {
  nodes: DraftNode[];
  edges: DraftEdge[];
}

let fresh = 0;
/** A key for a node or edge not saved yet. */
export const newKey = (kind: 'n' | 'e') => `${kind}new${++fresh}`;
export const nodeKey = (id: number) => `n${id}`;
export const edgeKey = (id: number) => `e${id}`;

export function draftOf(graph: Graph): Draft {
  return {
    nodes: graph.nodes.map((node) => ({
      key: nodeKey(node.id),
      id: node.id,
      assistant_id: node.assistant_id,
      node_type: node.node_type,
      position: node.position,
      configuration: node.configuration,
    })),
    edges: graph.edges.map((edge) => ({
      key: edgeKey(edge.id),
      id: edge.id,
      from: nodeKey(edge.from_node_id),
      to: nodeKey(edge.to_node_id),
      condition_type: edge.condition_type,
      intent_pattern: edge.intent_pattern ?? '',
      natural_language_trigger: edge.natural_language_trigger ?? '',
      mathematical_expression: edge.mathematical_expression ?? '',
      state_variable_condition: edge.state_variable_condition ?? '',
      condition_logic: edge.condition_logic,
      priority: edge.priority,
      is_active: edge.is_active,
      handoff_sentence: edge.handoff_sentence ?? '',
      description: edge.description ?? '',
    })),
  };
}

const orNull = (text: string) => (text.trim() === '' ? null : text);

/**
 * The PUT body. An edge whose end is no longer a node keeps an index past the end of the nodes, so
 * that the API names the edge and its end (the page does not guess a fix for the user).
 */
export function structureBody(draft: Draft): Structure {
  const index = new Map(draft.nodes.map((node, i) => [node.key, i]));
  const at = (key: string) => index.get(key) ?? draft.nodes.length;
  return {
    nodes: draft.nodes.map((node) => ({
      assistant_id: node.assistant_id,
      node_type: node.node_type,
      position: node.position,
      configuration: node.configuration,
    })),
    edges: draft.edges.map((edge) => ({
      from_node_id: at(edge.from),
      to_node_id: at(edge.to),
      condition_type: edge.condition_type,
      intent_pattern: orNull(edge.intent_pattern),
      natural_language_trigger: orNull(edge.natural_language_trigger),
      mathematical_expression: orNull(edge.mathematical_expression),
      state_variable_condition: orNull(edge.state_variable_condition),
      condition_logic: edge.condition_logic,
      priority: edge.priority,
      is_active: edge.is_active,
      handoff_sentence: orNull(edge.handoff_sentence),
      description: orNull(edge.description),
    })),
  };
}

/** The edge's conditions in full: "kw: refund, money back AND math: call_duration > 60". */
export function conditionText(edge: DraftEdge): string {
  const parts = CONDITIONS.filter((c) => edge[c.field].trim() !== '').map(
    (c) => `${c.short}: ${edge[c.field].trim()}`,
  );
  if (parts.length === 0) return `${edge.condition_type}: (no condition)`;
  return parts.join(` ${edge.condition_logic} `);
}

/** The label on the drawing: the condition cut to `max` characters (the full text is its tooltip). */
export function conditionLabel(edge: DraftEdge, max = 20): string {
  const full = conditionText(edge);
  return full.length > max ? `${full.slice(0, max - 1)}…` : full;
}

/** What a problem is about: a node or edge of the draft (by its index when sent), or the whole. */
export interface Placed {
  kind: 'node' | 'edge' | 'graph';
  key: string | undefined;
  /** The field inside the node or edge (`intent_pattern`, `configuration.transfer_number`). */
  field: string;
  message: string;
}

export function placeProblem(draft: Draft, problem: FieldProblem): Placed {
  const [list, index, ...rest] = problem.path;
  const field = rest.join('.');
  if (list === 'nodes' && typeof index === 'number')
    return { kind: 'node', key: draft.nodes[index]?.key, field, message: problem.message };
  if (list === 'edges' && typeof index === 'number')
    return { kind: 'edge', key: draft.edges[index]?.key, field, message: problem.message };
  return { kind: 'graph', key: undefined, field: problem.path.join('.'), message: problem.message };
}
