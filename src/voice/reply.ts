/**
 * The answer to one caller turn, as the session gives it: first where the call goes (a graph's
 * routing: stay, hand off to another assistant, end, or move to a person), then the model's answer
 * spoken as it is written — and, when the model calls tools the session runs (tools/types.ts), the
 * calls run together, their results go to the model, and it answers again, up to MAX_TOOL_ROUNDS
 * rounds. The built-in end_call and transfer_call end the rounds (answer-actions.ts).
 *
 * When the assistant has knowledge (knowledge.ts), its retrieval for the caller's words starts with
 * the routing decision and both are awaited before the model is asked; the routing still decides
 * first (a call that ends or moves uses no passages). The passages go to every round of this turn as a
 * system message the conversation does not keep. After a hand-off the new assistant answers this turn,
 * so its own knowledge is searched for the same words (the first assistant's search is dropped): that
 * search runs while the hand-off sentence is being spoken, so the caller waits no longer for it.
 */
import type { ProviderError } from '../providers/errors.js';
import type { ToolCall } from '../providers/llm/types.js';
import { type AnswerResult, generateAnswer } from './answer.js';
import { answerActions, toolResult } from './answer-actions.js';
import { type TurnKnowledge, withKnowledge } from './knowledge.js';
import type { AssistantSpec, RouteDecision, SessionSpec } from './session-spec.js';
import type { SpeechLane } from './speech-lane.js';
import { joinText } from './spoken-text.js';
import { runTools } from './tools/run-tools.js';
import { type CallControls, MAX_TOOL_ROUNDS } from './tools/types.js';
import type { Utterance } from './utterance.js';
import type { Candidate } from './vendors.js';

/** The built-in tools answer-actions.ts carries out; every other call is run by the session. */
const BUILT_IN_TOOLS = new Set(['end_call', 'transfer_call']);

export interface ReplyHost {
  spec: SessionSpec;
  /** Who answers now. */
  assistant(): AssistantSpec;
  /** Another assistant takes the call over. */
  handOff(assistant: AssistantSpec): void;
  controls(): CallControls;
  clock(): number;
  /** A new lane for the utterance, in the current assistant's voice. */
  lane(utterance: Utterance): SpeechLane;
  fallback(
    kind: 'llm',
    from: Candidate,
    error: ProviderError,
    next: Candidate | undefined,
    mid: boolean,
  ): void;
  record(type: string, data: Record<string, unknown>): void;
  /** The call ends (or moves) once this utterance has played. */
  finishAfterResponse(): void;
  transferTo(to: string): void;
  /** The utterance has all its text: let it play out. */
  endLane(utterance: Utterance): Promise<void>;
}

export async function reply(host: ReplyHost, utterance: Utterance): Promise<void> {
  const { spec } = host;
  let search = retrieve(host, utterance);
  if (spec.routing) {
    const decision = await spec.routing.route(utterance.userText, utterance.abort.signal);
    if (utterance.abort.signal.aborted || route(host, utterance, decision)) {
      search.cancel();
      return;
    }
    if (decision.type === 'handoff') {
      search.cancel();
      search = retrieve(host, utterance);
    }
  }
  const knowledge = await search.result;
  if (utterance.abort.signal.aborted) return;
  if (knowledge) {
    utterance.passages = knowledge.passages;
    if (knowledge.unavailable) host.record('call.knowledge_unavailable', { reason: knowledge.unavailable });
  }
  for (let round = 0; ; round++) {
    const assistant = host.assistant();
    const result = await generateAnswer({
      messages: withKnowledge(spec.conversation.messages(), knowledge?.prompt),
      tools: [...assistant.tools, ...assistant.callTools.map((tool) => tool.definition)],
      candidates: assistant.plan.llm,
      adapterFor: spec.llmAdapterFor,
      parameters: assistant.llmParameters,
      lane: utterance.lane,
      signal: utterance.abort.signal,
      clock: host.clock,
      // The turn's timing is the first round's; later rounds answer a tool's result.
      marks: round === 0 ? utterance.marks : {},
      budgetMs: assistant.llmBudgetMs ?? 10_000,
      onFallback: (from, error, next, midAnswer) => host.fallback('llm', from, error, next, midAnswer),
    });
    if (utterance.abort.signal.aborted) return;
    const toRun = result.toolCalls.filter((call) => !BUILT_IN_TOOLS.has(call.name));
    if (result.provider === null || toRun.length === 0 || round >= MAX_TOOL_ROUNDS) {
      afterAnswer(host, utterance, result);
      break;
    }
    await toolRound(host, utterance, result, toRun);
    if (utterance.abort.signal.aborted) return;
    if (toRun.length < result.toolCalls.length) {
      // end_call or transfer_call beside the others: carried out now, no further round.
      afterAnswer(host, utterance, { ...result, text: '' });
      utterance.toolCalls = [];
      break;
    }
  }
  await host.endLane(utterance);
}

