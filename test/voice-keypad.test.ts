/**
 * The keypad's tools without a call (voice/tools/keypad-tools.ts): collect_digits gives the model the
 * keys the caller pressed or says it timed out, send_digits sends keys by the carrier's command or,
 * where it has none, as tones heard back by the simulated phone's detector; bad arguments are told to
 * the model. And the speech lane's place for the tones (voice/speech-lane.ts `play`): after every
 * word written before them, through the tts_a adapter to its simulator, with the words after them in
 * a new stream of the same key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/providers/errors.js';
import { TtsAAdapter } from '../src/providers/tts/tts-a.js';
import { DtmfDetector } from '../src/sim/dtmf-detector.js';
import { TtsASimulator } from '../src/sim/tts-a.js';
import { durationMs, MULAW_8K } from '../src/voice/audio.js';
import { dtmfAudio } from '../src/voice/dtmf-tones.js';
import { Keypad, type KeypadHost } from '../src/voice/keypad.js';
import { SpeechLane } from '../src/voice/speech-lane.js';
import { collectDigits, keypadTools, sendDigits } from '../src/voice/tools/keypad-tools.js';

const context = (keypad: Keypad, signal = new AbortController().signal) => ({
  signal,
  callId: 1,
  call: keypad,
});
const parsed = (outcome: { result: string }) => JSON.parse(outcome.result) as Record<string, unknown>;

describe('collect_digits', () => {
  it('gives the keys up to the terminator, and says so when none came in time', async () => {
    const keypad = new Keypad({ sendDigits: async () => true });
    const running = collectDigits.run({ max_digits: 8 }, context(keypad));
    for (const digit of '4521#') expect(keypad.press(digit)).toBe(true);
    const outcome = await running;
    expect(outcome.ok).toBe(true);
    expect(parsed(outcome)).toEqual({ digits: '4521' });

    const quiet = await collectDigits.run({ max_digits: 4, timeout_seconds: 1 }, context(keypad));
    expect(parsed(quiet)).toEqual({ digits: null, reason: 'timeout' });
  }, 10_000);

  it('stops at max_digits, and takes * or no terminator when asked', async () => {
    const keypad = new Keypad({ sendDigits: async () => true });
    const four = collectDigits.run({ max_digits: 4 }, context(keypad));
    for (const digit of '1234') keypad.press(digit);
    expect(parsed(await four)).toEqual({ digits: '1234' });
    const star = collectDigits.run({ max_digits: 8, terminator: '*' }, context(keypad));
    for (const digit of '9#*') keypad.press(digit);
    expect(parsed(await star)).toEqual({ digits: '9#' });
    const none = collectDigits.run({ max_digits: 2, terminator: '' }, context(keypad));
    for (const digit of '#5') keypad.press(digit);
    expect(parsed(await none)).toEqual({ digits: '#5' });
  });

  it('tells the model what is wrong with its arguments, without waiting', async () => {
    const keypad = new Keypad({ sendDigits: async () => true });
    for (const args of [
      { max_digits: 0 },
      { max_digits: 33 },
      { max_digits: 2.5 },
      { max_digits: '4' },
      { max_digits: 4, terminator: 'x' },
      { max_digits: 4, timeout_seconds: 0 },
      { max_digits: 4, timeout_seconds: 600 },
    ]) {
      const outcome = await collectDigits.run(args, context(keypad));
      expect(outcome.ok, JSON.stringify(args)).toBe(false);
      expect(parsed(outcome).error).toEqual(expect.any(String));
    }
    // No collector was left behind: a key now is nobody's.
    expect(keypad.press('1')).toBe(false);
  });

  it('says no filler, and its definition bounds max_digits', () => {
    expect(collectDigits.filler).toBe('');
    expect(collectDigits.definition.parameters).toMatchObject({
      required: ['max_digits'],
      properties: { max_digits: { minimum: 1, maximum: 32 } },
    });
  });
});

describe('send_digits', () => {
  it("uses the carrier's command when it has one", async () => {
    const sent: string[] = [];
    const keypad = new Keypad({
      sendDigits: async (digits) => {
        sent.push(digits);
        return true;
      },
    });
    const outcome = await sendDigits.run({ digits: '1w2#' }, context(keypad));
    expect(outcome).toMatchObject({ ok: true });
    expect(parsed(outcome)).toEqual({ sent: '1w2#' });
    expect(sent).toEqual(['1w2#']);
  });

  it('plays tones the other side hears, where the carrier has no command, and records them', async () => {
    const played: Uint8Array[] = [];
    const records: Array<[string, Record<string, unknown>]> = [];
    const host: KeypadHost = {
      sendDigits: async () => false,
      inBand: {
        format: MULAW_8K,
        play: async (audio) => {
          played.push(audio);
          return true;
        },
        record: (type, data) => records.push([type, data]),
      },
    };
    const outcome = await sendDigits.run({ digits: '90*#' }, context(new Keypad(host)));
    expect(outcome.ok).toBe(true);
    const detector = new DtmfDetector(MULAW_8K);
    expect(played.flatMap((audio) => detector.push(audio)).map((heard) => heard.key)).toEqual([
      '9',
      '0',
      '*',
      '#',
    ]);
    expect(records).toEqual([['call.digits_sent', { digits: '90*#', via: 'in_band' }]]);
  });

  it('tells the model when the keys could not be sent, or are no keys', async () => {
    const noWay = await sendDigits.run(
      { digits: '1' },
      context(new Keypad({ sendDigits: async () => false })),
    );
    expect(noWay.ok).toBe(false);
    expect(parsed(noWay)).toEqual({ sent: false, error: 'this carrier cannot send DTMF tones' });
    const silent = new Keypad({
      sendDigits: async () => false,
      inBand: { format: MULAW_8K, play: async () => false, record() {} },
    });
    expect(parsed(await sendDigits.run({ digits: '1' }, context(silent))).error).toMatch(/no answer/);
    const refusing = (error: Error) =>
      new Keypad({
        sendDigits: async () => {
          throw error;
        },
      });
    const invalid = new ProviderError('carrier_c plays only the keys 0-9, * and #', {
      provider: 'carrier_c',
      retryable: false,
      code: 'invalid_digits',
    });
    expect(parsed(await sendDigits.run({ digits: 'A' }, context(refusing(invalid)))).error).toBe(
      'carrier_c plays only the keys 0-9, * and #',
    );
    const down = new ProviderError('connect ECONNREFUSED 127.0.0.1:9', {
      provider: 'carrier_b',
      retryable: true,
    });
    expect(parsed(await sendDigits.run({ digits: '1' }, context(refusing(down)))).error).toBe(
      'the carrier did not play the keys',
    );
    for (const digits of ['', '12x', 'p', 5, '1'.repeat(65)]) {
      const outcome = await sendDigits.run({ digits }, context(refusing(invalid)));
      expect(outcome.ok).toBe(false);
      expect(parsed(outcome).error).toMatch(/digits must be/);
    }
  });
});

describe('enabling the keypad tools', () => {
  it('offers the ones enabled_tools names, once each, and nothing for other names', () => {
    expect(keypadTools(undefined)).toEqual([]);
    expect(keypadTools(['end_call', 'transfer_call'])).toEqual([]);
    expect(
      keypadTools(['send_digits', 'end_call', 'collect_digits', 'send_digits']).map((t) => t.definition.name),
    ).toEqual(['send_digits', 'collect_digits']);
  });
});

describe("tones in the speech lane's order", () => {
  const tts = new TtsASimulator({ ttfbMs: 5, realtimeFactor: 20 });
  let ttsUrl = '';
  beforeAll(async () => {
    ttsUrl = await tts.start();
    tts.addKey('lane-key');
  });
  afterAll(() => tts.stop());

  function lane(chunks: Uint8Array[]) {
    return new SpeechLane({
      adapter: new TtsAAdapter(),
      candidates: [{ provider: 'tts_a', apiKey: 'lane-key', baseUrl: ttsUrl, label: 'lane-key' }],
      format: MULAW_8K,
      voice: { voiceId: 'v', voiceSettings: {} },
      signal: new AbortController().signal,
      clock: () => performance.now(),
      onAudio: (audio) => chunks.push(audio),
      onFallback: () => {},
    });
  }

  it('follow all the audio of the words before them, and the words after them follow the tones', async () => {
    const chunks: Uint8Array[] = [];
    const before = tts.connections.length;
    const speech = lane(chunks);
    speech.send('Let me press one for you.');
    const tones = dtmfAudio('1', MULAW_8K);
    await speech.play(tones);
    speech.send('Now we wait.');
    await speech.end();

    const [first, second] = tts.connections.slice(before);
    expect(tts.connections.length - before).toBe(2);
    expect(first!.texts.join('')).toContain('Let me press one for you.');
    expect(second!.texts.join('')).toContain('Now we wait.');
    const at = chunks.indexOf(tones);
    const ms = (list: Uint8Array[]) =>
      list.reduce((sum, chunk) => sum + durationMs(MULAW_8K, chunk.length), 0);
    expect(ms(chunks.slice(0, at))).toBeCloseTo(first!.audioMs, 0);
    expect(ms(chunks.slice(at + 1))).toBeCloseTo(second!.audioMs, 0);
    // What was said is placed around the tones: all of it once everything played.
    expect(speech.spoken.heard(Number.POSITIVE_INFINITY)).toBe('Let me press one for you. Now we wait.');
    expect(speech.spoken.heard(ms(chunks.slice(0, at + 1)))).toBe('Let me press one for you.');
  });

  it('go at once when no words are waiting, and keep the stream', async () => {
    const chunks: Uint8Array[] = [];
    const before = tts.connections.length;
    const speech = lane(chunks);
    const tones = dtmfAudio('2w3', MULAW_8K);
    await speech.play(tones);
    expect(chunks).toEqual([tones]);
    speech.send('Done.');
    await speech.end();
    expect(tts.connections.length - before).toBe(1);
    expect(chunks.length).toBeGreaterThan(1);
  });
});
