/**
 * Asking the assistant's language model one analysis question: the candidates `planVendors` lists
 * (its key, the fallback keys, then `llm_fallback_providers`), each asked in turn until one answers
 * in full. The answer is streamed and collected (the adapters speak streams only); a candidate that
 * fails, stalls past the time limit, or answers something `accept` refuses hands over to the next.
 */
import { asProviderError } from '../../providers/errors.js';
import type { ChatMessage, LlmAdapter } from '../../providers/llm/types.js';
import type { LlmCandidate } from '../../voice/vendors.js';

/** Every candidate failed; `permanent` when none of them may do better later (keys refused…). */
export class ModelFailed extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = 'ModelFailed';
  }
}

export interface ModelAnswer {
  text: string;
  /** The provider id that answered. */
  provider: string;
}

export interface AskOptions {
  adapterFor: (provider: string) => LlmAdapter | undefined;
  /** The longest one candidate may take for its whole answer. */
  timeoutMs: number;
  /** Why an answer is unusable (then the next candidate is asked), or undefined to take it. */
  accept?: (text: string) => string | undefined;
}

/** Deterministic and bounded: the analysis is a reading, not a conversation. */
const PARAMETERS = { temperature: 0, maxTokens: 1000 };

export async function askModel(
  candidates: readonly LlmCandidate[],
  messages: ChatMessage[],
  options: AskOptions,
): Promise<ModelAnswer> {
  if (candidates.length === 0)
    throw new ModelFailed('no language model can be used: no key for the assistant’s model', true);
  const failures: string[] = [];
  let permanent = true;
  for (const candidate of candidates) {
    const where = `${candidate.provider} (${candidate.label})`;
    const adapter = options.adapterFor(candidate.provider);
    if (!adapter) {
      failures.push(`${where}: no adapter speaks this provider`);
      continue;
    }
    const signal = AbortSignal.timeout(options.timeoutMs);
    let text = '';
    try {
      for await (const event of adapter.stream({
        apiKey: candidate.apiKey,
        baseUrl: candidate.baseUrl,
        model: candidate.model,
        messages,
        tools: [],
        signal,
        ...PARAMETERS,
      })) {
        if (event.type === 'text') text += event.text;
      }
    } catch (error) {
      const failure = asProviderError(error, candidate.provider);
      if (failure.retryable) permanent = false;
      failures.push(`${where}: ${failure.message}`);
      continue;
    }
    // An aborted stream ends without an error: the time limit passed mid-answer.
    if (signal.aborted) {
      permanent = false;
      failures.push(`${where}: no complete answer within ${Math.round(options.timeoutMs / 1000)} s`);
      continue;
    }
    const problem = options.accept?.(text);
    if (problem) {
      permanent = false;
      failures.push(`${where}: ${problem}`);
      continue;
    }
    return { text, provider: candidate.provider };
  }
  throw new ModelFailed(failures.join('; '), permanent);
}
