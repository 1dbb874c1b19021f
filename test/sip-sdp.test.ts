/**
 * SDP offer/answer for the SIP trunk (src/sip/sdp.ts) against offers written the way real trunks
 * write them — Asterisk, FreeSWITCH, sipp, a carrier's border controller — and the cases RFC 3264
 * names: the offerer's payload numbers and order, static types without a=rtpmap, rejected streams,
 * no common codec, direction and hold, IPv6, and our own offers read back from an answer.
 */
import { parse } from 'sdp-transform';
import { describe, expect, it } from 'vitest';
import {
  answerOffer,
  type LocalSdp,
  makeOffer,
  type NegotiatedMedia,
  newSessionId,
  nextVersion,
  type OfferAnswer,
  readAnswer,
} from '../src/sip/sdp.js';

const sdp = (...lines: string[]) => `${lines.join('\r\n')}\r\n`;

const LOCAL: LocalSdp = { address: '192.0.2.10', port: 40000, sessionId: '4242', version: 1 };

const ASTERISK = sdp(
  'v=0',
  'o=- 1748339405 1748339405 IN IP4 203.0.113.5',
  's=Asterisk',
  'c=IN IP4 203.0.113.5',
  't=0 0',
  'm=audio 17254 RTP/AVP 0 8 3 9 101',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:3 GSM/8000',
  'a=rtpmap:9 G722/8000',
  'a=rtpmap:101 telephone-event/8000',
  'a=fmtp:101 0-16',
  'a=ptime:20',
  'a=maxptime:150',
  'a=sendrecv',
);

/** FreeSWITCH prefers G.722, then A-law; it offers telephone-event at 48 kHz too (for Opus). */
const FREESWITCH = sdp(
  'v=0',
  'o=FreeSWITCH 1748312000 1748312001 IN IP4 198.51.100.20',
  's=FreeSWITCH',
  'c=IN IP4 198.51.100.20',
  't=0 0',
  'm=audio 24580 RTP/AVP 9 8 0 102 101 13',
  'a=rtpmap:9 G722/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:102 telephone-event/48000',
  'a=fmtp:102 0-16',
  'a=rtpmap:101 telephone-event/8000',
  'a=fmtp:101 0-16',
  'a=rtpmap:13 CN/8000',
  'a=ptime:20',
);

/** The SDP of the sipp scenarios (docs: sip-research §5), with their addresses filled in. */
const SIPP = sdp(
  'v=0',
  'o=trunk 1 1 IN IP4 127.0.0.1',
  's=-',
  'c=IN IP4 127.0.0.1',
  't=0 0',
  'm=audio 16000 RTP/AVP 0 8 101',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:101 telephone-event/8000',
  'a=fmtp:101 0-15',
  'a=ptime:20',
  'a=sendrecv',
);

/** A border controller: static PCMU without a=rtpmap, key events at 96, c= and direction elsewhere. */
const CARRIER_SBC = sdp(
  'v=0',
  'o=sbc 8271 8271 IN IP4 192.0.2.50',
  's=SBC',
  'c=IN IP4 192.0.2.50',
  't=0 0',
  'a=sendrecv',
  'm=audio 30000 RTP/AVP 0 96',
  'c=IN IP4 192.0.2.51',
  'a=rtpmap:96 telephone-event/8000',
  'a=fmtp:96 0-15',
  'a=rtcp:30011',
);

function accepted(result: OfferAnswer): { sdp: string; media: NegotiatedMedia } {
  if (!result.ok) throw new Error(`refused: ${result.refusal.reason} (${result.refusal.detail})`);
  return result;
}

