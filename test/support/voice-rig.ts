/**
 * Everything a live call needs, for the end-to-end voice tests: a listening platform pointed at the
 * simulators of the carriers (whose calls are answered by a simulated phone), stt_a, the language
 * model (one simulator for every dialect) and the voices; and `call()`, which sets up an organization
 * with keys, an assistant with the settings a test gives, places a call to a phone running the test's
 * script, waits until the call is over and its records written, and returns what both sides saw.
 * By default a call goes through carrier_a, the OpenAI-compatible llm_a and tts_a; `vendors` picks
 * others (voice-rig-vendors.ts says how each is set up).
 */
import { asc, eq } from 'drizzle-orm';
import type { CallTurn } from '../../clients/typescript/src/index.js';
import { callEvents, calls } from '../../src/db/schema/index.js';
import {
  type CarrierId,
  LLM_PROVIDERS,
  type LlmProvider,
  type TtsProvider,
} from '../../src/providers/ids.js';
import type { CarrierASimulator } from '../../src/sim/carrier-a.js';
import type { PhoneCall } from '../../src/sim/carrier-a-phone.js';
import { hearToEnd } from '../../src/sim/demo-caller.js';
import { type LlmRecordedRequest, LlmSimulator } from '../../src/sim/llm.js';
import type { LlmReply } from '../../src/sim/llm-replies.js';
import type { SimulatedPhone } from '../../src/sim/phone.js';
import { SttASimulator } from '../../src/sim/stt-a.js';
import type { TtsASimulator } from '../../src/sim/tts-a.js';
import { expectStatus, Factories } from './factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './harness.js';
import { carrierA, type RigCarrier, type RigOrganization, type RigVoice, ttsA } from './voice-rig-vendors.js';

export interface VoiceRig {
  t: TestPlatform;
  /** carrier_a's simulator (the default carrier). */
  carrier: CarrierASimulator;
  stt: SttASimulator;
  llm: LlmSimulator;
  /** tts_a's simulator (the default voice). */
  tts: TtsASimulator;
  /** Every carrier and voice the rig started, by id. */
  carriers: Partial<Record<CarrierId, RigCarrier>>;
  voices: Partial<Record<TtsProvider, RigVoice>>;
  call(options: CallOptions): Promise<CallOutcome>;
  close(): Promise<void>;
}

/** The vendors' keys of a call: by vendor id, and by kind for the ones the call uses. */
export type RigKeys = { llm: string; stt: string; tts: string } & Record<string, string>;

export interface CallOptions {
  /** What the caller does once the stream is up. */
  script: (phone: SimulatedPhone) => Promise<void>;
  /** The words the speech-to-text simulator hears for each of the caller's utterances, in order. */
  heard: string[];
  /** Assistant settings (PUT /api/v1/assistants/{id} body). */
  assistant?: Record<string, unknown>;
  /** The carrier, language model and voice of the call (default carrier_a, llm_a, tts_a). */
  vendors?: { carrier?: CarrierId; llm?: LlmProvider; tts?: TtsProvider };
  /** Keys of the organization's vendors, by vendor id (default: one per vendor the call uses). */
  keys?: Record<string, string>;
  /** Called after the organization exists and before the call is placed (fallback keys…). */
  prepare?: (org: RigOrganization, keys: RigKeys) => Promise<void>;
  /** What the language model answers the organization's key, in order (then: its default reply). */
  llm?: LlmReply[];
  /** The call ends when this many turns are recorded (default: wait for the call to complete). */
  turns?: number;
  /** The phone calls the organization's number instead (default: the platform calls the phone). */
  inbound?: boolean;
  /** Extra fields of POST /calls/initiate (welcome_message, agenda, variables). */
  initiate?: Record<string, unknown>;
  /** Call from this organization (another call's `org`, for calls at once) instead of a new one. */
  organization?: RigOrganization;
}

/** A turn as GET /api/v1/calls/{id}/turns returns it (the typed client's type). */
export type Turn = CallTurn;

export interface CallOutcome {
  callId: number;
  org: RigOrganization;
  phone: SimulatedPhone;
  phoneCall: PhoneCall;
  turns: Turn[];
  transcript: Array<{ speaker: string; text: string }>;
  events: Array<{ type: string; data: Record<string, unknown> }>;
  status: string;
  /** What the language model simulator received while this call ran (other calls' too, if any ran beside it). */
  llmRequests: LlmRecordedRequest[];
  /** The keys the call's organization was given. */
  keys: RigKeys;
}

