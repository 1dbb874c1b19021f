/**
 * The receive side of a call's RTP: packets in, 20 ms frames out, in order, on time. UDP reorders,
 * repeats and loses packets, and they come with uneven gaps; the caller's audio must still reach the
 * speech recogniser and the VAD as a steady stream whose time is real time (silence included), so
 * that turn-taking measures pauses right.
 *
 * How: every packet waits a fixed playout delay (default 60 ms, three packets: what a phone's
 * network jitter needs, and small enough not to be heard in a conversation) from the arrival of the
 * first one; frames are then due every 20 ms. A packet that has not come when its turn is due is
 * lost: its time is played as silence (0xFF μ-law, 0xD5 A-law) and it is dropped if it comes later.
 * The clocks of the two ends drift, and networks pause; so when nothing at all is waiting the buffer
 * plays silence without giving up on the next packet, and starts again a delay after it comes; and
 * when more than `maxDelayMs` waits (a burst after a pause, a far clock that runs fast) the oldest
 * is skipped down to the delay. Sequence numbers are 16-bit and wrap; a new SSRC, or a jump of the
 * sequence (RFC 3550 A.1's MAX_DROPOUT / MAX_MISORDER), is a new stream once two packets agree: what
 * the old one still holds plays out first, the new one a delay after its first packet, and the old
 * one's stragglers are late.
 *
 * It is pure: the caller gives arrival times (`push`) and the time it wants frames for (`pull`), so
 * any timer, or a test, can drive it. Packets whose slot carries no audio (RFC 4733 key events,
 * comfort noise) are pushed with a null payload: they keep the sequence whole and play as silence.
 *
 * Not `providers/carriers/media-reorder.ts`: that one releases frames as soon as they are in order
 * and gives up on a gap by count, with no clock; here the clock decides (a slot is due or it is
 * not), numbers wrap, and gaps become silence, so the two share nothing but the idea.
 */
import { type AudioFormat, bytesFor, durationMs, FRAME_MS, silence } from '../voice/audio.js';
import type { ReceptionCounts } from './rtcp.js';
import { sequenceDistance } from './rtp.js';

export const DEFAULT_PLAYOUT_DELAY_MS = 60;
/** RFC 3550 A.1: how far ahead a sequence may jump, and behind it may come, and still be this stream. */
const MAX_DROPOUT = 3000;
const MAX_MISORDER = 100;
/**
 * Extended sequence numbers start one wrap up, so that packets a little older than the first stay
 * positive; reports take it off again (RFC 3550 counts wraps from the first packet).
 */
const ONE_WRAP = 0x10000;
/** How many played sequence numbers are remembered, to tell a late packet from a duplicate. */
const HISTORY = 128;

export interface JitterBufferOptions {
  /** G.711 μ-law or A-law at 8 kHz (`MULAW_8K`, `ALAW_8K`). */
  format: AudioFormat;
  /** How long a packet waits before its audio plays, ms (default 60). */
  delayMs?: number;
  /** Once more than this waits, the oldest is skipped down to `delayMs` (default delayMs + 100). */
  maxDelayMs?: number;
}

export interface JitterPacket {
  sequence: number;
  timestamp: number;
  ssrc: number;
  /** The audio, or null for a packet that holds none (a key event, comfort noise). */
  payload: Uint8Array | null;
}

export interface JitterStats {
  /** Packets pushed for the stream, late and duplicated ones included. */
  received: number;
  /** Sequence numbers whose audio never came (played as silence, or skipped). */
  lost: number;
  /** Packets that came after their audio's time had been played (dropped). */
  late: number;
  /** Packets that came twice (dropped). */
  duplicates: number;
  /** Packets dropped unplayed: skipped to cut the delay, or stray ones that matched no stream. */
  discarded: number;
  /** Milliseconds of silence played in place of missing audio. */
  concealedMs: number;
  /** Interarrival jitter (RFC 3550 §6.4.1), ms. */
  jitterMs: number;
}

type Slot = 'played' | 'lost' | 'discarded';

