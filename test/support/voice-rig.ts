/**
 * Everything a live call needs, for the end-to-end voice tests: a listening platform pointed at the
 * simulators of carrier_a (whose calls are answered by a simulated phone), stt_a, the OpenAI-compatible
 * language model and tts_a; and `call()`, which sets up an organization with keys, an assistant with
 * the settings a test gives, places a call to a phone running the test's script, waits until the call
 * is over and its records written, and returns what both sides saw.
 */
import { asc, eq } from 'drizzle-orm';
import type { CallTurn } from '../../clients/typescript/src/index.js';
import { callEvents, calls } from '../../src/db/schema/index.js';
import { CarrierASimulator } from '../../src/sim/carrier-a.js';
import type { PhoneCall } from '../../src/sim/carrier-a-phone.js';
import { hearToEnd } from '../../src/sim/demo-caller.js';
import { type LlmRecordedRequest, LlmSimulator } from '../../src/sim/llm.js';
import type { LlmReply } from '../../src/sim/llm-replies.js';
import type { SimulatedPhone } from '../../src/sim/phone.js';
import { SttASimulator } from '../../src/sim/stt-a.js';
import { TtsASimulator } from '../../src/sim/tts-a.js';
import { type CarrierOrganization, expectStatus, Factories } from './factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './harness.js';

export interface VoiceRig {
  t: TestPlatform;
  carrier: CarrierASimulator;
  stt: SttASimulator;
  llm: LlmSimulator;
  tts: TtsASimulator;
  call(options: CallOptions): Promise<CallOutcome>;
  close(): Promise<void>;
}

export interface CallOptions {
  /** What the caller does once the stream is up. */
  script: (phone: SimulatedPhone) => Promise<void>;
  /** The words the speech-to-text simulator hears for each of the caller's utterances, in order. */
  heard: string[];
  /** Assistant settings (PUT /api/v1/assistants/{id} body). */
  assistant?: Record<string, unknown>;
  /** Keys of the organization's vendors (default: one per vendor the simulators accept). */
  keys?: { llm_a?: string; stt_a?: string; tts_a?: string };
  /** Called after the organization exists and before the call is placed (fallback keys…). */
  prepare?: (
    org: CarrierOrganization,
    keys: { llm_a: string; stt_a: string; tts_a: string },
  ) => Promise<void>;
  /** What the language model answers the organization's key, in order (then: its default reply). */
  llm?: LlmReply[];
  /** The call ends when this many turns are recorded (default: wait for the call to complete). */
  turns?: number;
  /** The phone calls the organization's number instead (default: the platform calls the phone). */
  inbound?: boolean;
  /** Extra fields of POST /calls/initiate (welcome_message, agenda, variables). */
  initiate?: Record<string, unknown>;
  /** Call from this organization (another call's `org`, for calls at once) instead of a new one. */
  organization?: CarrierOrganization;
}

/** A turn as GET /api/v1/calls/{id}/turns returns it (the typed client's type). */
export type Turn = CallTurn;

export interface CallOutcome {
  callId: number;
  org: CarrierOrganization;
  phone: SimulatedPhone;
  phoneCall: PhoneCall;
  turns: Turn[];
  transcript: Array<{ speaker: string; text: string }>;
  events: Array<{ type: string; data: Record<string, unknown> }>;
  status: string;
  /** What the language model simulator received during this call. */
  llmRequests: LlmRecordedRequest[];
}

let serial = 0;

