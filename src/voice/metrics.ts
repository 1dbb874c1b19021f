/**
 * The live call runtime's figures on `/metrics` (runtime.md §5): the per-turn latencies as
 * histograms, barge-in reaction, calls in progress, vendor failures and interruptions. Registered on
 * the platform's registry, so they are served with the HTTP and process metrics. Labels are closed
 * sets only — stage, vendor kind, provider id, retryable — never a call id, phone number or text, so
 * the number of series stays fixed however many calls run.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ProviderError } from '../providers/errors.js';
import { CARRIERS, LLM_PROVIDER_IDS, STT_PROVIDERS, TTS_PROVIDERS } from '../providers/ids.js';
import type { TurnMeasurements } from './turn-metrics.js';

/**
 * Seconds, from 10 ms to 5 s: fine steps where a good voice turn lives (under a second), coarse ones
 * up to the point where the caller has long noticed.
 */
export const VOICE_LATENCY_BUCKETS = [
  0.01, 0.02, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5,
];

/** The stages of a turn exported as histograms, with the measurement each is made of. */
const TURN_HISTOGRAMS = [
  ['endToEndMs', 'end_to_end', 'Caller speech end to the first audio of the answer sent to the carrier.'],
  ['endpointingMs', 'endpointing', 'Caller speech end to the turn end decided (the endpointing wait).'],
  ['sttDelayMs', 'stt_delay', 'Caller speech end to the final transcript.'],
  ['llmTtftMs', 'llm_ttft', 'Language model request to its first token.'],
  ['ttsTtfbMs', 'tts_ttfb', 'Voice request to its first audio byte.'],
  [
    'platformMs',
    'platform_added',
    'End-to-end minus the endpointing wait, LLM time to first token and TTS time to first byte.',
  ],
  ['retrievalMs', 'retrieval', 'Knowledge base retrieval for the caller words (embedding and search).'],
] as const satisfies ReadonlyArray<readonly [keyof TurnMeasurements, string, string]>;

/** Where a barge-in reaction is measured to: audio sending paused, or the carrier told to `clear`. */
export type BargeInStage = 'paused' | 'cleared';

/** The kinds of outside service a call depends on. */
export type VendorKind = 'stt' | 'llm' | 'tts' | 'carrier';

const KNOWN_PROVIDERS: Record<VendorKind, readonly string[]> = {
  stt: STT_PROVIDERS,
  llm: LLM_PROVIDER_IDS,
  tts: TTS_PROVIDERS,
  carrier: CARRIERS,
};

export class VoiceMetrics {
  readonly #turns: Array<[keyof TurnMeasurements, Histogram]>;
  readonly #bargeIn: Histogram<'stage'>;
  readonly #activeCalls: Gauge;
  readonly #vendorFailures: Counter<'kind' | 'provider' | 'retryable'>;
  readonly #interruptions: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#turns = TURN_HISTOGRAMS.map(([measurement, name, help]) => [
      measurement,
      new Histogram({
        name: `switchboard_voice_turn_${name}_seconds`,
        help,
        buckets: VOICE_LATENCY_BUCKETS,
        registers,
      }),
    ]);
    this.#bargeIn = new Histogram({
      name: 'switchboard_voice_barge_in_reaction_seconds',
      help: 'Caller speech start, while the assistant speaks, to audio sending paused or the carrier told to clear.',
      labelNames: ['stage'],
      buckets: VOICE_LATENCY_BUCKETS,
      registers,
    });
    this.#activeCalls = new Gauge({
      name: 'switchboard_voice_active_calls',
      help: 'Calls whose live session runs in this process.',
      registers,
    });
    this.#vendorFailures = new Counter({
      name: 'switchboard_voice_vendor_failures_total',
      help: 'Failed requests to speech, language model, voice and carrier services during calls.',
      labelNames: ['kind', 'provider', 'retryable'],
      registers,
    });
    this.#interruptions = new Counter({
      name: 'switchboard_voice_interruptions_total',
      help: 'Times a caller interrupted the assistant (barge-in past the threshold).',
      registers,
    });
  }

  /** Records a finished turn's figures; a stage the turn did not have (null) is not observed. */
  observeTurn(measurements: TurnMeasurements): void {
    for (const [measurement, histogram] of this.#turns) {
      const ms = measurements[measurement];
      if (ms !== null && ms !== undefined && Number.isFinite(ms) && ms >= 0) histogram.observe(ms / 1000);
    }
  }

  /** Records how long the session took, from the caller's speech start, to reach `stage`. */
  observeBargeIn(stage: BargeInStage, ms: number): void {
    if (Number.isFinite(ms) && ms >= 0) this.#bargeIn.observe({ stage }, ms / 1000);
  }

  /** A caller's speech became an interruption (the assistant was cut off). */
  interruption(): void {
    this.#interruptions.inc();
  }

  callStarted(): void {
    this.#activeCalls.inc();
  }

  callEnded(): void {
    this.#activeCalls.dec();
  }

  /**
   * A request to an outside service failed. A provider id outside the known lists is counted as
   * `other`, so a label can never carry something a tenant typed.
   */
  vendorFailure(kind: VendorKind, error: ProviderError): void {
    const named = error.options.provider;
    const provider = KNOWN_PROVIDERS[kind].includes(named) ? named : 'other';
    this.#vendorFailures.inc({ kind, provider, retryable: String(error.retryable) });
  }
}
