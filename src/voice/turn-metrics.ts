/**
 * What is measured on every turn of a call (runtime.md §5), on the monotonic clock: milliseconds
 * from the session's start (`performance.now()` minus the session's origin), so a turn's figures
 * never jump with the wall clock. The session stamps the marks as they happen; `measure` derives the
 * figures that are stored with the turn, shown by `GET /calls/{id}/turns` and exported as histograms.
 */

/** The moments of one turn, in milliseconds since the session started; absent when it did not happen. */
export interface TurnMarks {
  /** The caller started speaking (VAD). */
  callerSpeechStartedAt?: number;
  /** The caller stopped speaking (VAD: the start of the silence that ended the turn). */
  callerSpeechEndedAt?: number;
  /** The final transcript of the turn's last words arrived. */
  sttFinalAt?: number;
  /** The session decided the caller's turn was over. */
  turnEndDecidedAt?: number;
  llmRequestAt?: number;
  llmFirstTokenAt?: number;
  /** The first sentence (or clause) to speak was complete. */
  firstSentenceAt?: number;
  /** The first text went to the voice. */
  ttsRequestAt?: number;
  ttsFirstByteAt?: number;
  /** The first audio of the answer went to the carrier. */
  firstAudioSentAt?: number;
  /** The carrier reported the first chunk of that audio played. */
  firstMarkPlayedAt?: number;
  /** Knowledge-base retrieval for the caller's words began, and ended (passages ready or given up). */
  retrievalStartedAt?: number;
  retrievalEndedAt?: number;
}

/** A knowledge passage a turn's answer was given (`call_turns.passages`). */
export interface TurnPassage {
  document_id: number;
  chunk_id: number;
  /** The fused rank score (reciprocal rank fusion) it was chosen by. */
  score: number;
}

export interface TurnMeasurements {
  /** Caller speech end → first audio sent. */
  endToEndMs: number | null;
  /** Caller speech end → turn end decided. */
  endpointingMs: number | null;
  /** Caller speech end → final transcript. */
  sttDelayMs: number | null;
  llmTtftMs: number | null;
  ttsTtfbMs: number | null;
  /** Knowledge-base retrieval (embedding the caller's words and searching), when the assistant has knowledge. */
  retrievalMs?: number | null;
  /** End-to-end minus the endpointing wait, LLM time to first token and TTS time to first byte: what the platform itself added. */
  platformMs: number | null;
}

const span = (from: number | undefined, to: number | undefined): number | null =>
  from === undefined || to === undefined ? null : Math.max(0, to - from);

export function measure(marks: TurnMarks): TurnMeasurements {
  const endToEndMs = span(marks.callerSpeechEndedAt, marks.firstAudioSentAt);
  const endpointingMs = span(marks.callerSpeechEndedAt, marks.turnEndDecidedAt);
  const llmTtftMs = span(marks.llmRequestAt, marks.llmFirstTokenAt);
  const ttsTtfbMs = span(marks.ttsRequestAt, marks.ttsFirstByteAt);
  const platformMs =
    endToEndMs === null || endpointingMs === null || llmTtftMs === null || ttsTtfbMs === null
      ? null
      : Math.max(0, endToEndMs - endpointingMs - llmTtftMs - ttsTtfbMs);
  return {
    endToEndMs,
    endpointingMs,
    sttDelayMs: span(marks.callerSpeechEndedAt, marks.sttFinalAt),
    llmTtftMs,
    ttsTtfbMs,
    platformMs,
    retrievalMs: span(marks.retrievalStartedAt, marks.retrievalEndedAt),
  };
}

/** One turn as the runtime records it on the call. */
export interface TurnRecord {
  /** 0 for the greeting, then 1, 2, 3… */
  position: number;
  kind: 'greeting' | 'reply' | 'idle' | 'goodbye';
  /** Wall-clock time the turn began (the greeting's stream start, else the caller's speech start). */
  startedAt: Date;
  /** What the caller said (empty for a greeting or an idle prompt). */
  userText: string;
  /** What the assistant said, cut to what the caller heard when it was interrupted. */
  assistantText: string;
  interrupted: boolean;
  /** The language model that answered (provider id), null when none did (greeting, idle). */
  llmProvider: string | null;
  marks: TurnMarks;
  measurements: TurnMeasurements;
  /** The knowledge passages the answer was given, when any were. */
  passages?: TurnPassage[];
}
