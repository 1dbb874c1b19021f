/**
 * SDP offer/answer for a call's one audio stream over a SIP trunk (RFC 3264 on the RFC 4566 syntax).
 * `sdp-transform` reads and writes the lines; this module makes the decisions it leaves to us: which
 * G.711 codec the call uses and under which payload numbers, whether RFC 4733 key events are on,
 * where RTP goes, in which direction, and at what packet time.
 *
 * The rules that matter with real trunks:
 * - an answer uses the offerer's payload numbers (telephone-event is dynamic: 101 is usual, 96 is
 *   common, nothing is guaranteed), and picks the first common codec in the offerer's order;
 * - payload types 0 and 8 are static (RFC 3551): an offer may list them without an a=rtpmap;
 * - an answer has one m= line per offered one, in order: the streams we do not take (video, a second
 *   audio stream, encrypted RTP) are rejected with port 0;
 * - direction is inverted (their sendonly is our recvonly); a far end that puts us on hold says
 *   sendonly or inactive, or, in the RFC 2543 way, gives 0.0.0.0 as its address: we then send nothing;
 * - c= may be at the session or the media level, the media level wins;
 * - every changed SDP a side sends in a dialog carries the same o= session id and a version one higher.
 * A refusal is a value, not an exception: the user agent answers it with its status (488 when no
 * stream can be used, 400 when the body is not SDP).
 */
import { randomInt } from 'node:crypto';
import { isIP } from 'node:net';
import { type MediaDescription, parse, parsePayloads, type SessionDescription, write } from 'sdp-transform';

export type G711Codec = 'PCMU' | 'PCMA';
export type MediaDirection = 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';

/** The static payload types of RFC 3551 §6 for the codecs we speak. */
export const G711_PAYLOAD_TYPES: Readonly<Record<G711Codec, number>> = { PCMU: 0, PCMA: 8 };

/** The events we announce: the 16 keys and flash (RFC 4733 §3.2). */
const TELEPHONE_EVENTS = '0-16';
const DEFAULT_PTIME_MS = 20;
/** Packet times outside this range are treated as absent (a typo must not stall the pacer). */
const MIN_PTIME_MS = 10;
const MAX_PTIME_MS = 200;

/** Our side of a session: what we offer, or what we are ready to accept when answering. */
export interface LocalSdp {
  /** Our media address (IPv4 or IPv6), written in o= and c=. */
  address: string;
  /** Our RTP port; RTCP is on the next one. */
  port: number;
  /** The o= session id: digits, the same for the whole dialog (`newSessionId`). */
  sessionId: string;
  /** The o= version: one higher on every changed SDP we send in the dialog (`nextVersion`). */
  version: number;
  /** The codecs we speak, in our order of preference (an offer lists them so). Default PCMU, PCMA. */
  codecs?: readonly G711Codec[];
  /**
   * The payload type we offer telephone-event under (default 101); null: no RFC 4733 key events. An
   * answer takes the offerer's number whatever this says, unless it is null.
   */
  telephoneEvent?: number | null;
  /** The packet time we ask to receive, ms (default 20). */
  ptime?: number;
  /** What we want to do (default sendrecv; sendonly or inactive put the far end on hold). */
  direction?: MediaDirection;
  /** The o= user name (default "-"). */
  username?: string;
}

