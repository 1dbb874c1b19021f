/**
 * Answering-machine detection without a call (src/voice/voicemail-detect.ts, voicemail.ts): the
 * words of a greeting, the beep detector on synthesized tones, recorded speech and key presses, and
 * the watch's decisions on made-up timelines of audio frames, words and carrier verdicts; and the
 * voicemail settings as a call resolves them.
 */
import { describe, expect, it } from 'vitest';
import type { AssistantSettings } from '../src/domains/assistants/schemas.js';
import { voiceFixture } from '../src/sim/phone-voice.js';
import {
  type AudioFormat,
  decodeAudio,
  encodeAudio,
  FRAME_MS,
  LINEAR16_16K,
  MULAW_8K,
  silence,
} from '../src/voice/audio.js';
import { Voicemail, type VoicemailHost, voicemailSpec } from '../src/voice/voicemail.js';
import {
  BeepDetector,
  DETECTION_WINDOW_MS,
  dominantTone,
  SILENCE_END_MS,
  soundsLikeMachine,
  VoicemailWatch,
  type WatchAction,
} from '../src/voice/voicemail-detect.js';

/** `ms` of samples at `rate`: the sum of sines (`hz`, each at `amplitude`). */
function tones(ms: number, hz: number[], amplitude = 8000, rate = 8000): Int16Array {
  const samples = new Int16Array(Math.round((rate * ms) / 1000));
  for (let i = 0; i < samples.length; i++) {
    let value = 0;
    for (const f of hz) value += amplitude * Math.sin((2 * Math.PI * f * i) / rate);
    samples[i] = Math.round(value);
  }
  return samples;
}

/** Noise shaped like speech for the energy rules: loud, and no single frequency. */
function noise(ms: number, rate = 8000, seed = 1): Int16Array {
  const samples = new Int16Array(Math.round((rate * ms) / 1000));
  let state = seed;
  for (let i = 0; i < samples.length; i++) {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    samples[i] = ((state / 0x7fffffff) * 2 - 1) * 6000;
  }
  return samples;
}

/** 20 ms frames of `samples` in `format`. */
function framesOf(samples: Int16Array, format: AudioFormat = MULAW_8K): Uint8Array[] {
  const per = (format.sampleRate * FRAME_MS) / 1000;
  const out: Uint8Array[] = [];
  for (let i = 0; i + per <= samples.length; i += per)
    out.push(encodeAudio(format, samples.subarray(i, i + per)));
  return out;
}

const silentFrames = (ms: number, format: AudioFormat = MULAW_8K) =>
  Array.from({ length: ms / FRAME_MS }, () => silence(format, FRAME_MS));

/** Feeds frames to a watch on a 20 ms clock from `start`; returns the actions and the next time. */
function play(watch: VoicemailWatch, frames: Uint8Array[], start: number) {
  const actions: WatchAction[] = [];
  let at = start;
  for (const frame of frames) {
    actions.push(...watch.audio(frame, at));
    at += FRAME_MS;
  }
  return { actions, at };
}

const watch = (options: Partial<{ maxWaitMs: number; waitForGreeting: boolean; format: AudioFormat }> = {}) =>
  new VoicemailWatch({ format: MULAW_8K, maxWaitMs: 20_000, waitForGreeting: true, ...options });

describe('the words of a greeting', () => {
  it.each([
    "Hi, you've reached Jane. Please leave a message after the tone.",
    'I am not available right now',
    'The person you are calling is not available.',
    'Welcome to the voicemail of 555 0100',
    'This mailbox is full',
    'Record your message at the tone. When you are finished, hang up.',
    "Sorry I can't take your call, leave me a short message",
    'Leave your message after the beep',
  ])('a machine says: %s', (text) => {
    expect(soundsLikeMachine(text)).toBe(true);
  });

  it.each([
    'Hello?',
    'Yes, speaking.',
    'Who is this?',
    'I would like to book an appointment for tomorrow',
    "He's busy, can I take a message?",
  ])('a person says: %s', (text) => {
    expect(soundsLikeMachine(text)).toBe(false);
  });
});

