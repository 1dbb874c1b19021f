/**
 * A live call walking an assistant graph (docs/graphs.md, "Graphs in live calls"): the CallRouting the
 * session asks at the end of each caller turn, before the turn is answered. It decides with the same
 * pure engine the simulate endpoint runs (`decideNext`, then `advance`), records each step as
 * simulate's steps would be (`recordStep`: the turn counted, the transition with its reason — so the
 * graph analytics count live calls), and tells the session what the step means for the caller: a
 * move to another assistant is a hand-off (its sentence said in the next assistant's voice), an exit
 * node ends the call, an escalation node transfers it. Natural-language conditions ask the current
 * assistant's model, within the engine's time budget. The assistants' `update_context` tool writes
 * the session context. Nothing here knows the database or tenants: the session store, the next
 * assistant's set-up and the models come in as dependencies (graph-setup.ts builds them).
 */
import { DomainError } from '../domains/errors.js';
import { CONTEXT_TOOL, ContextUpdateError } from '../domains/graphs/context.js';
import { advance, decideNext } from '../domains/graphs/engine.js';
import type {
  Classifier,
  Decision,
  EngineGraph,
  EngineNode,
  SessionState,
  Step,
} from '../domains/graphs/engine-types.js';
import { toE164 } from '../lib/phone.js';
import type { LlmAdapter } from '../providers/llm/types.js';
import type { AssistantSpec, CallRouting, RouteDecision } from './session-spec.js';
import type { CallTool, ToolOutcome } from './tools/types.js';
import type { LlmCandidate } from './vendors.js';

/** The call's graph session, as the runtime binds it (tenant and session id fixed). */
export interface GraphSessionPort {
  /** Records one routed utterance (`GraphSessionService.recordStep`); where the session stands after it. */
  recordStep(step: Step): Promise<SessionState>;
  /** Merges the context tool's `updates`; the context after. Throws ContextUpdateError when refused. */
  updateContext(updates: unknown): Promise<Record<string, unknown>>;
  /** Ends the session (the first end wins). */
  end(reason: string): Promise<void>;
}

export interface GraphCallDeps {
  graph: EngineGraph;
  /** Notes an event on the call (`call.graph_transition`…); never awaited. */
  record(type: string, data: Record<string, unknown>): void;
  log: { warn(data: object, message: string): void };
  now(): Date;
  /** The natural-language classifier's time limit (default: the engine's, 1500 ms). */
  classifierTimeoutMs?: number;
}

/** What the call brings once it is set up (its session started, its first assistant ready). */
export interface GraphCallStart {
  session: GraphSessionPort;
  /** Where the session stands: the entry node of a new session, or where a resumed one is. */
  state: SessionState;
  /** The assistant answering now. */
  assistant: AssistantSpec;
  /** The next assistant ready to speak (resolved, planned, its keys leased), or why it cannot. */
  assistantFor(assistantId: number): Promise<AssistantSpec | string>;
  llmAdapterFor(provider: string): LlmAdapter | undefined;
}

const STAY: RouteDecision = { type: 'stay' };

export class GraphCall implements CallRouting {
  readonly #nodes: Map<number, EngineNode>;
  #live: GraphCallStart | undefined;
  #state: SessionState | undefined;
  /** The assistant the session speaks with. */
  #assistant: AssistantSpec | undefined;
  /** A move recorded while the caller had already spoken again: told with the next turn. */
  #owed: RouteDecision | undefined;
  /** The conversation reached an exit or escalation node: later turns are not routed. */
  #ending: Extract<RouteDecision, { type: 'end' | 'transfer' }> | undefined;
  #endReason: string | undefined;
  #ended = false;
  /** Routes run one at a time, in the order the turns ended. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: GraphCallDeps) {
    this.#nodes = new Map(deps.graph.nodes.map((node) => [node.id, node]));
  }

  /** The call is set up: routing starts from `start.state` with `start.assistant` answering. */
  begin(start: GraphCallStart): void {
    this.#live = start;
    this.#state = start.state;
    this.#assistant = start.assistant;
  }

