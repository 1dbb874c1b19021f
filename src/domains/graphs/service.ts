/**
 * Assistant graphs: their metadata, their structure (nodes and edges, saved whole and checked before
 * anything is written) and the dry run of the routing engine over a list of utterances (simulate).
 * Sessions and analytics live beside this in sessions.ts and analytics.ts.
 */
import type { Db, Tx } from '../../db/client.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { ConditionType, NodeType } from '../../db/schema/graphs.js';
import type { Principal } from '../../http/access.js';
import { conflict, notFound, ValidationFailed, type ValidationIssue } from '../../http/errors.js';
import { toE164 } from '../../lib/phone.js';
import { applyContextUpdate, ContextUpdateError, decideNext, entryNode, words } from './engine.js';
import type { EngineGraph, SessionState } from './engine-types.js';
import { validateExpression } from './expressions.js';
import * as store from './store.js';

type Json = Record<string, unknown>;

export interface NodeInput {
  assistant_id: number;
  node_type: NodeType;
  position?: { x: number; y: number };
  configuration?: object;
}

export interface EdgeInput {
  /** An index into the nodes of the same request. */
  from_node_id: number;
  to_node_id: number;
  condition_type: ConditionType;
  intent_pattern?: string | null;
  natural_language_trigger?: string | null;
  mathematical_expression?: string | null;
  state_variable_condition?: string | null;
  condition_logic?: 'AND' | 'OR';
  priority?: number;
  is_active?: boolean;
  handoff_sentence?: string | null;
  description?: string | null;
}

export interface StructureInput {
  nodes: NodeInput[];
  edges: EdgeInput[];
}

export interface GraphCreateInput {
  name: string;
  description?: string | null;
  is_active?: boolean;
  configuration?: object;
  nodes: NodeInput[];
  edges?: EdgeInput[];
}

export interface GraphUpdateInput {
  name?: string;
  description?: string | null;
  is_active?: boolean;
  configuration?: object;
}

export interface SimulateInput {
  /**
   * Final user utterances, in order. The object form also applies `context_update` (as the context
   * tool would, while the assistant answered the previous turn) before its utterance is routed.
   */
  utterances: Array<string | { text: string; context_update?: object }>;
  context?: object;
  /** Seconds the simulated clock advances per turn (default 10). */
  call_duration_per_turn?: number;
  /** No language model runs in a simulation: true makes every natural_language condition hold (default false). */
  assume_natural_language?: boolean;
}

export interface SimulatedTransition {
  turn: number;
  utterance: string;
  from_node_id: number;
  to_node_id: number;
  edge_id: number;
  reason: string;
  handoff_sentence: string | null;
  call_duration: number;
}

export interface FullGraph {
  graph: store.GraphRow;
  nodes: store.NodeRow[];
  edges: store.EdgeRow[];
}

export const DEFAULT_SECONDS_PER_TURN = 10;

/** The field each condition type needs. */
const CONDITION_FIELD = {
  intent: 'intent_pattern',
  natural_language: 'natural_language_trigger',
  mathematical: 'mathematical_expression',
  state_variable: 'state_variable_condition',
} as const satisfies Record<ConditionType, keyof EdgeInput>;

function failed(issues: ValidationIssue[]): ValidationFailed {
  return new ValidationFailed(issues, 400);
}

export class GraphService {
  constructor(private readonly deps: { db: Db }) {}