export class JitterBuffer {
  readonly #format: AudioFormat;
  readonly #delayMs: number;
  readonly #maxDelayMs: number;
  readonly #frameBytes: number;
  readonly #silentFrame: Uint8Array;
  readonly #held = new Map<number, Uint8Array | null>();
  /** What became of recently played sequence numbers, by extended sequence modulo HISTORY. */
  readonly #history: ({ sequence: number; slot: Slot } | undefined)[] = new Array(HISTORY);
  #ssrc: number | undefined;
  /** Extended (unwrapped) sequence numbers: the highest seen, the lowest, and the next to play. */
  #highest = 0;
  #base = 0;
  #next: number | undefined;
  /** Packets of the current stream (RFC 3550's received count, for its report block). */
  #streamReceived = 0;
  /** The stream before a change of SSRC, whose stragglers are late, not a new stream. */
  #previous: { ssrc: number; sequence: number } | undefined;
  /** A packet that matched no stream, kept to see whether the next one confirms it as a new stream. */
  #probe: { packet: JitterPacket; arrivalMs: number } | undefined;
  /** When the next frame is due (undefined before the first packet). */
  #frameDueMs: number | undefined;
  /** Whether frames come from the packets; if not, silence plays until `#resumeAtMs`. */
  #playing = false;
  /** When playing (re)starts: a delay after the first packet that waits (undefined: none yet). */
  #resumeAtMs: number | undefined;
  /** Bytes of the packet being played that did not fill the last frame. */
  #pending: Uint8Array = new Uint8Array(0);
  #packetBytes: number;
  /** RFC 3550 §6.4.1: the previous relative transit time and the running estimate, timestamp units. */
  #transit: number | undefined;
  #jitter = 0;
  #stats = { received: 0, lost: 0, late: 0, duplicates: 0, discarded: 0, concealedMs: 0 };

