/**
 * Keys as RTP telephone events (RFC 4733), the way SIP trunks carry DTMF: a key is not a tone in the
 * audio but a run of 4-byte packets (event, end bit, volume, duration) under the telephone-event
 * payload type the SDP negotiated.
 *
 * Sending (RFC 4733 §2.5.1): every packet of one key carries the timestamp of the key's start, the
 * first has the marker bit, each later one 20 ms on reports the duration so far, and the last, with
 * the end bit, is sent three times (a lost end would leave the key "held"). `KeySender` turns dialled
 * digits into the pacer's frames, one per packet time, with the tone, gap and pause lengths of the
 * in-band key tones (`voice/dtmf-tones.ts`), so a key lasts the same whichever way it goes.
 *
 * Receiving (§2.5.2): all packets of one key share its timestamp, and the end is repeated, so a key
 * is reported once, on the first packet of a timestamp not seen before, whichever packet that is (the
 * first may be lost). Keeping the last few timestamps also ignores a straggler of an earlier key.
 */
import { GAP_MS, PAUSE_MS, TONE_MS } from '../voice/dtmf-tones.js';
import type { PacerFrame } from './rtp-pacer.js';

/** The keys by event code 0-15 (RFC 4733 §3.2: 0-9, *, #, A-D). */
const KEYS = '0123456789*#ABCD';
/** The level a key is sent at, in -dBm0 (what phones and sipp send). */
export const DEFAULT_EVENT_VOLUME = 10;
/** How many times the end packet goes out. */
const END_REPEATS = 3;
/** Timestamps of recent keys a receiver remembers. */
const REMEMBERED_KEYS = 16;

export interface TelephoneEvent {
  /** 0-255: 0-15 are keys, 16 is flash. */
  event: number;
  end: boolean;
  /** 0-63, -dBm0. */
  volume: number;
  /** In timestamp units (8000 per second), 0-65535. */
  duration: number;
}

/** The event code of a key (0-9, *, #, A-D), or undefined. */
export function keyEvent(key: string): number | undefined {
  const code = key.length === 1 ? KEYS.indexOf(key.toUpperCase()) : -1;
  return code >= 0 ? code : undefined;
}

/** The key of an event code, or undefined for one that is no key (flash, tones). */
export function eventKey(event: number): string | undefined {
  return KEYS[event];
}

/** The 4-byte payload of a telephone event (RFC 4733 §2.3). */
export function encodeTelephoneEvent(event: TelephoneEvent): Uint8Array {
  const inRange = (value: number, max: number) => Number.isInteger(value) && value >= 0 && value <= max;
  if (!inRange(event.event, 255) || !inRange(event.volume, 63) || !inRange(event.duration, 0xffff)) {
    throw new RangeError('a telephone event has an event 0-255, a volume 0-63 and a duration 0-65535');
  }
  return Uint8Array.of(
    event.event,
    (event.end ? 0x80 : 0) | event.volume,
    event.duration >> 8,
    event.duration & 0xff,
  );
}

/** A telephone event's payload read, or null if it is not one (shorter than 4 bytes). */
export function decodeTelephoneEvent(payload: Uint8Array): TelephoneEvent | null {
  if (payload.length < 4) return null;
  return {
    event: payload[0]!,
    end: (payload[1]! & 0x80) !== 0,
    volume: payload[1]! & 0x3f,
    duration: (payload[2]! << 8) | payload[3]!,
  };
}

export interface KeyTiming {
  /** How long a key lasts, ms (default TONE_MS, 100). At most 8 s: the duration field is 16-bit. */
  toneMs?: number;
  /** The packet time, ms (default 20), and the clock rate (default 8000). */
  packetMs?: number;
  clockRate?: number;
  volume?: number;
}

/** The pacer frames of one key: updates every packet time, then the end packet three times. */
export function keyFrames(key: string, payloadType: number, timing: KeyTiming = {}): PacerFrame[] {
  const event = keyEvent(key);
  if (event === undefined) throw new RangeError(`"${key}" is no DTMF key (0-9, *, #, A-D)`);
  const packetMs = timing.packetMs ?? 20;
  const samplesPerPacket = ((timing.clockRate ?? 8000) * packetMs) / 1000;
  const packets = Math.max(1, Math.round((timing.toneMs ?? TONE_MS) / packetMs));
  const volume = timing.volume ?? DEFAULT_EVENT_VOLUME;
  if (packets * samplesPerPacket > 0xffff) throw new RangeError('a key lasts at most 8 seconds');
  const frames: PacerFrame[] = [];
  for (let i = 0; i < packets; i++) {
    const end = i === packets - 1;
    const payload = encodeTelephoneEvent({ event, end, volume, duration: (i + 1) * samplesPerPacket });
    for (let copy = 0; copy < (end ? END_REPEATS : 1); copy++) {
      frames.push({ kind: 'event', payloadType, payload, start: i === 0 && copy === 0 });
    }
  }
  return frames;
}

/**
 * Dialled digits as a queue of pacer frames: each key's packets, then a gap; `w` waits PAUSE_MS.
 * `next()` gives the frame of the next packet time, or null when it has none (a gap, a pause, or
 * nothing queued), when the audio source speaks.
 */
export class KeySender {
  readonly #queue: (PacerFrame | null)[] = [];

  constructor(
    private readonly payloadType: number,
    private readonly timing: KeyTiming & { gapMs?: number; pauseMs?: number } = {},
  ) {}

  /** Queues `digits` (0-9, *, #, A-D, `w`); throws on anything else, before queueing any. */
  send(digits: string): void {
    const packetMs = this.timing.packetMs ?? 20;
    const silent = (ms: number) => new Array<null>(Math.round(ms / packetMs)).fill(null);
    const frames: (PacerFrame | null)[] = [];
    for (const digit of digits) {
      if (digit === 'w') frames.push(...silent(this.timing.pauseMs ?? PAUSE_MS));
      else
        frames.push(
          ...keyFrames(digit, this.payloadType, this.timing),
          ...silent(this.timing.gapMs ?? GAP_MS),
        );
    }
    this.#queue.push(...frames);
  }

  next(): PacerFrame | null {
    return this.#queue.shift() ?? null;
  }

  /** Whether keys (or their gaps) are still to go. */
  get sending(): boolean {
    return this.#queue.length > 0;
  }
}

export interface ReceivedKey {
  key: string;
  /** The event's RTP timestamp: its start. */
  timestamp: number;
}

/** Key presses out of a stream of telephone-event packets, each exactly once. */
export class KeyReceiver {
  readonly #recent: number[] = [];

  /** Takes one telephone-event packet; returns the key it starts, or null (a repeat, or no key). */
  push(packet: { timestamp: number; payload: Uint8Array }): ReceivedKey | null {
    if (this.#recent.includes(packet.timestamp)) return null;
    const event = decodeTelephoneEvent(packet.payload);
    const key = event ? eventKey(event.event) : undefined;
    if (!key) return null;
    this.#recent.push(packet.timestamp);
    if (this.#recent.length > REMEMBERED_KEYS) this.#recent.shift();
    return { key, timestamp: packet.timestamp };
  }
}
