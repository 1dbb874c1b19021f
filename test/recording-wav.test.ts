/**
 * The recording tap (voice/recording.ts) on a clock the test moves: both sides land in their own
 * channel of a stereo 16-bit WAV at the stream's rate, where and when they were heard — silence fills
 * where a side had nothing, arrival jitter adds none — the header says what the file holds, and the
 * length is the stream's.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type AudioFormat, bytesFor, encodeAudio, LINEAR16_16K, MULAW_8K } from '../src/voice/audio.js';
import { StereoWavTap } from '../src/voice/recording.js';

const dir = mkdtempSync(path.join(tmpdir(), 'switchboard-wav-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let serial = 0;

/** A tap on a clock the test sets (ms). */
function tapOn(format: AudioFormat) {
  const clock = { now: 0 };
  const file = path.join(dir, `nested-${++serial}`, 'call.wav');
  const tap = new StereoWavTap({ format, file, clock: () => clock.now });
  return { tap, clock, file };
}

/** One 20 ms frame of a constant level in `format`. */
function frame(format: AudioFormat, level: number): Uint8Array {
  const samples = new Int16Array(bytesFor(format, 20) / (format.encoding === 'linear16' ? 2 : 1)).fill(level);
  return encodeAudio(format, samples);
}

interface ReadWav {
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  riffSize: number;
  dataBytes: number;
  left: Int16Array;
  right: Int16Array;
}

function readWav(file: string): ReadWav {
  const bytes = readFileSync(file);
  expect(bytes.toString('ascii', 0, 4)).toBe('RIFF');
  expect(bytes.toString('ascii', 8, 12)).toBe('WAVE');
  expect(bytes.toString('ascii', 36, 40)).toBe('data');
  const dataBytes = bytes.readUInt32LE(40);
  const frames = dataBytes / 4;
  const left = new Int16Array(frames);
  const right = new Int16Array(frames);
  for (let i = 0; i < frames; i++) {
    left[i] = bytes.readInt16LE(44 + i * 4);
    right[i] = bytes.readInt16LE(44 + i * 4 + 2);
  }
  expect(bytes.length).toBe(44 + dataBytes);
  return {
    channels: bytes.readUInt16LE(22),
    sampleRate: bytes.readUInt32LE(24),
    bitsPerSample: bytes.readUInt16LE(34),
    riffSize: bytes.readUInt32LE(4),
    dataBytes,
    left,
    right,
  };
}

/** Whether every sample of `samples[from, to)` is silent (or every one is not). */
const silentIn = (samples: Int16Array, from: number, to: number) =>
  samples.subarray(from, to).every((s) => s === 0);
const soundIn = (samples: Int16Array, from: number, to: number) =>
  samples.subarray(from, to).every((s) => Math.abs(s) > 500);