/**
 * The answering assistant's retrieval for the caller's words, marked on the turn (undefined: it has no
 * knowledge, and the turn no retrieval marks). `cancel` drops it: its end is not marked.
 */
function retrieve(
  host: ReplyHost,
  utterance: Utterance,
): { result: Promise<TurnKnowledge | undefined>; cancel(): void } {
  const { marks } = utterance;
  delete marks.retrievalStartedAt;
  delete marks.retrievalEndedAt;
  const source = host.assistant().knowledge;
  if (!source) return { result: Promise.resolve(undefined), cancel() {} };
  const dropped = new AbortController();
  const signal = AbortSignal.any([utterance.abort.signal, dropped.signal]);
  marks.retrievalStartedAt = host.clock();
  const result = source.retrieve(utterance.userText, signal).then((found) => {
    if (!signal.aborted) marks.retrievalEndedAt = host.clock();
    return found;
  });
  return { result, cancel: () => dropped.abort() };
}

/**
 * Runs one round of tool calls: the model's words and calls go to the conversation with every result,
 * so the next round answers with them (the words are taken as heard).
 */
async function toolRound(
  host: ReplyHost,
  utterance: Utterance,
  result: AnswerResult,
  toRun: ToolCall[],
): Promise<void> {
  const { spec } = host;
  utterance.provider ??= result.provider;
  utterance.said = joinText(utterance.said, result.text);
  const runs = await runTools(toRun, {
    tools: host.assistant().callTools,
    signal: utterance.abort.signal,
    callId: spec.callId,
    controls: host.controls(),
    clock: host.clock,
    filler: (text) => {
      utterance.lane.send(text);
      utterance.said = joinText(utterance.said, text);
    },
    record: (data) => host.record('call.tool', data),
    log: spec.log,
  });
  if (utterance.abort.signal.aborted) return;
  utterance.committed = utterance.said;
  spec.conversation.assistant(result.text, result.toolCalls);
  for (const call of result.toolCalls) {
    const run = runs.find((r) => r.call.id === call.id);
    spec.conversation.toolResult(call.id, run ? run.outcome.result : toolResult(call, spec));
  }
}

/** Carries out a routing decision; true when the utterance is dealt with (no answer follows). */
function route(host: ReplyHost, utterance: Utterance, decision: RouteDecision): boolean {
  if (decision.type === 'stay') return false;
  if (decision.type === 'handoff') {
    host.handOff(decision.assistant);
    // The next assistant speaks in its own voice from the hand-off sentence on.
    const unused = utterance.lane;
    utterance.lane = host.lane(utterance);
    void unused.end();
    utterance.lane.send(decision.sentence);
    utterance.said = decision.sentence;
    return false;
  }
  utterance.text = decision.sentence;
  utterance.lane.send(decision.sentence);
  if (decision.type === 'transfer') host.transferTo(decision.to);
  host.finishAfterResponse();
  void host.endLane(utterance);
  return true;
}

/** The answer is complete: the built-in tools' words and effects, the records. */
function afterAnswer(host: ReplyHost, utterance: Utterance, result: AnswerResult): void {
  // The provider that finished the answer, or the last whose words were said.
  utterance.provider ??= result.provider ?? result.providers.at(-1) ?? null;
  utterance.toolCalls = result.toolCalls;
  const actions = answerActions(result, { ...host.assistant(), transferable: host.spec.transferable });
  utterance.text = joinText(utterance.said, actions.text);
  for (const said of actions.say) utterance.lane.send(said);
  if (actions.transferTo) host.transferTo(actions.transferTo);
  if (actions.finishAfterResponse) host.finishAfterResponse();
  for (const event of actions.events) host.record(event.type, event.data);
}
