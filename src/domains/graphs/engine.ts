/**
 * The graph routing engine (decisions §5; docs/graphs.md, "How routing decides"). Pure: no database,
 * no network, no clock but `deps.now`; the language-model classifier is injected. After each final
 * user utterance the simulate endpoint and the call runtime call `decideNext` (where to go), then
 * `advance` (the conversation after that decision); the sessions store records the same step.
 * The session context's rules live in context.ts.
 */
import type { ConditionType } from '../../db/schema/graphs.js';
import type {
  Decision,
  EdgeEvaluation,
  EngineDeps,
  EngineEdge,
  EngineGraph,
  EngineNode,
  SessionState,
  Step,
} from './engine-types.js';
import { evaluateDetailed, lookupPath } from './expression-eval.js';
import { ExpressionError } from './expression-lexer.js';
import type { Expr } from './expression-parser.js';
import { compileExpression, expressionNames } from './expressions.js';

export const DEFAULT_CLASSIFIER_TIMEOUT_MS = 1500;

/** The graph's entry node; null when it has none or (against the structure rules) several. */
export function entryNode(graph: EngineGraph): EngineNode | null {
  const entries = graph.nodes.filter((node) => node.nodeType === 'entry');
  return entries.length === 1 ? entries[0]! : null;
}

/**
 * Decides where the conversation goes after `utterance` (a final user utterance). The active edges
 * leaving the current node are tried in ascending priority, ties by ascending edge id; the first
 * whose condition holds fires. Never throws for a bad edge: an invalid expression, a failing
 * classifier or a missing target only makes that edge not match, with the reason in `evaluated`.
 */
export async function decideNext(
  graph: EngineGraph,
  state: SessionState,
  utterance: string,
  deps: EngineDeps,
): Promise<Decision> {
  const nodes = new Map(graph.nodes.map((node) => [node.id, node]));
  const candidates = graph.edges
    .filter((edge) => edge.fromNodeId === state.currentNodeId && edge.isActive)
    .sort((a, b) => a.priority - b.priority || a.id - b.id);

  const evaluated: EdgeEvaluation[] = [];
  const turn = new Turn(state, utterance, deps);
  for (const edge of candidates) {
    const target = nodes.get(edge.toNodeId);
    if (!target) {
      evaluated.push({
        edgeId: edge.id,
        matched: false,
        reason: `target node ${edge.toNodeId} is not in the graph`,
      });
      continue;
    }
    const { matched, reason } = await evaluateEdge(edge, turn);
    evaluated.push({ edgeId: edge.id, matched, reason });
    if (!matched) continue;
    const ends = target.nodeType === 'exit' ? 'exit' : target.nodeType === 'escalation' ? 'escalation' : null;
    const transfer = target.configuration?.transfer_number;
    return {
      edge,
      toNodeId: target.id,
      reason,
      handoffSentence: edge.handoffSentence?.trim() ? edge.handoffSentence : null,
      ends,
      transferNumber:
        ends === 'escalation' && typeof transfer === 'string' && transfer !== '' ? transfer : null,
      evaluated,
    };
  }
  let reason: string;
  if (!nodes.has(state.currentNodeId)) reason = `node ${state.currentNodeId} is not in the graph`;
  else if (candidates.length === 0) reason = `no active edge leaves node ${state.currentNodeId}`;
  else reason = `no edge matched (${candidates.length} tried)`;
  return {
    edge: null,
    toNodeId: null,
    reason,
    handoffSentence: null,
    ends: null,
    transferNumber: null,
    evaluated,
  };
}

/**
 * The conversation after `decision`, decideNext's answer to one final user utterance, taken at `at`.
 * The utterance counts as a turn. When an edge fired, the conversation enters its target at `at`
 * (never earlier than it entered the node it leaves: time does not run backwards) with the node's
 * turn count back to 0; otherwise it stays and the node's turn count goes up too. The context is
 * carried over as it is. Pure: `state` is not changed.
 */
export function advance(state: SessionState, decision: Decision, at: Date): Step {
  const ending = { ends: decision.ends, transferNumber: decision.transferNumber };
  if (decision.edge === null || decision.toNodeId === null) {
    return {
      state: { ...state, turnCount: state.turnCount + 1, nodeTurnCount: state.nodeTurnCount + 1 },
      transition: null,
      ...ending,
    };
  }
  const enteredAt = at.getTime() < state.nodeEnteredAt.getTime() ? state.nodeEnteredAt : at;
  return {
    state: {
      ...state,
      currentNodeId: decision.toNodeId,
      turnCount: state.turnCount + 1,
      nodeTurnCount: 0,
      nodeEnteredAt: enteredAt,
    },
    transition: {
      fromNodeId: state.currentNodeId,
      toNodeId: decision.toNodeId,
      edgeId: decision.edge.id,
      reason: decision.reason,
      handoffSentence: decision.handoffSentence,
      at: enteredAt,
    },
    ...ending,
  };
}

