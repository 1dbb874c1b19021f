/**
 * WebSocket /media-stream/{call_id} for carrier_a, over a real listening platform, the carrier_a
 * simulator (which fetches the answer markup of real calls) and a real `ws` client playing the
 * carrier's side of the stream. A stream whose upgrade signature and `start` token prove its call
 * reaches the runtime (a recording one), its events in order, and the runtime's audio, marks and
 * clears reach the carrier as carrier_a messages. Every refusal closes with 1008 and one reason,
 * logs which check failed (never the token), and nothing of the stream reaches the runtime. The
 * tests share one platform; each makes the calls it needs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MediaTokens } from '../src/lib/media-token.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { MULAW_8K } from '../src/voice/audio.js';
import { REFUSED_REASON } from '../src/voice/media-stream.js';
import { CarrierAStream } from './support/carrier-a-stream.js';
import { type CarrierOrganization, Factories } from './support/factories.js';
import { startTestPlatform, TEST_SECRET_KEY, type TestPlatform, waitFor } from './support/harness.js';
import { RecordingRuntime } from './support/recording-runtime.js';

const sim = new CarrierASimulator();
const runtime = new RecordingRuntime();
const tokens = new MediaTokens(TEST_SECRET_KEY);
let t: TestPlatform;
let f: Factories;
let serial = 0;

beforeAll(async () => {
  await sim.start();
  t = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { listen: true, callRuntime: runtime });
  f = new Factories(t);
});
afterAll(async () => {
  await sim.stop();
  await t.close();
});

interface StreamableCall {
  callId: number;
  callSid: string;
  /** The stream URL the answer markup gave, and the token it gave as a `<Parameter>`. */
  url: string;
  token: string;
  org: CarrierOrganization;
}

function nextCustomer(): string {
  serial += 1;
  return `+1415777${String(1000 + serial).padStart(4, '0')}`;
}

/** The stream URL and token of an answer markup, as the carrier reads them. */
function streamOf(markup: string): { url: string; token: string } {
  const url = /<Stream url="([^"]+)">/.exec(markup)?.[1];
  const token = /<Parameter name="token" value="([^"]+)"\/>/.exec(markup)?.[1];
  if (!url || !token) throw new Error(`No stream in ${markup}`);
  return { url, token };
}

/** A caller rings `org`'s number: the carrier asks our voice webhook and gets the stream to connect. */
async function inboundCall(org: CarrierOrganization): Promise<StreamableCall> {
  const rang = await sim.placeInboundCall({
    voiceUrl: `${t.baseUrl}/webhooks/carrier_a/voice`,
    accountSid: org.account.account_sid,
    from: nextCustomer(),
    to: org.number,
  });
  const answer = rang.answer!;
  expect(answer.status, answer.body).toBe(200);
  const { url, token } = streamOf(answer.body);
  return { callId: Number(new URL(url).pathname.split('/').pop()), callSid: rang.callSid, url, token, org };
}

function open(call: StreamableCall, options: { authToken?: string | null; url?: string } = {}) {
  const authToken =
    options.authToken === null ? undefined : (options.authToken ?? call.org.account.auth_token);
  return CarrierAStream.open(options.url ?? call.url, { authToken, signedUrl: options.url ?? call.url });
}

function start(
  stream: CarrierAStream,
  call: StreamableCall,
  parameters = { token: call.token },
  callSid = call.callSid,
) {
  stream.start({ callSid, accountSid: call.org.account.account_sid, customParameters: parameters });
}

/** The checks that refused streams since log line `since`, as the log says them. */
function refusals(since: number): string[] {
  return t.logs
    .slice(since)
    .map((line) => JSON.parse(line) as { msg?: string; reason?: string })
    .filter((line) => line.msg === 'media stream refused')
    .map((line) => line.reason ?? '');
}

/** The stream was closed with 1008, for the reason `why`, and nothing of it reached the runtime. */
async function expectRefused(stream: CarrierAStream, since: number, why: RegExp, callId?: number) {
  expect(await stream.closed).toEqual({ code: 1008, reason: REFUSED_REASON });
  expect(refusals(since)).toEqual([expect.stringMatching(why)]);
  if (callId !== undefined) expect(runtime.of(callId)).toEqual([]);
}

const frame = (byte: number) => Buffer.alloc(160, byte);

