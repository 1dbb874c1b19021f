/**
 * A call recording as it is made: an AudioTap (session-spec.ts) that writes both sides of the call to
 * a stereo WAV file — left the caller, right the assistant — at the stream's sample rate, 16-bit PCM.
 * The tap's methods only copy the frame and note when it came (the audio path never waits); a timer
 * decodes and places the frames and appends them to a temporary file, so the call is never held in
 * memory; `close` pads both sides to the stream's length and writes the header's sizes.
 *
 * Alignment: each side's frames are placed on one clock, the time since the tap began. A frame goes
 * where that side's audio ends, unless it arrives noticeably later than that — the side was silent
 * (the assistant between answers, a carrier that stops sending) — and then silence fills the gap, so
 * a frame lands at the moment it came. The caller streams without pause, so a burst of its frames
 * after a late one means they were held up on the way: the silence given to the gap is taken back. A
 * side that has sent nothing for a while is padded with silence up to three seconds behind now, so
 * the other side's audio can be written out.
 */
import { type FileHandle, mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import { type AudioFormat, decodeAudio } from './audio.js';
import type { AudioTap } from './session-spec.js';

/** A side is filled with silence only past this gap (ms): less is arrival jitter, not silence. */
const GAP_MS = 60;
/** How far behind now a silent side is padded (ms): frames arriving later than this land late. */
const LAG_MS = 3000;
/** How often the copied frames are written out (ms). */
const FLUSH_MS = 200;
const HEADER_BYTES = 44;

export interface WavFile {
  file: string;
  /** The whole file's size, header included. */
  bytes: number;
  durationMs: number;
  sampleRate: number;
}

interface Side {
  /** Samples placed so far on this side (the position of its next sample). */
  end: number;
  /** Samples placed but not yet written, from the written position on; `fill` marks silence we added. */
  pending: Array<{ samples: Int16Array; fill: boolean }>;
}

interface Copied {
  side: 0 | 1;
  bytes: Uint8Array;
  atMs: number;
}

/** The 44-byte header of a 16-bit PCM stereo WAV file holding `dataBytes` of samples. */
export function wavHeader(sampleRate: number, dataBytes: number, channels = 2): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * channels * 2, 28);
  header.writeUInt16LE(channels * 2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

export class StereoWavTap implements AudioTap {
  /** Resolves with the finished file after `close`; rejects when it could not be written. */
  readonly finished: Promise<WavFile>;
  readonly #format: AudioFormat;
  /** The temporary file the recording is written to. */
  readonly file: string;
  readonly #clock: () => number;
  readonly #origin: number;
  readonly #sides: [Side, Side] = [
    { end: 0, pending: [] },
    { end: 0, pending: [] },
  ];
  #queue: Copied[] = [];
  #written = 0;
  #handle: FileHandle | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closedAtMs: number | undefined;
  #stopped = false;
  #flushing: Promise<void> = Promise.resolve();
  #resolve!: (file: WavFile) => void;
  #reject!: (error: unknown) => void;

  constructor(options: { format: AudioFormat; file: string; clock?: () => number }) {
    this.#format = options.format;
    this.file = options.file;
    this.#clock = options.clock ?? (() => performance.now());
    this.#origin = this.#clock();
    this.finished = new Promise<WavFile>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // Whoever made the tap may only look at `finished` after the call: a failure must not go unhandled meanwhile.
    this.finished.catch(() => {});
    this.#timer = setInterval(() => this.#flush(), FLUSH_MS);
    this.#timer.unref();
  }

  caller(frame: Uint8Array): void {
    if (!this.#stopped && this.#closedAtMs === undefined)
      this.#queue.push({ side: 0, bytes: frame.slice(), atMs: this.#clock() - this.#origin });
  }

  assistant(frame: Uint8Array): void {
    if (!this.#stopped && this.#closedAtMs === undefined)
      this.#queue.push({ side: 1, bytes: frame.slice(), atMs: this.#clock() - this.#origin });
  }

  close(): void {
    if (this.#closedAtMs !== undefined || this.#stopped) return;
    this.#closedAtMs = this.#clock() - this.#origin;
    clearInterval(this.#timer);
    this.#flush();
    this.#flushing = this.#flushing.then(() => this.#finish());
  }

  /** Stops recording and removes the file (the call is not to be recorded after all). */
  async discard(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#queue = [];
    await this.#flushing.catch(() => {});
    await this.#handle?.close().catch(() => {});
    this.#handle = undefined;
    await rm(this.file, { force: true });
    this.#reject(new Error('the recording was discarded'));
  }

  #samplesAt(ms: number): number {
    return Math.round((ms * this.#format.sampleRate) / 1000);
  }

  /** Places what was copied and writes out what both sides have; one write at a time. */
  #flush(): void {
    if (this.#stopped) return;
    const batch = this.#queue;
    this.#queue = [];
    for (const copied of batch) this.#place(copied);
    // A side silent for a while is padded up to LAG_MS behind now, so the other's audio can go out.
    const now = this.#closedAtMs ?? this.#clock() - this.#origin;
    const floor = this.#samplesAt(now - LAG_MS);
    for (const side of this.#sides) if (side.end < floor) this.#pad(side, floor);
    const ready = Math.min(this.#sides[0].end, this.#sides[1].end) - this.#written;
    if (ready <= 0) return;
    const offset = this.#offset();
    const block = this.#interleave(ready);
    this.#flushing = this.#flushing.then(() => this.#write(block, offset));
  }

  #place(copied: Copied): void {
    const side = this.#sides[copied.side];
    const samples = decodeAudio(this.#format, copied.bytes);
    // A caller's frame was heard during the frame before it arrived; an assistant's plays as it is sent.
    const start = this.#samplesAt(copied.atMs) - (copied.side === 0 ? samples.length : 0);
    const gap = this.#samplesAt(GAP_MS);
    if (start - side.end > gap) this.#pad(side, start);
    // The caller's frames come without pause: a burst after a late one means they were held up on the
    // way (a busy process), not that the caller had stopped — the silence given to the gap is taken back.
    else if (copied.side === 0 && side.end - start > samples.length) this.#retract(side, side.end - start);
    side.pending.push({ samples, fill: false });
    side.end += samples.length;
  }

  #pad(side: Side, to: number): void {
    if (to <= side.end) return;
    side.pending.push({ samples: new Int16Array(to - side.end), fill: true });
    side.end = to;
  }

  /** Takes back up to `count` samples of silence this side was given and has not written yet, latest first. */
  #retract(side: Side, count: number): void {
    let left = count;
    for (let i = side.pending.length - 1; i >= 0 && left > 0; i--) {
      const chunk = side.pending[i]!;
      if (!chunk.fill) continue;
      const cut = Math.min(left, chunk.samples.length);
      if (cut === chunk.samples.length) side.pending.splice(i, 1);
      else chunk.samples = chunk.samples.subarray(0, chunk.samples.length - cut);
      side.end -= cut;
      left -= cut;
    }
  }

  /** The next `count` samples of both sides, interleaved left-right, as little-endian bytes. */
  #interleave(count: number): Buffer {
    const out = Buffer.alloc(count * 4);
    for (const [channel, side] of this.#sides.entries()) {
      let index = 0;
      while (index < count) {
        const chunk = side.pending[0]!;
        const take = Math.min(chunk.samples.length, count - index);
        for (let i = 0; i < take; i++) out.writeInt16LE(chunk.samples[i]!, (index + i) * 4 + channel * 2);
        index += take;
        if (take === chunk.samples.length) side.pending.shift();
        else chunk.samples = chunk.samples.subarray(take);
      }
    }
    this.#written += count;
    return out;
  }

  /** Where the next interleaved block goes in the file. */
  #offset(): number {
    return HEADER_BYTES + this.#written * 4;
  }

  async #write(block: Buffer, offset: number): Promise<void> {
    if (this.#stopped) return;
    try {
      const handle = await this.#open();
      await handle.write(block, 0, block.length, offset);
    } catch (error) {
      this.#fail(error);
    }
  }

  /** The file, created with a header of no data on first use. */
  async #open(): Promise<FileHandle> {
    if (this.#handle) return this.#handle;
    await mkdir(path.dirname(this.file), { recursive: true });
    const handle = await open(this.file, 'wx');
    this.#handle = handle;
    await handle.write(wavHeader(this.#format.sampleRate, 0), 0, HEADER_BYTES, 0);
    return handle;
  }

  /** Pads both sides to the stream's length, writes the rest and the header's sizes. */
  async #finish(): Promise<void> {
    if (this.#stopped) return;
    const total = Math.max(this.#sides[0].end, this.#sides[1].end, this.#samplesAt(this.#closedAtMs ?? 0));
    for (const side of this.#sides) this.#pad(side, total);
    const rest = total - this.#written;
    if (rest > 0) {
      const offset = this.#offset();
      await this.#write(this.#interleave(rest), offset);
    }
    if (this.#stopped) return;
    try {
      const handle = await this.#open();
      const dataBytes = this.#written * 4;
      await handle.write(wavHeader(this.#format.sampleRate, dataBytes), 0, HEADER_BYTES, 0);
      await handle.close();
      this.#handle = undefined;
      this.#resolve({
        file: this.file,
        bytes: HEADER_BYTES + dataBytes,
        durationMs: Math.round((this.#written * 1000) / this.#format.sampleRate),
        sampleRate: this.#format.sampleRate,
      });
    } catch (error) {
      this.#fail(error);
    }
  }

  #fail(error: unknown): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#queue = [];
    void this.#handle?.close().catch(() => {});
    this.#handle = undefined;
    void rm(this.file, { force: true }).catch(() => {});
    this.#reject(error);
  }
}
