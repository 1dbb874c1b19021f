/**
 * The SIP trunk tests' rig: a listening platform whose SIP agent runs on a free loopback port (its
 * RTP on a range of its own), pointed at the stt_a, language model and tts_a simulators; and
 * organizations whose trunk is a sipp process on loopback (test/support/sipp.ts) — each with a number
 * on `sip_trunk`, an assistant, and vendor keys scripted for what the call should hear and say.
 */
import { asc, eq } from 'drizzle-orm';
import { callEvents } from '../../src/db/schema/index.js';
import { LlmSimulator } from '../../src/sim/llm.js';
import type { LlmReply } from '../../src/sim/llm-replies.js';
import { SttASimulator } from '../../src/sim/stt-a.js';
import { TtsASimulator } from '../../src/sim/tts-a.js';
import type { SipAgent } from '../../src/voice/sip/agent.js';
import { expectStatus, Factories, type TestUser } from './factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './harness.js';

export interface SipOrganization {
  admin: TestUser;
  assistantId: number;
  /** The organization's number on `sip_trunk`. */
  number: string;
}

export interface TrunkOptions {
  /** Where the trunk (sipp) listens on 127.0.0.1. */
  port: number;
  transport?: 'udp' | 'tcp';
  username?: string;
  password?: string;
  inboundEnabled?: boolean;
  inboundAddresses?: string[];
  /** Whether the agent registers with the trunk (`sip_trunk_config.register`). */
  register?: boolean;
  /** What the speech-to-text simulator hears, utterance by utterance. */
  heard?: string[];
  /** What the language model answers, in order. */
  llm?: LlmReply[];
  /** Assistant settings (PUT /api/v1/assistants/{id}). */
  assistant?: Record<string, unknown>;
}

export interface CallRecord {
  id: number;
  status: string;
  direction: string;
  duration: number | null;
  call_sid: string;
  call_meta?: Record<string, unknown>;
}

export interface SipRig {
  t: TestPlatform;
  agent: SipAgent;
  llm: LlmSimulator;
  organization(options: TrunkOptions): Promise<SipOrganization>;
  /** POST /calls/initiate from the organization's number to `to`; the call's id. */
  dial(org: SipOrganization, to: string): Promise<number>;
  /** Waits until the call has `status` (or a final one), and returns the status it found. */
  reached(org: SipOrganization, callId: number, status: string, timeoutMs?: number): Promise<string>;
  /** The call once final, with its turns, transcript and events. */
  finished(org: SipOrganization, callId: number, timeoutMs?: number): Promise<FinishedCall>;
  close(): Promise<void>;
}

export interface FinishedCall {
  call: CallRecord;
  turns: Array<{ kind: string; user_text: string; assistant_text: string; interrupted: boolean }>;
  transcript: Array<{ speaker: string; text: string }>;
  events: Array<{ type: string; data: Record<string, unknown> }>;
}

let serial = 0;
const FINAL = ['completed', 'failed', 'busy', 'no-answer', 'canceled'];