describe('the stereo WAV recording', () => {
  it('puts the caller left and the assistant right, each where it was heard', async () => {
    const { tap, clock, file } = tapOn(MULAW_8K);
    const callerFrame = frame(MULAW_8K, 4000);
    const assistantFrame = frame(MULAW_8K, -6000);
    // The caller streams for a second; the assistant speaks from 400 ms to 600 ms.
    for (let k = 1; k <= 50; k++) {
      clock.now = k * 20;
      tap.caller(callerFrame);
      if (k >= 20 && k < 30) {
        clock.now = k * 20 + 1;
        tap.assistant(assistantFrame);
      }
    }
    clock.now = 1000;
    tap.close();
    const result = await tap.finished;
    expect(result).toEqual({ file, bytes: 44 + 8000 * 4, durationMs: 1000, sampleRate: 8000 });
    const wav = readWav(file);
    expect(wav).toMatchObject({ channels: 2, sampleRate: 8000, bitsPerSample: 16, dataBytes: 32_000 });
    expect(wav.riffSize).toBe(36 + 32_000);
    expect(soundIn(wav.left, 0, 8000)).toBe(true);
    expect(wav.left[100]).toBeGreaterThan(3500);
    // 400 ms is sample 3200; a millisecond of arrival delay is 8 samples.
    expect(silentIn(wav.right, 0, 3200)).toBe(true);
    expect(soundIn(wav.right, 3208, 4800)).toBe(true);
    expect(wav.right[4000]).toBeLessThan(-5500);
    expect(silentIn(wav.right, 4808, 8000)).toBe(true);
  });

  it('adds no silence for arrival jitter, and fills a real gap where the caller sent nothing', async () => {
    const { tap, clock, file } = tapOn(MULAW_8K);
    const callerFrame = frame(MULAW_8K, 3000);
    // 25 frames with up to ±30 ms of jitter: 500 ms of audio, no more.
    for (let k = 1; k <= 25; k++) {
      clock.now = k * 20 + (k % 3 === 0 ? 30 : k % 3 === 1 ? -15 : 0);
      tap.caller(callerFrame);
    }
    // Nothing for 300 ms, then 10 more frames.
    for (let k = 41; k <= 50; k++) {
      clock.now = k * 20;
      tap.caller(callerFrame);
    }
    clock.now = 1000;
    tap.close();
    const result = await tap.finished;
    expect(result.durationMs).toBe(1000);
    const wav = readWav(file);
    expect(soundIn(wav.left, 0, 4000)).toBe(true);
    expect(silentIn(wav.left, 4000, 6400)).toBe(true);
    expect(soundIn(wav.left, 6400, 8000)).toBe(true);
    expect(silentIn(wav.right, 0, 8000)).toBe(true);
  });

  it('takes back the silence of a gap when the caller’s held-up frames arrive in a burst', async () => {
    const { tap, clock, file } = tapOn(MULAW_8K);
    const callerFrame = frame(MULAW_8K, 3000);
    for (let k = 1; k <= 10; k++) {
      clock.now = k * 20;
      tap.caller(callerFrame);
    }
    // The process was busy for 300 ms: frames 11–25 all arrive at 500 ms, then on time again.
    clock.now = 500;
    for (let k = 11; k <= 25; k++) tap.caller(callerFrame);
    for (let k = 26; k <= 50; k++) {
      clock.now = k * 20;
      tap.caller(callerFrame);
    }
    clock.now = 1000;
    tap.close();
    expect((await tap.finished).durationMs).toBe(1000);
    const wav = readWav(file);
    // Every frame the caller sent, one after another, and no silence among them.
    expect(soundIn(wav.left, 0, 8000)).toBe(true);
  });

  it('keeps an answer sent ahead of time in one piece, and pads both sides to the stream’s end', async () => {
    const { tap, clock, file } = tapOn(LINEAR16_16K);
    const answer = frame(LINEAR16_16K, 2000);
    clock.now = 200;
    for (let i = 0; i < 15; i++) tap.assistant(answer); // 300 ms of audio sent at once
    clock.now = 1500;
    tap.close();
    const result = await tap.finished;
    expect(result).toMatchObject({ durationMs: 1500, sampleRate: 16_000, bytes: 44 + 24_000 * 4 });
    const wav = readWav(file);
    expect(wav.sampleRate).toBe(16_000);
    expect(silentIn(wav.right, 0, 3200)).toBe(true);
    expect(soundIn(wav.right, 3200, 8000)).toBe(true);
    expect(silentIn(wav.right, 8000, 24_000)).toBe(true);
    expect(silentIn(wav.left, 0, 24_000)).toBe(true);
  });

  it('writes out as the call goes, not only at the end', async () => {
    const { tap, clock, file } = tapOn(MULAW_8K);
    const callerFrame = frame(MULAW_8K, 3000);
    for (let k = 1; k <= 250; k++) {
      clock.now = k * 20;
      tap.caller(callerFrame);
    }
    // The assistant said nothing: after the next flush its side is padded to three seconds behind
    // now, and two seconds of the call are already in the file.
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(readFileSync(file).length).toBeGreaterThanOrEqual(44 + 16_000 * 4);
    clock.now = 5000;
    tap.close();
    expect((await tap.finished).durationMs).toBe(5000);
  });

  it('copies each frame: the sender may reuse its buffer', async () => {
    const { tap, clock, file } = tapOn(MULAW_8K);
    const reused = frame(MULAW_8K, 5000);
    clock.now = 20;
    tap.caller(reused);
    reused.fill(0xff); // μ-law silence
    clock.now = 40;
    tap.caller(reused);
    tap.close();
    const wav = readWav((await tap.finished).file);
    expect(file).toBe((await tap.finished).file);
    expect(soundIn(wav.left, 0, 160)).toBe(true);
    expect(silentIn(wav.left, 160, 320)).toBe(true);
  });

  it('throws the file away when discarded', async () => {
    const { tap, clock, file } = tapOn(MULAW_8K);
    for (let k = 1; k <= 200; k++) {
      clock.now = k * 20;
      tap.caller(frame(MULAW_8K, 3000));
    }
    await new Promise((resolve) => setTimeout(resolve, 450));
    await tap.discard();
    await expect(tap.finished).rejects.toThrow('discarded');
    expect(existsSync(file)).toBe(false);
  });
});