/** What a call's media uses once offer and answer agree. */
export interface NegotiatedMedia {
  codec: G711Codec;
  /** The payload type we send audio with (the far end's number for the codec). */
  payloadType: number;
  /** The payload type we send key events with, or null when the far end takes none. */
  telephoneEventPayloadType: number | null;
  /**
   * The payload types the far end sends us: ours (RFC 3264 §5.1: the numbers in an SDP are what its
   * sender receives). Equal to the two above unless an answer renumbered the codecs.
   */
  receivePayloadTypes: { audio: number; telephoneEvent: number | null };
  /** Where RTP goes; 0.0.0.0 (or ::) when the far end holds the call the RFC 2543 way. */
  remoteAddress: string;
  remotePort: number;
  /** Where RTCP goes: a=rtcp when given (RFC 3605), else the RTP port plus one. */
  remoteRtcpPort: number;
  /** The packet time to send with, ms: the far end's a=ptime (bounded by its a=maxptime), else 20. */
  ptime: number;
  /** What we may do on the stream now: send only if the far end receives, receive only if it sends. */
  direction: MediaDirection;
  /** The far end asks for no audio from us (a=sendonly, a=inactive or the 0.0.0.0 address). */
  hold: boolean;
}

export type SdpRefusalReason =
  /** The body is not SDP we can read. */
  | 'malformed'
  /** No usable audio stream: none offered, all with port 0, or only encrypted or other transports. */
  | 'no-audio'
  /** An audio stream, but no G.711 codec we speak. */
  | 'no-common-codec'
  /** (An answer) the far end rejected our audio stream with port 0. */
  | 'rejected';

export interface SdpRefusal {
  reason: SdpRefusalReason;
  /** The SIP status that refuses the offer: 400 for malformed, else 488 Not Acceptable Here. */
  status: 400 | 488;
  detail: string;
}

export type OfferAnswer =
  | { ok: true; sdp: string; media: NegotiatedMedia }
  | { ok: false; refusal: SdpRefusal };
export type AnswerReading = { ok: true; media: NegotiatedMedia } | { ok: false; refusal: SdpRefusal };

/** A fresh o= session id (RFC 4566 §5.2 suggests an NTP-like number; any unique digits do). */
export function newSessionId(): string {
  return String(randomInt(1, 2 ** 47));
}

/** The same side for the next SDP of the dialog (a re-offer, a new answer): the version one higher. */
export function nextVersion(local: LocalSdp, changes: Partial<Omit<LocalSdp, 'sessionId'>> = {}): LocalSdp {
  return { ...local, ...changes, version: local.version + 1 };
}

/** Our offer: one audio stream with our codecs, telephone-event, our ptime and direction. */
export function makeOffer(local: LocalSdp): string {
  const codecs = local.codecs ?? ['PCMU', 'PCMA'];
  if (codecs.length === 0) throw new RangeError('an SDP offer needs at least one codec');
  const telephoneEvent = local.telephoneEvent === undefined ? 101 : local.telephoneEvent;
  if (telephoneEvent !== null && !isDynamicPayloadType(telephoneEvent)) {
    throw new RangeError(`telephone-event needs a dynamic payload type (96-127), not ${telephoneEvent}`);
  }
  const payloads = codecs.map((codec) => ({ payloadType: G711_PAYLOAD_TYPES[codec], codec }));
  return describe(local, payloads, telephoneEvent, local.direction ?? 'sendrecv');
}

