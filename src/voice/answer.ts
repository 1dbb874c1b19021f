/**
 * One answer from the language model, streamed into the voice as it is written: each token goes to
 * the speech lane at once (whole words), and the end of each sentence (the first clause early) asks
 * the voice to speak what it has; tool calls are
 * collected for the session. The model is tried in the plan's order — the first key, the provider's
 * fallback keys, then the assistant's fallback providers — moving on when one fails before its first
 * token (an error, a time-out, a 429), within the turn's time budget. A failure after the first token
 * keeps what was said (finishing the sentence with another model is issue 18's).
 */
import { asProviderError, ProviderError } from '../providers/errors.js';
import type {
  ChatMessage,
  LlmAdapter,
  LlmParameters,
  ToolCall,
  ToolDefinition,
} from '../providers/llm/types.js';
import { SentenceSplitter } from './sentences.js';
import type { SpeechLane } from './speech-lane.js';
import type { TurnMarks } from './turn-metrics.js';
import type { LlmCandidate } from './vendors.js';

export interface AnswerRequest {
  messages: ChatMessage[];
  tools: ToolDefinition[];
  candidates: LlmCandidate[];
  adapterFor(provider: string): LlmAdapter | undefined;
  parameters: LlmParameters;
  lane: SpeechLane;
  signal: AbortSignal;
  clock: () => number;
  /** Stamped as the answer goes: llmRequestAt, llmFirstTokenAt, firstSentenceAt. */
  marks: TurnMarks;
  /** Milliseconds all attempts together may take before the first token. */
  budgetMs: number;
  onFallback(from: LlmCandidate, error: ProviderError, next: LlmCandidate | undefined): void;
}

export interface AnswerResult {
  /** Everything the model said (sent to the voice). */
  text: string;
  toolCalls: ToolCall[];
  /** The provider that answered; null when none did. */
  provider: string | null;
  /** Why no model answered, when none did. */
  failure?: ProviderError;
}

export async function generateAnswer(request: AnswerRequest): Promise<AnswerResult> {
  const { candidates, signal, marks, clock } = request;
  const deadline = clock() + request.budgetMs;
  let failure: ProviderError | undefined;
  for (const [index, candidate] of candidates.entries()) {
    if (signal.aborted) break;
    const adapter = request.adapterFor(candidate.provider);
    const next = candidates[index + 1];
    if (!adapter) {
      failure = new ProviderError(`${candidate.provider} cannot answer in live calls yet`, {
        provider: candidate.provider,
        retryable: false,
      });
      request.onFallback(candidate, failure, next);
      continue;
    }
    const remaining = deadline - clock();
    if (remaining <= 0) break;
    const splitter = new SentenceSplitter();
    let text = '';
    const toolCalls: ToolCall[] = [];
    let started = false;
    marks.llmRequestAt = clock();
    try {
      const stream = adapter.stream({
        apiKey: candidate.apiKey,
        baseUrl: candidate.baseUrl,
        model: candidate.model,
        messages: request.messages,
        tools: request.tools,
        ...request.parameters,
        signal,
        firstTokenTimeoutMs: Math.max(1, remaining),
      });
      for await (const event of stream) {
        if (!started) {
          started = true;
          marks.llmFirstTokenAt = clock();
        }
        if (event.type === 'text') {
          text += event.text;
          // Every token goes to the voice at once; a complete sentence asks it to speak now.
          request.lane.write(event.text);
          if (splitter.push(event.text).length > 0) {
            marks.firstSentenceAt ??= clock();
            request.lane.flush();
          }
        } else if (event.type === 'tool_call') {
          toolCalls.push(event.call);
        }
      }
      if (splitter.flush()) marks.firstSentenceAt ??= clock();
      request.lane.flush();
      return { text: text.trim(), toolCalls, provider: candidate.provider };
    } catch (error) {
      if (signal.aborted) break;
      failure = asProviderError(error, candidate.provider);
      if (started) {
        // Said is said: speak what came, and stop here.
        request.lane.flush();
        request.onFallback(candidate, failure, undefined);
        return { text: text.trim(), toolCalls, provider: candidate.provider, failure };
      }
      request.onFallback(candidate, failure, next);
    }
  }
  return { text: '', toolCalls: [], provider: null, ...(failure ? { failure } : {}) };
}