  constructor(options: JitterBufferOptions) {
    const { format } = options;
    if (format.encoding === 'linear16') throw new RangeError('the RTP jitter buffer takes G.711 audio');
    this.#format = format;
    this.#delayMs = options.delayMs ?? DEFAULT_PLAYOUT_DELAY_MS;
    this.#maxDelayMs = options.maxDelayMs ?? this.#delayMs + 100;
    if (!(this.#delayMs >= 0 && this.#maxDelayMs >= this.#delayMs + FRAME_MS)) {
      throw new RangeError('maxDelayMs must exceed delayMs by a frame at least');
    }
    this.#frameBytes = bytesFor(format, FRAME_MS);
    this.#packetBytes = this.#frameBytes;
    this.#silentFrame = silence(format, FRAME_MS);
  }

  /** Takes one packet of the call's stream, with the time it arrived (ms, any monotonic clock). */
  push(packet: JitterPacket, arrivalMs: number): void {
    if (this.#ssrc === undefined) {
      this.#startStream(packet, arrivalMs);
      return;
    }
    const distance =
      packet.ssrc === this.#ssrc ? sequenceDistance(this.#highest & 0xffff, packet.sequence) : null;
    if (distance === null || distance > MAX_DROPOUT || distance < -MAX_MISORDER) {
      this.#tryNewStream(packet, arrivalMs);
      return;
    }
    if (this.#probe) {
      // A stray packet that the stream's own next packet did not confirm.
      this.#stats.discarded += 1;
      this.#probe = undefined;
    }
    this.#accept(packet, this.#highest + distance, arrivalMs);
  }

  /** The 20 ms frames due by `nowMs`, in order (none before the first packet's delay has passed). */
  pull(nowMs: number): Uint8Array[] {
    const frames: Uint8Array[] = [];
    while (this.#frameDueMs !== undefined && this.#frameDueMs <= nowMs) {
      // Only the frame of `nowMs` judges the delay: frames a late caller catches up on were due
      // when less had arrived.
      const latest = this.#frameDueMs + FRAME_MS > nowMs;
      frames.push(this.#frame(this.#frameDueMs, latest));
      this.#frameDueMs += FRAME_MS;
    }
    return frames;
  }

  get stats(): JitterStats {
    return { ...this.#stats, jitterMs: (this.#jitter * 1000) / this.#format.sampleRate };
  }

  /** The counts an RTCP report block is made from, for the current stream (undefined before one). */
  reception(): ReceptionCounts | undefined {
    if (this.#ssrc === undefined) return undefined;
    return {
      ssrc: this.#ssrc,
      baseSequence: this.#base - ONE_WRAP,
      highestSequence: this.#highest - ONE_WRAP,
      received: this.#streamReceived,
      jitter: this.#jitter,
    };
  }

  /** How much audio waits now, ms: the packets held and the part of one not yet played. */
  get bufferedMs(): number {
    if (this.#next === undefined) return 0;
    const slots = Math.max(0, this.#highest - this.#next + 1);
    return (
      slots * durationMs(this.#format, this.#packetBytes) + durationMs(this.#format, this.#pending.length)
    );
  }

  // --- arrival ----------------------------------------------------------------------------------

  #startStream(packet: JitterPacket, arrivalMs: number): void {
    if (this.#ssrc !== undefined) {
      // What the old stream still holds plays first, in order, before the new one.
      const held = [...this.#held.entries()].sort(([a], [b]) => a - b);
      this.#pending = Buffer.concat([
        this.#pending,
        ...held.map(([, payload]) => payload ?? this.#packetSilence()),
      ]);
      this.#held.clear();
      this.#previous = { ssrc: this.#ssrc, sequence: this.#highest & 0xffff };
    }
    this.#history.fill(undefined);
    this.#ssrc = packet.ssrc;
    this.#highest = ONE_WRAP + packet.sequence;
    this.#base = this.#highest;
    this.#next = undefined;
    this.#streamReceived = 0;
    this.#transit = undefined;
    this.#jitter = 0;
    this.#playing = false;
    this.#resumeAtMs = undefined;
    // Frames are due from a delay after the first packet; after a change of stream they keep coming
    // (the old stream's rest, then silence) while the new one fills its delay.
    this.#frameDueMs ??= arrivalMs + this.#delayMs;
    this.#accept(packet, this.#highest, arrivalMs);
  }

  #tryNewStream(packet: JitterPacket, arrivalMs: number): void {
    const previous = this.#previous;
    if (previous?.ssrc === packet.ssrc && sequenceDistance(previous.sequence, packet.sequence) <= 0) {
      // A straggler of the stream we left.
      this.#stats.received += 1;
      this.#stats.late += 1;
      return;
    }
    const probe = this.#probe;
    const confirms =
      probe?.packet.ssrc === packet.ssrc && ((probe.packet.sequence + 1) & 0xffff) === packet.sequence;
    if (probe && confirms) {
      this.#probe = undefined;
      this.#startStream(probe.packet, probe.arrivalMs);
      this.#accept(packet, this.#highest + 1, arrivalMs);
      return;
    }
    if (probe) this.#stats.discarded += 1;
    this.#probe = { packet, arrivalMs };
  }

  #accept(packet: JitterPacket, sequence: number, arrivalMs: number): void {
    this.#stats.received += 1;
    this.#streamReceived += 1;
    if (packet.payload) {
      this.#measureJitter(packet.timestamp, arrivalMs);
      if (packet.payload.length > 0) this.#packetBytes = packet.payload.length;
    }
    if (sequence > this.#highest) this.#highest = sequence;
    if (sequence < this.#base) this.#base = sequence;
    if (this.#held.has(sequence)) {
      this.#stats.duplicates += 1;
      return;
    }
    if (this.#next !== undefined && sequence < this.#next) {
      const slot = this.#history[sequence % HISTORY];
      const known = slot?.sequence === sequence ? slot.slot : undefined;
      if (known === 'played' || known === 'discarded') this.#stats.duplicates += 1;
      else {
        this.#stats.late += 1;
        // It came after all: RFC 3550 counts as lost only what never arrives.
        if (known === 'lost') this.#stats.lost -= 1;
      }
      return;
    }
    this.#held.set(sequence, packet.payload);
    if (!this.#playing && this.#resumeAtMs === undefined) this.#resumeAtMs = arrivalMs + this.#delayMs;
  }

  /** RFC 3550 §6.4.1 and A.8: J += (|D| − J) / 16, D the change of relative transit time. */
  #measureJitter(timestamp: number, arrivalMs: number): void {
    const arrival = (arrivalMs * this.#format.sampleRate) / 1000;
    const transit = arrival - timestamp;
    if (this.#transit !== undefined) {
      // The 32-bit timestamp wraps: the difference is taken modulo 2^32, as a signed number.
      let change = transit - this.#transit;
      change = (((change % 2 ** 32) + 2 ** 32 + 2 ** 31) % 2 ** 32) - 2 ** 31;
      this.#jitter += (Math.abs(change) - this.#jitter) / 16;
    }
    this.#transit = transit;
  }

  // --- playout ----------------------------------------------------------------------------------

  /** The frame due at `dueMs`; `latest` when it is the frame of now. */
  #frame(dueMs: number, latest: boolean): Uint8Array {
    if (!this.#playing) {
      const ready = this.#resumeAtMs !== undefined && dueMs >= this.#resumeAtMs && this.#held.size > 0;
      if (!ready) return this.#pending.length >= this.#frameBytes ? this.#takePending() : this.#conceal();
      // Playing starts (again) from the oldest packet that waits; any missing before it are lost.
      let oldest = Number.POSITIVE_INFINITY;
      for (const sequence of this.#held.keys()) oldest = Math.min(oldest, sequence);
      if (this.#next !== undefined) this.#skipTo(oldest);
      this.#next = oldest;
      this.#playing = true;
    }
    if (latest) this.#cutDelay();
    while (this.#pending.length < this.#frameBytes) {
      const audio = this.#takeNext();
      if (!audio) {
        // Nothing waits at all: play silence, and start again a delay after the next packet comes.
        this.#playing = false;
        this.#resumeAtMs = undefined;
        return this.#conceal();
      }
      this.#pending = this.#pending.length === 0 ? audio : Buffer.concat([this.#pending, audio]);
    }
    return this.#takePending();
  }

  #takePending(): Uint8Array {
    const frame = this.#pending.subarray(0, this.#frameBytes);
    this.#pending = this.#pending.subarray(this.#frameBytes);
    return frame;
  }

  /** Silence as long as the stream's packets. */
  #packetSilence(): Uint8Array {
    return silence(this.#format, durationMs(this.#format, this.#packetBytes));
  }

  /** The next packet's audio (silence for one that holds none or never came), or undefined if none waits. */
  #takeNext(): Uint8Array | undefined {
    if (this.#held.size === 0) return undefined;
    const sequence = this.#next!;
    this.#next = sequence + 1;
    if (this.#held.has(sequence)) {
      const payload = this.#held.get(sequence)!;
      this.#held.delete(sequence);
      this.#remember(sequence, 'played');
      return payload ?? this.#packetSilence();
    }
    // Later packets wait, so this one is lost: its time is silence.
    this.#stats.lost += 1;
    this.#stats.concealedMs += durationMs(this.#format, this.#packetBytes);
    this.#remember(sequence, 'lost');
    return this.#packetSilence();
  }

  /** When more than the longest delay waits, skips the oldest down to the playout delay. */
  #cutDelay(): void {
    if (this.bufferedMs <= this.#maxDelayMs) return;
    const packetMs = durationMs(this.#format, this.#packetBytes);
    const keep = Math.max(1, Math.ceil(this.#delayMs / packetMs));
    this.#pending = new Uint8Array(0);
    this.#skipTo(this.#highest + 1 - keep);
  }

  /**
   * Gives up every sequence before `sequence`: held ones are discarded, missing ones lost. It walks
   * what is held, not the range, which a far end that jumps its numbers could make long.
   */
  #skipTo(sequence: number): void {
    const from = this.#next!;
    if (sequence <= from) return;
    let discarded = 0;
    for (const held of [...this.#held.keys()]) {
      if (held >= sequence) continue;
      this.#held.delete(held);
      this.#remember(held, 'discarded');
      discarded += 1;
    }
    for (let skipped = Math.max(from, sequence - HISTORY); skipped < sequence; skipped++) {
      if (this.#history[skipped % HISTORY]?.sequence !== skipped) this.#remember(skipped, 'lost');
    }
    this.#stats.discarded += discarded;
    this.#stats.lost += sequence - from - discarded;
    this.#next = sequence;
  }

  #remember(sequence: number, slot: Slot): void {
    this.#history[sequence % HISTORY] = { sequence, slot };
  }

  #conceal(): Uint8Array {
    this.#stats.concealedMs += FRAME_MS;
    return this.#silentFrame;
  }
}