  async create(principal: Principal, input: GraphCreateInput): Promise<FullGraph> {
    const structure = checkStructure({ nodes: input.nodes, edges: input.edges ?? [] });
    const metadata = checkMetadata(input);
    const id = await this.#writeStructure(principal, input.nodes, async (tx) => {
      const graph = await store.insertGraph(tx, principal.tenant, {
        name: metadata.name!,
        description: metadata.description ?? null,
        isActive: metadata.isActive ?? true,
        configuration: metadata.configuration ?? {},
        createdByUserId: principal.user.id,
      });
      await store.replaceStructure(tx, principal.tenant, graph.id, structure.nodes, structure.edges);
      return graph.id;
    });
    return this.get(principal, id);
  }

  /** The graph with its nodes and edges, read in one snapshot. */
  async get(principal: Principal, id: number): Promise<FullGraph> {
    const found = await this.deps.db.transaction(
      async (tx) => {
        const graph = await store.findGraph(tx, principal.tenant, id);
        if (!graph) return undefined;
        const nodes = await store.nodesOf(tx, principal.tenant, id);
        const edges = await store.edgesOf(tx, principal.tenant, id);
        return { graph, nodes, edges };
      },
      { isolationLevel: 'repeatable read', accessMode: 'read only' },
    );
    if (!found) throw notFound('Graph not found');
    return found;
  }

  list(principal: Principal, options: { skip: number; limit: number; activeOnly: boolean }) {
    return store.listGraphs(this.deps.db, principal.tenant, options);
  }

  /** Changes the metadata fields named (name, description, is_active, configuration). */
  async update(principal: Principal, id: number, input: GraphUpdateInput): Promise<FullGraph> {
    const changes = checkMetadata(input);
    if (!(await store.updateGraph(this.deps.db, principal.tenant, id, changes)))
      throw notFound('Graph not found');
    return this.get(principal, id);
  }

  /** Replaces every node and edge at once: all of the new structure is stored, or none of it. */
  async replaceStructure(principal: Principal, id: number, input: StructureInput): Promise<FullGraph> {
    const structure = checkStructure(input);
    await this.#writeStructure(principal, input.nodes, async (tx) => {
      // Locked, so that two replacements of one graph never interleave.
      if (!(await store.findGraph(tx, principal.tenant, id, { forUpdate: true })))
        throw notFound('Graph not found');
      await store.replaceStructure(tx, principal.tenant, id, structure.nodes, structure.edges);
      await store.updateGraph(tx, principal.tenant, id, {});
    });
    return this.get(principal, id);
  }

  /** Deletes a graph no phone number routes to (its sessions go with it); otherwise 409 naming the numbers. */
  async remove(principal: Principal, id: number): Promise<void> {
    const users = await this.#numbersOf(principal, id);
    if (users.length > 0) throw graphInUse(users);
    try {
      if (!(await store.deleteGraph(this.deps.db, principal.tenant, id))) throw notFound('Graph not found');
    } catch (error) {
      // A number was routed to it between the check and the delete (phone_numbers_graph_fk).
      if (isForeignKeyViolation(error)) throw graphInUse(await this.#numbersOf(principal, id));
      throw error;
    }
  }

  /**
   * Runs the routing engine over `utterances` from the entry node, as a call would, with a simulated
   * clock and no language model. Records nothing.
   */
  async simulate(principal: Principal, id: number, input: SimulateInput) {
    const { nodes, edges } = await this.get(principal, id);
    const graph: EngineGraph = {
      nodes: nodes.map((node) => ({
        id: node.id,
        nodeType: node.nodeType,
        assistantId: node.assistantId,
        configuration: node.configuration,
      })),
      edges: edges.map((edge) => ({
        id: edge.id,
        fromNodeId: edge.fromNodeId,
        toNodeId: edge.toNodeId,
        conditionType: edge.conditionType,
        intentPattern: edge.intentPattern,
        naturalLanguageTrigger: edge.naturalLanguageTrigger,
        mathematicalExpression: edge.mathematicalExpression,
        stateVariableCondition: edge.stateVariableCondition,
        conditionLogic: edge.conditionLogic,
        priority: edge.priority,
        isActive: edge.isActive,
        handoffSentence: edge.handoffSentence,
      })),
    };
    const byId = new Map(nodes.map((node) => [node.id, node]));
    const step = (nodeId: number) => {
      const node = byId.get(nodeId);
      return {
        node_id: nodeId,
        node_type: node?.nodeType ?? null,
        assistant_id: node?.assistantId ?? null,
        assistant_name: node?.assistantName ?? null,
      };
    };
    const entry = entryNode(graph);
    // Saved structures always have one; a graph stored before that rule could lack it.
    if (!entry)
      throw failed([{ loc: ['path', 'graph_id'], msg: 'The graph has no entry node', type: 'value_error' }]);

    const secondsPerTurn = input.call_duration_per_turn ?? DEFAULT_SECONDS_PER_TURN;
    const assumed = input.assume_natural_language ?? false;
    const startedAt = new Date();
    let clock = startedAt;
    const state: SessionState = {
      currentNodeId: entry.id,
      context: structuredClone((input.context ?? {}) as Json),
      turnCount: 0,
      nodeTurnCount: 0,
      startedAt,
      nodeEnteredAt: startedAt,
    };
    const pathTaken = [step(entry.id)];
    const transitions: SimulatedTransition[] = [];
    let ended: 'exit' | 'escalation' | null = null;
    let transferNumber: string | null = null;
    let turns = 0;
    for (const [index, item] of input.utterances.entries()) {
      const utterance = typeof item === 'string' ? item : item.text;
      if (typeof item !== 'string' && item.context_update !== undefined) {
        try {
          state.context = applyContextUpdate(state.context, item.context_update);
        } catch (error) {
          if (!(error instanceof ContextUpdateError)) throw error;
          throw failed([
            {
              loc: ['body', 'utterances', index, 'context_update'],
              msg: `utterance ${index}: ${error.message}`,
              type: 'value_error',
            },
          ]);
        }
      }
      clock = new Date(startedAt.getTime() + (index + 1) * secondsPerTurn * 1000);
      // Without a classifier the engine counts natural_language conditions false, with that reason.
      const decision = await decideNext(graph, state, utterance, {
        now: () => clock,
        ...(assumed ? { classifier: async () => true } : {}),
      });
      turns = index + 1;
      state.turnCount += 1;
      if (decision.edge && decision.toNodeId !== null) {
        transitions.push({
          turn: turns,
          utterance,
          from_node_id: state.currentNodeId,
          to_node_id: decision.toNodeId,
          edge_id: decision.edge.id,
          reason: decision.reason,
          handoff_sentence: decision.handoffSentence,
          call_duration: (clock.getTime() - startedAt.getTime()) / 1000,
        });
        pathTaken.push(step(decision.toNodeId));
        state.currentNodeId = decision.toNodeId;
        state.nodeTurnCount = 0;
        state.nodeEnteredAt = clock;
      } else {
        state.nodeTurnCount += 1;
      }
      if (decision.ends) {
        ended = decision.ends;
        transferNumber = decision.transferNumber;
        break;
      }
    }
    return {
      path_taken: pathTaken,
      transitions,
      final_context: state.context,
      final_node_id: state.currentNodeId,
      turns_processed: turns,
      ended,
      transfer_number: transferNumber,
    };
  }

  /**
   * Runs a structure write in one transaction. The assistants are checked by the foreign key as the
   * nodes are written, so an unknown assistant rolls back everything the write had done; the answer
   * then names every node whose assistant the organization does not have.
   */
  async #writeStructure<T>(
    principal: Principal,
    nodes: NodeInput[],
    write: (tx: Tx) => Promise<T>,
  ): Promise<T> {
    try {
      return await this.deps.db.transaction(write);
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error;
      const known = await store.existingAssistants(
        this.deps.db,
        principal.tenant,
        nodes.map((node) => node.assistant_id),
      );
      const issues = nodes.flatMap((node, index) =>
        known.has(node.assistant_id)
          ? []
          : [
              {
                loc: ['body', 'nodes', index, 'assistant_id'],
                msg: `assistant ${node.assistant_id} not found`,
                type: 'value_error',
              },
            ],
      );
      if (issues.length === 0) throw error;
      throw failed(issues);
    }
  }

  async #numbersOf(principal: Principal, id: number): Promise<string[]> {
    const numbers = await store.numbersOfGraph(this.deps.db, principal.tenant, id);
    return numbers.map((n) => `phone number ${n.phoneNumber} (id ${n.id})`);
  }
}