describe('our offer', () => {
  it('is the SDP a trunk expects, PCMU then PCMA, key events at 101', () => {
    expect(makeOffer({ ...LOCAL, codecs: ['PCMU', 'PCMA'], telephoneEvent: 101, ptime: 20 })).toBe(
      sdp(
        'v=0',
        'o=- 4242 1 IN IP4 192.0.2.10',
        's=-',
        'c=IN IP4 192.0.2.10',
        't=0 0',
        'm=audio 40000 RTP/AVP 0 8 101',
        'a=rtpmap:0 PCMU/8000',
        'a=rtpmap:8 PCMA/8000',
        'a=rtpmap:101 telephone-event/8000',
        'a=fmtp:101 0-16',
        'a=ptime:20',
        'a=sendrecv',
      ),
    );
  });

  it('speaks IPv6, leaves key events out when asked, and refuses what cannot be written', () => {
    const offer = makeOffer({ ...LOCAL, address: '2001:db8::10', codecs: ['PCMA'], telephoneEvent: null });
    expect(offer).toContain('o=- 4242 1 IN IP6 2001:db8::10\r\n');
    expect(offer).toContain('c=IN IP6 2001:db8::10\r\n');
    expect(offer).toContain('m=audio 40000 RTP/AVP 8\r\n');
    expect(offer).not.toContain('telephone-event');
    expect(() => makeOffer({ ...LOCAL, address: 'pbx.example.com' })).toThrow(RangeError);
    expect(() => makeOffer({ ...LOCAL, telephoneEvent: 13 })).toThrow(/dynamic/);
    expect(() => makeOffer({ ...LOCAL, codecs: [] })).toThrow(RangeError);
    expect(() => makeOffer({ ...LOCAL, port: 0 })).toThrow(RangeError);
  });

  it('goes up one version per re-offer, in the same session (hold, then resume)', () => {
    const hold = nextVersion(LOCAL, { direction: 'sendonly' });
    const resume = nextVersion(hold, { direction: 'sendrecv' });
    expect(makeOffer(hold)).toContain('o=- 4242 2 IN IP4 192.0.2.10');
    expect(makeOffer(hold)).toContain('a=sendonly');
    expect(makeOffer(resume)).toContain('o=- 4242 3 IN IP4 192.0.2.10');
    expect(makeOffer(resume)).toContain('a=sendrecv');
    expect(LOCAL.version).toBe(1);
    expect(newSessionId()).toMatch(/^\d+$/);
  });
});

