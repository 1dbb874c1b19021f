/**
 * The routing engine's contract (docs/graphs.md, decisions §5). The engine (engine.ts) is pure: no
 * database, no network; the language-model classifier and the clock are injected. The sessions
 * store, the simulate endpoint and the call runtime all drive it through these types: `decideNext`
 * turns a `SessionState` and an utterance into a `Decision`, `advance` turns that into a `Step`.
 */
import type { ConditionType, NodeType } from '../../db/schema/graphs.js';

export interface EngineNode {
  id: number;
  nodeType: NodeType;
  assistantId: number;
  /** escalation nodes: `transfer_number` (E.164). */
  configuration: Record<string, unknown>;
}

export interface EngineEdge {
  id: number;
  fromNodeId: number;
  toNodeId: number;
  conditionType: ConditionType;
  intentPattern: string | null;
  naturalLanguageTrigger: string | null;
  mathematicalExpression: string | null;
  stateVariableCondition: string | null;
  conditionLogic: 'AND' | 'OR';
  priority: number;
  isActive: boolean;
  handoffSentence: string | null;
}

export interface EngineGraph {
  nodes: EngineNode[];
  edges: EngineEdge[];
}

/** Where a conversation stands when the next final user utterance arrives. */
export interface SessionState {
  currentNodeId: number;
  context: Record<string, unknown>;
  /** Final user utterances so far, and since entering the current node (this one not counted yet). */
  turnCount: number;
  nodeTurnCount: number;
  startedAt: Date;
  nodeEnteredAt: Date;
}

/**
 * Asks the current assistant's model whether `trigger` describes the conversation. It must honour
 * `signal` (aborted at the time limit); a rejection or time-out counts as false.
 */
export type Classifier = (input: {
  trigger: string;
  utterance: string;
  context: Record<string, unknown>;
  signal: AbortSignal;
}) => Promise<boolean>;

export interface EngineDeps {
  classifier?: Classifier;
  now: () => Date;
  /** The classifier's time limit (default 1500 ms). */
  classifierTimeoutMs?: number;
}

export interface EdgeEvaluation {
  edgeId: number;
  matched: boolean;
  /** Why: the keyword that matched, the expression's value, "classifier timed out"… */
  reason: string;
}

export interface Decision {
  /** The edge that fired, or null when none did (the conversation stays on its node). */
  edge: EngineEdge | null;
  toNodeId: number | null;
  reason: string;
  handoffSentence: string | null;
  /** Reaching an exit node ends the session; an escalation node transfers the call. */
  ends: 'exit' | 'escalation' | null;
  /** For an escalation node: its configuration.transfer_number. */
  transferNumber: string | null;
  /** Every edge tried, in the order tried. */
  evaluated: EdgeEvaluation[];
}

/** A move a decision made: what the sessions store records as a `graph_transitions` row. */
export interface Transition {
  fromNodeId: number;
  toNodeId: number;
  edgeId: number;
  /** The decision's reason, recorded with the move. */
  reason: string;
  handoffSentence: string | null;
  /** When the target node was entered. */
  at: Date;
}

/** What one routed utterance did to the conversation (`advance`). */
export interface Step {
  /** Where the conversation stands now, ready for the next utterance. */
  state: SessionState;
  /** The move, or null when the conversation stayed on its node. */
  transition: Transition | null;
  /** As the decision said: an exit node ends the session, an escalation node transfers the call. */
  ends: 'exit' | 'escalation' | null;
  transferNumber: string | null;
}

/** A parse problem of a condition expression, with its position (0-based character offset). */
export interface ExpressionProblem {
  message: string;
  position: number;
}