function graphInUse(users: string[]) {
  const shown = users.slice(0, 5).join(', ') + (users.length > 5 ? ` and ${users.length - 5} more` : '');
  return conflict(`The graph is in use by ${shown}; route those elsewhere first`);
}

function checkMetadata(input: GraphUpdateInput): Partial<store.GraphValues> {
  const values: Partial<store.GraphValues> = {};
  if (input.name !== undefined) {
    const name = input.name.trim();
    if (name === '')
      throw failed([{ loc: ['body', 'name'], msg: 'name must not be blank', type: 'string_too_short' }]);
    values.name = name;
  }
  if (input.description !== undefined) values.description = input.description;
  if (input.is_active !== undefined) values.isActive = input.is_active;
  if (input.configuration !== undefined) values.configuration = input.configuration as Json;
  return values;
}

const text = (value: string | null | undefined): string | null =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : null;

/**
 * Every rule of a structure that needs no database, all reported at once (400): exactly one entry
 * node; an escalation node's transfer number; edge ends that are indexes of `nodes`, not leaving a
 * node where the conversation has ended; each edge's condition field present; expressions that parse.
 */
export function checkStructure(input: StructureInput): {
  nodes: store.NodeValues[];
  edges: store.EdgeValues[];
} {
  const issues: ValidationIssue[] = [];
  const issue = (loc: Array<string | number>, msg: string, type = 'value_error') =>
    issues.push({ loc: ['body', ...loc], msg, type });

  const entries = input.nodes.flatMap((node, index) => (node.node_type === 'entry' ? [index] : []));
  if (entries.length !== 1) {
    issue(
      ['nodes'],
      entries.length === 0
        ? 'A graph needs exactly one entry node; there is none'
        : `A graph needs exactly one entry node; nodes ${entries.join(', ')} are all entry nodes`,
    );
  }
  const nodes = input.nodes.map((node, index): store.NodeValues => {
    const configuration = structuredClone((node.configuration ?? {}) as Json);
    if (node.node_type === 'escalation') {
      const raw = configuration.transfer_number;
      const e164 = typeof raw === 'string' ? toE164(raw) : undefined;
      if (!e164) {
        issue(
          ['nodes', index, 'configuration', 'transfer_number'],
          `node ${index}: an escalation node needs configuration.transfer_number, an E.164 number (e.g. +14155552671)`,
          raw === undefined ? 'missing' : 'value_error',
        );
      } else {
        configuration.transfer_number = e164;
      }
    }
    return {
      assistantId: node.assistant_id,
      nodeType: node.node_type,
      position: { x: node.position?.x ?? 0, y: node.position?.y ?? 0 },
      configuration,
    };
  });

  const edges = input.edges.map((edge, index): store.EdgeValues => {
    for (const end of ['from_node_id', 'to_node_id'] as const) {
      const at = edge[end];
      if (at >= input.nodes.length) {
        issue(
          ['edges', index, end],
          input.nodes.length === 0
            ? `edge ${index}: ${end} ${at} is not an index of nodes (there are none)`
            : `edge ${index}: ${end} ${at} is not an index of nodes (0 to ${input.nodes.length - 1})`,
        );
      }
    }
    const from = input.nodes[edge.from_node_id];
    if (from && (from.node_type === 'exit' || from.node_type === 'escalation')) {
      issue(
        ['edges', index, 'from_node_id'],
        `edge ${index}: leaves node ${edge.from_node_id}, an ${from.node_type} node, where the conversation has already ended`,
      );
    }
    const conditions = {
      intent_pattern: text(edge.intent_pattern),
      natural_language_trigger: text(edge.natural_language_trigger),
      mathematical_expression: text(edge.mathematical_expression),
      state_variable_condition: text(edge.state_variable_condition),
    };
    const required = CONDITION_FIELD[edge.condition_type];
    if (conditions[required] === null) {
      issue(
        ['edges', index, required],
        `edge ${index}: condition_type ${edge.condition_type} needs ${required}`,
        'missing',
      );
    }
    if (conditions.intent_pattern?.split(',').every((keyword) => words(keyword).length === 0)) {
      issue(['edges', index, 'intent_pattern'], `edge ${index}: intent_pattern names no keyword`);
    }
    for (const [field, kind] of [
      ['mathematical_expression', 'mathematical'],
      ['state_variable_condition', 'state_variable'],
    ] as const) {
      if (conditions[field] === null) continue;
      // Checked as sent, so that the position counts in the caller's own text.
      const source = edge[field]!;
      const problem = validateExpression(kind, source);
      if (problem) {
        issue(
          ['edges', index, field],
          `edge ${index}: ${field} ${JSON.stringify(source)}: ${problem.message} at position ${problem.position}`,
        );
      }
    }
    return {
      fromIndex: edge.from_node_id,
      toIndex: edge.to_node_id,
      conditionType: edge.condition_type,
      intentPattern: conditions.intent_pattern,
      naturalLanguageTrigger: conditions.natural_language_trigger,
      mathematicalExpression: conditions.mathematical_expression,
      stateVariableCondition: conditions.state_variable_condition,
      conditionLogic: edge.condition_logic ?? 'AND',
      priority: edge.priority ?? 0,
      isActive: edge.is_active ?? true,
      handoffSentence: text(edge.handoff_sentence),
      description: edge.description ?? null,
    };
  });
  if (issues.length > 0) throw failed(issues);
  return { nodes, edges };
}
