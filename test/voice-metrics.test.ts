/**
 * The live call runtime's figures on GET /metrics (`platform.voiceMetrics`): turn latencies as
 * histograms in seconds (a stage the turn did not have is not observed), barge-in reaction by stage,
 * calls in progress, vendor failures by kind / provider / retryable, interruptions — and no label
 * ever carries something outside its closed set.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/providers/errors.js';
import type { VoiceMetrics } from '../src/voice/metrics.js';
import { measure } from '../src/voice/turn-metrics.js';
import { useTestPlatform } from './support/harness.js';

// One platform (one registry) for the file; the tests run in order and read what the earlier ones added.
const t = useTestPlatform();

/** The value of the sample `name{labels}` (labels may be a subset), or 0 when there is none. */
function sample(exposition: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const open = line.indexOf('{');
    const close = line.lastIndexOf('}');
    const found: Record<string, string> = {};
    if (open !== -1) {
      for (const match of line.slice(open + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
        found[match[1]!] = match[2]!;
      }
    }
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) {
      return Number(line.slice(open === -1 ? name.length : close + 1).trim());
    }
  }
  return 0;
}

async function metrics(): Promise<string> {
  const response = await t.app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode).toBe(200);
  return response.body;
}

let voice: VoiceMetrics;
beforeAll(() => {
  voice = t.platform.voiceMetrics;
});

describe('switchboard_voice_* on /metrics', () => {
  it('observes each stage of a turn in seconds, in latency buckets from 10 ms to 5 s', async () => {
    const before = await metrics();
    expect(before).toContain('# TYPE switchboard_voice_turn_end_to_end_seconds histogram');
    expect(sample(before, 'switchboard_voice_turn_end_to_end_seconds_count')).toBe(0);

    // A reply: every stage happened. end-to-end 900 ms, endpointing 400, STT 150, TTFT 250, TTFB 200,
    // platform-added 50.
    voice.observeTurn(
      measure({
        callerSpeechEndedAt: 1000,
        sttFinalAt: 1150,
        turnEndDecidedAt: 1400,
        llmRequestAt: 1410,
        llmFirstTokenAt: 1660,
        ttsRequestAt: 1690,
        ttsFirstByteAt: 1890,
        firstAudioSentAt: 1900,
      }),
    );
    // A greeting: only the voice's first byte (120 ms); the other stages are not observed.
    voice.observeTurn(measure({ ttsRequestAt: 5, ttsFirstByteAt: 125, firstAudioSentAt: 130 }));

    const text = await metrics();
    const figures: Array<[string, number, number]> = [
      ['end_to_end', 1, 0.9],
      ['endpointing', 1, 0.4],
      ['stt_delay', 1, 0.15],
      ['llm_ttft', 1, 0.25],
      ['tts_ttfb', 2, 0.32],
      ['platform_added', 1, 0.05],
    ];
    for (const [stage, count, sum] of figures) {
      const name = `switchboard_voice_turn_${stage}_seconds`;
      expect(sample(text, `${name}_count`), name).toBe(count);
      expect(sample(text, `${name}_sum`), name).toBeCloseTo(sum, 6);
    }
    const bucket = (le: string) => sample(text, 'switchboard_voice_turn_end_to_end_seconds_bucket', { le });
    expect(bucket('0.01')).toBe(0);
    expect(bucket('0.75')).toBe(0);
    expect(bucket('1')).toBe(1);
    expect(bucket('5')).toBe(1);
    expect(bucket('+Inf')).toBe(1);
    expect(sample(text, 'switchboard_voice_turn_tts_ttfb_seconds_bucket', { le: '0.15' })).toBe(1);
    expect(sample(text, 'switchboard_voice_turn_tts_ttfb_seconds_bucket', { le: '0.2' })).toBe(2);
  });

  it('observes barge-in reaction by stage, interruptions and calls in progress', async () => {
    voice.observeBargeIn('paused', 35);
    voice.observeBargeIn('paused', 60);
    voice.observeBargeIn('cleared', 480);
    voice.interruption();
    voice.callStarted();
    voice.callStarted();
    voice.callStarted();
    voice.callEnded();

    const text = await metrics();
    const name = 'switchboard_voice_barge_in_reaction_seconds';
    expect(sample(text, `${name}_count`, { stage: 'paused' })).toBe(2);
    expect(sample(text, `${name}_sum`, { stage: 'paused' })).toBeCloseTo(0.095, 6);
    expect(sample(text, `${name}_bucket`, { stage: 'paused', le: '0.05' })).toBe(1);
    expect(sample(text, `${name}_count`, { stage: 'cleared' })).toBe(1);
    expect(sample(text, `${name}_bucket`, { stage: 'cleared', le: '0.4' })).toBe(0);
    expect(sample(text, `${name}_bucket`, { stage: 'cleared', le: '0.5' })).toBe(1);
    expect(sample(text, 'switchboard_voice_interruptions_total')).toBe(1);
    expect(sample(text, 'switchboard_voice_active_calls')).toBe(2);
    expect(text).toContain('# TYPE switchboard_voice_active_calls gauge');
  });

  it('counts vendor failures by kind, provider and retryable; an unknown provider id is "other"', async () => {
    const failure = (provider: string, retryable: boolean) =>
      new ProviderError('vendor said no', { provider, retryable, status: retryable ? 429 : 401 });
    voice.vendorFailure('llm', failure('llm_a', true));
    voice.vendorFailure('llm', failure('llm_a', true));
    voice.vendorFailure('tts', failure('tts_a', false));
    voice.vendorFailure('stt', failure('+14155550100 https://tenant.example/hook', false));
    // A known id of another kind is not one of this kind's.
    voice.vendorFailure('carrier', failure('llm_b', true));

    const text = await metrics();
    const name = 'switchboard_voice_vendor_failures_total';
    expect(sample(text, name, { kind: 'llm', provider: 'llm_a', retryable: 'true' })).toBe(2);
    expect(sample(text, name, { kind: 'tts', provider: 'tts_a', retryable: 'false' })).toBe(1);
    expect(sample(text, name, { kind: 'stt', provider: 'other', retryable: 'false' })).toBe(1);
    expect(sample(text, name, { kind: 'carrier', provider: 'other', retryable: 'true' })).toBe(1);
    expect(text).not.toContain('+14155550100');
    expect(text).not.toContain('tenant.example');
  });

  it('ignores figures that are not durations', async () => {
    const before = sample(await metrics(), 'switchboard_voice_barge_in_reaction_seconds_count', {
      stage: 'paused',
    });
    voice.observeBargeIn('paused', Number.NaN);
    voice.observeBargeIn('paused', -5);
    voice.observeTurn({ ...measure({}), endToEndMs: Number.POSITIVE_INFINITY });
    const text = await metrics();
    expect(sample(text, 'switchboard_voice_barge_in_reaction_seconds_count', { stage: 'paused' })).toBe(
      before,
    );
    expect(sample(text, 'switchboard_voice_turn_end_to_end_seconds_count')).toBe(1);
  });
});