/** Our answer to the far end's offer, or the refusal to send instead. */
export function answerOffer(offerText: string, local: LocalSdp): OfferAnswer {
  const offer = readSdp(offerText);
  if ('reason' in offer) return { ok: false, refusal: offer };
  const supported = local.codecs ?? ['PCMU', 'PCMA'];
  let chosen: { index: number; audio: StreamChoice } | undefined;
  let sawAudio = false;
  for (const [index, stream] of offer.media.entries()) {
    if (!isUsableAudio(stream)) continue;
    sawAudio = true;
    const audio = chooseCodec(stream, supported);
    if (audio) {
      chosen = { index, audio };
      break;
    }
  }
  if (!chosen) {
    return sawAudio
      ? refuse('no-common-codec', `no offered audio codec is one of ${supported.join(', ')}`)
      : refuse('no-audio', 'no RTP/AVP audio stream with a port was offered');
  }
  const stream = offer.media[chosen.index]!;
  const remote = remoteEndpoint(offer, stream);
  if (!remote) return refuse('malformed', 'the audio stream has no connection address (c=)');
  const telephoneEvent = local.telephoneEvent === null ? null : telephoneEventOf(stream);
  const theirs = streamDirection(offer, stream);
  const ours = local.direction ?? 'sendrecv';
  // RFC 3264 §6.1: we send only if they receive, and receive only if they send.
  const answered = directionOf(canReceive(theirs) && canSend(ours), canSend(theirs) && canReceive(ours));
  const payloads = [{ payloadType: chosen.audio.payloadType, codec: chosen.audio.codec }];
  const sdp = describe(local, payloads, telephoneEvent, answered, (accepted) =>
    offer.media.map((offered, index) => (index === chosen.index ? accepted : rejectedStream(offered))),
  );
  // Our answer uses the offerer's numbers, so both directions use the same ones.
  const received = { payloadType: chosen.audio.payloadType, telephoneEvent };
  const media = negotiated(chosen.audio, telephoneEvent, received, remote, {
    stream,
    theirs,
    declared: answered,
  });
  return { ok: true, sdp, media };
}

/** The media of an outbound call, from the far end's answer to the offer we made of `offered`. */
export function readAnswer(answerText: string, offered: LocalSdp): AnswerReading {
  const answer = readSdp(answerText);
  if ('reason' in answer) return { ok: false, refusal: answer };
  // We offer one stream, so the answer's first m= line is its answer (RFC 3264 §6: same order).
  const stream = answer.media[0]!;
  if (stream.type !== 'audio')
    return refuse('malformed', 'the answer does not answer our audio stream first');
  if (stream.port === 0) return refuse('rejected', 'the far end rejected the audio stream (port 0)');
  if (!isUsableAudio(stream)) return refuse('no-audio', `the answer uses ${stream.protocol}, not RTP/AVP`);
  const ourCodecs = offered.codecs ?? ['PCMU', 'PCMA'];
  const audio = chooseCodec(stream, ourCodecs);
  if (!audio) return refuse('no-common-codec', 'the answer names no codec we offered');
  const remote = remoteEndpoint(answer, stream);
  if (!remote) return refuse('malformed', 'the answer has no connection address (c=)');
  const ourTelephoneEvent = offered.telephoneEvent === undefined ? 101 : offered.telephoneEvent;
  const theirTelephoneEvent = ourTelephoneEvent === null ? null : telephoneEventOf(stream);
  const ours = offered.direction ?? 'sendrecv';
  const theirs = streamDirection(answer, stream);
  const declared = directionOf(canSend(ours) && canReceive(theirs), canReceive(ours) && canSend(theirs));
  const received = {
    payloadType: G711_PAYLOAD_TYPES[audio.codec],
    telephoneEvent: theirTelephoneEvent === null ? null : ourTelephoneEvent,
  };
  return {
    ok: true,
    media: negotiated(audio, theirTelephoneEvent, received, remote, { stream, theirs, declared }),
  };
}

// --- reading ------------------------------------------------------------------------------------

interface StreamChoice {
  codec: G711Codec;
  payloadType: number;
}

function refuse(reason: SdpRefusalReason, detail: string): { ok: false; refusal: SdpRefusal } {
  return { ok: false, refusal: { reason, status: reason === 'malformed' ? 400 : 488, detail } };
}

/** Parsed SDP whose every m= line has a type, a port and a transport, or the refusal of it. */
function readSdp(text: string): SessionDescription | SdpRefusal {
  let sdp: SessionDescription;
  try {
    sdp = parse(text);
  } catch {
    return refuse('malformed', 'the body is not SDP').refusal;
  }
  if (sdp.version !== 0) return refuse('malformed', 'the body is not SDP (no v=0)').refusal;
  if (sdp.media.length === 0) return refuse('no-audio', 'the SDP has no media stream').refusal;
  const broken = sdp.media.findIndex(
    (stream) => typeof stream.type !== 'string' || !Number.isInteger(stream.port) || !stream.protocol,
  );
  if (broken >= 0) return refuse('malformed', `m= line ${broken + 1} cannot be read`).refusal;
  return sdp;
}

