/**
 * The simulated caller's voice: the utterances queued with `say`, cut into the 20 ms frames the phone
 * sends, back to back, with silence (0xff) when nothing is queued. Each utterance records when its
 * first and last frames were sent and, judged by energy, when its first and last audible frames were
 * (the recordings carry a little silence of their own, which the platform's VAD does not count as
 * speech). Fixtures — the caller's recorded lines, test/fixtures/voice/<name>.ulaw — are read once per
 * process and shared by every phone.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bytesFor, FRAME_MS, MULAW_8K, MULAW_SILENCE, ulawLevel } from '../voice/audio.js';

export const FRAME_BYTES = bytesFor(MULAW_8K, FRAME_MS);
const SILENT_FRAME = new Uint8Array(FRAME_BYTES).fill(MULAW_SILENCE);
export const DEFAULT_FIXTURES = fileURLToPath(new URL('../../test/fixtures/voice/', import.meta.url));

/** An utterance the caller said, in ms since the phone's origin. */
export interface SpokenUtterance {
  /** The fixture's name, when said by name. */
  name?: string;
  bytes: number;
  /** When its first frame was sent, and its last. */
  startMs: number;
  endMs: number;
  /** When the first and last audible frames were sent (the clip's own silences excluded). */
  speechStartMs?: number;
  speechEndMs?: number;
}

interface Queued {
  audio: Uint8Array;
  name?: string;
  firstAudible: number;
  lastAudible: number;
  sent: number;
  record?: SpokenUtterance;
  resolve(utterance: SpokenUtterance): void;
  reject(error: Error): void;
}

const fixtures = new Map<string, Uint8Array>();

/** A fixture's audio (`<dir>/<name>.ulaw`), read once. */
export function voiceFixture(name: string, dir = DEFAULT_FIXTURES): Uint8Array {
  if (!/^[a-z0-9-]+$/.test(name)) throw new Error(`not a fixture name: ${name}`);
  const path = `${dir.replace(/\/?$/, '/')}${name}.ulaw`;
  let audio = fixtures.get(path);
  if (!audio) {
    audio = new Uint8Array(readFileSync(path));
    fixtures.set(path, audio);
  }
  return audio;
}

export class CallerVoice {
  readonly utterances: SpokenUtterance[] = [];
  readonly #queue: Queued[] = [];

  constructor(private readonly options: { speechLevel: number; fixturesDir?: string }) {}

  /** True while something is queued or being said. */
  get speaking(): boolean {
    return this.#queue.length > 0;
  }

  say(audio: Uint8Array | string, as?: string): Promise<SpokenUtterance> {
    const name = as ?? (typeof audio === 'string' ? audio : undefined);
    const bytes =
      typeof audio === 'string' ? voiceFixture(audio, this.options.fixturesDir) : Uint8Array.from(audio);
    let firstAudible = -1;
    let lastAudible = -1;
    for (let frame = 0; frame * FRAME_BYTES < bytes.length; frame++) {
      const window = bytes.subarray(frame * FRAME_BYTES, (frame + 1) * FRAME_BYTES);
      if (ulawLevel(window) >= this.options.speechLevel) {
        if (firstAudible < 0) firstAudible = frame;
        lastAudible = frame;
      }
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({
        audio: bytes,
        ...(name ? { name } : {}),
        firstAudible,
        lastAudible,
        sent: 0,
        resolve,
        reject,
      });
    });
  }

  /** The next frame to send: the current utterance's, or silence. */
  nextFrame(): Uint8Array {
    const utterance = this.#queue[0];
    if (!utterance) return SILENT_FRAME;
    const offset = utterance.sent * FRAME_BYTES;
    const piece = utterance.audio.subarray(offset, offset + FRAME_BYTES);
    if (piece.length === FRAME_BYTES) return piece;
    const frame = new Uint8Array(FRAME_BYTES).fill(MULAW_SILENCE);
    frame.set(piece);
    return frame;
  }

  /** Records that the frame `nextFrame` gave was sent at `nowMs`; an utterance done resolves. */
  frameSent(nowMs: number): void {
    const utterance = this.#queue[0];
    if (!utterance) return;
    utterance.record ??= {
      ...(utterance.name ? { name: utterance.name } : {}),
      bytes: utterance.audio.length,
      startMs: nowMs,
      endMs: nowMs,
    };
    const record = utterance.record;
    if (utterance.sent === utterance.firstAudible) record.speechStartMs = nowMs;
    if (utterance.sent === utterance.lastAudible) record.speechEndMs = nowMs;
    utterance.sent += 1;
    if (utterance.sent * FRAME_BYTES < utterance.audio.length) return;
    record.endMs = nowMs;
    this.#queue.shift();
    this.utterances.push(record);
    utterance.resolve(record);
  }

  /** The call ended: what was not said never will be. */
  silence(error: Error): void {
    for (const utterance of this.#queue.splice(0)) utterance.reject(error);
  }
}
