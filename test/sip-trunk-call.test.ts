/**
 * One SIP trunk call on the platform's side (voice/sip/trunk-call.ts), between a real RTP peer (an
 * RtpSession on loopback, as the trunk) and a recording stand-in for the voice runtime: audio, marks
 * and keys both ways, the statuses it reports (with the SIP status kept on a failure), and that it
 * ends once, whichever side ends it, giving its ports back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { type MediaPorts, PortRange } from '../src/sip/port-range.js';
import { RtpSession } from '../src/sip/rtp-session.js';
import type { NegotiatedMedia } from '../src/sip/sdp.js';
import { TrunkCall } from '../src/voice/sip/trunk-call.js';
import type { CallStatusEvent } from '../src/voice/sip/types.js';
import type { MediaConnection, MediaHandlers } from '../src/voice/transport.js';
import { waitFor } from './support/harness.js';

const HOST = '127.0.0.1';
const BASE = 20000 + 2 * Math.floor(Math.random() * 15000);
const range = new PortRange({ min: BASE, max: BASE + 31, host: HOST });
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const media = (port: number): NegotiatedMedia => ({
  codec: 'PCMU',
  payloadType: 0,
  telephoneEventPayloadType: 101,
  receivePayloadTypes: { audio: 0, telephoneEvent: 101 },
  remoteAddress: HOST,
  remotePort: port,
  remoteRtcpPort: port + 1,
  ptime: 20,
  direction: 'sendrecv',
  hold: false,
});

interface Rig {
  call: TrunkCall;
  trunk: RtpSession;
  trunkHeard: { audio: number; digits: string[] };
  connection: () => MediaConnection | undefined;
  runtime: { frames: number; loud: number; digits: string[]; marks: string[]; ended: string[] };
  reports: CallStatusEvent[];
  legHangUps: number;
  released: MediaPorts[];
  /** The trunk's RTP port: where the call sends. */
  trunkPort: number;
}

async function rig(): Promise<Rig> {
  const ours = await range.allocate();
  const theirs = await range.allocate();
  const state = {
    runtime: { frames: 0, loud: 0, digits: [] as string[], marks: [] as string[], ended: [] as string[] },
    reports: [] as CallStatusEvent[],
    legHangUps: 0,
    released: [] as MediaPorts[],
    trunkHeard: { audio: 0, digits: [] as string[] },
  };
  let connection: MediaConnection | undefined;
  const call = new TrunkCall({
    tenant: new Tenant(5),
    callId: 42,
    callSid: 'call-42@test',
    direction: 'outbound',
    number: '+14155550100',
    mediaSources: [],
    ports: ours,
    releasePorts: async (held) => {
      state.released.push(held);
      await range.release(held);
    },
    runtime: {
      attach(attached): MediaHandlers {
        connection = attached;
        return {
          media: (audio) => {
            state.runtime.frames += 1;
            if (audio.some((byte) => byte !== 0xff && byte !== 0x7f)) state.runtime.loud += 1;
          },
          mark: (name) => state.runtime.marks.push(name),
          dtmf: (digit) => state.runtime.digits.push(digit),
          ended: (reason) => state.runtime.ended.push(reason),
        };
      },
    },
    report: async (event) => {
      state.reports.push(event);
    },
    log: { warn: () => {} },
    onEnded: () => {},
  });
  call.leg = {
    hangUp: () => {
      state.legHangUps += 1;
    },
    refer: async () => 202,
  };
  const trunk = new RtpSession({
    sockets: theirs,
    media: media(ours.port),
    onAudio: (frame) => {
      if (frame.some((byte) => byte !== 0xff && byte !== 0x7f)) state.trunkHeard.audio += 1;
    },
    onDigit: (key) => state.trunkHeard.digits.push(key),
  });
  cleanups.push(
    () => range.release(theirs),
    () => trunk.close(),
    () => call.hangUp(),
  );
  return Object.assign(state, { call, trunk, connection: () => connection, trunkPort: theirs.port }) as Rig;
}

