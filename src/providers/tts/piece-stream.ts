/**
 * A TtsStream for vendors whose API speaks one whole input per request (tts_b, tts_c). The contract
 * takes text as the model writes it; these vendors take a finished piece. So text is buffered until
 * the session flushes (it does so at each sentence, or first clause) or ends, and each flushed piece
 * becomes one request. Requests overlap — the next piece's is sent while the one before is still
 * answering, a few at a time — but their audio goes out strictly in order: a piece's audio is held
 * until every piece before it has been passed on. Conversion to the carrier's format happens on that
 * in-order output, once, so a stateful converter (a resampler) sees one continuous signal.
 *
 * A failed request fails the stream when its turn comes (the audio before it is passed on first);
 * aborting the signal (a barge-in) cancels every request and ends the events at once, dropping what
 * was queued.
 */
import { Channel } from '../../lib/channel.js';
import { asProviderError, type RequestTiming } from '../errors.js';
import type { TtsEvent, TtsStream } from './types.js';

/** Vendor audio → the carrier's, in order over the whole stream. */
export interface AudioConverter {
  push(bytes: Uint8Array): Uint8Array;
  /** What the conversion still holds, at the very end. */
  end(): Uint8Array;
}

export const PASS_THROUGH: AudioConverter = { push: (bytes) => bytes, end: () => new Uint8Array(0) };

export interface PieceVendor {
  readonly provider: string;
  /** The longest input one request may carry (a longer piece is cut at a word boundary). */
  readonly maxChars: number;
  /** One piece's request: resolves when the vendor answers, to its audio as it arrives. */
  synthesize(text: string, signal: AbortSignal): Promise<AsyncIterable<Uint8Array> | Iterable<Uint8Array>>;
  readonly converter: AudioConverter;
}

/** Requests in flight at once: the piece being heard and two ahead of it. */
const MAX_IN_FLIGHT = 3;

interface Piece {
  text: string;
  started: boolean;
  /** The vendor's audio for this piece as it arrives, held until its turn. */
  audio: Channel<Uint8Array>;
}

export class PieceStream implements TtsStream {
  readonly events: AsyncIterable<TtsEvent>;
  readonly timing: RequestTiming = { startedAt: performance.now() };
  readonly #channel: Channel<TtsEvent>;
  readonly #http = new AbortController();
  readonly #pieces: Piece[] = [];
  /** The piece whose audio is being passed on. */
  #current = 0;
  #buffer = '';
  #ended = false;
  #done = false;
  #wake: (() => void) | undefined;

  constructor(
    private readonly vendor: PieceVendor,
    private readonly signal: AbortSignal,
  ) {
    this.#channel = new Channel<TtsEvent>(() => this.#stop());
    this.events = dropAfterAbort(this.#channel, signal);
    signal.addEventListener('abort', this.#onAbort, { once: true });
    void this.#pump();
  }

  sendText(text: string): void {
    if (this.#ended || this.#done || !text) return;
    this.#buffer += text;
    // The session flushes long before this; a model that never ends a sentence still gets spoken.
    while (this.#buffer.length > this.vendor.maxChars) {
      const cut = cutPoint(this.#buffer, this.vendor.maxChars);
      this.#request(this.#buffer.slice(0, cut));
      this.#buffer = this.#buffer.slice(cut);
    }
  }

  flush(): void {
    if (this.#ended || this.#done) return;
    this.#request(this.#buffer);
    this.#buffer = '';
  }

  end(): void {
    if (this.#ended || this.#done) return;
    this.flush();
    this.#ended = true;
    this.#changed();
  }

  #request(text: string): void {
    const piece = text.trim();
    if (!piece) return;
    this.#pieces.push({ text: piece, started: false, audio: new Channel<Uint8Array>() });
    this.#startDue();
    this.#changed();
  }

  /** Starts the requests of the pieces within reach of the one being heard. */
  #startDue(): void {
    const last = Math.min(this.#pieces.length, this.#current + MAX_IN_FLIGHT);
    for (let i = this.#current; i < last; i++) {
      const piece = this.#pieces[i]!;
      if (piece.started) continue;
      piece.started = true;
      this.timing.connectedAt ??= performance.now();
      void this.#fetch(piece);
    }
  }

  async #fetch(piece: Piece): Promise<void> {
    try {
      const audio = await this.vendor.synthesize(piece.text, this.#http.signal);
      for await (const bytes of audio) piece.audio.push(bytes);
      piece.audio.end();
    } catch (error) {
      piece.audio.fail(error);
    }
  }

  /** Passes the pieces' audio on, in order, then `final` once the stream has ended. */
  async #pump(): Promise<void> {
    const { converter } = this.vendor;
    try {
      for (;;) {
        const piece = await this.#nextPiece();
        if (!piece) break;
        for await (const bytes of piece.audio) this.#emit(converter.push(bytes));
        this.#current += 1;
        this.#startDue();
      }
      if (this.#done) return;
      this.#emit(converter.end());
      this.#finish();
      this.#channel.push({ type: 'final' });
      this.#channel.end();
    } catch (error) {
      if (this.#done || this.signal.aborted) return;
      this.#finish();
      this.#channel.fail(asProviderError(error, this.vendor.provider));
    }
  }

  /** The piece to pass on next: waits for it to be flushed; undefined once the stream is over. */
  async #nextPiece(): Promise<Piece | undefined> {
    while (this.#current >= this.#pieces.length) {
      if (this.#ended || this.#done) return undefined;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
    return this.#done ? undefined : this.#pieces[this.#current];
  }

  #changed(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #emit(audio: Uint8Array): void {
    if (this.#done || audio.length === 0) return;
    this.timing.firstByteAt ??= performance.now();
    this.#channel.push({ type: 'audio', audio });
  }

  #finish(): void {
    this.#done = true;
    this.timing.endedAt = performance.now();
    this.signal.removeEventListener('abort', this.#onAbort);
    this.#changed();
    // Nothing more is read: requests still answering (after a failure) are cancelled.
    this.#http.abort();
  }

  readonly #onAbort = (): void => {
    if (this.#done) return;
    this.#finish();
    this.#channel.end();
  };

  #stop(): void {
    if (!this.#done) this.#finish();
  }
}

/** Where to cut a text longer than `max`: the last sentence end, else the last space, within it. */
function cutPoint(text: string, max: number): number {
  const head = text.slice(0, max);
  const sentence = Math.max(...['. ', '! ', '? ', '\n'].map((end) => head.lastIndexOf(end)));
  if (sentence > max / 2) return sentence + 1;
  const space = head.lastIndexOf(' ');
  return space > 0 ? space + 1 : max;
}

/** The events as read: after an abort nothing more is handed out, not even audio already queued. */
async function* dropAfterAbort(
  events: AsyncIterable<TtsEvent>,
  signal: AbortSignal,
): AsyncGenerator<TtsEvent> {
  if (signal.aborted) return;
  for await (const event of events) {
    if (signal.aborted) return;
    yield event;
  }
}
