/**
 * Live calls through carrier_c end to end: the platform places (or takes) a call through the carrier_c
 * simulator, whose simulated phone connects to the websocket the NCCO names and speaks recorded
 * utterances in real time over carrier_c's wire (L16 16 kHz, converted from and to the phone's μ-law),
 * and the platform hears through the stt_a simulator, thinks with the language model simulator and
 * speaks through the tts_a simulator — all in 16-bit PCM at 16 kHz, nothing transcoded on the way.
 *
 * A tiny rig of its own (voice-rig.ts is carrier_a's): one listening platform, the four simulators,
 * and a carrier_c organization with keys per call.
 */
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callEvents, calls } from '../src/db/schema/index.js';
import type { PhoneCall, PhoneScript } from '../src/sim/carrier-a-phone.js';
import { CarrierCSimulator } from '../src/sim/carrier-c.js';
import { LlmSimulator } from '../src/sim/llm.js';
import type { LlmReply } from '../src/sim/llm-replies.js';
import { SttASimulator } from '../src/sim/stt-a.js';
import { TtsASimulator } from '../src/sim/tts-a.js';
import { type CarrierCOrganization, carrierCOrganization } from './support/carrier-c-org.js';
import { expectStatus, Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import { afterGreeting, BOOK, hearAnswer, LONG_ANSWER, sleep } from './support/voice-rig.js';

const carrier = new CarrierCSimulator();
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
    { CARRIER_C_BASE_URL: carrierUrl, STT_BASE_URL: sttUrl, LLM_A_BASE_URL: llmUrl, TTS_A_BASE_URL: ttsUrl },
    { listen: true },
  );
  f = new Factories(t);
}, 60_000);
afterAll(async () => {
  await carrier.stop();
  await Promise.all([stt.stop(), llm.stop(), tts.stop()]);
  await t.close();
});

/** A carrier_c organization whose vendor keys the simulators accept, hearing `heard`, answering `replies`. */
async function organization(heard: string[], replies: LlmReply[] = []): Promise<CarrierCOrganization> {
  serial += 1;
  const org = await carrierCOrganization(t, f, carrier);
  const keys = { llm_a: `llm-c-${serial}`, stt_a: `stt-c-${serial}`, tts_a: `tts-c-${serial}` };
  llm.addKey(keys.llm_a);
  stt.addKey(keys.stt_a);
  tts.addKey(keys.tts_a);
  stt.setScript(keys.stt_a, heard);
  if (replies.length > 0) llm.setScript(keys.llm_a, replies);
  const put = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: org.admin.headers,
    payload: { api_keys: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, { api_key: v }])) },
  });
  expectStatus(put, 200);
  return org;
}