const tone = (ms: number) => new Uint8Array((ms / 1000) * 8000).map((_, i) => (i % 16 < 8 ? 0x10 : 0x90));

describe('a SIP trunk call', () => {
  it('rings, then carries audio, marks and keys both ways once answered', async () => {
    const r = await rig();
    r.call.ringing();
    r.call.ringing();
    r.call.answered(media(r.trunkPort));
    await waitFor(() => r.connection());
    const connection = r.connection()!;
    expect(connection).toMatchObject({
      callId: 42,
      carrier: 'sip_trunk',
      start: { callSid: 'call-42@test' },
    });
    expect(connection.start.format).toEqual({ encoding: 'mulaw', sampleRate: 8000 });
    // The trunk talks: the runtime hears 20 ms frames, some of them loud; a key press reaches it once.
    r.trunk.media(tone(400));
    r.trunk.sendDigit('5');
    await waitFor(() => (r.runtime.loud >= 10 && r.runtime.digits.length === 1 ? true : undefined), 5000);
    expect(r.runtime.digits).toEqual(['5']);
    // The runtime talks: the trunk hears it, and the mark comes back once the audio has gone.
    connection.send.media(tone(200));
    connection.send.mark('after-tone');
    await waitFor(() => (r.runtime.marks.includes('after-tone') ? true : undefined), 5000);
    await waitFor(() => (r.trunkHeard.audio >= 5 ? true : undefined), 5000);
    // Keys out (send_digits): RFC 4733 events, `w` a half-second pause.
    const started = Date.now();
    await r.call.sendDigits('1w#');
    await waitFor(() => (r.trunkHeard.digits.length === 2 ? true : undefined), 5000);
    expect(r.trunkHeard.digits).toEqual(['1', '#']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(r.reports.map((report) => report.status)).toEqual(['ringing', 'in-progress']);
  });

  it('ends once when the trunk hangs up: the runtime hears the stop, the call completes, the ports go back', async () => {
    const r = await rig();
    r.call.answered(media(r.trunkPort));
    await waitFor(() => r.connection());
    r.call.ended('remote');
    r.call.ended('remote');
    r.call.hangUp();
    await waitFor(() => (r.released.length === 1 && r.reports.length === 2 ? true : undefined));
    expect(r.runtime.ended).toEqual(['stop']);
    expect(r.reports.map((report) => report.status)).toEqual(['in-progress', 'completed']);
    expect(r.reports[1]!.durationSeconds).toBeGreaterThanOrEqual(1);
    expect(r.legHangUps).toBe(0);
  });

  it('hangs up with a BYE when the runtime closes the stream', async () => {
    const r = await rig();
    r.call.answered(media(r.trunkPort));
    await waitFor(() => r.connection());
    r.connection()!.send.close();
    await waitFor(() => (r.released.length === 1 && r.reports.length === 2 ? true : undefined));
    expect(r.legHangUps).toBe(1);
    expect(r.runtime.ended).toEqual(['closed']);
    expect(r.reports.at(-1)?.status).toBe('completed');
  });

  it('keeps the SIP status of a failure, and ends canceled when hung up before the answer', async () => {
    const busy = await rig();
    busy.call.failed({ status: 486, reason: 'Busy Here' });
    await waitFor(() => (busy.released.length === 1 && busy.reports.length === 1 ? true : undefined));
    expect(busy.reports).toEqual([
      expect.objectContaining({
        status: 'busy',
        durationSeconds: 0,
        sip: { status: 486, reason: 'Busy Here' },
      }),
    ]);
    expect(busy.connection()).toBeUndefined();

    const cancelled = await rig();
    cancelled.call.ringing();
    cancelled.call.hangUp();
    expect(cancelled.legHangUps).toBe(1);
    // The trunk answers the CANCEL's INVITE with 487.
    cancelled.call.failed({ status: 487, reason: 'Request Terminated' });
    await waitFor(() =>
      cancelled.released.length === 1 && cancelled.reports.length === 2 ? true : undefined,
    );
    expect(cancelled.reports.map((report) => report.status)).toEqual(['ringing', 'canceled']);
  });
});