  /** The `update_context` tool every assistant of the call is given. */
  readonly contextTool: CallTool = {
    definition: {
      name: CONTEXT_TOOL.function.name,
      description: CONTEXT_TOOL.function.description,
      parameters: CONTEXT_TOOL.function.parameters as unknown as Record<string, unknown>,
    },
    // A database write: quick, nothing for the caller to hear.
    filler: '',
    run: (args) => this.#updateContext(args.updates),
  };

  route(callerText: string, signal: AbortSignal): Promise<RouteDecision> {
    const run = this.#queue.then(() => this.#decide(callerText, signal));
    this.#queue = run.catch(() => {});
    return run;
  }

  /** The call has ended: so does its session (`exit`, `escalation`, or `hangup` when it ended elsewhere). */
  async end(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    await this.#queue;
    const session = this.#live?.session;
    if (!session) return;
    try {
      await session.end(this.#endReason ?? 'hangup');
    } catch (error) {
      this.deps.log.warn({ err: error }, 'ending the graph session failed');
    }
  }

  async #decide(callerText: string, signal: AbortSignal): Promise<RouteDecision> {
    if (!this.#live || this.#ended) return STAY;
    // Over: like simulate, later utterances are not routed; the session only finishes going.
    if (this.#ending) return { ...this.#ending, sentence: '' };
    let decision: RouteDecision;
    try {
      decision = await this.#route(this.#live, callerText, signal);
    } catch (error) {
      // A database error or a bug: the call goes on where it is.
      this.deps.log.warn({ err: error }, 'graph routing failed: the call stays on its node');
      this.deps.record('call.graph_routing_failed', { error: messageOf(error) });
      decision = STAY;
    }
    if (decision.type === 'stay' && this.#owed) decision = this.#owed;
    this.#owed = undefined;
    if (decision.type === 'stay') return decision;
    if (signal.aborted) {
      // The session drops an answer whose turn was cut off: this move is said with the next turn.
      this.#owed = decision;
      return STAY;
    }
    if (decision.type === 'handoff') this.#assistant = decision.assistant;
    else this.#ending = decision;
    return decision;
  }

  async #route(live: GraphCallStart, callerText: string, signal: AbortSignal): Promise<RouteDecision> {
    const state = this.#state!;
    const current = this.#assistant!;
    const at = this.deps.now();
    const decision = await decideNext(this.deps.graph, state, callerText, {
      now: () => at,
      classifier: modelClassifier(current.plan.llm, live.llmAdapterFor, signal),
      ...(this.deps.classifierTimeoutMs !== undefined
        ? { classifierTimeoutMs: this.deps.classifierTimeoutMs }
        : {}),
    });
    if (signal.aborted) return STAY; // the caller spoke on: that turn decides
    let step = advance(state, decision, at);
    let next = current;
    const target = step.transition ? this.#nodes.get(step.transition.toNodeId) : undefined;
    if (target && !step.ends && target.assistantId !== current.assistantId) {
      const built = await live.assistantFor(target.assistantId);
      if (typeof built === 'string') {
        // The next assistant cannot speak (gone, no voice, its keys all taken): stay, counted.
        this.deps.record('call.graph_handoff_failed', {
          to_node_id: target.id,
          assistant_id: target.assistantId,
          reason: built,
        });
        step = advance(state, stayed(decision), at);
      } else {
        next = built;
      }
    }
    if (signal.aborted) return STAY;
    this.#state = await live.session.recordStep(step);
    const move = step.transition;
    if (!move) return STAY;
    this.deps.record('call.graph_transition', {
      from_node_id: move.fromNodeId,
      to_node_id: move.toNodeId,
      edge_id: move.edgeId,
      reason: move.reason,
    });
    const sentence = move.handoffSentence?.trim() ?? '';
    if (step.ends === 'exit') {
      this.#endReason = 'exit';
      return { type: 'end', sentence: sentence || current.goodbyeMessage };
    }
    if (step.ends === 'escalation') {
      const to = step.transferNumber === null ? undefined : toE164(step.transferNumber);
      if (to === undefined || to !== step.transferNumber) {
        // Saved graphs hold E.164 numbers; anything else is not dialled: the call ends instead.
        this.#endReason = 'escalation_refused';
        this.deps.record('call.graph_transfer_refused', {
          to_node_id: move.toNodeId,
          transfer_number: step.transferNumber,
        });
        return { type: 'end', sentence: sentence || current.goodbyeMessage };
      }
      this.#endReason = 'escalation';
      return { type: 'transfer', sentence: sentence || current.transferMessage, to };
    }
    // Another assistant, or the same one in another role: its prompt from now on.
    return { type: 'handoff', sentence, assistant: next };
  }

  async #updateContext(updates: unknown): Promise<ToolOutcome> {
    const live = this.#live;
    if (!live || this.#ended)
      return { ok: false, result: 'Not saved: the conversation context is not available.' };
    try {
      const context = await live.session.updateContext(updates);
      if (this.#state) this.#state = { ...this.#state, context };
      return { ok: true, result: JSON.stringify({ saved: true, context }) };
    } catch (error) {
      if (error instanceof ContextUpdateError) return { ok: false, result: `Not saved: ${error.message}.` };
      if (error instanceof DomainError && error.kind === 'conflict') {
        return { ok: false, result: 'Not saved: the conversation has ended.' };
      }
      throw error;
    }
  }
}

/** `decision` as if no edge had fired: the turn is counted, the conversation stays. */
function stayed(decision: Decision): Decision {
  return {
    ...decision,
    edge: null,
    toNodeId: null,
    handoffSentence: null,
    ends: null,
    transferNumber: null,
  };
}

const CLASSIFIER_PROMPT =
  'You judge a phone conversation for a call router. You are given a statement, what the caller just ' +
  'said and what is known about the conversation. Answer with one word: yes if the statement is true ' +
  'of the conversation, no otherwise.';

/**
 * A natural-language classifier that asks `candidates` (the current assistant's models, in plan
 * order) until one answers; "yes" (in any case, with any punctuation after it) is true, anything else
 * false. `turn` aborts it when the caller speaks again; the engine's own signal, at its time limit.
 */
export function modelClassifier(
  candidates: readonly LlmCandidate[],
  adapterFor: (provider: string) => LlmAdapter | undefined,
  turn: AbortSignal,
): Classifier {
  return async ({ trigger, utterance, context, signal }) => {
    const both = AbortSignal.any([signal, turn]);
    let failure: unknown = new Error('no language model to ask');
    for (const candidate of candidates) {
      const adapter = adapterFor(candidate.provider);
      if (!adapter) continue;
      if (both.aborted) break;
      try {
        let text = '';
        for await (const event of adapter.stream({
          apiKey: candidate.apiKey,
          baseUrl: candidate.baseUrl,
          model: candidate.model,
          messages: [
            { role: 'system', content: CLASSIFIER_PROMPT },
            {
              role: 'user',
              content:
                `Statement: ${trigger}\n` +
                `The caller just said: ${JSON.stringify(utterance)}\n` +
                `Known about the conversation (JSON): ${JSON.stringify(context)}\n` +
                'Is the statement true? Answer yes or no.',
            },
          ],
          tools: [],
          signal: both,
          temperature: 0,
          maxTokens: 3,
        })) {
          if (event.type === 'text') text += event.text;
        }
        if (both.aborted) break; // what came is cut short: no verdict
        return /^\W*yes\b/i.test(text);
      } catch (error) {
        failure = error;
      }
    }
    throw both.aborted ? (both.reason ?? new Error('aborted')) : failure;
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