export async function startVoiceRig(): Promise<VoiceRig> {
  const carrier = new CarrierASimulator();
  const stt = new SttASimulator();
  const llm = new LlmSimulator();
  const tts = new TtsASimulator();
  const [carrierUrl, sttUrl, llmUrl, ttsUrl] = await Promise.all([
    carrier.start(),
    stt.start(),
    llm.start(),
    tts.start(),
  ]);
  const t = await startTestPlatform(
    { CARRIER_A_BASE_URL: carrierUrl, STT_BASE_URL: sttUrl, LLM_A_BASE_URL: llmUrl, TTS_A_BASE_URL: ttsUrl },
    { listen: true },
  );
  const f = new Factories(t);

  async function call(options: CallOptions): Promise<CallOutcome> {
    serial += 1;
    const org = options.organization ?? (await f.carrierOrganization({ sim: carrier }));
    const keys = {
      llm_a: `llm-key-${serial}`,
      stt_a: `stt-key-${serial}`,
      tts_a: `tts-key-${serial}`,
      ...options.keys,
    };
    llm.addKey(`llm-key-${serial}`);
    stt.addKey(`stt-key-${serial}`);
    tts.addKey(`tts-key-${serial}`);
    stt.setScript(`stt-key-${serial}`, options.heard);
    if (options.llm) llm.setScript(`llm-key-${serial}`, options.llm);
    const firstRequest = llm.requests.length;
    const put = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: org.admin.headers,
      payload: { api_keys: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, { api_key: v }])) },
    });
    expectStatus(put, 200);
    if (options.assistant) {
      const updated = await t.app.inject({
        method: 'PUT',
        url: `/api/v1/assistants/${org.assistantId}`,
        headers: org.admin.headers,
        payload: options.assistant,
      });
      expectStatus(updated, 200);
    }
    await options.prepare?.(org, keys);
    const customer = `+1415888${String(1000 + serial).padStart(4, '0')}`;
    let callId: number;
    let phoneCall: PhoneCall;
    if (options.inbound) {
      const rang = await carrier.placeInboundCall({
        voiceUrl: `${t.baseUrl}/webhooks/carrier_a/voice`,
        statusCallbackUrl: `${t.baseUrl}/webhooks/carrier_a/status`,
        accountSid: org.account.account_sid,
        from: customer,
        to: org.number,
        phone: options.script,
      });
      if (!rang.phoneCall)
        throw new Error(`the platform did not answer with a stream: ${JSON.stringify(rang.answer)}`);
      phoneCall = rang.phoneCall;
      const [row] = await t.database.db
        .select({ id: calls.id })
        .from(calls)
        .where(eq(calls.callSid, rang.callSid));
      callId = row!.id;
    } else {
      carrier.setPhone(customer, options.script);
      const initiated = await t.app.inject({
        method: 'POST',
        url: '/calls/initiate',
        headers: org.admin.headers,
        payload: { from_phone_number: org.number, to_phone_number: customer, ...options.initiate },
      });
      expectStatus(initiated, 200);
      const placed = initiated.json() as { call_id: number; call_sid: string };
      callId = placed.call_id;
      phoneCall = await waitFor(() => carrier.phoneCalls.get(placed.call_sid), 20_000);
    }
    await phoneCall.done;
    const read = async (path: string) => {
      const response = await t.app.inject({
        method: 'GET',
        url: `/api/v1/calls/${callId}${path}`,
        headers: org.admin.headers,
      });
      expectStatus(response, 200);
      return response.json();
    };
    // The session writes its records in the background: wait until the call is final and its turns
    // stop changing.
    let last = '';
    let turns: Turn[] = [];
    await waitFor(async () => {
      const call = (await read('')) as { status: string };
      turns = (await read('/turns')) as Turn[];
      const now = JSON.stringify(turns);
      const stable = now === last && ['completed', 'failed'].includes(call.status);
      last = now;
      return stable && (options.turns === undefined || turns.length >= options.turns);
    }, 20_000);
    const transcript = (await read('/transcript')) as CallOutcome['transcript'];
    const events = await t.database.db
      .select({ type: callEvents.type, data: callEvents.data })
      .from(callEvents)
      .where(eq(callEvents.callId, callId))
      .orderBy(asc(callEvents.id));
    const call = (await read('')) as { status: string };
    return {
      callId,
      org,
      phone: phoneCall.phone,
      phoneCall,
      turns,
      transcript,
      events: events as CallOutcome['events'],
      status: call.status,
      llmRequests: llm.requests.slice(firstRequest),
    };
  }

  return {
    t,
    carrier,
    stt,
    llm,
    tts,
    call,
    async close() {
      await carrier.stop();
      await Promise.all([stt.stop(), llm.stop(), tts.stop()]);
      await t.close();
    },
  };
}

/** The caller listens to the greeting to its end. */
export const afterGreeting = (phone: SimulatedPhone) => hearToEnd(phone, QUICK_HEARING);

/** The caller waits for the answer and hears it to its end. */
export const hearAnswer = (phone: SimulatedPhone) => hearToEnd(phone, QUICK_HEARING);

/** The tests listen with a shorter silence and the phone's own time-out. */
const QUICK_HEARING = { silenceMs: 600, timeoutMs: 10_000 };

/** The caller hears the greeting out, asks for an appointment, and hears the answer out. */
export async function askToBook(phone: SimulatedPhone): Promise<void> {
  await afterGreeting(phone);
  await phone.say('book-appointment');
  await hearAnswer(phone);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the speech-to-text simulator hears for the fixture `book-appointment`. */
export const BOOK = 'I would like to book an appointment for tomorrow';
/** An answer long enough (about ten seconds of voice) to be interrupted. */
export const LONG_ANSWER =
  'Of course. We have openings tomorrow morning at nine, at ten thirty, and at eleven, and in the afternoon at two, at three, and at four thirty. Which would suit you best?';
