/**
 * Web calls end to end (issue 22): POST /api/v1/calls/web, then a browser — the simulated phone
 * speaking the web call protocol (support/web-call-client.ts) — talking to an assistant on the
 * simulators (stt_a scripted, the language model scripted, tts_a), in real time. The call moves
 * through the calls domain's status path like a phone call, and everything the browser is told
 * (transcripts, turns with their latencies, interruptions, the end) comes from what the call records.
 */
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { callEvents } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { WebCallService } from '../src/domains/calls/web-calls.js';
import { MediaTokens } from '../src/lib/media-token.js';
import { CANNOT_TRANSFER } from '../src/voice/answer-actions.js';
import { expectStatus, Factories } from './support/factories.js';
import { TEST_SECRET_KEY, waitFor } from './support/harness.js';
import { BOOK, LONG_ANSWER, sleep, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import {
  connectWebCall,
  createWebCall,
  prepareWebOrganization,
  type WebOrganization,
} from './support/web-call-client.js';

let rig: VoiceRig;
let f: Factories;

beforeAll(async () => {
  rig = await startVoiceRig();
  f = new Factories(rig.t);
}, 60_000);
afterAll(async () => {
  await rig.close();
});

const QUICK = { silenceMs: 600, timeoutMs: 15_000 };
const THREE = "Yes, three o'clock works for me.";

function organization(options: Parameters<typeof prepareWebOrganization>[3]) {
  return prepareWebOrganization(rig.t, f, rig, options);
}

async function read(org: WebOrganization, path: string) {
  const response = await rig.t.app.inject({
    method: 'GET',
    url: `/api/v1/calls${path}`,
    headers: org.admin.headers,
  });
  expectStatus(response, 200);
  return response.json();
}

/** Waits until the call is final and its turns stop changing; the call as GET shows it. */
async function settled(org: WebOrganization, callId: number) {
  let last = '';
  await waitFor(async () => {
    const call = await read(org, `/${callId}`);
    const turns = JSON.stringify(await read(org, `/${callId}/turns`));
    const stable = turns === last && !['queued', 'ringing', 'in-progress'].includes(call.status);
    last = turns;
    return stable || undefined;
  }, 20_000);
  return read(org, `/${callId}`);
}

function eventsOf(callId: number) {
  return rig.t.database.db
    .select({ type: callEvents.type, data: callEvents.data })
    .from(callEvents)
    .where(eq(callEvents.callId, callId))
    .orderBy(asc(callEvents.id));
}

async function hearToEnd(phone: Awaited<ReturnType<typeof connectWebCall>>['phone']) {
  await phone.waitForSpeech({ timeoutMs: QUICK.timeoutMs });
  await phone.waitForSilence({ ms: QUICK.silenceMs, timeoutMs: QUICK.timeoutMs });
}

/** Opens the stream and sends `first`; resolves with the close code and reason. */
function rawStream(url: string, first?: string | Buffer): Promise<{ code: number; reason: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.once('open', () => {
      if (first !== undefined) socket.send(first);
    });
    socket.once('error', reject);
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') }));
  });
}