// ---------------------------------------------------------------------------------------------------
// One utterance's facts, computed once and shared by every edge tried.

class Turn {
  readonly metrics: Record<string, number>;
  #words: string[] | undefined;
  #numbers: Record<string, unknown> | undefined;

  constructor(
    readonly state: SessionState,
    readonly utterance: string,
    readonly deps: EngineDeps,
  ) {
    const now = deps.now().getTime();
    const seconds = (since: Date) => Math.max(0, now - since.getTime()) / 1000;
    this.metrics = {
      call_duration: seconds(state.startedAt),
      // The utterance being routed counts: the first one is turn 1.
      turn_count: state.turnCount + 1,
      node_turn_count: state.nodeTurnCount + 1,
      time_in_node: seconds(state.nodeEnteredAt),
    };
  }

  get words(): string[] {
    this.#words ??= words(this.utterance);
    return this.#words;
  }

  /** What mathematical expressions read: the context, with the four metrics taking precedence. */
  get numbers(): Record<string, unknown> {
    this.#numbers ??= { ...this.state.context, ...this.metrics };
    return this.#numbers;
  }
}

// ---------------------------------------------------------------------------------------------------
// Edges

interface Outcome {
  matched: boolean;
  reason: string;
}

const CONDITION_FIELDS = [
  ['intent', 'intentPattern'],
  ['mathematical', 'mathematicalExpression'],
  ['state_variable', 'stateVariableCondition'],
  // Last: the only one that costs a model call, skipped when the others already decide.
  ['natural_language', 'naturalLanguageTrigger'],
] as const satisfies ReadonlyArray<readonly [ConditionType, keyof EngineEdge]>;

/**
 * Every condition field the edge carries, combined with its `conditionLogic`; the field of its
 * `conditionType` counts even when empty (then it is false). Evaluation stops as soon as the
 * outcome is known, the classifier last.
 */
async function evaluateEdge(edge: EngineEdge, turn: Turn): Promise<Outcome> {
  const present = CONDITION_FIELDS.filter(
    ([type, field]) => type === edge.conditionType || (edge[field]?.trim() ?? '') !== '',
  );
  const logic = edge.conditionLogic === 'OR' ? 'OR' : 'AND';
  const parts: string[] = [];
  let matched = logic === 'AND';
  for (const [index, [type, field]] of present.entries()) {
    const outcome = await evaluateCondition(type, edge[field]?.trim() ?? '', turn);
    parts.push(outcome.reason);
    if (outcome.matched !== (logic === 'AND')) {
      matched = outcome.matched;
      const skipped = present.length - index - 1;
      if (skipped > 0) parts.push(`${skipped} more not evaluated`);
      break;
    }
  }
  return { matched, reason: parts.join(logic === 'AND' ? ' AND ' : ' OR ') };
}

async function evaluateCondition(type: ConditionType, source: string, turn: Turn): Promise<Outcome> {
  switch (type) {
    case 'intent':
      return matchIntent(source, turn);
    case 'natural_language':
      return classify(source, turn);
    case 'mathematical':
      return evaluateExpressionCondition('mathematical', source, turn.numbers);
    case 'state_variable':
      return evaluateExpressionCondition('state_variable', source, turn.state.context);
  }
}

// ---------------------------------------------------------------------------------------------------
// intent

/**
 * The words of a text: NFKC-normalized, lower-cased runs of letters, digits and marks; an apostrophe
 * inside a word keeps it whole ("don't"). Everything else (spaces, punctuation, hyphens) separates.
 */