function isUsableAudio(stream: MediaDescription): boolean {
  return stream.type === 'audio' && stream.port > 0 && stream.protocol.toUpperCase() === 'RTP/AVP';
}

/** The payload types an m= line lists, in its order (sdp-transform gives a number when only one). */
function payloadTypesOf(stream: MediaDescription): number[] {
  return parsePayloads(String(stream.payloads ?? '')).filter((pt) => Number.isInteger(pt));
}

/** The G.711 codec a payload type stands for in this stream: its a=rtpmap, else the static type. */
function codecOf(stream: MediaDescription, payloadType: number): G711Codec | undefined {
  const map = stream.rtp.find((entry) => entry.payload === payloadType);
  if (!map) return payloadType === 0 ? 'PCMU' : payloadType === 8 ? 'PCMA' : undefined;
  const name = map.codec.toUpperCase();
  const mono = map.encoding === undefined || map.encoding === 1;
  if ((name === 'PCMU' || name === 'PCMA') && map.rate === 8000 && mono) return name;
  return undefined;
}

/** The first payload type of the stream, in its order, whose codec is one of `codecs`. */
function chooseCodec(stream: MediaDescription, codecs: readonly G711Codec[]): StreamChoice | undefined {
  for (const payloadType of payloadTypesOf(stream)) {
    const codec = codecOf(stream, payloadType);
    if (codec && codecs.includes(codec)) return { codec, payloadType };
  }
  return undefined;
}

/** The stream's telephone-event payload type at 8 kHz (the audio clock), or null. */
function telephoneEventOf(stream: MediaDescription): number | null {
  const listed = new Set(payloadTypesOf(stream));
  const entry = stream.rtp.find(
    (map) => listed.has(map.payload) && map.codec.toLowerCase() === 'telephone-event' && map.rate === 8000,
  );
  return entry ? entry.payload : null;
}

function streamDirection(sdp: SessionDescription, stream: MediaDescription): MediaDirection {
  return stream.direction ?? sdp.direction ?? 'sendrecv';
}

/** The stream's RTP and RTCP address and ports (media-level c= wins over the session's). */
function remoteEndpoint(
  sdp: SessionDescription,
  stream: MediaDescription,
): { address: string; port: number; rtcpPort: number } | undefined {
  const connection = stream.connection ?? sdp.connection;
  if (!connection?.ip) return undefined;
  // A multicast address carries /ttl (and /count); the address is what comes before.
  const address = connection.ip.split('/')[0]!;
  if (isIP(address) === 0) return undefined;
  const rtcpPort = stream.rtcp && Number.isInteger(stream.rtcp.port) ? stream.rtcp.port : stream.port + 1;
  return { address, port: stream.port, rtcpPort };
}

/** The packet time the far end wants to receive: a=ptime, no more than a=maxptime, else 20 ms. */
function ptimeOf(stream: MediaDescription): number {
  const valid = (ms: unknown): ms is number =>
    typeof ms === 'number' && Number.isInteger(ms) && ms >= MIN_PTIME_MS && ms <= MAX_PTIME_MS;
  const ptime = valid(stream.ptime) ? stream.ptime : DEFAULT_PTIME_MS;
  return valid(stream.maxptime) && stream.maxptime < ptime ? stream.maxptime : ptime;
}

function isNullAddress(address: string): boolean {
  return address === '0.0.0.0' || address === '::';
}

