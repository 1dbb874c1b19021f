/**
 * A voice that breaks mid-utterance (voice/speech-lane.ts, voice/spoken-text.ts): through the tts_a
 * adapter to its simulator, the first key's stream is cut after some audio; the audio already received
 * plays on, and the next key is given only the text that audio had not covered, from a word's start,
 * so nothing is skipped, little is said twice, and the record of what was said has the text once.
 * Without alignment the covered part is estimated from the audio's length, erring towards repeating.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TtsAAdapter } from '../src/providers/tts/tts-a.js';
import { TtsASimulator } from '../src/sim/tts-a.js';
import { durationMs, MULAW_8K } from '../src/voice/audio.js';
import { SpeechLane } from '../src/voice/speech-lane.js';
import { ESTIMATE_MS_PER_CHAR, SpokenText } from '../src/voice/spoken-text.js';

const tts = new TtsASimulator({ ttfbMs: 5, realtimeFactor: 20 });
let ttsUrl = '';
beforeAll(async () => {
  ttsUrl = await tts.start();
  tts.addKey('first-key');
  tts.addKey('second-key');
});
afterAll(() => tts.stop());

const TEXT =
  'Of course. We have openings tomorrow morning at nine, at ten thirty, and at eleven. Which suits you?';

describe('a voice that breaks mid-utterance', () => {
  it('is followed by the next key, which speaks only the rest its audio had not covered', async () => {
    let audioBytes = 0;
    let bytesBeforeSwitch: number | undefined;
    const switches: Array<{ next: string | undefined; midUtterance: boolean }> = [];
    const before = tts.connections.length;
    tts.failAfterAudio(1_200);
    const lane = new SpeechLane({
      adapter: new TtsAAdapter(),
      candidates: ['first-key', 'second-key'].map((apiKey) => ({
        provider: 'tts_a',
        apiKey,
        baseUrl: ttsUrl,
        label: apiKey,
      })),
      format: MULAW_8K,
      voice: { voiceId: 'v', voiceSettings: {} },
      signal: new AbortController().signal,
      clock: () => performance.now(),
      onAudio: (audio) => {
        audioBytes += audio.length;
      },
      onFallback: (_from, _error, next, midUtterance) => {
        switches.push({ next: next?.apiKey ?? undefined, midUtterance });
        bytesBeforeSwitch = audioBytes;
      },
    });
    lane.send(TEXT);
    await lane.end();

    const [first, second] = tts.connections.slice(before);
    expect(switches).toEqual([{ next: 'second-key', midUtterance: true }]);
    expect(first!.audioMs).toBeGreaterThanOrEqual(1_200);
    // The second voice got one piece: the end of the text, from the start of a word.
    const rest = second!.texts.join('');
    expect(rest.length).toBeLessThan(TEXT.length);
    expect(TEXT.endsWith(rest.trim())).toBe(true);
    const resumedAt = TEXT.length - rest.trim().length;
    expect(TEXT[resumedAt - 1]).toMatch(/\s/);
    // Nothing skipped: the first voice's audio covered at least everything before the rest.
    const coveredChars = first!.audioMs / tts.options.msPerCharacter;
    expect(TEXT.slice(0, resumedAt).replace(/\s/g, '').length).toBeLessThanOrEqual(coveredChars);
    // Every byte of both voices reached the playout, the first voice's all before the second's.
    expect(durationMs(MULAW_8K, bytesBeforeSwitch!)).toBeCloseTo(first!.audioMs, -1);
    expect(durationMs(MULAW_8K, audioBytes)).toBeCloseTo(first!.audioMs + second!.audioMs, -1);
    // What was said, as the conversation will keep it: the text once, the repeated word once.
    expect(lane.spoken.heard(Number.POSITIVE_INFINITY)).toBe(TEXT);
  });
});

describe('text as the model writes it', () => {
  it('speaks a sentence at its end, holds a word begun after it, and never doubles a space', async () => {
    const before = tts.connections.length;
    const lane = new SpeechLane({
      adapter: new TtsAAdapter(),
      candidates: [{ provider: 'tts_a', apiKey: 'first-key', baseUrl: ttsUrl, label: 'first' }],
      format: MULAW_8K,
      voice: { voiceId: 'v', voiceSettings: {} },
      signal: new AbortController().signal,
      clock: () => performance.now(),
      onAudio: () => {},
      onFallback: () => {},
    });
    // Tokens as a loaded machine may read them: a sentence end and the next word's start together.
    for (const token of ['Of', ' course. W']) lane.write(token);
    lane.flushSentence();
    for (const token of ['e', ' have', ' openings.']) lane.write(token);
    lane.flushSentence();
    for (const token of [' Which', ' suits', ' you?']) lane.write(token);
    await lane.end();
    const [stream] = tts.connections.slice(before);
    expect(stream!.texts.join('')).toBe('Of course. We have openings. Which suits you? ');
    expect(lane.spoken.heard(Number.POSITIVE_INFINITY)).toBe('Of course. We have openings. Which suits you?');
  });
});

describe('what the audio covered', () => {
  it('by the alignment: a word whose end was not aligned is said again in full', () => {
    const cut = new SpokenText();
    cut.sent('Hello there world ');
    cut.add(500, { chars: [...'Hello th'], startMs: [0, 50, 100, 150, 200, 250, 300, 350] });
    expect(cut.switchVoice()).toBe('there world ');

    const whole = new SpokenText();
    whole.sent('Hello there world ');
    whole.add(500, { chars: [...'Hello'], startMs: [0, 50, 100, 150, 200] });
    // "Hello" with no space aligned after it may have been cut at its last sound.
    expect(whole.switchVoice()).toBe('Hello there world ');

    const done = new SpokenText();
    done.sent('Hello there world ');
    done.add(500, { chars: [...'Hello '], startMs: [0, 50, 100, 150, 200, 250] });
    expect(done.switchVoice()).toBe('there world ');
    done.add(400, { chars: [...'there world '], startMs: [...'there world '].map((_, i) => i * 30) });
    expect(done.heard(Number.POSITIVE_INFINITY)).toBe('Hello there world');
  });

  it('without alignment: estimated from the audio at a slow speaking rate, back to a word start', () => {
    const spoken = new SpokenText();
    spoken.sent('one two three four five six');
    // Twelve characters' worth: "one", "two", "three" and the "f" of "four".
    spoken.add(12 * ESTIMATE_MS_PER_CHAR, undefined);
    expect(spoken.switchVoice()).toBe('four five six');
    spoken.sent(' seven');
    spoken.add(900, undefined);
    spoken.finish();
    expect(spoken.heard(Number.POSITIVE_INFINITY)).toBe('one two three four five six seven');
    // The first voice's words are placed in its audio, the next voice's after it.
    expect(spoken.heard(12 * ESTIMATE_MS_PER_CHAR)).toBe('one two three');
  });
});