export function words(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().replace(/’/g, "'").match(WORD) ?? [];
}
const WORD = /[\p{L}\p{N}\p{M}]+(?:'[\p{L}\p{N}\p{M}]+)*/gu;

/** Whether `phrase` (already split into words) occurs in `text` as consecutive whole words. */
function containsPhrase(text: readonly string[], phrase: readonly string[]): boolean {
  outer: for (let start = 0; start + phrase.length <= text.length; start++) {
    for (let i = 0; i < phrase.length; i++) {
      if (text[start + i] !== phrase[i]) continue outer;
    }
    return true;
  }
  return false;
}

interface Keyword {
  text: string;
  words: string[];
}
const patterns = new Map<string, Keyword[]>();
const PATTERN_CACHE_SIZE = 1000;

/** A pattern's keywords (trimmed, each split into words), those without any word dropped. */
function keywordsOf(pattern: string): Keyword[] {
  let keywords = patterns.get(pattern);
  if (!keywords) {
    keywords = pattern
      .split(',')
      .map((keyword) => ({ text: keyword.trim(), words: words(keyword) }))
      .filter((keyword) => keyword.words.length > 0);
    if (patterns.size >= PATTERN_CACHE_SIZE) patterns.clear();
    patterns.set(pattern, keywords);
  }
  return keywords;
}

function matchIntent(pattern: string, turn: Turn): Outcome {
  const keywords = keywordsOf(pattern);
  if (keywords.length === 0) return { matched: false, reason: 'intent: the pattern names no keyword' };
  const said = turn.words;
  const hit = keywords.find((keyword) => containsPhrase(said, keyword.words));
  if (hit !== undefined) return { matched: true, reason: `intent: matched '${hit.text}'` };
  return {
    matched: false,
    reason: `intent: none of ${keywords.map((keyword) => `'${keyword.text}'`).join(', ')} occurred`,
  };
}

// ---------------------------------------------------------------------------------------------------
// natural_language

class TimedOut extends Error {}

async function classify(trigger: string, turn: Turn): Promise<Outcome> {
  const classifier = turn.deps.classifier;
  if (!trigger) return { matched: false, reason: 'natural_language: the trigger is empty' };
  if (!classifier) return { matched: false, reason: 'natural_language: no classifier available' };
  const limit = turn.deps.classifierTimeoutMs ?? DEFAULT_CLASSIFIER_TIMEOUT_MS;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new TimedOut());
      controller.abort(new TimedOut(`the classifier's time limit of ${limit} ms passed`));
    }, limit);
  });
  try {
    const answer = Promise.resolve().then(() =>
      classifier({
        trigger,
        utterance: turn.utterance,
        context: turn.state.context,
        signal: controller.signal,
      }),
    );
    answer.catch(() => {}); // it may still fail after the time limit: nobody is waiting then
    const yes = (await Promise.race([answer, timeout])) === true;
    return {
      matched: yes,
      reason: `natural_language: the classifier answered ${yes ? 'yes' : 'no'} to '${clip(trigger, 80)}'`,
    };
  } catch (error) {
    if (error instanceof TimedOut) {
      return { matched: false, reason: `natural_language: the classifier timed out after ${limit} ms` };
    }
    const message = error instanceof Error ? error.message : String(error);
    return { matched: false, reason: `natural_language: the classifier failed (${clip(message, 120)})` };
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------------
// mathematical, state_variable

type Compiled = { ast: Expr } | { problem: string };
const compiled = new Map<string, Compiled>();
const COMPILED_CACHE_SIZE = 1000;

/** Parses and validates once per distinct (kind, source); a structure rarely has many. */
function compile(kind: 'mathematical' | 'state_variable', source: string): Compiled {
  const key = `${kind}\u0000${source}`;
  let entry = compiled.get(key);
  if (!entry) {
    try {
      entry = { ast: compileExpression(kind, source) };
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      entry = { problem: `${error.message} at position ${error.position}` };
    }
    if (compiled.size >= COMPILED_CACHE_SIZE) compiled.clear();
    compiled.set(key, entry);
  }
  return entry;
}

function evaluateExpressionCondition(
  kind: 'mathematical' | 'state_variable',
  source: string,
  variables: Record<string, unknown>,
): Outcome {
  if (!source) return { matched: false, reason: `${kind}: the expression is empty` };
  const entry = compile(kind, source);
  const shown = clip(source, 120);
  if ('problem' in entry) {
    return {
      matched: false,
      reason: `${kind}: invalid expression ${JSON.stringify(shown)}: ${entry.problem}`,
    };
  }
  const { value, divisionByZero } = evaluateDetailed(entry.ast, variables);
  const names = expressionNames(entry.ast);
  const values = names.length
    ? ` (${names.map((name) => `${name}=${show(lookupPath(variables, name.split('.')))}`).join(', ')})`
    : '';
  if (divisionByZero) {
    return { matched: false, reason: `${kind}: ${shown} divides by zero, so it is false${values}` };
  }
  const matched = value === true;
  return { matched, reason: `${kind}: ${shown} was ${matched ? 'true' : 'false'}${values}` };
}

function show(value: unknown): string {
  if (value === undefined) return 'missing';
  if (typeof value === 'number') return String(Math.round(value * 1000) / 1000);
  return clip(JSON.stringify(value), 60);
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
