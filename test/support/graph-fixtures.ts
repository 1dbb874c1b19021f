/**
 * Small graphs for the pure engine tests (graph-engine, graph-advance): a fixed clock, nodes whose
 * assistant is their id × 10, intent edges from node 1 to node 2 unless told otherwise, and a session
 * at the entry node.
 */
import type { EngineEdge, EngineNode, SessionState } from '../../src/domains/graphs/engine-types.js';

export const T0 = new Date('2025-01-01T10:00:00Z');
export const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

export function node(
  id: number,
  nodeType: EngineNode['nodeType'] = 'standard',
  configuration = {},
): EngineNode {
  return { id, nodeType, assistantId: id * 10, configuration };
}

export function edge(id: number, fields: Partial<EngineEdge> = {}): EngineEdge {
  return {
    id,
    fromNodeId: 1,
    toNodeId: 2,
    conditionType: 'intent',
    intentPattern: null,
    naturalLanguageTrigger: null,
    mathematicalExpression: null,
    stateVariableCondition: null,
    conditionLogic: 'AND',
    priority: 0,
    isActive: true,
    handoffSentence: null,
    ...fields,
  };
}

export function state(fields: Partial<SessionState> = {}): SessionState {
  return {
    currentNodeId: 1,
    context: {},
    turnCount: 0,
    nodeTurnCount: 0,
    startedAt: T0,
    nodeEnteredAt: T0,
    ...fields,
  };
}