export async function startSipRig(env: Record<string, string> = {}): Promise<SipRig> {
  const stt = new SttASimulator();
  const llm = new LlmSimulator();
  const tts = new TtsASimulator();
  const [sttUrl, llmUrl, ttsUrl] = await Promise.all([stt.start(), llm.start(), tts.start()]);
  // A range of its own per test file: ports in use are skipped anyway.
  const rtpMin = 30000 + 200 * Math.floor(Math.random() * 100);
  const t = await startTestPlatform(
    {
      STT_BASE_URL: sttUrl,
      LLM_A_BASE_URL: llmUrl,
      TTS_A_BASE_URL: ttsUrl,
      SIP_HOST: '127.0.0.1',
      SIP_PORT: '0',
      SIP_PUBLIC_HOST: '127.0.0.1',
      RTP_PORT_MIN: String(rtpMin),
      RTP_PORT_MAX: String(rtpMin + 199),
      // No trunk upkeep rounds unless a test asks: sipp takes an OPTIONS ping for a call of its scenario.
      SIP_TRUNK_CHECK_INTERVAL_SECONDS: '3600',
      ...env,
    },
    { listen: true },
  );
  const agent = await t.platform.startSip();
  const f = new Factories(t);

  async function read(org: SipOrganization, path: string) {
    const response = await t.app.inject({
      method: 'GET',
      url: `/api/v1/calls${path}`,
      headers: org.admin.headers,
    });
    expectStatus(response, 200);
    return response.json();
  }

  return {
    t,
    agent,
    llm,
    async organization(options) {
      const n = ++serial;
      const admin = await f.user();
      const keys = { llm: `sip-llm-${n}`, stt: `sip-stt-${n}`, tts: `sip-tts-${n}` };
      llm.addKey(keys.llm);
      stt.addKey(keys.stt);
      tts.addKey(keys.tts);
      stt.setScript(keys.stt, options.heard ?? []);
      if (options.llm) llm.setScript(keys.llm, options.llm);
      const put = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/organization',
        headers: admin.headers,
        payload: {
          api_keys: {
            llm_a: { api_key: keys.llm },
            stt_a: { api_key: keys.stt },
            tts_a: { api_key: keys.tts },
          },
          sip_trunk_config: {
            sip_domain: '127.0.0.1',
            port: options.port,
            transport: options.transport ?? 'udp',
            inbound_enabled: options.inboundEnabled ?? true,
            ...(options.inboundAddresses ? { inbound_addresses: options.inboundAddresses } : {}),
            ...(options.register === undefined ? {} : { register: options.register }),
            ...(options.username ? { username: options.username } : {}),
            ...(options.password ? { password: options.password } : {}),
          },
        },
      });
      expectStatus(put, 200);
      const assistantId = await f.assistant(admin, `SIP assistant ${n}`);
      const settings = {
        llm_settings: { welcome_message: 'Hello, this is the clinic.' },
        ...options.assistant,
      };
      const updated = await t.app.inject({
        method: 'PUT',
        url: `/api/v1/assistants/${assistantId}`,
        headers: admin.headers,
        payload: settings,
      });
      expectStatus(updated, 200);
      const number = `+1628555${String(n).padStart(4, '0')}`;
      const registered = await t.app.inject({
        method: 'POST',
        url: '/api/v1/phone-numbers',
        headers: admin.headers,
        payload: { phone_number: number, provider: 'sip_trunk', assistant_id: assistantId },
      });
      expectStatus(registered, 201);
      return { admin, assistantId, number };
    },
    async dial(org, to) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/calls/initiate',
        headers: org.admin.headers,
        payload: { from_phone_number: org.number, to_phone_number: to },
      });
      expectStatus(response, 200);
      return (response.json() as { call_id: number }).call_id;
    },
    async reached(org, callId, status, timeoutMs = 20_000) {
      return waitFor(async () => {
        const record = (await read(org, `/${callId}`)) as CallRecord;
        return record.status === status || FINAL.includes(record.status) ? record.status : undefined;
      }, timeoutMs);
    },
    async finished(org, callId, timeoutMs = 30_000) {
      // The records are written in the background: wait until the call is final and its turns settle.
      let last = '';
      const call = await waitFor(async () => {
        const record = (await read(org, `/${callId}`)) as CallRecord;
        const turns = JSON.stringify(await read(org, `/${callId}/turns`));
        const stable = turns === last;
        last = turns;
        return stable && FINAL.includes(record.status) ? record : undefined;
      }, timeoutMs);
      const events = await t.database.db
        .select({ type: callEvents.type, data: callEvents.data })
        .from(callEvents)
        .where(eq(callEvents.callId, callId))
        .orderBy(asc(callEvents.id));
      return {
        call,
        turns: JSON.parse(last),
        transcript: await read(org, `/${callId}/transcript`),
        events: events as FinishedCall['events'],
      };
    },
    async close() {
      await t.close();
      await Promise.all([stt.stop(), llm.stop(), tts.stop()]);
    },
  };
}
