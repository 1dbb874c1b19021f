/**
 * carrier_b calls talk, end to end: a listening platform, the carrier_b simulator (whose calls are
 * answered by a simulated phone speaking carrier_b's media stream — with frames sent out of order on
 * purpose), stt_a, the language model and tts_a simulators. An outbound call: the dial's stream
 * connects with its stream_auth_token, the phone hears the greeting, asks, and hears the answer; the
 * platform hears the caller through the reordered frames. An inbound call: the platform answers
 * call.initiated with the answer command and its stream, and the caller hears the greeting. A small
 * rig of its own (test/support/voice-rig.ts is carrier_a's).
 */
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calls, callTranscriptSegments } from '../src/db/schema/index.js';
import { CarrierBSimulator } from '../src/sim/carrier-b.js';
import { LlmSimulator } from '../src/sim/llm.js';
import { SttASimulator } from '../src/sim/stt-a.js';
import { TtsASimulator } from '../src/sim/tts-a.js';
import { expectStatus, Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import { afterGreeting, askToBook, BOOK } from './support/voice-rig.js';

const carrier = new CarrierBSimulator();
const stt = new SttASimulator();
const llm = new LlmSimulator();
const tts = new TtsASimulator();
let t: TestPlatform;
let f: Factories;
let serial = 0;

beforeAll(async () => {
  const [carrierUrl, sttUrl, llmUrl, ttsUrl] = await Promise.all([
    carrier.start(),
    stt.start(),
    llm.start(),
    tts.start(),
  ]);
  t = await startTestPlatform(
    { CARRIER_B_BASE_URL: carrierUrl, STT_BASE_URL: sttUrl, LLM_A_BASE_URL: llmUrl, TTS_A_BASE_URL: ttsUrl },
    { listen: true },
  );
  f = new Factories(t);
}, 60_000);
afterAll(async () => {
  await carrier.stop();
  await Promise.all([stt.stop(), llm.stop(), tts.stop()]);
  await t.close();
});

const nextNumber = () => `+1415555${String(1000 + ++serial).padStart(4, '0')}`;

/** An organization with carrier_b and vendor keys, an assistant that greets, and a routed number. */
async function organization(heard: string[]): Promise<{ admin: TestUser; apiKey: string; number: string }> {
  serial += 1;
  const admin = await f.user();
  const account = { api_key: `KEY-B-${serial}`, connection_id: `app-b-${serial}` };
  carrier.addAccount(account);
  const keys = { llm_a: `llm-b-${serial}`, stt_a: `stt-b-${serial}`, tts_a: `tts-b-${serial}` };
  llm.addKey(keys.llm_a);
  stt.addKey(keys.stt_a);
  tts.addKey(keys.tts_a);
  stt.setScript(keys.stt_a, heard);
  const put = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: {
      carrier_b: { ...account, public_key: carrier.publicKey },
      api_keys: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, { api_key: v }])),
    },
  });
  expectStatus(put, 200);
  const assistant = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: admin.headers,
    payload: { name: 'Receptionist', llm_settings: { welcome_message: 'Hello, this is the clinic.' } },
  });
  expectStatus(assistant, 201);
  const number = nextNumber();
  expectStatus(
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: admin.headers,
      payload: { phone_number: number, provider: 'carrier_b', assistant_id: assistant.json().id },
    }),
    201,
  );
  return { admin, apiKey: account.api_key, number };
}

async function transcript(callId: number): Promise<Array<{ speaker: string; text: string }>> {
  return t.database.db
    .select({ speaker: callTranscriptSegments.speaker, text: callTranscriptSegments.text })
    .from(callTranscriptSegments)
    .where(eq(callTranscriptSegments.callId, callId))
    .orderBy(asc(callTranscriptSegments.position));
}

describe('a carrier_b call', () => {
  it('placed by the platform: the phone hears the greeting, asks, and is heard through out-of-order frames', async () => {
    const org = await organization([BOOK]);
    const customer = nextNumber();
    // Every third frame goes after the one that follows it.
    carrier.setPhone(customer, askToBook, { swapEvery: 3 });
    const initiated = await t.app.inject({
      method: 'POST',
      url: '/calls/initiate',
      headers: org.admin.headers,
      payload: { from_phone_number: org.number, to_phone_number: customer },
    });
    expectStatus(initiated, 200);
    const placed = initiated.json() as { call_id: number; call_sid: string };
    const phoneCall = await waitFor(() => carrier.phoneCalls.get(placed.call_sid), 20_000);
    await phoneCall.done;

    expect(phoneCall.endedBy).toBe('script');
    expect(phoneCall.scriptError).toBeUndefined();
    // The phone connected to the URL the dial gave, which has no query: the stream proved its call by
    // the dial's stream_auth_token, which the phone sent as the upgrade's header.
    const dial = carrier.calls.get(placed.call_sid)!.request;
    expect(phoneCall.streamUrl).toBe(dial.stream_url);
    expect(new URL(phoneCall.streamUrl).search).toBe('');
    expect(typeof dial.stream_auth_token).toBe('string');
    // Greeting and answer were heard; every message of the platform was carrier_b's RTP frames.
    const { phone } = phoneCall;
    expect(phone.errors).toEqual([]);
    expect(phone.heardSegments.length).toBeGreaterThanOrEqual(2);
    expect(phone.marks.length).toBeGreaterThan(0);

    const said = await waitFor(async () => {
      const rows = await transcript(placed.call_id);
      return rows.length >= 3 ? rows : undefined;
    }, 20_000);
    expect(said.slice(0, 2)).toEqual([
      { speaker: 'assistant', text: 'Hello, this is the clinic.' },
      { speaker: 'user', text: BOOK },
    ]);
    // The call ends when the phone hangs up (call.hangup), and is recorded completed.
    await waitFor(async () => {
      const [row] = await t.database.db.select().from(calls).where(eq(calls.id, placed.call_id));
      return row?.status === 'completed' ? row : undefined;
    }, 20_000);
  }, 60_000);

  it('ringing our number: the platform answers with its stream and the caller hears the greeting', async () => {
    const org = await organization([]);
    const rang = await carrier.placeInboundCall({
      apiKey: org.apiKey,
      webhookUrl: `${t.baseUrl}/webhooks/carrier_b/voice`,
      from: nextNumber(),
      to: org.number,
      phone: afterGreeting,
      phoneSettings: { swapEvery: 2 },
    });
    expect(rang.status).toBe(204);
    const answer = carrier.requests.find((request) => request.path.endsWith('/actions/answer'));
    expect(answer?.body).toMatchObject({
      stream_track: 'inbound_track',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
      stream_auth_token: expect.any(String),
    });
    const phoneCall = rang.phoneCall!;
    expect(phoneCall).toBeDefined();
    await phoneCall.done;
    expect(phoneCall.endedBy).toBe('script');
    expect(phoneCall.phone.errors).toEqual([]);
    expect(phoneCall.phone.heardSegments.length).toBeGreaterThanOrEqual(1);

    const [row] = await t.database.db.select().from(calls).where(eq(calls.callSid, rang.callControlId));
    expect(row).toMatchObject({ direction: 'inbound', provider: 'carrier_b' });
    const said = await waitFor(async () => {
      const rows = await transcript(row!.id);
      return rows.length >= 1 ? rows : undefined;
    }, 20_000);
    expect(said[0]).toEqual({ speaker: 'assistant', text: 'Hello, this is the clinic.' });
    await waitFor(async () => {
      const [now] = await t.database.db.select().from(calls).where(eq(calls.id, row!.id));
      return now?.status === 'completed' ? now : undefined;
    }, 20_000);
  }, 60_000);
});
