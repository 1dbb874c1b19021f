/**
 * Cuts the language model's streamed text into pieces worth sending to the voice: the first piece as
 * soon as a clause is complete (so the caller hears the answer begin early), then whole sentences.
 * Pure; `push` returns the pieces completed by the new text, `flush` the rest.
 */
const SENTENCE_END = /[.!?…。！？](?:["'”’)\]]*)\s/;
const CLAUSE_END = /[,;:—–]\s/g;
/** A first clause shorter than this waits for more (a lone "Well," sounds clipped). */
const MIN_FIRST_CLAUSE = 24;

export class SentenceSplitter {
  #buffer = '';
  #sentFirst = false;

  push(text: string): string[] {
    this.#buffer += text;
    const pieces: string[] = [];
    for (;;) {
      const cut = this.#cutPoint();
      if (cut === undefined) break;
      const piece = this.#buffer.slice(0, cut).trim();
      this.#buffer = this.#buffer.slice(cut);
      if (piece) {
        pieces.push(piece);
        this.#sentFirst = true;
      }
    }
    return pieces;
  }

  flush(): string | undefined {
    const rest = this.#buffer.trim();
    this.#buffer = '';
    return rest || undefined;
  }

  #cutPoint(): number | undefined {
    const sentence = SENTENCE_END.exec(this.#buffer);
    if (sentence) return sentence.index + sentence[0].length;
    if (!this.#sentFirst) {
      for (const clause of this.#buffer.matchAll(CLAUSE_END))
        if (clause.index >= MIN_FIRST_CLAUSE) return clause.index + clause[0].length;
    }
    return undefined;
  }
}
