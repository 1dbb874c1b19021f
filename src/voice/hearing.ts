/**
 * The session's ears on the vendor side: the call's speech-to-text stream, opened with the first
 * usable key and, when a key is refused or the stream breaks, with the next one (each switch told to
 * the session, which records it). A break mid-call must not lose the caller's turn in progress: the
 * audio since the end of the last final transcript is kept (at most `BACKLOG_MS`), together with what
 * arrives while the next stream connects, and the new stream is given it first — so it hears the
 * words in progress from their start, and the caller's next words too. The local VAD hears all of it
 * meanwhile, as always.
 */
import { asProviderError, type ProviderError } from '../providers/errors.js';
import type { SttEvent, SttStream } from '../providers/stt/types.js';
import { durationMs } from './audio.js';
import type { SessionSpec } from './session-spec.js';
import type { Candidate } from './vendors.js';

/** The most audio kept for a new stream: a long turn's worth. */
export const BACKLOG_MS = 30_000;

export interface HearingEvents {
  event(event: SttEvent): void;
  /** A key failed; `midCall`: its stream had been up (the backlog goes to the next one). */
  fallback(from: Candidate, error: ProviderError, next: Candidate | undefined, midCall: boolean): void;
  /** No key is left: the call goes on without transcripts (recorded, so the silence has a reason). */
  unavailable(): void;
}

export class Hearing {
  #stream: SttStream | undefined;
  readonly #abort = new AbortController();
  /** Audio not yet covered by a final transcript, oldest first. */
  #backlog: Uint8Array[] = [];
  #backlogMs = 0;
  /** Where the backlog starts, in the current stream's audio time (ms). */
  #backlogStartMs = 0;

  constructor(
    private readonly spec: Pick<SessionSpec, 'stt' | 'plan' | 'format'> &
      Partial<Pick<SessionSpec, 'observer'>>,
    private readonly events: HearingEvents,
  ) {}

  start(): void {
    void this.#run();
  }

  send(audio: Uint8Array): void {
    if (this.#abort.signal.aborted) return;
    this.#backlog.push(audio);
    this.#backlogMs += durationMs(this.spec.format, audio.length);
    while (this.#backlogMs > BACKLOG_MS && this.#backlog.length > 1) this.#dropOldest();
    this.#stream?.send(audio);
  }

  close(): void {
    this.#abort.abort();
    this.#stream = undefined;
    this.#backlog = [];
  }

  /** A final transcript covers the audio up to `endMs` of the current stream: that part is done. */
  #covered(endMs: number): void {
    for (;;) {
      const head = this.#backlog[0];
      if (!head) return;
      const headMs = durationMs(this.spec.format, head.length);
      if (this.#backlogStartMs + headMs > endMs) return;
      this.#dropOldest();
    }
  }

  #dropOldest(): void {
    const head = this.#backlog.shift();
    if (!head) return;
    const ms = durationMs(this.spec.format, head.length);
    this.#backlogMs -= ms;
    this.#backlogStartMs += ms;
  }

  async #run(): Promise<void> {
    const { adapter, options } = this.spec.stt;
    const candidates = this.spec.plan.stt;
    for (const [index, candidate] of candidates.entries()) {
      if (!adapter || this.#abort.signal.aborted) break;
      let up = false;
      try {
        const stream = await adapter.open({
          ...options,
          apiKey: candidate.apiKey ?? '',
          baseUrl: candidate.baseUrl,
          format: this.spec.format,
          signal: this.#abort.signal,
        });
        up = true;
        // The new stream's time starts with the backlog: the words in progress, from their start.
        this.#backlogStartMs = 0;
        for (const audio of this.#backlog) stream.send(audio);
        this.#stream = stream;
        for await (const event of stream.events) {
          if (event.type === 'transcript' && event.isFinal) {
            this.#covered(event.endSeconds * 1000);
            // Told first: the voicemail detection reads the words before the turn-taking does.
            this.spec.observer?.heard?.(event.text);
          }
          this.events.event(event);
        }
        // The vendor closed a stream we did not close: hear on with the same key list from here.
        if (this.#abort.signal.aborted) return;
        this.#stream = undefined;
      } catch (error) {
        this.#stream = undefined;
        if (this.#abort.signal.aborted) return;
        const failure = asProviderError(error, candidate.provider);
        this.events.fallback(candidate, failure, candidates[index + 1], up);
      }
    }
    if (!this.#abort.signal.aborted) this.events.unavailable();
  }
}