describe('a proven stream', () => {
  it('reaches the runtime with its start, then its events in order; the runtime speaks carrier_a back', async () => {
    const org = await f.carrierOrganization({ sim });
    const call = await inboundCall(org);
    const stream = await open(call);
    stream.connected();
    start(stream, call);
    stream.media(frame(1));
    stream.mark('greeting');
    stream.media(frame(2));
    stream.dtmf('5');
    stream.media(frame(3));

    const attached = await waitFor(() => runtime.of(call.callId)[0]);
    expect(attached.connection).toMatchObject({
      callId: call.callId,
      tenant: { organizationId: org.admin.organizationId },
      carrier: 'carrier_a',
      start: {
        streamId: stream.streamSid,
        callSid: call.callSid,
        accountId: org.account.account_sid,
        parameters: { token: call.token },
        format: MULAW_8K,
      },
    });
    await waitFor(() => attached.events.length >= 5);
    expect(attached.events).toEqual([
      { type: 'media', audio: frame(1), timestampMs: 0 },
      { type: 'mark', name: 'greeting' },
      { type: 'media', audio: frame(2), timestampMs: 20 },
      { type: 'dtmf', digit: '5' },
      { type: 'media', audio: frame(3), timestampMs: 40 },
    ]);

    // 400 bytes of audio go out as 20 ms frames of 160 bytes (the last one shorter), then the mark.
    const audio = Buffer.alloc(400);
    for (let i = 0; i < audio.length; i++) audio[i] = i % 256;
    attached.connection.send.media(audio);
    attached.connection.send.mark('said-hello');
    attached.connection.send.clear();
    await waitFor(() => stream.received.length >= 5);
    const sid = stream.streamSid;
    expect(stream.received).toEqual([
      { event: 'media', streamSid: sid, media: { payload: audio.subarray(0, 160).toString('base64') } },
      { event: 'media', streamSid: sid, media: { payload: audio.subarray(160, 320).toString('base64') } },
      { event: 'media', streamSid: sid, media: { payload: audio.subarray(320).toString('base64') } },
      { event: 'mark', streamSid: sid, mark: { name: 'said-hello' } },
      { event: 'clear', streamSid: sid },
    ]);

    // `stop` ends the stream for the runtime, once and last, and the socket closes normally.
    stream.stop(org.account.account_sid, call.callSid);
    expect((await stream.closed).code).toBe(1000);
    await waitFor(() => attached.events.at(-1)?.type === 'ended');
    expect(attached.events.slice(5)).toEqual([{ type: 'ended', reason: 'stop' }]);
    expect(runtime.of(call.callId)).toHaveLength(1);
    // The token never reaches the log.
    expect(t.logs.join('\n')).not.toContain(call.token);
  });

  it('ends with `closed` when the carrier closes the socket, and the call may stream again', async () => {
    const call = await inboundCall(await f.carrierOrganization({ sim }));
    const first = await open(call);
    start(first, call);
    const attached = await waitFor(() => runtime.of(call.callId)[0]);
    first.close();
    await waitFor(() => attached.events.at(-1)?.type === 'ended');
    expect(attached.events).toEqual([{ type: 'ended', reason: 'closed' }]);

    const again = await open(call);
    start(again, call);
    const reattached = await waitFor(() => runtime.of(call.callId)[1]);
    again.media(frame(9));
    await waitFor(() => reattached.events.length >= 1);
    expect(reattached.events).toEqual([{ type: 'media', audio: frame(9), timestampMs: 0 }]);
    again.close();
  });

  it('closes when the runtime closes it, and ends with `closed`', async () => {
    const call = await inboundCall(await f.carrierOrganization({ sim }));
    const stream = await open(call);
    start(stream, call);
    const attached = await waitFor(() => runtime.of(call.callId)[0]);
    attached.connection.send.close();
    expect((await stream.closed).code).toBe(1000);
    await waitFor(() => attached.events.at(-1)?.type === 'ended');
    expect(attached.events).toEqual([{ type: 'ended', reason: 'closed' }]);
  });

  it('closes with 1008 on a malformed message after start, and ends with `error`; later audio is dropped', async () => {
    const call = await inboundCall(await f.carrierOrganization({ sim }));
    const stream = await open(call);
    start(stream, call);
    const attached = await waitFor(() => runtime.of(call.callId)[0]);
    stream.media(frame(4));
    const since = t.logs.length;
    stream.raw('{"event":"media"');
    stream.media(frame(5));
    expect(await stream.closed).toEqual({ code: 1008, reason: REFUSED_REASON });
    expect(refusals(since)).toEqual([expect.stringMatching(/protocol error: not JSON/)]);
    await waitFor(() => attached.events.at(-1)?.type === 'ended');
    expect(attached.events).toEqual([
      { type: 'media', audio: frame(4), timestampMs: 0 },
      { type: 'ended', reason: 'error' },
    ]);
  });
});