describe('a web call', () => {
  it('holds a two-turn conversation: greeting, answers, live transcript and turns, a completed record', async () => {
    const org = await organization({
      heard: [BOOK, THREE],
      llm: [{ text: 'Sure, which time suits you?' }, { text: 'Booked for three. Anything else?' }],
    });
    const created = await createWebCall(rig.t, org.admin, {
      assistant_id: org.assistantId,
      variables: { a: 1 },
    });
    expect(created.audio).toEqual({ encoding: 'pcm_s16le', sample_rate: 16000, channels: 1 });
    expect(created.call).toMatchObject({
      status: 'queued',
      direction: 'inbound',
      assistant_id: org.assistantId,
      from_phone_number: '',
      customer_phone_number: '',
      call_meta: { web: { user_id: org.admin.id }, variables: { a: 1 } },
      recording: null,
    });
    const client = await connectWebCall(created);
    const { phone, log } = client;
    await hearToEnd(phone);
    expect(log.started).toMatchObject({ type: 'started', call_id: created.call.id, audio: created.audio });
    const asked = await phone.say('book-appointment');
    await phone.waitForReplyTo(asked, { timeoutMs: 15_000 });
    await hearToEnd(phone);
    const agreed = await phone.say('three-oclock');
    await phone.waitForReplyTo(agreed, { timeoutMs: 15_000 });
    await hearToEnd(phone);
    await waitFor(() => log.turns.length >= 3 || undefined, 10_000);
    await phone.hangUp();

    const call = await settled(org, created.call.id);
    expect(call).toMatchObject({ status: 'completed', call_sid: expect.stringMatching(/^web-/) });
    expect(call.duration).toBeGreaterThanOrEqual(5);
    expect(call.started_at).not.toBeNull();
    const turns = await read(org, `/${created.call.id}/turns`);
    expect(turns.map((turn: { kind: string }) => turn.kind)).toEqual(['greeting', 'reply', 'reply']);
    expect(turns[1]).toMatchObject({ user_text: BOOK, assistant_text: 'Sure, which time suits you?' });
    expect(turns[1].end_to_end_ms).toBeGreaterThan(0);

    // The browser saw the same turns as they happened, in the API's fields.
    expect(log.turns.map((turn) => turn.position)).toEqual([0, 1, 2]);
    const { atMs: _at, type: _type, ...liveReply } = log.turns[1]!;
    expect(liveReply).toEqual(turns[1]);
    for (const field of [
      'end_to_end_ms',
      'endpointing_ms',
      'stt_delay_ms',
      'llm_ttft_ms',
      'tts_ttfb_ms',
      'platform_ms',
    ])
      expect(log.turns[1]![field], field).toEqual(expect.any(Number));
    // The live transcript: both speakers, final segments, the same as the record's.
    const transcript = await read(org, `/${created.call.id}/transcript`);
    expect(log.transcripts.map(({ speaker, text }) => ({ speaker, text }))).toEqual(
      transcript.map(({ speaker, text }: { speaker: string; text: string }) => ({ speaker, text })),
    );
    expect(log.transcripts.filter((s) => s.speaker === 'user').map((s) => s.text)).toEqual([BOOK, THREE]);
    expect(log.transcripts.every((segment) => segment.final)).toBe(true);
    expect(log.ended).toBeUndefined(); // the browser hung up: nothing left to tell it
    expect(log.unknown).toEqual([]);
    expect(phone.errors).toEqual([]);

    // Like any call: in the list, in the search by its words, and in the analytics.
    const list = await read(org, '');
    expect(list.map((row: { id: number }) => row.id)).toContain(created.call.id);
    const types = (await eventsOf(created.call.id)).map((event) => event.type);
    expect(types).toEqual(expect.arrayContaining(['call.queued', 'call.in-progress', 'call.completed']));
  }, 90_000);

  it('stops the assistant at once on interrupt: its audio is cleared and the interruption recorded', async () => {
    const org = await organization({ heard: [BOOK], llm: [{ text: LONG_ANSWER }] });
    const created = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
    const { phone, log, interrupt } = await connectWebCall(created);
    await hearToEnd(phone);
    const asked = await phone.say('book-appointment');
    await phone.waitForReplyTo(asked, { timeoutMs: 15_000 });
    await sleep(1200);
    const pressedAt = phone.now();
    interrupt();
    await waitFor(() => log.events.find((event) => event.name === 'interruption'), 5_000);
    // The audio stops: a clear came, and nothing is heard a moment later.
    await waitFor(() => phone.clears.find((clear) => clear.atMs >= pressedAt), 5_000);
    await phone.waitForSilence({ ms: 500, timeoutMs: 3_000 });
    await waitFor(() => log.turns.find((turn) => turn.position === 1), 5_000);
    expect(log.turns[1]).toMatchObject({ interrupted: true });
    expect(String(log.turns[1]!.assistant_text).length).toBeLessThan(LONG_ANSWER.length);
    await phone.hangUp();
    await settled(org, created.call.id);
    const types = (await eventsOf(created.call.id)).map((event) => event.type);
    expect(types).toContain('call.interrupted');
  }, 60_000);

  it('ends when the assistant calls end_call: the browser is told, its socket closed, the call completed', async () => {
    const org = await organization({
      heard: ['That is all, thank you, goodbye'],
      assistant: { tools_settings: { end_call: { enabled: true } }, end_call_message: 'Have a good day.' },
      llm: [{ text: 'You are welcome.', toolCalls: [{ name: 'end_call', arguments: { reason: 'done' } }] }],
    });
    const created = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
    const { phone, log } = await connectWebCall(created);
    await hearToEnd(phone);
    await phone.say('goodbye');
    const closed = await phone.waitForClose({ timeoutMs: 30_000 });
    expect(closed).toMatchObject({ code: 1000, by: 'platform' });
    expect(log.ended).toMatchObject({ reason: 'assistant_ended' });
    const call = await settled(org, created.call.id);
    expect(call.status).toBe('completed');
    const types = (await eventsOf(created.call.id)).map((event) => event.type);
    expect(types).toEqual(expect.arrayContaining(['call.tool', 'call.end_requested', 'call.completed']));
  }, 60_000);

  it('refuses a transfer_call: recorded, the caller and the model told, the call goes on', async () => {
    const org = await organization({
      heard: ['Please transfer me to a real person', BOOK],
      assistant: { tools_settings: { transfer_call: { enabled: true, transfer_numbers: ['+14155550199'] } } },
      llm: [
        { toolCalls: [{ name: 'transfer_call', arguments: { phone_number: '+14155550199' } }] },
        { text: 'Sure, which time suits you?' },
      ],
    });
    const firstRequest = rig.llm.requests.length;
    const created = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
    const { phone, log } = await connectWebCall(created);
    await hearToEnd(phone);
    const asked = await phone.say('transfer-me');
    await phone.waitForReplyTo(asked, { timeoutMs: 15_000 });
    await hearToEnd(phone);
    const again = await phone.say('book-appointment');
    await phone.waitForReplyTo(again, { timeoutMs: 15_000 });
    await hearToEnd(phone);
    expect(phone.close).toBeUndefined();
    await phone.hangUp();
    await settled(org, created.call.id);
    const events = await eventsOf(created.call.id);
    expect(events.find((event) => event.type === 'call.transfer_refused')?.data).toMatchObject({
      to: '+14155550199',
    });
    expect(events.map((event) => event.type)).not.toContain('call.transferred');
    expect(log.events.map((event) => event.name)).toContain('transfer_refused');
    const turns = await read(org, `/${created.call.id}/turns`);
    expect(turns.map((turn: { assistant_text: string }) => turn.assistant_text).slice(1)).toEqual([
      CANNOT_TRANSFER,
      'Sure, which time suits you?',
    ]);
    // The model's next request carries the refusal as the tool's result.
    const next = rig.llm.requests.filter((request) => request.key === org.llmKey).at(-1);
    expect(JSON.stringify(next?.body)).toContain('cannot be transferred');
    expect(rig.llm.requests.length).toBeGreaterThan(firstRequest);
  }, 60_000);

  it('is hung up through POST /api/v1/calls/{id}/end: the browser is told, the call completed', async () => {
    const org = await organization({ heard: [] });
    const created = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
    const end = () =>
      rig.t.app.inject({
        method: 'POST',
        url: `/api/v1/calls/${created.call.id}/end`,
        headers: org.admin.headers,
      });
    expectStatus(await end(), 409); // no browser yet
    const { phone, log } = await connectWebCall(created);
    await waitFor(() => log.started, 5_000);
    expectStatus(await end(), 200);
    expect(await phone.waitForClose({ timeoutMs: 5_000 })).toMatchObject({ code: 1000, by: 'platform' });
    expect(log.ended).toMatchObject({ reason: 'hung_up' });
    expect((await settled(org, created.call.id)).status).toBe('completed');
    expectStatus(await end(), 409);
  }, 30_000);
});

