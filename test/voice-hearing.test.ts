/**
 * The hearing (voice/hearing.ts) when its speech-to-text stream breaks mid-call, through the stt_a
 * adapter against its simulator: the caller is in the middle of a sentence when the first key's
 * connection is closed by the vendor (1011); the next key's stream is given the sentence's audio
 * from its start — plus what came while it connected — and transcribes the turn as a whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderError } from '../src/providers/errors.js';
import { SttAAdapter } from '../src/providers/stt/stt-a.js';
import type { SttEvent } from '../src/providers/stt/types.js';
import { SttASimulator } from '../src/sim/stt-a.js';
import { bytesFor, MULAW_8K, MULAW_SILENCE, pcm16ToUlaw } from '../src/voice/audio.js';
import { Hearing } from '../src/voice/hearing.js';
import { waitFor } from './support/harness.js';

const stt = new SttASimulator();
let sttUrl = '';
beforeAll(async () => {
  sttUrl = await stt.start();
  for (const key of ['first-stt', 'second-stt']) stt.addKey(key);
  stt.setScript('first-stt', ['never finished']);
  stt.setScript('second-stt', ['I would like to book a visit']);
});
afterAll(() => stt.stop());

/** 20 ms of a loud tone (speech to the simulator's recognizer), or of silence. */
function frame(speech: boolean, index: number): Uint8Array {
  if (!speech) return new Uint8Array(bytesFor(MULAW_8K, 20)).fill(MULAW_SILENCE);
  const samples = new Int16Array(160);
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(8000 * Math.sin((index * 160 + i) * 0.2));
  return pcm16ToUlaw(samples);
}

describe('a speech-to-text stream that breaks mid-call', () => {
  it('reopens with the next key and hears the turn in progress from its start', async () => {
    const events: SttEvent[] = [];
    const switches: Array<{ next: string | undefined; midCall: boolean; error: ProviderError }> = [];
    const hearing = new Hearing(
      {
        format: MULAW_8K,
        plan: {
          llm: [],
          tts: [],
          skipped: [],
          stt: ['first-stt', 'second-stt'].map((apiKey) => ({
            provider: 'stt_a',
            apiKey,
            baseUrl: sttUrl,
            label: apiKey,
          })),
        },
        stt: {
          adapter: new SttAAdapter(),
          options: {
            model: 'nova-3',
            language: 'en-US',
            endpointingMs: 300,
            utteranceEndMs: 0,
            punctuate: true,
            smartFormat: true,
            keywords: [],
            keyterms: [],
          },
        },
      },
      {
        event: (event) => events.push(event),
        fallback: (_from, error, next, midCall) =>
          switches.push({ next: next?.apiKey ?? undefined, midCall, error }),
        unavailable: () => undefined,
      },
    );
    hearing.start();
    const first = await waitFor(() => stt.connectionsOf('first-stt')[0]);
    let sent = 0;
    const send = (speech: boolean, frames: number) => {
      for (let i = 0; i < frames; i++) {
        const audio = frame(speech, sent / 160);
        sent += audio.length;
        hearing.send(audio);
      }
    };
    // A quiet start, then 0.6 s into a sentence the vendor drops the stream.
    send(false, 10);
    send(true, 30);
    await waitFor(() => first.bytesReceived === sent || undefined);
    stt.disconnect(1011, 'NET-0001');
    // The caller goes on speaking while the next key connects, then falls silent.
    send(true, 30);
    const second = await waitFor(() => stt.connectionsOf('second-stt')[0]);
    send(false, 40);
    try {
      const final = await waitFor(() =>
        events.find((event) => event.type === 'transcript' && event.isFinal && event.speechFinal),
      );
      expect(final).toMatchObject({ text: 'I would like to book a visit' });
      expect(switches).toEqual([expect.objectContaining({ next: 'second-stt', midCall: true })]);
      // The new stream got everything the caller said since the call began: no final came before the
      // break, so the whole sentence is the turn in progress — its start included.
      expect(second.bytesReceived).toBe(sent);
      if (final?.type === 'transcript') expect(final.startSeconds).toBeLessThan(0.4);
    } finally {
      hearing.close();
    }
  });
});