/** The call's record, turns and transcript once it is final and its turns stop changing. */
async function recordsOf(org: CarrierCOrganization, callId: number, turnsAtLeast: number) {
  const read = async (path: string) => {
    const response = await t.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${callId}${path}`,
      headers: org.admin.headers,
    });
    expectStatus(response, 200);
    return response.json();
  };
  let last = '';
  let turns: Array<Record<string, unknown>> = [];
  await waitFor(async () => {
    const call = (await read('')) as { status: string };
    turns = await read('/turns');
    const now = JSON.stringify(turns);
    const stable = now === last && call.status === 'completed' && turns.length >= turnsAtLeast;
    last = now;
    return stable;
  }, 20_000);
  const events = await t.database.db
    .select({ type: callEvents.type, data: callEvents.data })
    .from(callEvents)
    .where(eq(callEvents.callId, callId))
    .orderBy(asc(callEvents.id));
  return {
    call: (await read('')) as { status: string; duration: number | null; call_sid: string },
    turns,
    transcript: (await read('/transcript')) as Array<{ speaker: string; text: string }>,
    events,
  };
}

describe('a live carrier_c call', () => {
  it('greets, hears a turn, is interrupted and answers again, in L16 16 kHz end to end', async () => {
    const org = await organization(
      [BOOK, 'Wait, stop, I have a different question'],
      [{ text: LONG_ANSWER }, { text: 'Sure, what is your question?' }],
    );
    const sttBefore = stt.connections.length;
    const ttsBefore = tts.connections.length;
    const customer = `+1415444${String(1000 + serial).padStart(4, '0')}`;
    const script: PhoneScript = async (phone) => {
      await afterGreeting(phone);
      const asked = await phone.say('book-appointment');
      await phone.waitForReplyTo(asked);
      await sleep(1500);
      await phone.say('interrupt');
      await hearAnswer(phone);
    };
    carrier.setPhone(customer, script);
    const initiated = await t.app.inject({
      method: 'POST',
      url: '/calls/initiate',
      headers: org.admin.headers,
      payload: { from_phone_number: org.number, to_phone_number: customer },
    });
    expectStatus(initiated, 200);
    const placed = initiated.json() as { call_id: number; call_sid: string };
    const phoneCall: PhoneCall = await waitFor(() => carrier.phoneCalls.get(placed.call_sid), 20_000);
    await phoneCall.done;
    const { call, turns, transcript, events } = await recordsOf(org, placed.call_id, 3);

    // The phone connected where the NCCO said, the token and call uuid in the headers, not the URL.
    expect(phoneCall.endedBy).toBe('script');
    expect(phoneCall.phone.errors).toEqual([]);
    expect(new URL(phoneCall.streamUrl).search).toBe('');
    expect(phoneCall.parameters).toEqual({ token: expect.any(String), call_uuid: placed.call_sid });

    const [greeting, first, second] = turns;
    expect(greeting).toMatchObject({ kind: 'greeting', interrupted: false });
    expect(first).toMatchObject({ kind: 'reply', user_text: BOOK, interrupted: true });
    expect(LONG_ANSWER.startsWith(String(first!.assistant_text))).toBe(true);
    expect(String(first!.assistant_text).length).toBeLessThan(LONG_ANSWER.length / 2);
    expect(second).toMatchObject({
      kind: 'reply',
      user_text: 'Wait, stop, I have a different question',
      assistant_text: 'Sure, what is your question?',
      interrupted: false,
    });
    expect(transcript.map((segment) => segment.speaker)).toEqual([
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);

    // The phone heard the greeting, the cut answer and the next one; the carrier was told to clear
    // (the pause had already let what it held play out, so a clear here rarely drops a notify: the
    // media tests drop some), and the next answer's notifies came back.
    const phone = phoneCall.phone;
    expect(phone.heardSegments.length).toBeGreaterThanOrEqual(3);
    expect(phone.clears.length).toBeGreaterThanOrEqual(1);
    expect(phone.marks.filter((mark) => mark.cleared && mark.echoedAtMs !== undefined)).toEqual([]);
    const clearedAt = phone.clears[0]!.atMs;
    const echoedAfter = phone.marks.filter((mark) => (mark.echoedAtMs ?? 0) > clearedAt);
    expect(echoedAfter.length).toBeGreaterThanOrEqual(1);
    expect(phone.received.filter((message) => message.event === 'media').every((m) => m.bytes! <= 320)).toBe(
      true,
    );

    // Nothing was transcoded: the speech-to-text heard L16 16 kHz, the voice spoke it — the greeting
    // too, synthesized at answer time (prepared with μ-law, it would show here as ulaw_8000).
    const sttQueries = stt.connections.slice(sttBefore).map((connection) => connection.query);
    expect(sttQueries.length).toBeGreaterThanOrEqual(1);
    for (const query of sttQueries) {
      expect(query.get('encoding')).toBe('linear16');
      expect(query.get('sample_rate')).toBe('16000');
    }
    const ttsFormats = tts.connections.slice(ttsBefore).map((connection) => connection.query.output_format);
    expect(ttsFormats.length).toBeGreaterThanOrEqual(3);
    expect(new Set(ttsFormats)).toEqual(new Set(['pcm_16000']));

    expect(events.map((event) => event.type)).toContain('call.interrupted');
    expect(events.find((event) => event.type === 'call.stream_ended')?.data).toEqual({ reason: 'closed' });
    expect(call.status).toBe('completed');
    expect(call.duration).toBeGreaterThan(0);
  }, 90_000);

  it('answers an inbound call: the caller hears the greeting, hangs up, and the call completes', async () => {
    const org = await organization([]);
    const rang = await carrier.sendInboundCall({
      answerUrl: `${t.baseUrl}/webhooks/carrier_c/voice`,
      eventUrl: `${t.baseUrl}/webhooks/carrier_c/status`,
      from: '+14155550987',
      to: org.number,
      applicationId: org.applicationId,
      phone: afterGreeting,
    });
    expect(rang.phoneCall, rang.answer?.body).toBeDefined();
    await rang.phoneCall!.done;
    await carrier.settle();
    const [row] = await t.database.db.select({ id: calls.id }).from(calls).where(eq(calls.callSid, rang.sid));
    const { call, turns } = await recordsOf(org, row!.id, 1);
    expect(rang.phoneCall!.phone.heardSegments.length).toBeGreaterThanOrEqual(1);
    expect(rang.phoneCall!.endedBy).toBe('script');
    expect(rang.phoneCall!.phone.errors).toEqual([]);
    expect(turns).toEqual([expect.objectContaining({ kind: 'greeting', interrupted: false })]);
    expect(call.status).toBe('completed');
  }, 60_000);
});
