/**
 * One answer from the language model, streamed into the voice as it is written: each token goes to
 * the speech lane at once (whole words), and the end of each sentence (the first clause early) asks
 * the voice to speak what it has; tool calls are collected for the session.
 *
 * The model is tried in the plan's order — the first key, the provider's fallback keys, then the
 * assistant's fallback providers — moving on when one fails: an error, a 429, a broken stream, no
 * first token in time, or a stall (no event for `stallMs`) once it has begun. A model that fails
 * before its first token is simply replaced. One that fails mid-answer keeps what the voice was given
 * and the next one finishes the turn (continuation.ts): it is asked with the conversation plus the
 * words already said, and a repetition of them is dropped. The turn's budget counts the time spent
 * waiting on models (to each first token, and the wait that ended a broken attempt), not the time
 * they spent answering: no new attempt starts once it is used up.
 */
import { asProviderError, ProviderError } from '../providers/errors.js';
import type {
  ChatMessage,
  LlmAdapter,
  LlmEvent,
  LlmParameters,
  ToolCall,
  ToolDefinition,
} from '../providers/llm/types.js';
import { continuationMessages, joinSaid, OverlapFilter } from './continuation.js';
import { SentenceSplitter } from './sentences.js';
import type { SpeechLane } from './speech-lane.js';
import type { TurnMarks } from './turn-metrics.js';
import type { LlmCandidate } from './vendors.js';

/** No event for this long after the first token: the stream is taken for broken. */
export const LLM_STALL_MS = 3_000;

export interface AnswerRequest {
  messages: ChatMessage[];
  tools: ToolDefinition[];
  candidates: LlmCandidate[];
  adapterFor(provider: string): LlmAdapter | undefined;
  parameters: LlmParameters;
  /** Where the words go; only `write`, `flush` and `retract` are used. */
  lane: Pick<SpeechLane, 'write' | 'flush' | 'flushSentence' | 'retract'>;
  signal: AbortSignal;
  clock: () => number;
  /** Stamped as the answer goes: llmRequestAt, llmFirstTokenAt, firstSentenceAt. */
  marks: TurnMarks;
  /** Milliseconds all attempts together may spend waiting on a model (see the header). */
  budgetMs: number;
  /** Milliseconds without an event, once the answer has begun, after which a stream is broken. */
  stallMs?: number;
  /** A model failed; `next` takes over (`midAnswer`: after some of its words were said). */
  onFallback(
    from: LlmCandidate,
    error: ProviderError,
    next: LlmCandidate | undefined,
    midAnswer: boolean,
  ): void;
}

export interface AnswerResult {
  /** Everything said (sent to the voice), across every model that took part. */
  text: string;
  toolCalls: ToolCall[];
  /** The provider that finished the answer; null when none did. */
  provider: string | null;
  /** The providers whose words are in `text`, in order (one, unless a model broke off mid-answer). */
  providers: string[];
  /** Why the answer is not finished (nothing said, or cut off), when no provider finished it. */
  failure?: ProviderError;
}

/** How one attempt ended: the model finished, or it failed. */
type Attempt = { finished: true } | { finished: false; error: ProviderError };

export async function generateAnswer(request: AnswerRequest): Promise<AnswerResult> {
  const { candidates, signal } = request;
  const turn = new TurnText(request);
  let waited = 0;
  let failure: ProviderError | undefined;
  for (const [index, candidate] of candidates.entries()) {
    if (signal.aborted) break;
    const adapter = request.adapterFor(candidate.provider);
    const next = candidates[index + 1];
    const midAnswer = turn.said.trim() !== '';
    if (!adapter) {
      failure = new ProviderError(`${candidate.provider} cannot answer in live calls yet`, {
        provider: candidate.provider,
        retryable: false,
      });
      request.onFallback(candidate, failure, next, midAnswer);
      continue;
    }
    const remaining = request.budgetMs - waited;
    if (remaining <= 0) break;
    const attempt = await attemptWith(request, adapter, candidate, turn, remaining, (ms) => {
      waited += ms;
    });
    if (attempt.finished) {
      turn.finish();
      return turn.result(candidate.provider);
    }
    if (signal.aborted) break;
    failure = attempt.error;
    if (turn.hasCompleteToolCall) {
      // A model writes its tool calls last: one complete before the break ends the answer with it.
      turn.finish();
      return turn.result(candidate.provider);
    }
    // Once the budget is spent nobody else is asked: the record says so.
    request.onFallback(
      candidate,
      failure,
      waited < request.budgetMs ? next : undefined,
      turn.said.trim() !== '',
    );
  }
  turn.giveUp();
  return { ...turn.result(null), ...(failure ? { failure } : {}) };
}

/**
 * One model's attempt at the answer (or at its rest). `waited` is told the time spent waiting: to
 * the first event, and from the last event to a failure.
 */