describe('the web call stream refuses', () => {
  it('a stream without a proper start, with a wrong, other-call or expired token, and a second stream', async () => {
    const org = await organization({ heard: [] });
    const created = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
    const other = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
    const expired = await new MediaTokens(TEST_SECRET_KEY, 0).issue({
      callId: created.call.id,
      organizationId: org.admin.organizationId,
    });
    const url = created.socket_url;
    const refusals = await Promise.all([
      rawStream(url, Buffer.alloc(640)),
      rawStream(url, JSON.stringify({ type: 'mark', name: 'x' })),
      rawStream(url, JSON.stringify({ type: 'start' })),
      rawStream(url, JSON.stringify({ type: 'start', token: 'not-a-token' })),
      rawStream(url, JSON.stringify({ type: 'start', token: other.token })),
      rawStream(url, JSON.stringify({ type: 'start', token: expired })),
      rawStream(url, 'not json'),
      rawStream(url.replace(/\d+$/, 'abc'), JSON.stringify({ type: 'start', token: created.token })),
    ]);
    for (const refusal of refusals) expect(refusal).toEqual({ code: 1008, reason: 'Web call refused' });
    // Nothing reached the runtime: the call is still waiting for its browser.
    expect((await read(org, `/${created.call.id}`)).status).toBe('queued');
    expect((await eventsOf(created.call.id)).map((event) => event.type)).toEqual(['call.queued']);

    // A proper start is taken once; a second stream with the same token is refused.
    const first = await connectWebCall(created);
    await waitFor(() => first.log.started, 5_000);
    const second = await rawStream(url, JSON.stringify({ type: 'start', token: created.token }));
    expect(second.code).toBe(1008);
    expect(first.phone.close).toBeUndefined();
    await first.phone.hangUp();
    const after = await rawStream(url, JSON.stringify({ type: 'start', token: created.token }));
    expect(after.code).toBe(1008);
    expect((await settled(org, created.call.id)).status).toBe('completed');
  }, 60_000);

  it('a message larger than the protocol allows (1009) and a bad message after the start (1008)', async () => {
    const org = await organization({ heard: [] });
    const big = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
    expect(await rawStream(big.socket_url, Buffer.alloc(64 * 1024 + 2))).toMatchObject({ code: 1009 });
    const created = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
    const closed = await new Promise<number>((resolve) => {
      const socket = new WebSocket(created.socket_url);
      socket.once('open', () => socket.send(JSON.stringify({ type: 'start', token: created.token })));
      socket.on('message', (data, isBinary) => {
        if (!isBinary && JSON.parse(data.toString()).type === 'started')
          socket.send(JSON.stringify({ type: 'dtmf', digit: 'X' }));
      });
      socket.once('close', (code) => resolve(code));
    });
    expect(closed).toBe(1008);
    expect((await settled(org, created.call.id)).status).toBe('completed');
  }, 30_000);

  it('ends a web call no browser came for as no-answer', async () => {
    const org = await organization({ heard: [] });
    const { platform } = rig.t;
    const quick = new WebCallService({
      db: platform.database.db,
      queue: platform.queue,
      billing: platform.services.billing,
      calls: platform.services.calls,
      mediaTokens: platform.mediaTokens,
      publicUrl: rig.t.config.publicUrl,
      unansweredMs: 100,
      log: { warn() {} },
    });
    const created = await quick.create(
      { tenant: new Tenant(org.admin.organizationId), user: { id: org.admin.id } } as never,
      { assistant_id: org.assistantId },
    );
    const call = await waitFor(async () => {
      const row = await read(org, `/${created.call.id}`);
      return row.status === 'queued' ? undefined : row;
    }, 5_000);
    expect(call).toMatchObject({ status: 'no-answer', duration: 0 });
    const socketUrl = created.socketUrl;
    expect(await rawStream(socketUrl, JSON.stringify({ type: 'start', token: created.token }))).toMatchObject(
      {
        code: 1008,
      },
    );
  }, 30_000);
});