describe('the beep detector', () => {
  it('finds a steady tone of 800–2000 Hz held for 150 ms, at 8 and 16 kHz', () => {
    for (const [hz, format] of [
      [1000, MULAW_8K],
      [1400, MULAW_8K],
      [850, LINEAR16_16K],
      [1975, LINEAR16_16K],
    ] as const) {
      const detector = new BeepDetector(format.sampleRate);
      const frames = framesOf(tones(400, [hz], 8000, format.sampleRate), format);
      const found = [...frames, ...silentFrames(100, format)].map((frame) =>
        detector.push(decodeAudio(format, frame), rms(decodeAudio(format, frame))),
      );
      // Once, at the eighth frame (160 ms): not before 150 ms, not again for the same beep; and
      // its end with the first frame after it.
      expect(found.indexOf('beep'), `${hz} Hz`).toBe(7);
      expect(found.filter(Boolean)).toEqual(['beep', 'beep_end']);
      expect(found.indexOf('beep_end')).toBe(frames.length);
      expect(dominantTone(decodeAudio(format, frames[0]!), format.sampleRate).share).toBeGreaterThan(0.6);
    }
  });

  it('does not take a short blip, a low hum, a key press (two tones) or recorded speech for a beep', () => {
    const heard = (samples: Int16Array) => {
      const detector = new BeepDetector(8000);
      return framesOf(samples).some((frame) => {
        const decoded = decodeAudio(MULAW_8K, frame);
        return detector.push(decoded, rms(decoded)) !== undefined;
      });
    };
    expect(heard(tones(100, [1000]))).toBe(false);
    expect(heard(tones(600, [300]))).toBe(false);
    // DTMF "5": 770 Hz + 1336 Hz, and "#": 941 + 1477.
    expect(heard(tones(600, [770, 1336], 5000))).toBe(false);
    expect(heard(tones(600, [941, 1477], 5000))).toBe(false);
    for (const name of ['book-appointment', 'three-oclock', 'goodbye', 'uh-huh'])
      expect(heard(decodeAudio(MULAW_8K, voiceFixture(name))), name).toBe(false);
  });
});

describe('the watch', () => {
  it('a greeting that starts at once and runs 5 s without a pause is a machine', () => {
    const w = watch();
    const { actions } = play(w, framesOf(noise(6000)), 0);
    expect(actions).toEqual([{ type: 'machine', source: 'audio', at: 5000 }]);
    expect(w.machine).toBe(true);
  });

  it('a person says "hello?" and waits: no machine, nor when long speech starts only later', () => {
    const w = watch();
    let { actions, at } = play(w, [...framesOf(noise(600)), ...silentFrames(3000)], 0);
    ({ actions, at } = play(w, framesOf(noise(8000)), at));
    expect(actions).toEqual([]);
    expect(w.machine).toBe(false);
    // Pauses of a breath (shorter than 700 ms) do not break a machine's greeting.
    const m = watch();
    const talk = [...framesOf(noise(2000)), ...silentFrames(400), ...framesOf(noise(3000))];
    expect(play(m, talk, 0).actions).toEqual([{ type: 'machine', source: 'audio', at: 5000 }]);
  });

  it('words find a machine; its greeting then ends with the beep', () => {
    const w = watch();
    let { at } = play(w, framesOf(noise(2000)), 0);
    expect(w.words('Please leave a message after the tone', at)).toEqual([
      { type: 'machine', source: 'words', at },
    ]);
    const detectedAt = at;
    ({ at } = play(w, silentFrames(600), at));
    const { actions } = play(w, [...framesOf(tones(500, [1000])), ...silentFrames(100)], at);
    // Once the beep is over: the frame after its last.
    expect(actions).toEqual([
      { type: 'greeting_over', source: 'words', end: 'beep', waitedMs: at + 500 - detectedAt },
    ]);
    expect(w.watching).toBe(false);
  });

  it('without a beep, the greeting ends after 1.5 s of silence following its last sound', () => {
    const w = watch();
    const { at } = play(w, framesOf(noise(2000)), 0);
    expect(w.words('The number you have dialed is not available', at)).toHaveLength(1);
    const lastSound = at - FRAME_MS;
    const { actions } = play(w, silentFrames(2000), at);
    expect(actions).toEqual([
      { type: 'greeting_over', source: 'words', end: 'silence', waitedMs: lastSound + SILENCE_END_MS - at },
    ]);
  });

  it('a beep alone is a machine whose greeting is over', () => {
    const w = watch();
    const { at } = play(w, [...framesOf(noise(1000)), ...silentFrames(500)], 0);
    const { actions } = play(w, [...framesOf(tones(300, [1200])), ...silentFrames(100)], at);
    expect(actions).toEqual([
      { type: 'machine', source: 'beep', at: at + 140 },
      { type: 'greeting_over', source: 'beep', end: 'beep', waitedMs: 160 },
    ]);
  });

  it("the carrier's verdicts win: a person stops our rules; a machine, with or without its greeting's end", () => {
    const person = watch();
    expect(person.carrier({ answeredBy: 'human' }, 100)).toEqual([]);
    expect(person.words('please leave a message', 200)).toEqual([]);
    expect(play(person, framesOf(tones(300, [1000])), 300).actions).toEqual([]);
    expect(person.watching).toBe(false);

    const early = watch();
    expect(early.carrier({ answeredBy: 'machine' }, 50)).toEqual([
      { type: 'machine', source: 'carrier', at: 50 },
    ]);
    expect(early.carrier({ answeredBy: 'machine', greetingEnded: 'beep' }, 4050)).toEqual([
      { type: 'greeting_over', source: 'carrier', end: 'carrier', waitedMs: 4000 },
    ]);

    // Told while the beep sounds (carrier_c reports its start): the greeting is over when the beep is.
    const during = watch();
    during.carrier({ answeredBy: 'machine' }, 0);
    let { at } = play(during, [...framesOf(noise(1000)), ...framesOf(tones(200, [1000]))], 0);
    expect(during.carrier({ answeredBy: 'machine', greetingEnded: 'beep' }, at)).toEqual([]);
    ({ at } = play(during, framesOf(tones(200, [1000])), at));
    expect(play(during, silentFrames(40), at).actions).toEqual([
      { type: 'greeting_over', source: 'carrier', end: 'carrier', waitedMs: 1400 },
    ]);

    const late = watch();
    late.words('hello this is Sam', 1000);
    expect(late.carrier({ answeredBy: 'machine', greetingEnded: 'other' }, 3000)).toEqual([
      { type: 'machine', source: 'carrier', at: 3000 },
      { type: 'greeting_over', source: 'carrier', end: 'carrier', waitedMs: 0 },
    ]);
  });

  it('waits at most max_wait_seconds for a greeting that never ends', () => {
    const w = watch({ maxWaitMs: 3000 });
    w.carrier({ answeredBy: 'machine' }, 0);
    const { actions } = play(w, framesOf(noise(5000)), 0);
    expect(actions).toEqual([{ type: 'greeting_over', source: 'carrier', end: 'timeout', waitedMs: 3000 }]);
  });

  it('hang_up does not wait for the greeting', () => {
    const w = watch({ waitForGreeting: false });
    expect(w.words('you have reached my voicemail', 800)).toEqual([
      { type: 'machine', source: 'words', at: 800 },
      { type: 'greeting_over', source: 'words', waitedMs: 0 },
    ]);
  });

  it('our own rules listen only in the first 30 seconds', () => {
    const w = watch();
    play(w, [...framesOf(noise(500)), ...silentFrames(DETECTION_WINDOW_MS)], 0);
    expect(w.words('please leave a message', DETECTION_WINDOW_MS + 1000)).toEqual([]);
    expect(w.watching).toBe(false);
  });
});