async function attemptWith(
  request: AnswerRequest,
  adapter: LlmAdapter,
  candidate: LlmCandidate,
  turn: TurnText,
  remainingMs: number,
  waited: (ms: number) => void,
): Promise<Attempt> {
  const { signal, clock, marks } = request;
  const attempt = new AbortController();
  const stopAttempt = () => attempt.abort();
  signal.addEventListener('abort', stopAttempt, { once: true });
  const continuing = turn.said.trim() !== '';
  const requestedAt = clock();
  if (!continuing) marks.llmRequestAt = requestedAt;
  turn.begin(candidate.provider);
  let lastEventAt: number | undefined;
  try {
    const stream = adapter.stream({
      apiKey: candidate.apiKey,
      baseUrl: candidate.baseUrl,
      model: candidate.model,
      messages: continuing ? continuationMessages(request.messages, turn.said) : request.messages,
      tools: request.tools,
      ...request.parameters,
      signal: attempt.signal,
      firstTokenTimeoutMs: Math.max(1, remainingMs),
    });
    const events = stream[Symbol.asyncIterator]();
    for (;;) {
      const waitMs = lastEventAt === undefined ? remainingMs : (request.stallMs ?? LLM_STALL_MS);
      const step = await nextWithin(events, waitMs, stopAttempt);
      if (step === 'stalled') {
        throw new ProviderError(
          lastEventAt === undefined
            ? `${candidate.provider} gave no first token within ${Math.round(waitMs)} ms`
            : `${candidate.provider} stalled: nothing for ${Math.round(waitMs)} ms mid-answer`,
          { provider: candidate.provider, retryable: true, code: 'timeout' },
        );
      }
      if (step.done) break;
      if (lastEventAt === undefined) {
        waited(clock() - requestedAt);
        marks.llmFirstTokenAt ??= clock();
      }
      lastEventAt = clock();
      turn.event(step.value);
      if (step.value.type === 'done') break;
    }
    return { finished: true };
  } catch (error) {
    waited(clock() - (lastEventAt ?? requestedAt));
    turn.broke();
    return { finished: false, error: asProviderError(error, candidate.provider) };
  } finally {
    signal.removeEventListener('abort', stopAttempt);
    attempt.abort();
  }
}

/** The iterator's next step, or 'stalled' when none comes within `ms` (then `stop` is called). */
async function nextWithin<T>(
  events: AsyncIterator<T>,
  ms: number,
  stop: () => void,
): Promise<IteratorResult<T> | 'stalled'> {
  const step = events.next();
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<'stalled'>((resolve) => {
    timer = setTimeout(() => resolve('stalled'), Math.max(1, ms));
  });
  try {
    const first = await Promise.race([step, stalled]);
    if (first === 'stalled') {
      // The stream is given up: stop it, and let its last step settle unseen.
      step.catch(() => undefined);
      stop();
    }
    return first;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The answer's words across attempts: what went to the voice, the tool calls, the sentence marks,
 * and — after a break — the filter that keeps the next model from repeating what was said.
 */
class TurnText {
  /** Everything the voice has been given, across attempts. */
  said = '';
  readonly toolCalls: ToolCall[] = [];
  readonly providers: string[] = [];
  readonly #splitter = new SentenceSplitter();
  #overlap: OverlapFilter | undefined;
  #provider = '';
  /** This attempt's words are not in `said` yet (the first piece joins what came before). */
  #silent = true;
  #attemptCalls = 0;
  /** A word cut mid-way by the last break, kept back from the voice while another model may finish. */
  #held = '';

  constructor(private readonly request: AnswerRequest) {}

  get hasCompleteToolCall(): boolean {
    return this.#attemptCalls > 0;
  }

  /** A model starts (or takes over): after a break its first words are checked for repetition. */
  begin(provider: string): void {
    this.#overlap = this.said ? new OverlapFilter(this.said) : undefined;
    this.#provider = provider;
    this.#silent = true;
    this.#attemptCalls = 0;
  }

  event(event: LlmEvent): void {
    if (event.type === 'text') {
      this.#say(this.#overlap ? this.#overlap.push(event.text) : event.text);
    } else if (event.type === 'tool_call') {
      this.toolCalls.push(event.call);
      this.#attemptCalls += 1;
    }
  }

  #say(text: string): void {
    if (!text) return;
    const added = this.#silent ? joinSaid(this.said, text).slice(this.said.length) : text;
    if (!added) return;
    if (this.#silent) {
      this.#silent = false;
      this.providers.push(this.#provider);
    }
    this.said += added;
    const { lane, marks, clock } = this.request;
    lane.write(added);
    if (this.#splitter.push(added).length > 0) {
      marks.firstSentenceAt ??= clock();
      lane.flushSentence();
    }
  }

  /** The attempt broke: what the voice has not been given (a word cut mid-way) is taken back. */
  broke(): void {
    const held = this.request.lane.retract();
    if (held && this.said.endsWith(held)) {
      this.said = this.said.slice(0, -held.length);
      this.#held = held;
    }
    if (!this.#silent && this.said.trim() === '') this.providers.pop();
  }

  /** The model finished: what the filter still held, and the last words, go to the voice. */
  finish(): void {
    if (this.#overlap) this.#say(this.#overlap.end());
    if (this.#splitter.flush()) this.request.marks.firstSentenceAt ??= this.request.clock();
    this.request.lane.flush();
  }

  /** No model is left: what was said is spoken as it is, with the word kept back. */
  giveUp(): void {
    if (this.#held) {
      this.said += this.#held;
      this.request.lane.write(this.#held);
    }
    this.request.lane.flush();
  }

  result(provider: string | null): AnswerResult {
    return { text: this.said.trim(), toolCalls: this.toolCalls, provider, providers: this.providers };
  }
}
