/**
 * A recorded call end to end, through the simulated phone: the platform places a call, the caller
 * hears the greeting, asks for an appointment, hears the answer and hangs up. The recording is then
 * fetched by its owner and through the signed URL of the end-of-call webhook: it is as long as the
 * stream (within 80 ms: the jitter allowance and a frame), the caller is on the left channel where the caller spoke, the
 * assistant on the right where the phone heard it, and the two links give the same bytes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from './support/harness.js';
import { askToBook, BOOK, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

let rig: VoiceRig;
let receiver: WebhookReceiver;

beforeAll(async () => {
  [rig, receiver] = await Promise.all([startVoiceRig(), startWebhookReceiver()]);
}, 60_000);
afterAll(async () => {
  await rig.close();
  await receiver.close();
});

/** Root-mean-square level of each 20 ms window of one channel of a 16-bit stereo WAV at `rate`. */
function levels(wav: Buffer, channel: 0 | 1, rate: number): number[] {
  const frames = (wav.length - 44) / 4;
  const window = rate / 50;
  const out: number[] = [];
  for (let start = 0; start + window <= frames; start += window) {
    let sum = 0;
    for (let i = start; i < start + window; i++) {
      const sample = wav.readInt16LE(44 + i * 4 + channel * 2);
      sum += sample * sample;
    }
    out.push(Math.sqrt(sum / window));
  }
  return out;
}

/** The share of the windows between `fromMs` and `toMs` louder than `level`. */
function loudShare(windows: number[], fromMs: number, toMs: number, level = 300): number {
  const part = windows.slice(Math.max(0, Math.ceil(fromMs / 20)), Math.floor(toMs / 20));
  return part.length === 0 ? 0 : part.filter((rms) => rms > level).length / part.length;
}

describe('a recorded call', () => {
  it('is as long as the stream, both sides in their channel, and reachable by the webhook’s signed URL', async () => {
    const outcome = await rig.call({
      heard: [BOOK],
      assistant: {
        webhook_url: receiver.url,
        llm_settings: { welcome_message: 'Hello, this is the clinic. How can I help?' },
      },
      script: async (phone) => {
        await askToBook(phone);
        await phone.hangUp();
      },
    });
    expect(outcome.status).toBe('completed');
    const { org, callId, phone } = outcome;
    const headers = org.admin.headers;
    const view = await waitFor(async () => {
      const response = await rig.t.app.inject({ method: 'GET', url: `/api/v1/calls/${callId}`, headers });
      const recording = response.json().recording;
      return recording?.status === 'completed' ? recording : undefined;
    }, 20_000);

    const response = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${callId}/recording`,
      headers,
    });
    expect(response.statusCode, response.body).toBe(200);
    const wav = response.rawPayload;
    expect(wav.length).toBe(view.bytes);
    const rate = wav.readUInt32LE(24);
    expect(rate).toBe(8000);
    expect(wav.readUInt16LE(22)).toBe(2);

    // As long as the stream: the caller's frames are the stream's clock. The recorder places frames
    // by when they came, and a gap shorter than its 60 ms jitter allowance is not silence, so on a
    // busy machine the length may be off by that much and a frame.
    const streamMs = phone.framesSent * 20;
    expect(Math.abs(view.duration_ms - streamMs)).toBeLessThanOrEqual(80);

    const caller = levels(wav, 0, rate);
    const assistant = levels(wav, 1, rate);
    // The caller's words on the left, where the phone said them (the recording starts as the stream does).
    const [utterance] = phone.utterances;
    const said = [utterance!.speechStartMs! + 100, utterance!.speechEndMs! - 100] as const;
    expect(loudShare(caller, ...said)).toBeGreaterThan(0.5);
    // The assistant's greeting and answer on the right, where the phone heard them; the caller was silent.
    const [greeting, answer] = phone.heardSegments;
    for (const segment of [greeting!, answer!]) {
      const heard = [segment.startMs + 100, segment.endMs - 100] as const;
      expect(loudShare(assistant, ...heard)).toBeGreaterThan(0.5);
      expect(loudShare(caller, ...heard)).toBeLessThan(0.1);
    }

    // The end-of-call webhook carries a signed URL that needs no credentials and gives the same file.
    const completed = await waitFor(() =>
      receiver.received
        .map((delivery) => JSON.parse(delivery.body))
        .find((event) => event.type === 'call.completed' && event.data.call_id === callId),
    );
    const url: string = completed.data.recording_url;
    expect(url).toMatch(
      new RegExp(`^${rig.t.baseUrl}/api/v1/recordings/${callId}\\?expires=\\d+&signature=`),
    );
    const fetched = await fetch(url);
    expect(fetched.status).toBe(200);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(wav)).toBe(true);
  }, 60_000);
});