describe('refused before any audio reaches the runtime', () => {
  let org: CarrierOrganization;
  let call: StreamableCall;
  beforeAll(async () => {
    org = await f.carrierOrganization({ sim });
    call = await inboundCall(org);
  });

  /** Opens a signed stream of `call` and starts it with `parameters`, then sends audio at once. */
  async function startWith(parameters: Record<string, string>, callSid = call.callSid) {
    const stream = await open(call);
    stream.connected();
    start(stream, call, parameters as { token: string }, callSid);
    stream.media(frame(1));
    return stream;
  }

  it('without a token', async () => {
    const since = t.logs.length;
    await expectRefused(await startWith({}), since, /without a token/, call.callId);
  });

  it('with a wrong token', async () => {
    const since = t.logs.length;
    await expectRefused(await startWith({ token: 'not-a-token' }), since, /not this call's/, call.callId);
  });

  it('with an expired token', async () => {
    const expired = await new MediaTokens(TEST_SECRET_KEY, -60).issue({
      callId: call.callId,
      organizationId: org.admin.organizationId,
    });
    const since = t.logs.length;
    await expectRefused(await startWith({ token: expired }), since, /not this call's/, call.callId);
  });

  it("with another call's token of the same organization", async () => {
    const other = await inboundCall(org);
    const since = t.logs.length;
    await expectRefused(await startWith({ token: other.token }), since, /not this call's/, call.callId);
    expect(runtime.of(other.callId)).toEqual([]);
  });

  it("with another organization's call token, or a token of this call for another organization", async () => {
    const otherOrg = await f.carrierOrganization({ sim });
    const other = await inboundCall(otherOrg);
    let since = t.logs.length;
    await expectRefused(await startWith({ token: other.token }), since, /not this call's/, call.callId);
    const forged = await tokens.issue({ callId: call.callId, organizationId: otherOrg.admin.organizationId });
    since = t.logs.length;
    await expectRefused(await startWith({ token: forged }), since, /not this call's/, call.callId);
  });

  it('with the token in the query string only', async () => {
    const since = t.logs.length;
    // The signature is right for the URL without its query: only the token is missing from `start`.
    const stream = await CarrierAStream.open(`${call.url}?token=${encodeURIComponent(call.token)}`, {
      authToken: org.account.auth_token,
      signedUrl: call.url,
    });
    start(stream, call, {} as { token: string });
    stream.media(frame(1));
    await expectRefused(stream, since, /without a token/, call.callId);
  });

  it('with a bad or absent signature', async () => {
    let since = t.logs.length;
    let stream = await open(call, { authToken: `${org.account.auth_token}-wrong` });
    start(stream, call);
    stream.media(frame(1));
    await expectRefused(stream, since, /signature/, call.callId);

    since = t.logs.length;
    stream = await open(call, { authToken: null });
    start(stream, call);
    stream.media(frame(1));
    await expectRefused(stream, since, /signature/, call.callId);

    // Signed for another call's URL.
    const other = await inboundCall(org);
    since = t.logs.length;
    stream = await CarrierAStream.open(call.url, { authToken: org.account.auth_token, signedUrl: other.url });
    start(stream, call);
    await expectRefused(stream, since, /signature/, call.callId);
  });

  it('for an unknown call id, and a path that names no call id', async () => {
    const base = call.url.replace(/\/media-stream\/\d+$/, '/media-stream/');
    for (const [id, why] of [
      ['2000000000', /no such call/],
      ['abc', /no call id/],
      ['0', /no call id/],
      ['99999999999', /no call id/],
    ] as const) {
      const since = t.logs.length;
      const stream = await open(call, { url: `${base}${id}` });
      start(stream, call);
      await expectRefused(stream, since, why);
    }
    expect(runtime.of(call.callId)).toEqual([]);
  });

  it('for audio before start', async () => {
    const since = t.logs.length;
    const stream = await open(call);
    stream.connected();
    stream.media(frame(1));
    start(stream, call);
    await expectRefused(stream, since, /media before a proven start/, call.callId);
  });

  it('for a malformed first message', async () => {
    const since = t.logs.length;
    const stream = await open(call);
    stream.raw('{"event": "start", ');
    await expectRefused(stream, since, /protocol error: not JSON/, call.callId);
  });

  it('for a start that names another carrier call', async () => {
    const since = t.logs.length;
    await expectRefused(
      await startWith({ token: call.token }, 'CA00000000000000000000000000000000'),
      since,
      /another carrier call/,
      call.callId,
    );
  });

  it('for a call that has ended', async () => {
    const to = nextCustomer();
    sim.setCallOutcome(to, { status: 'completed', durationSeconds: 3 });
    const placed = await t.app.inject({
      method: 'POST',
      url: '/calls/initiate',
      headers: org.admin.headers,
      payload: { from_phone_number: org.number, to_phone_number: to },
    });
    expect(placed.statusCode, placed.body).toBe(200);
    const { call_id: callId, call_sid: callSid } = placed.json();
    await sim.settle();
    const ended = { ...streamOf(sim.calls.get(callSid)!.answer!.body), callId, callSid, org };
    const since = t.logs.length;
    const stream = await open(ended);
    start(stream, ended);
    await expectRefused(stream, since, /has ended/, callId);
  });

  it('for a second stream of a call that has a live one; the live one goes on', async () => {
    const live = await inboundCall(org);
    const first = await open(live);
    start(first, live);
    const attached = await waitFor(() => runtime.of(live.callId)[0]);

    const since = t.logs.length;
    const second = await open(live);
    start(second, live);
    second.media(frame(2));
    expect(await second.closed).toEqual({ code: 1008, reason: REFUSED_REASON });
    expect(refusals(since)).toEqual([expect.stringMatching(/already has a live stream/)]);

    first.media(frame(3));
    await waitFor(() => attached.events.length >= 1);
    expect(attached.events).toEqual([{ type: 'media', audio: frame(3), timestampMs: 0 }]);
    expect(runtime.of(live.callId)).toHaveLength(1);
    first.close();
  });
});
