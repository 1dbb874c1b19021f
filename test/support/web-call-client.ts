/**
 * A browser in a web call, for the tests: the simulated phone (src/sim/phone.ts) speaking the web
 * call protocol (docs/voice.md, "Talking from a browser") through its wire (src/sim/web-call-wire.ts)
 * instead of a carrier's. The phone says the committed fixtures (test/fixtures/voice/*.ulaw) in real
 * time, sent as 16 kHz s16le binary frames; the assistant's audio is played in real time and each
 * mark echoed once the audio before it has played. What only a browser gets — `started`,
 * transcripts, turns, events, `ended` — is collected in `log`, with its time.
 *
 * `prepareWebOrganization` sets up what a web call needs: an organization whose vendor keys the
 * simulators accept, the words stt_a hears and the language model's replies, and an assistant.
 */
import { expect } from 'vitest';
import type { LlmSimulator } from '../../src/sim/llm.js';
import type { LlmReply } from '../../src/sim/llm-replies.js';
import { SimulatedPhone } from '../../src/sim/phone.js';
import type { PhoneMessage } from '../../src/sim/phone-wire.js';
import type { SttASimulator } from '../../src/sim/stt-a.js';
import { emptyWebCallLog, type WebCallLog, webCallPhoneWire } from '../../src/sim/web-call-wire.js';
import { expectStatus, type Factories, type TestUser } from './factories.js';
import type { TestPlatform } from './harness.js';

export interface WebCallCreated {
  call: { id: number; status: string; provider?: string; call_meta: Record<string, unknown> };
  socket_url: string;
  token: string;
  audio: { encoding: string; sample_rate: number; channels: number };
}

export interface WebCallClient {
  phone: SimulatedPhone;
  log: WebCallLog;
  /** Sends `{"type":"interrupt"}` (with the next audio frame, at most 20 ms later). */
  interrupt(): void;
}

/** Connects a browser to a created web call; the phone streams from the next tick. */
export async function connectWebCall(
  created: Pick<WebCallCreated, 'socket_url' | 'token'>,
  options: { recordAudio?: boolean } = {},
): Promise<WebCallClient> {
  const log = emptyWebCallLog();
  const outbox: PhoneMessage[] = [];
  let phone: SimulatedPhone | undefined;
  phone = new SimulatedPhone({
    url: created.socket_url,
    customParameters: { token: created.token },
    wire: webCallPhoneWire(log, outbox, () => phone?.now() ?? 0),
    ...(options.recordAudio ? { recordAudio: true } : {}),
  });
  await phone.connect();
  return {
    phone,
    log,
    interrupt: () => outbox.push(JSON.stringify({ type: 'interrupt' })),
  };
}

export interface WebOrganization {
  admin: TestUser;
  assistantId: number;
  /** The organization's language model key (scripts its replies). */
  llmKey: string;
}

let serial = 0;

/**
 * A new organization whose keys the simulators accept, with an assistant (`assistant`: its settings);
 * stt_a hears `heard` in order and the model answers `llm` in order.
 */
export async function prepareWebOrganization(
  t: TestPlatform,
  f: Factories,
  sims: { stt: SttASimulator; llm: LlmSimulator; tts: { addKey(key: string): void } },
  options: { heard: string[]; llm?: LlmReply[]; assistant?: Record<string, unknown> },
): Promise<WebOrganization> {
  const n = ++serial;
  const keys = { llm: `web-llm-${n}`, stt: `web-stt-${n}`, tts: `web-tts-${n}` };
  sims.llm.addKey(keys.llm);
  sims.stt.addKey(keys.stt);
  sims.tts.addKey(keys.tts);
  sims.stt.setScript(keys.stt, options.heard);
  if (options.llm) sims.llm.setScript(keys.llm, options.llm);
  const admin = await f.user();
  const put = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: {
      api_keys: { llm_a: { api_key: keys.llm }, stt_a: { api_key: keys.stt }, tts_a: { api_key: keys.tts } },
    },
  });
  expectStatus(put, 200);
  const assistantId = await f.assistant(admin, `Web ${n}`);
  if (options.assistant) {
    const updated = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/assistants/${assistantId}`,
      headers: admin.headers,
      payload: options.assistant,
    });
    expectStatus(updated, 200);
  }
  return { admin, assistantId, llmKey: keys.llm };
}

/** POST /api/v1/calls/web as `user`; the 201 answer. */
export async function createWebCall(
  t: TestPlatform,
  user: { headers: Record<string, string> },
  body: Record<string, unknown>,
): Promise<WebCallCreated> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/calls/web',
    headers: user.headers,
    payload: body,
  });
  expectStatus(response, 201);
  const created = response.json() as WebCallCreated;
  expect(created.socket_url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/web-call\/\d+$/);
  return created;
}

export type { WebCallLog };
