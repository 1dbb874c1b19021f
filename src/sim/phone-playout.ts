/**
 * The simulated phone's loudspeaker: the carrier's playout buffer for the audio the platform sends.
 * Audio is played in the order it came, at real time (8 bytes per millisecond of μ-law 8 kHz), from
 * the moment it arrives or the moment what was queued before it has finished, whichever is later.
 * A mark is reached when everything queued before it has played; `clear` drops what has not played
 * and reaches every pending mark at once — carrier_a's rules.
 *
 * Play times are computed exactly from that schedule (`playedAtMs`); the phone learns about them when
 * it advances the buffer (every 20 ms frame, and on each message), which is when it echoes marks.
 * What played is judged by its energy in 20 ms windows: windows at or above `speechLevel` make the
 * heard segments, joined across gaps up to `gapMs` (the pauses between words). Played audio itself is
 * kept only when asked (`recordAudio`), so a long call's memory does not grow with its audio.
 */
import { bytesFor, FRAME_MS, MULAW_8K, ulawLevel } from '../voice/audio.js';

const BYTES_PER_MS = bytesFor(MULAW_8K, 1);
const WINDOW = bytesFor(MULAW_8K, FRAME_MS);

/** A stretch of audible audio the phone played (ms since the phone's origin). */
export interface HeardSegment {
  startMs: number;
  endMs: number;
}

export interface MarkRecord {
  name: string;
  receivedAtMs: number;
  /** When the audio queued before it had played (or `clear` dropped it). */
  playedAtMs?: number;
  /** When the phone sent it back. */
  echoedAtMs?: number;
  /** Reached because `clear` dropped the audio before it. */
  cleared: boolean;
}

export interface ClearRecord {
  atMs: number;
  /** Bytes of audio dropped unplayed. */
  droppedBytes: number;
  /** Marks the clear reached (echoed at once). */
  marks: string[];
}

/** Played audio, when recorded: the bytes and when they started to play. */
export interface PlayedAudio {
  startMs: number;
  audio: Uint8Array;
}

type Queued =
  | { kind: 'audio'; audio: Uint8Array; startMs: number; played: number }
  | { kind: 'mark'; record: MarkRecord; dueMs: number };

export interface PlayoutOptions {
  speechLevel: number;
  gapMs: number;
  recordAudio: boolean;
  /** Told when a heard segment begins. */
  onSpeechStart(segment: HeardSegment): void;
  /** Each window of audio as it plays (the phone's key-tone detector listens here). */
  onPlayed?(window: Uint8Array, startMs: number): void;
}

export class Playout {
  readonly heardSegments: HeardSegment[] = [];
  readonly marks: MarkRecord[] = [];
  readonly clears: ClearRecord[] = [];
  readonly played: PlayedAudio[] = [];
  /** Bytes of the platform's audio played so far. */
  playedBytes = 0;
  readonly #queue: Queued[] = [];
  /** When everything queued will have played. */
  #playEndMs = 0;

  constructor(private readonly options: PlayoutOptions) {}

  /** Bytes queued and not yet played. */
  get bufferedBytes(): number {
    let bytes = 0;
    for (const item of this.#queue) if (item.kind === 'audio') bytes += item.audio.length - item.played;
    return bytes;
  }

  /** When the last audible window played, if any. */
  get lastSpeechEndMs(): number | undefined {
    return this.heardSegments.at(-1)?.endMs;
  }

  addAudio(audio: Uint8Array, nowMs: number): void {
    if (audio.length === 0) return;
    const startMs = Math.max(nowMs, this.#playEndMs);
    this.#playEndMs = startMs + audio.length / BYTES_PER_MS;
    this.#queue.push({ kind: 'audio', audio, startMs, played: 0 });
  }

  addMark(name: string, nowMs: number): void {
    const record: MarkRecord = { name, receivedAtMs: nowMs, cleared: false };
    this.marks.push(record);
    this.#queue.push({ kind: 'mark', record, dueMs: Math.max(nowMs, this.#playEndMs) });
  }

  /** Plays everything due by `nowMs`; answers the marks reached (to echo). */
  advance(nowMs: number): MarkRecord[] {
    const reached: MarkRecord[] = [];
    while (this.#queue.length > 0) {
      const item = this.#queue[0]!;
      if (item.kind === 'mark') {
        if (item.dueMs > nowMs) break;
        item.record.playedAtMs = item.dueMs;
        reached.push(item.record);
        this.#queue.shift();
        continue;
      }
      const due = Math.min(item.audio.length, Math.floor((nowMs - item.startMs) * BYTES_PER_MS));
      this.#play(item, due);
      if (item.played < item.audio.length) break;
      this.#queue.shift();
    }
    return reached;
  }

  /** Drops the unplayed audio; answers the marks it reached (to echo at once). */
  clear(nowMs: number): MarkRecord[] {
    const reached = this.advance(nowMs);
    let droppedBytes = 0;
    const cleared: MarkRecord[] = [];
    for (const item of this.#queue) {
      if (item.kind === 'audio') {
        // The part of a chunk already played stays heard; only the rest is dropped.
        const due = Math.min(item.audio.length, Math.floor((nowMs - item.startMs) * BYTES_PER_MS));
        this.#play(item, due, true);
        droppedBytes += item.audio.length - item.played;
      } else {
        item.record.playedAtMs = nowMs;
        item.record.cleared = true;
        cleared.push(item.record);
      }
    }
    this.#queue.length = 0;
    this.#playEndMs = nowMs;
    this.clears.push({ atMs: nowMs, droppedBytes, marks: cleared.map((mark) => mark.name) });
    return [...reached, ...cleared];
  }

  /**
   * Plays `item` up to byte `upTo` in 20 ms windows (a chunk's last one may be shorter); a window not
   * wholly due waits for the next advance, unless `partial` (a clear cuts the window where it is).
   */
  #play(item: Extract<Queued, { kind: 'audio' }>, upTo: number, partial = false): void {
    while (item.played < upTo) {
      let end = Math.min(item.played + WINDOW, item.audio.length);
      if (end > upTo) {
        if (!partial) break;
        end = upTo;
      }
      const window = item.audio.subarray(item.played, end);
      const startMs = item.startMs + item.played / BYTES_PER_MS;
      if (this.options.recordAudio) this.played.push({ startMs, audio: Uint8Array.from(window) });
      this.options.onPlayed?.(window, startMs);
      if (ulawLevel(window) >= this.options.speechLevel)
        this.#heard(startMs, startMs + window.length / BYTES_PER_MS);
      this.playedBytes += window.length;
      item.played = end;
    }
  }

  #heard(startMs: number, endMs: number): void {
    const last = this.heardSegments.at(-1);
    if (last && startMs - last.endMs <= this.options.gapMs) {
      last.endMs = endMs;
      return;
    }
    const segment = { startMs, endMs };
    this.heardSegments.push(segment);
    this.options.onSpeechStart(segment);
  }
}