function negotiated(
  audio: StreamChoice,
  telephoneEvent: number | null,
  received: { payloadType: number; telephoneEvent: number | null },
  remote: { address: string; port: number; rtcpPort: number },
  /** The far end's stream and direction, and the direction the two SDPs leave us. */
  far: { stream: MediaDescription; theirs: MediaDirection; declared: MediaDirection },
): NegotiatedMedia {
  // RFC 3264 §8.4: a 0.0.0.0 address means no RTP or RTCP is to be sent to it, whatever a= says.
  const heldByAddress = isNullAddress(remote.address);
  const direction = heldByAddress ? directionOf(false, canReceive(far.declared)) : far.declared;
  return {
    codec: audio.codec,
    payloadType: audio.payloadType,
    telephoneEventPayloadType: telephoneEvent,
    receivePayloadTypes: { audio: received.payloadType, telephoneEvent: received.telephoneEvent },
    remoteAddress: remote.address,
    remotePort: remote.port,
    remoteRtcpPort: remote.rtcpPort,
    ptime: ptimeOf(far.stream),
    direction,
    hold: heldByAddress || !canReceive(far.theirs),
  };
}

// --- directions ---------------------------------------------------------------------------------

function canSend(direction: MediaDirection): boolean {
  return direction === 'sendrecv' || direction === 'sendonly';
}

function canReceive(direction: MediaDirection): boolean {
  return direction === 'sendrecv' || direction === 'recvonly';
}

function directionOf(send: boolean, receive: boolean): MediaDirection {
  if (send && receive) return 'sendrecv';
  if (send) return 'sendonly';
  return receive ? 'recvonly' : 'inactive';
}

// --- writing ------------------------------------------------------------------------------------

function isDynamicPayloadType(payloadType: number): boolean {
  return Number.isInteger(payloadType) && payloadType >= 96 && payloadType <= 127;
}

/** Our SDP: session lines, then our audio stream (placed among rejected ones by `arrange`). */
function describe(
  local: LocalSdp,
  payloads: StreamChoice[],
  telephoneEvent: number | null,
  direction: MediaDirection,
  arrange: (ours: MediaDescription) => MediaDescription[] = (ours) => [ours],
): string {
  const ipVersion = isIP(local.address);
  if (ipVersion === 0) throw new RangeError(`an SDP address must be an IP address, not "${local.address}"`);
  if (!Number.isInteger(local.port) || local.port <= 0 || local.port > 65535) {
    throw new RangeError(`an RTP port must be 1-65535, not ${local.port}`);
  }
  if (!/^\d+$/.test(local.sessionId)) throw new RangeError('an SDP session id is digits');
  const rtp: MediaDescription['rtp'] = payloads.map(({ payloadType, codec }) => ({
    payload: payloadType,
    codec,
    rate: 8000,
  }));
  const fmtp: MediaDescription['fmtp'] = [];
  if (telephoneEvent !== null) {
    rtp.push({ payload: telephoneEvent, codec: 'telephone-event', rate: 8000 });
    fmtp.push({ payload: telephoneEvent, config: TELEPHONE_EVENTS });
  }
  const ours: MediaDescription = {
    type: 'audio',
    port: local.port,
    protocol: 'RTP/AVP',
    payloads: rtp.map((entry) => entry.payload).join(' '),
    rtp,
    fmtp,
    ptime: local.ptime ?? DEFAULT_PTIME_MS,
    direction,
  };
  return write({
    version: 0,
    origin: {
      username: local.username ?? '-',
      sessionId: local.sessionId,
      sessionVersion: local.version,
      netType: 'IN',
      ipVer: ipVersion,
      address: local.address,
    },
    name: '-',
    connection: { version: ipVersion, ip: local.address },
    timing: { start: 0, stop: 0 },
    media: arrange(ours),
  });
}

/** An offered stream we do not take: port 0 and its own formats (RFC 3264 §6: at least one). */
function rejectedStream(offered: MediaDescription): MediaDescription {
  const formats = String(offered.payloads ?? '').trim() || '0';
  return { type: offered.type, port: 0, protocol: offered.protocol, payloads: formats, rtp: [], fmtp: [] };
}