export interface VoiceRigOptions {
  /** More carriers and voices than carrier_a and tts_a (the matrix test starts them all). */
  carriers?: RigCarrier[];
  voices?: RigVoice[];
  /** More of the platform's environment (LAMBDA_ENDPOINT_URL…). */
  env?: Record<string, string>;
}

let serial = 0;

export async function startVoiceRig(options: VoiceRigOptions = {}): Promise<VoiceRig> {
  const defaultCarrier = carrierA();
  const defaultVoice = ttsA();
  const carriers = [defaultCarrier, ...(options.carriers ?? [])];
  const voices = [defaultVoice, ...(options.voices ?? [])];
  const stt = new SttASimulator();
  const llm = new LlmSimulator();
  const [sttUrl, llmUrl, ...envs] = await Promise.all([
    stt.start(),
    llm.start(),
    ...carriers.map((carrier) => carrier.start()),
    ...voices.map((voice) => voice.start()),
  ]);
  // One language model simulator answers every vendor id, each in its own dialect.
  const llmEnv = Object.fromEntries(LLM_PROVIDERS.map((id) => [`${id.toUpperCase()}_BASE_URL`, llmUrl]));
  const t = await startTestPlatform(
    Object.assign(
      { STT_BASE_URL: sttUrl },
      llmEnv,
      ...(envs as Array<Record<string, string>>),
      options.env ?? {},
    ),
    { listen: true },
  );
  const f = new Factories(t);
  const carrierById = Object.fromEntries(
    carriers.map((carrier) => [carrier.id, carrier]),
  ) as VoiceRig['carriers'];
  const voiceById = Object.fromEntries(voices.map((voice) => [voice.id, voice])) as VoiceRig['voices'];

  async function call(options: CallOptions): Promise<CallOutcome> {
    // Taken once: calls placed at the same time each keep their own serial across the awaits.
    const n = ++serial;
    const carrier = carrierById[options.vendors?.carrier ?? 'carrier_a'];
    const voice = voiceById[options.vendors?.tts ?? 'tts_a'];
    if (!carrier || !voice) throw new Error('the rig was not started with that carrier or voice');
    const llmId = options.vendors?.llm ?? 'llm_a';
    const org = options.organization ?? (await carrier.organization(f));
    const keys: RigKeys = {
      llm: `llm-key-${n}`,
      stt: `stt-key-${n}`,
      tts: `tts-key-${n}`,
      [llmId]: `llm-key-${n}`,
      stt_a: `stt-key-${n}`,
      [voice.id]: `tts-key-${n}`,
    };
    Object.assign(keys, options.keys);
    llm.addKey(`llm-key-${n}`);
    stt.addKey(`stt-key-${n}`);
    voice.addKey(`tts-key-${n}`);
    stt.setScript(`stt-key-${n}`, options.heard);
    if (options.llm) llm.setScript(`llm-key-${n}`, options.llm);
    const firstRequest = llm.requests.length;
    const apiKeys = Object.fromEntries([llmId, 'stt_a', voice.id].map((id) => [id, { api_key: keys[id]! }]));
    const put = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: org.admin.headers,
      payload: { api_keys: apiKeys },
    });
    expectStatus(put, 200);
    const vendorSettings: Record<string, unknown> = {};
    if (llmId !== 'llm_a') vendorSettings.llm_provider = llmId;
    if (voice.id !== 'tts_a')
      vendorSettings.tts_settings = { provider: voice.id, voice_id: 'default', ...voice.settings };
    const settings = { ...vendorSettings, ...options.assistant };
    if (Object.keys(settings).length > 0) {
      const updated = await t.app.inject({
        method: 'PUT',
        url: `/api/v1/assistants/${org.assistantId}`,
        headers: org.admin.headers,
        payload: settings,
      });
      expectStatus(updated, 200);
    }
    await options.prepare?.(org, keys);
    const customer = `+1415888${String(1000 + n).padStart(4, '0')}`;
    let callId: number;
    let phoneCall: PhoneCall;
    if (options.inbound) {
      const rang = await carrier.ringIn(t, org, customer, options.script);
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
      phoneCall = await waitFor(() => carrier.phoneCall(placed.call_sid), 20_000);
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
      keys,
    };
  }

  return {
    t,
    carrier: defaultCarrier.sim,
    stt,
    llm,
    tts: defaultVoice.sim,
    carriers: carrierById,
    voices: voiceById,
    call,
    async close() {
      // The platform first: its shutdown lets work in flight (the after-call analysis asks the model)
      // finish against simulators that still answer.
      await t.close();
      await Promise.all(carriers.map((carrier) => carrier.stop()));
      await Promise.all([stt.stop(), llm.stop(), ...voices.map((voice) => voice.stop())]);
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
