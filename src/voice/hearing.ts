/**
 * The session's ears on the vendor side: the call's speech-to-text stream, opened with the first
 * usable key and, when a key is refused or the stream breaks, with the next one (each switch told to
 * the session, which records it). Audio sent while no stream is open is dropped — the local VAD still
 * hears it, and the caller's next words reach the new stream.
 */
import { asProviderError, type ProviderError } from '../providers/errors.js';
import type { SttEvent, SttStream } from '../providers/stt/types.js';
import type { SessionSpec } from './session-spec.js';
import type { Candidate } from './vendors.js';

export interface HearingEvents {
  event(event: SttEvent): void;
  fallback(from: Candidate, error: ProviderError, next: Candidate | undefined): void;
  /** No key is left: the call goes on without transcripts (recorded, so the silence has a reason). */
  unavailable(): void;
}

export class Hearing {
  #stream: SttStream | undefined;
  readonly #abort = new AbortController();

  constructor(
    private readonly spec: Pick<SessionSpec, 'stt' | 'plan' | 'format'>,
    private readonly events: HearingEvents,
  ) {}

  start(): void {
    void this.#run();
  }

  send(audio: Uint8Array): void {
    this.#stream?.send(audio);
  }

  close(): void {
    this.#abort.abort();
    this.#stream = undefined;
  }

  async #run(): Promise<void> {
    const { adapter, options } = this.spec.stt;
    const candidates = this.spec.plan.stt;
    for (const [index, candidate] of candidates.entries()) {
      if (!adapter || this.#abort.signal.aborted) break;
      try {
        const stream = await adapter.open({
          ...options,
          apiKey: candidate.apiKey ?? '',
          baseUrl: candidate.baseUrl,
          format: this.spec.format,
          signal: this.#abort.signal,
        });
        this.#stream = stream;
        for await (const event of stream.events) this.events.event(event);
        // The vendor closed a stream we did not close: hear on with the same key list from here.
        if (this.#abort.signal.aborted) return;
        this.#stream = undefined;
      } catch (error) {
        this.#stream = undefined;
        if (this.#abort.signal.aborted) return;
        const failure = asProviderError(error, candidate.provider);
        this.events.fallback(candidate, failure, candidates[index + 1]);
      }
    }
    if (!this.#abort.signal.aborted) this.events.unavailable();
  }
}