describe('answering an offer', () => {
  it('answers sipp with PCMU and its key events, in the offer’s numbers', () => {
    const { sdp: answer, media } = accepted(answerOffer(SIPP, LOCAL));
    expect(answer).toBe(
      sdp(
        'v=0',
        'o=- 4242 1 IN IP4 192.0.2.10',
        's=-',
        'c=IN IP4 192.0.2.10',
        't=0 0',
        'm=audio 40000 RTP/AVP 0 101',
        'a=rtpmap:0 PCMU/8000',
        'a=rtpmap:101 telephone-event/8000',
        'a=fmtp:101 0-16',
        'a=ptime:20',
        'a=sendrecv',
      ),
    );
    expect(media).toEqual({
      codec: 'PCMU',
      payloadType: 0,
      telephoneEventPayloadType: 101,
      receivePayloadTypes: { audio: 0, telephoneEvent: 101 },
      remoteAddress: '127.0.0.1',
      remotePort: 16000,
      remoteRtcpPort: 16001,
      ptime: 20,
      direction: 'sendrecv',
      hold: false,
    });
  });

  it('takes Asterisk’s first common codec and bounds nothing by its long maxptime', () => {
    const { media } = accepted(answerOffer(ASTERISK, LOCAL));
    expect(media).toMatchObject({ codec: 'PCMU', payloadType: 0, telephoneEventPayloadType: 101, ptime: 20 });
    expect(media).toMatchObject({ remoteAddress: '203.0.113.5', remotePort: 17254 });
  });

  it('follows the offerer’s order (A-law before μ-law) and keys at 8 kHz, not 48', () => {
    const { sdp: answer, media } = accepted(answerOffer(FREESWITCH, LOCAL));
    expect(media).toMatchObject({ codec: 'PCMA', payloadType: 8, telephoneEventPayloadType: 101 });
    expect(answer).toContain('m=audio 40000 RTP/AVP 8 101\r\n');
    expect(answer).not.toContain('102');
  });

  it('only picks a codec we speak, whatever the offerer prefers', () => {
    const { media } = accepted(answerOffer(ASTERISK, { ...LOCAL, codecs: ['PCMA'] }));
    expect(media).toMatchObject({ codec: 'PCMA', payloadType: 8 });
  });

  it('reads a static type without a=rtpmap, key events at 96, and the media-level address', () => {
    const { sdp: answer, media } = accepted(answerOffer(CARRIER_SBC, LOCAL));
    expect(media).toMatchObject({
      codec: 'PCMU',
      payloadType: 0,
      telephoneEventPayloadType: 96,
      receivePayloadTypes: { audio: 0, telephoneEvent: 96 },
      remoteAddress: '192.0.2.51',
      remotePort: 30000,
      remoteRtcpPort: 30011,
      direction: 'sendrecv',
    });
    expect(answer).toContain(
      'm=audio 40000 RTP/AVP 0 96\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:96 telephone-event/8000',
    );
    expect(answer).toContain('a=fmtp:96 0-16');
  });

  it('keeps a dynamic number the offer gives G.711', () => {
    const offer = SIPP.replace('RTP/AVP 0 8 101', 'RTP/AVP 110 101').replace('a=rtpmap:0', 'a=rtpmap:110');
    const { sdp: answer, media } = accepted(answerOffer(offer, LOCAL));
    expect(media).toMatchObject({ codec: 'PCMU', payloadType: 110 });
    expect(answer).toContain('a=rtpmap:110 PCMU/8000');
  });

  it('answers IPv6 offers', () => {
    const offer = sdp(
      'v=0',
      'o=- 77 77 IN IP6 2001:db8::5',
      's=-',
      'c=IN IP6 2001:db8::5',
      't=0 0',
      'm=audio 5004 RTP/AVP 8 0 101',
      'a=rtpmap:101 telephone-event/8000',
    );
    const { sdp: answer, media } = accepted(answerOffer(offer, { ...LOCAL, address: '2001:db8::10' }));
    expect(media).toMatchObject({ codec: 'PCMA', remoteAddress: '2001:db8::5', remotePort: 5004 });
    expect(answer).toContain('c=IN IP6 2001:db8::10\r\n');
  });

  it('honours the offerer’s packet time, within its maxptime', () => {
    const ptime30 = SIPP.replace('a=ptime:20', 'a=ptime:30');
    expect(accepted(answerOffer(ptime30, LOCAL)).media.ptime).toBe(30);
    const bounded = SIPP.replace('a=ptime:20', 'a=ptime:30\r\na=maxptime:20');
    expect(accepted(answerOffer(bounded, LOCAL)).media.ptime).toBe(20);
    const nonsense = SIPP.replace('a=ptime:20', 'a=ptime:0');
    expect(accepted(answerOffer(nonsense, LOCAL)).media.ptime).toBe(20);
  });

  it('leaves key events out of the answer when we take none', () => {
    const { sdp: answer, media } = accepted(answerOffer(SIPP, { ...LOCAL, telephoneEvent: null }));
    expect(media.telephoneEventPayloadType).toBeNull();
    expect(answer).toContain('m=audio 40000 RTP/AVP 0\r\n');
    expect(answer).not.toContain('telephone-event');
  });

  it('rejects the streams it does not take with port 0, one m= line per offered one', () => {
    const offer = sdp(
      'v=0',
      'o=- 1 1 IN IP4 192.0.2.60',
      's=-',
      'c=IN IP4 192.0.2.60',
      't=0 0',
      'm=audio 7000 RTP/AVP 18',
      'a=rtpmap:18 G729/8000',
      'm=video 7002 RTP/AVP 96',
      'a=rtpmap:96 H264/90000',
      'm=audio 7004 RTP/AVP 0 101',
      'a=rtpmap:101 telephone-event/8000',
    );
    const { sdp: answer, media } = accepted(answerOffer(offer, LOCAL));
    expect(media).toMatchObject({ codec: 'PCMU', remotePort: 7004 });
    const streams = parse(answer).media;
    expect(streams.map((s) => [s.type, s.port, String(s.payloads)])).toEqual([
      ['audio', 0, '18'],
      ['video', 0, '96'],
      ['audio', 40000, '0 101'],
    ]);
  });

  it('refuses with 488 when no codec is common', () => {
    const g729only = sdp(
      'v=0',
      'o=- 1 1 IN IP4 192.0.2.60',
      's=-',
      'c=IN IP4 192.0.2.60',
      't=0 0',
      'm=audio 7000 RTP/AVP 18 9 101',
      'a=rtpmap:18 G729/8000',
      'a=rtpmap:9 G722/8000',
      'a=rtpmap:101 telephone-event/8000',
    );
    expect(answerOffer(g729only, LOCAL)).toEqual({
      ok: false,
      refusal: { reason: 'no-common-codec', status: 488, detail: expect.stringContaining('PCMU') },
    });
    // A codec named PCMU at another rate or with two channels is not the one we speak.
    const oddPcmu = g729only
      .replace('RTP/AVP 18 9 101', 'RTP/AVP 97 98')
      .replace(
        'a=rtpmap:18 G729/8000\r\na=rtpmap:9 G722/8000',
        'a=rtpmap:97 PCMU/16000\r\na=rtpmap:98 PCMU/8000/2',
      );
    expect(answerOffer(oddPcmu, LOCAL)).toMatchObject({ ok: false, refusal: { reason: 'no-common-codec' } });
  });

  it('refuses with 488 when no audio stream can be used, and with 400 what is not SDP', () => {
    const srtpOnly = SIPP.replace('RTP/AVP', 'RTP/SAVP');
    expect(answerOffer(srtpOnly, LOCAL)).toMatchObject({
      ok: false,
      refusal: { reason: 'no-audio', status: 488 },
    });
    const portZero = SIPP.replace('m=audio 16000', 'm=audio 0');
    expect(answerOffer(portZero, LOCAL)).toMatchObject({
      ok: false,
      refusal: { reason: 'no-audio', status: 488 },
    });
    const noConnection = SIPP.replace('c=IN IP4 127.0.0.1\r\n', '');
    expect(answerOffer(noConnection, LOCAL)).toMatchObject({ ok: false, refusal: { status: 400 } });
    for (const garbage of ['', 'hello', 'INVITE sip:a@b SIP/2.0', 'v=0\r\nm=audio x RTP/AVP 0\r\n']) {
      expect(answerOffer(garbage, LOCAL)).toMatchObject({ ok: false });
    }
    expect(answerOffer('INVITE sip:a@b SIP/2.0', LOCAL)).toMatchObject({
      refusal: { reason: 'malformed', status: 400 },
    });
  });

  describe('hold', () => {
    it('answers a=sendonly with recvonly, and sends nothing', () => {
      const { sdp: answer, media } = accepted(answerOffer(SIPP.replace('a=sendrecv', 'a=sendonly'), LOCAL));
      expect(answer).toContain('a=recvonly');
      expect(media).toMatchObject({ direction: 'recvonly', hold: true });
    });

    it('answers a=inactive with inactive', () => {
      const { sdp: answer, media } = accepted(answerOffer(SIPP.replace('a=sendrecv', 'a=inactive'), LOCAL));
      expect(answer).toContain('a=inactive');
      expect(media).toMatchObject({ direction: 'inactive', hold: true });
    });

    it('sends nothing to 0.0.0.0 (RFC 2543 hold), still receiving', () => {
      const held = SIPP.replace('c=IN IP4 127.0.0.1', 'c=IN IP4 0.0.0.0');
      const { sdp: answer, media } = accepted(answerOffer(held, LOCAL));
      expect(answer).toContain('a=sendrecv');
      expect(media).toMatchObject({ remoteAddress: '0.0.0.0', direction: 'recvonly', hold: true });
    });

    it('answers a=recvonly with sendonly: the far end only listens', () => {
      const { media } = accepted(answerOffer(SIPP.replace('a=sendrecv', 'a=recvonly'), LOCAL));
      expect(media).toMatchObject({ direction: 'sendonly', hold: false });
    });

    it('holds the far end when we answer a resumed stream sendonly', () => {
      const { sdp: answer, media } = accepted(answerOffer(SIPP, { ...LOCAL, direction: 'sendonly' }));
      expect(answer).toContain('a=sendonly');
      expect(media).toMatchObject({ direction: 'sendonly', hold: false });
    });
  });
});

