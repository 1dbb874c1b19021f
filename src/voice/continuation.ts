/**
 * Finishing an answer with another model after the first one broke off mid-answer: what the next
 * model is asked, and how its words join what the caller has already been given.
 *
 * The request is the conversation, then a system instruction to continue, then the words already
 * said as the assistant's own message, last. That shape works in both dialects the runtime speaks:
 * an OpenAI-style chat model reads the trailing assistant message and the instruction and writes the
 * rest; a messages-API model (llm_b) takes a trailing assistant message as a prefill and continues it
 * word for word (its adapter lifts system messages into `system`; the prefill may not end in
 * whitespace, so it is trimmed here).
 *
 * Models told to continue still sometimes start over or repeat the last words. `OverlapFilter` holds
 * the new model's first words back while they could still be a repetition of the end of what was
 * said, and drops the longest such repetition (word by word, ignoring case and punctuation) before
 * anything reaches the voice.
 */
import type { ChatMessage } from '../providers/llm/types.js';

export const CONTINUE_INSTRUCTION =
  'Your reply was cut off by a technical fault after the words in the next assistant message; the ' +
  'caller has heard them. Continue that reply from exactly where it stops: do not repeat any of it, ' +
  'do not start over, and do not mention the interruption.';

/** The request that asks the next model to finish an answer whose first words were `said`. */
export function continuationMessages(messages: ChatMessage[], said: string): ChatMessage[] {
  const prefix = said.trimEnd();
  if (!prefix) return messages;
  return [
    ...messages,
    { role: 'system', content: CONTINUE_INSTRUCTION },
    { role: 'assistant', content: prefix },
  ];
}

/** A word as compared for overlap: lower case, letters and digits only. */
function norm(word: string): string {
  return word.toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');
}

interface Word {
  norm: string;
  /** Where the word (and the whitespace after it) ends in the text. */
  end: number;
}

/** The words of `text` with a non-empty normal form; `complete`: only those followed by whitespace. */
function words(text: string, complete: boolean): Word[] {
  const found: Word[] = [];
  for (const match of text.matchAll(/\S+(\s+|$)/g)) {
    if (complete && !match[1]) continue;
    const normal = norm(match[0]);
    if (normal) found.push({ norm: normal, end: match.index + match[0].length });
  }
  return found;
}

/**
 * Passes a continuation on, minus any repetition of the end of what was said. `push` returns the
 * text that may go to the voice now (possibly nothing while it decides), `end` whatever is left.
 */
export class OverlapFilter {
  readonly #said: string[];
  #pending = '';
  #decided = false;

  constructor(said: string) {
    this.#said = words(said, false).map((word) => word.norm);
  }

  push(text: string): string {
    if (this.#decided) return text;
    this.#pending += text;
    const heard = words(this.#pending, true);
    if (this.#couldStillRepeat(heard)) return '';
    return this.#decide(heard);
  }

  end(): string {
    if (this.#decided) return '';
    return this.#decide(words(this.#pending, false));
  }

  /** Whether the words so far are the start of some ending of what was said (and it may go on). */
  #couldStillRepeat(heard: Word[]): boolean {
    const said = this.#said;
    const m = heard.length;
    if (m === 0) return said.length > 0;
    for (let k = m + 1; k <= said.length; k++) {
      const from = said.length - k;
      if (heard.every((word, i) => word.norm === said[from + i])) return true;
    }
    return false;
  }

  /** Drops the longest ending of what was said that the words so far begin with; passes the rest. */
  #decide(heard: Word[]): string {
    this.#decided = true;
    const said = this.#said;
    let cut = 0;
    for (let k = Math.min(heard.length, said.length); k > 0; k--) {
      const from = said.length - k;
      if (heard.slice(0, k).every((word, i) => word.norm === said[from + i])) {
        cut = heard[k - 1]!.end;
        break;
      }
    }
    const rest = this.#pending.slice(cut);
    this.#pending = '';
    return rest;
  }
}

/**
 * `said` followed by the first words of a continuation, with one space between them (none before
 * punctuation that belongs to the word before).
 */
export function joinSaid(said: string, more: string): string {
  if (!said) return more;
  if (/\s$/.test(said)) return said + more.trimStart();
  if (/^\s|^[,.;:!?…)\]'"’”]/.test(more)) return said + more;
  return `${said} ${more}`;
}
