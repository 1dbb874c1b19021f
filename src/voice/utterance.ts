/**
 * One thing the assistant says — the greeting, an answer, an idle prompt, the goodbye — from its
 * first text to the moment it has played or was cut: its speech lane, its timing marks, and what of
 * it the conversation and the records get.
 */
import type { ToolCall } from '../providers/llm/types.js';
import type { SpeechLane } from './speech-lane.js';
import type { TurnMarks, TurnPassage, TurnRecord } from './turn-metrics.js';

export interface Utterance {
  id: number;
  kind: TurnRecord['kind'];
  abort: AbortController;
  /** Replaced when a hand-off gives the utterance the next assistant's voice. */
  lane: SpeechLane;
  marks: TurnMarks;
  startedAt: Date;
  userText: string;
  provider: string | null;
  /** Said in full once played; cut to what was heard if interrupted. */
  text: string;
  /** Said before the answer's last round (a hand-off sentence, tool rounds' words and fillers). */
  said: string;
  /** The start of `said` the conversation already has (tool rounds'): not added again at the end. */
  committed: string;
  toolCalls: ToolCall[];
  /** The knowledge passages the answer was given (a reply of an assistant with knowledge). */
  passages?: TurnPassage[];
  finished: boolean;
}