describe('the flow', () => {
  it('stops the assistant, records the machine, and leaves the message only once that is written', async () => {
    const steps: string[] = [];
    let written!: () => void;
    const host: VoicemailHost = {
      clock: () => 1000,
      takeOver: () => steps.push('take over'),
      leaveMessage: (text) => steps.push(`say ${text}`),
      hangUp: () => steps.push('hang up'),
      machineAnswered: (source) => {
        steps.push(`machine ${source}`);
        return new Promise<void>((resolve) => {
          written = resolve;
        });
      },
      event: (type, data) => steps.push(`${type} ${JSON.stringify(data)}`),
    };
    const flow = new Voicemail(
      { action: 'leave_message', message: 'Call us back', maxWaitMs: 20_000 },
      MULAW_8K,
      host,
    );
    flow.carrier({ answeredBy: 'machine', greetingEnded: 'beep' });
    expect(flow.machine).toBe(true);
    await Promise.resolve();
    expect(steps).toEqual([
      'take over',
      'machine carrier',
      'call.voicemail {"source":"carrier","action":"leave_message","waited_ms":0,"greeting_end":"carrier"}',
    ]);
    written();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(steps.at(-1)).toBe('say Call us back');
  });
});

describe('the settings of a call', () => {
  const outbound = { direction: 'outbound' as const };
  const vars = { name: 'Ada' };
  it('defaults: detection on, leave the end_call_message, wait up to 20 s', () => {
    expect(voicemailSpec({ end_call_message: 'Bye {{ name }}' }, outbound, vars)).toEqual({
      action: 'leave_message',
      message: 'Bye Ada',
      maxWaitMs: 20_000,
    });
  });

  it('its own message, rendered; hang up without any message, or when asked to', () => {
    const settings = (voicemail: Partial<NonNullable<AssistantSettings['voicemail_settings']>>) =>
      ({
        end_call_message: 'Goodbye',
        voicemail_settings: {
          detection: true,
          action: 'leave_message',
          message: null,
          max_wait_seconds: 20,
          ...voicemail,
        },
      }) as AssistantSettings;
    expect(
      voicemailSpec(settings({ message: 'Hi {{ name }}, call us', max_wait_seconds: 5 }), outbound, vars),
    ).toEqual({
      action: 'leave_message',
      message: 'Hi Ada, call us',
      maxWaitMs: 5000,
    });
    expect(voicemailSpec({}, outbound, vars)).toMatchObject({ action: 'hang_up', message: null });
    expect(voicemailSpec(settings({ action: 'hang_up', message: 'x' }), outbound, vars)).toMatchObject({
      action: 'hang_up',
      message: null,
    });
  });

  it('none on inbound calls or with detection off', () => {
    expect(voicemailSpec({}, { direction: 'inbound' }, vars)).toBeUndefined();
    expect(
      voicemailSpec(
        {
          voicemail_settings: {
            detection: false,
            action: 'leave_message',
            message: null,
            max_wait_seconds: 20,
          },
        },
        outbound,
        vars,
      ),
    ).toBeUndefined();
  });
});

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / samples.length);
}