describe('reading the answer to our offer', () => {
  const offered: LocalSdp = { ...LOCAL, codecs: ['PCMU', 'PCMA'], telephoneEvent: 101 };

  it('agrees with the answer we would give ourselves', () => {
    const answer = accepted(
      answerOffer(makeOffer(offered), { ...LOCAL, address: '192.0.2.99', port: 50000 }),
    );
    const reading = readAnswer(answer.sdp, offered);
    expect(reading).toEqual({
      ok: true,
      media: {
        codec: 'PCMU',
        payloadType: 0,
        telephoneEventPayloadType: 101,
        receivePayloadTypes: { audio: 0, telephoneEvent: 101 },
        remoteAddress: '192.0.2.99',
        remotePort: 50000,
        remoteRtcpPort: 50001,
        ptime: 20,
        direction: 'sendrecv',
        hold: false,
      },
    });
  });

  it('takes the answerer’s codec, and its own number for key events when it renumbers them', () => {
    const answer = sdp(
      'v=0',
      'o=FreeSWITCH 1 2 IN IP4 198.51.100.20',
      's=FreeSWITCH',
      'c=IN IP4 198.51.100.20',
      't=0 0',
      'm=audio 24580 RTP/AVP 8 96',
      'a=rtpmap:8 PCMA/8000',
      'a=rtpmap:96 telephone-event/8000',
      'a=fmtp:96 0-16',
      'a=ptime:20',
    );
    expect(readAnswer(answer, offered)).toMatchObject({
      ok: true,
      media: {
        codec: 'PCMA',
        payloadType: 8,
        telephoneEventPayloadType: 96,
        receivePayloadTypes: { audio: 8, telephoneEvent: 101 },
        remoteAddress: '198.51.100.20',
      },
    });
  });

  it('turns a rejected stream, a codec we did not offer, or no SDP into a refusal', () => {
    const rejected = SIPP.replace('m=audio 16000', 'm=audio 0');
    expect(readAnswer(rejected, offered)).toMatchObject({ ok: false, refusal: { reason: 'rejected' } });
    const g729 = SIPP.replace('RTP/AVP 0 8 101', 'RTP/AVP 18').replace(
      'a=rtpmap:0 PCMU/8000',
      'a=rtpmap:18 G729/8000',
    );
    expect(readAnswer(g729, offered)).toMatchObject({ ok: false, refusal: { reason: 'no-common-codec' } });
    const pcmaOnly = { ...offered, codecs: ['PCMA'] as const };
    expect(readAnswer(SIPP.replace('RTP/AVP 0 8 101', 'RTP/AVP 0 101'), pcmaOnly)).toMatchObject({
      ok: false,
      refusal: { reason: 'no-common-codec' },
    });
    expect(readAnswer('', offered)).toMatchObject({ ok: false, refusal: { reason: 'malformed' } });
  });

  it('ignores key events the answer offers when we offered none', () => {
    const reading = readAnswer(SIPP, { ...offered, telephoneEvent: null });
    expect(reading).toMatchObject({ ok: true, media: { telephoneEventPayloadType: null } });
  });

  it('sees the far end hold us in its answer, and our own hold in what we offered', () => {
    expect(readAnswer(SIPP.replace('a=sendrecv', 'a=sendonly'), offered)).toMatchObject({
      media: { direction: 'recvonly', hold: true },
    });
    const ourHold = nextVersion(offered, { direction: 'sendonly' });
    expect(readAnswer(SIPP.replace('a=sendrecv', 'a=recvonly'), ourHold)).toMatchObject({
      media: { direction: 'sendonly', hold: false },
    });
  });
});