describe('POST /api/v1/calls/web', () => {
  it('401 without credentials, 403 for an API key without calls write, 404 for another organization’s assistant, 422 for a bad body', async () => {
    const org = await organization({ heard: [] });
    const stranger = await organization({ heard: [] });
    const post = (headers: Record<string, string>, payload: unknown) =>
      rig.t.app.inject({ method: 'POST', url: '/api/v1/calls/web', headers, payload: payload as object });
    expectStatus(await post({}, { assistant_id: org.assistantId }), 401);
    const readKey = await f.apiKey(org.admin, { permissions: { calls: 'read' } });
    expectStatus(await post(readKey.headers, { assistant_id: org.assistantId }), 403);
    const writeKey = await f.apiKey(org.admin, { permissions: { calls: 'read_write' } });
    const byKey = await post(writeKey.headers, { assistant_id: org.assistantId });
    expectStatus(byKey, 201);
    expectStatus(await post(org.admin.headers, { assistant_id: stranger.assistantId }), 404);
    expectStatus(await post(org.admin.headers, { assistant_id: 2_000_000_000 }), 404);
    for (const bad of [
      {},
      { assistant_id: 'one' },
      { assistant_id: org.assistantId, extra: 1 },
      { assistant_id: org.assistantId, variables: [] },
    ])
      expectStatus(await post(org.admin.headers, bad), 422);
    // With the session cookie, the CSRF token is required as for any write.
    const cookie = { cookie: `sb_session=${org.admin.sessionCookie}` };
    expectStatus(await post(cookie, { assistant_id: org.assistantId }), 403);
    const csrf = { ...cookie, 'x-csrf-token': org.admin.csrfToken };
    expectStatus(await post(csrf, { assistant_id: org.assistantId }), 201);
  }, 30_000);

  it('keeps the call in its organization', async () => {
    const org = await organization({ heard: [] });
    const stranger = await organization({ heard: [] });
    const created = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
    const seen = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${created.call.id}`,
      headers: stranger.admin.headers,
    });
    expectStatus(seen, 404);
    const list = await read(stranger, '');
    expect(list.map((row: { id: number }) => row.id)).not.toContain(created.call.id);
    // Another organization's token opens nothing either: the token names the call and its organization.
    const strangers = await createWebCall(rig.t, stranger.admin, { assistant_id: stranger.assistantId });
    const refused = await rawStream(
      created.socket_url,
      JSON.stringify({ type: 'start', token: strangers.token }),
    );
    expect(refused.code).toBe(1008);
  }, 30_000);
});
