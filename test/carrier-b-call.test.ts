/**
 * carrier_b calls talk, end to end, through the voice rig with carrier_b's entry
 * (support/voice-rig-carrier-b.ts): a listening platform, the carrier_b simulator — whose calls are
 * answered by a simulated phone speaking carrier_b's media stream, sending every third frame after
 * the next — stt_a, the language model and tts_a simulators. An outbound call: the dial's stream
 * connects with its stream_auth_token, the phone hears the greeting, asks, hears the answer, and is
 * heard through the reordered frames. An inbound call: the platform answers call.initiated with the
 * answer command and its stream, and the caller hears the greeting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CarrierBSimulator } from '../src/sim/carrier-b.js';
import { afterGreeting, askToBook, BOOK, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import { carrierB } from './support/voice-rig-carrier-b.js';

let rig: VoiceRig;
let sim: CarrierBSimulator;

beforeAll(async () => {
  const carrier = carrierB();
  sim = carrier.sim;
  rig = await startVoiceRig({ carriers: [carrier] });
}, 60_000);
afterAll(async () => {
  await rig.close();
});

const GREETING = { llm_settings: { welcome_message: 'Hello, this is the clinic.' } };

describe('a carrier_b call', () => {
  it('placed by the platform: the phone hears the greeting, asks, and is heard through out-of-order frames', async () => {
    const outcome = await rig.call({
      vendors: { carrier: 'carrier_b' },
      heard: [BOOK],
      assistant: GREETING,
      script: askToBook,
    });
    expect(outcome.status).toBe('completed');
    expect(outcome.phoneCall.endedBy).toBe('script');
    expect(outcome.phoneCall.scriptError).toBeUndefined();
    // The phone connected to the URL the dial gave, which has no query: the stream proved its call by
    // the dial's stream_auth_token, which the phone sent as the upgrade's header.
    const dial = sim.calls.get(outcome.phoneCall.callSid)!.request;
    expect(outcome.phoneCall.streamUrl).toBe(dial.stream_url);
    expect(new URL(outcome.phoneCall.streamUrl).search).toBe('');
    expect(dial).toMatchObject({ stream_bidirectional_mode: 'rtp', stream_auth_token: expect.any(String) });
    // Every message of the platform was one of carrier_b's RTP frames; greeting and answer were heard.
    expect(outcome.phone.errors).toEqual([]);
    expect(outcome.phone.heardSegments.length).toBeGreaterThanOrEqual(2);
    expect(outcome.transcript.slice(0, 2)).toMatchObject([
      { speaker: 'assistant', text: 'Hello, this is the clinic.' },
      { speaker: 'user', text: BOOK },
    ]);
    expect(outcome.transcript.length).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it('ringing our number: the platform answers with its stream and the caller hears the greeting', async () => {
    const outcome = await rig.call({
      vendors: { carrier: 'carrier_b' },
      inbound: true,
      heard: [],
      assistant: GREETING,
      script: afterGreeting,
    });
    const answer = sim.requests.find(
      (request) =>
        request.path === `/v2/calls/${encodeURIComponent(outcome.phoneCall.callSid)}/actions/answer`,
    );
    expect(answer?.body).toMatchObject({
      stream_url: outcome.phoneCall.streamUrl,
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
      stream_auth_token: expect.any(String),
    });
    expect(outcome.status).toBe('completed');
    expect(outcome.phoneCall.endedBy).toBe('script');
    expect(outcome.phone.errors).toEqual([]);
    expect(outcome.phone.heardSegments.length).toBeGreaterThanOrEqual(1);
    expect(outcome.transcript[0]).toMatchObject({ speaker: 'assistant', text: 'Hello, this is the clinic.' });
    // All of the call's events (call.initiated, call.answered, call.hangup) came to the voice webhook,
    // the application's URL: the first was answered by command, and each was taken (204).
    await sim.settle();
    const voice = sim.callbacks.filter(
      (callback) => new URL(callback.url).pathname === '/webhooks/carrier_b/voice',
    );
    expect(voice.map((callback) => callback.status)).toEqual([204, 204, 204]);
  }, 60_000);
});
