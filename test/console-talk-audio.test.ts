/**
 * The browser side of a web call (console/src/talk), in real headless Chromium: the fake microphone
 * plays recorded speech, the page's WebCall sends it to a protocol peer (test/support/talk-page-server)
 * and plays what the peer sends. Facts are asserted, with generous time bounds (a loaded machine):
 * frames of the protocol's size whose loudness follows the recording, marks echoed once their audio
 * has played and not long after, a clear that drops the rest, the commands, and a microphone released
 * when the call ends.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { type SpeechWav, speechWav, useBrowser } from './support/browser.js';
import { type PeerSocket, startTalkPageServer, type TalkPageServer } from './support/talk-page-server.js';

const TOKEN = 'web-call-token';
const AUDIO = { encoding: 'pcm_s16le', sample_rate: 16_000, channels: 1 };
const FRAME_BYTES = 640;

interface PageEvent {
  type: string;
  value: unknown;
  at: number;
}
/** What test/browser/talk-page.ts puts on `window`. */
interface TalkProbe {
  start(session: object, options?: object): Promise<string | undefined>;
  events(): PageEvent[];
  levels(): { count: number; loudest: number };
  state(): string | undefined;
  sampleRate(): number | undefined;
  interrupt(): void;
  sendDigit(digit: string): string | undefined;
  hangUp(): void;
  microphoneTracks(): string[];
}
type PageGlobals = { talk: TalkProbe };

let microphone: SpeechWav;
const harness = useBrowser((dir) => {
  microphone = speechWav(dir, [
    { silenceMs: 1500 },
    'book-appointment',
    { silenceMs: 2000 },
    'three-oclock',
    { silenceMs: 2000 },
  ]);
  return { microphoneWav: microphone.path };
});
let server: TalkPageServer;
beforeAll(async () => {
  server = await startTalkPageServer();
});
afterAll(async () => {
  await server?.close();
});

/** Opens the page and starts a call; the peer accepts it (or not: `accept: false`). */
async function call(
  options: { accept?: boolean; sampleRate?: number } = {},
): Promise<{ page: Page; peer: PeerSocket; started: Promise<string | undefined> }> {
  const page = harness.page();
  await page.goto(server.url);
  await page.waitForSelector('body[data-ready]');
  const socket = server.nextSocket();
  const session = { socket_url: server.socketUrl(7), token: TOKEN, audio: AUDIO };
  const started = page.evaluate(
    ([session, sampleRate]) =>
      (globalThis as unknown as PageGlobals).talk.start(session, sampleRate ? { sampleRate } : {}),
    [session, options.sampleRate] as const,
  );
  const peer = await socket;
  const start = await peer.text('start');
  expect(start.message).toEqual({ type: 'start', token: TOKEN });
  if (options.accept !== false) {
    peer.send({ type: 'started', call_id: 7, audio: AUDIO });
    expect(await started).toBeUndefined();
  }
  return { page, peer, started };
}

const events = (page: Page) => page.evaluate(() => (globalThis as unknown as PageGlobals).talk.events());

function waitForEvent(page: Page, type: string, timeout = 10_000): Promise<unknown> {
  return page
    .waitForFunction(
      (type) => (globalThis as unknown as PageGlobals).talk.events().some((e) => e.type === type),
      type,
      {
        timeout,
      },
    )
    .then(() => events(page))
    .then((list) => list.find((event) => event.type === type)!.value);
}

/** `ms` of a 440 Hz tone at 16 kHz, s16le: audio the assistant "speaks". */
function tone(ms: number): Buffer {
  const samples = (16_000 * ms) / 1000;
  const out = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++)
    out.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 16_000)), i * 2);
  return out;
}

/** Sends audio and a mark after it; resolves with the milliseconds until the browser echoes the mark. */
async function playAndTime(peer: PeerSocket, ms: number, name: string): Promise<number> {
  const sentAt = performance.now();
  peer.sendAudio(tone(ms));
  peer.send({ type: 'mark', name });
  const echo = await peer.text('mark', (message) => message.name === name, ms + 10_000);
  return echo.at - sentAt;
}

/** Each 20 ms frame's RMS level in dB of full scale (digital silence: -120). */
function frameLevels(samples: Int16Array): number[] {
  const levels: number[] = [];
  for (let start = 0; start + 320 <= samples.length; start += 320) {
    let sum = 0;
    for (let i = start; i < start + 320; i++) sum += samples[i]! * samples[i]!;
    const rms = Math.sqrt(sum / 320) / 32768;
    levels.push(rms > 1e-6 ? 20 * Math.log10(rms) : -120);
  }
  return levels;
}

function correlation(a: number[], b: number[]): number {
  const mean = (xs: number[]) => xs.reduce((sum, x) => sum + x, 0) / xs.length;
  const ma = mean(a);
  const mb = mean(b);
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += (a[i]! - ma) * (b[i]! - mb);
    aa += (a[i]! - ma) ** 2;
    bb += (b[i]! - mb) ** 2;
  }
  return ab / Math.sqrt(aa * bb || 1);
}

describe('the microphone', () => {
  // At 16 kHz Chromium resamples the microphone into the context; at 48 kHz the worklet does.
  test.each([16_000, 48_000])(
    'reaches the peer as 640-byte frames whose loudness follows the recording (context at %i Hz)',
    async (sampleRate) => {
      const { page, peer } = await call({ sampleRate });
      expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.sampleRate())).toBe(
        sampleRate,
      );
      const expected = frameLevels(microphone.samples);
      // The recording and 2 s more (the capture starts a little after the fake device does).
      const wanted = expected.length + 100;
      const firstAt = (await peer.until(() => peer.frames[0], 10_000)).at;
      await peer.until(() => (peer.frames.length >= wanted ? true : undefined), wanted * 20 + 20_000);
      const frames = peer.frames.slice(0, wanted);
      expect(frames.every((frame) => frame.bytes.length === FRAME_BYTES)).toBe(true);
      // Real time: 50 frames a second, give or take what a loaded machine does to the timing.
      const seconds = (frames.at(-1)!.at - firstAt) / 1000;
      expect(wanted / seconds).toBeGreaterThan(40);
      expect(wanted / seconds).toBeLessThan(60);

      const pcm = Buffer.concat(frames.map((frame) => frame.bytes));
      const received = frameLevels(
        Int16Array.from({ length: pcm.length / 2 }, (_, i) => pcm.readInt16LE(i * 2)),
      );
      // Line the received frames up with the recording: received[i] is recording[i + lag].
      let best = { lag: 0, r: -1 };
      for (let lag = -25; lag <= 150; lag++) {
        const pairs = received.flatMap((level, i) =>
          i + lag >= 0 && i + lag < expected.length ? [[level, expected[i + lag]!]] : [],
        );
        const r = correlation(
          pairs.map((pair) => pair[0]!),
          pairs.map((pair) => pair[1]!),
        );
        if (r > best.r) best = { lag, r };
      }
      expect(best.r).toBeGreaterThan(0.7);
      const speech: number[] = [];
      const silence: number[] = [];
      received.forEach((level, i) => {
        const j = i + best.lag;
        if (j < 0 || j >= expected.length) return;
        const around = expected.slice(Math.max(0, j - 10), j + 11);
        if (expected[j]! > -35) speech.push(level);
        else if (around.every((value) => value === -120)) silence.push(level);
      });
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      expect(speech.length).toBeGreaterThan(100);
      expect(silence.length).toBeGreaterThan(100);
      expect(median(speech)).toBeGreaterThan(-40);
      // Near silence where the recording is silent (the browser's noise suppression may leave a whisper).
      expect(silence.filter((level) => level < -60).length / silence.length).toBeGreaterThan(0.95);
      const levels = await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.levels());
      expect(levels.count).toBeGreaterThan(wanted / 2);
      expect(levels.loudest).toBeGreaterThan(0.01);
    },
    90_000,
  );

  test('sends nothing before the server accepts the call, and is released when it refuses', async () => {
    const { page, peer, started } = await call({ accept: false });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(peer.frames).toEqual([]);
    peer.socket.close(1008, 'Web call refused');
    expect(await started).toBeUndefined();
    expect(await waitForEvent(page, 'ended')).toEqual({ reason: 'refused' });
    expect((await events(page)).map((event) => event.type)).toEqual(['error', 'ended']);
    const tracks = await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.microphoneTracks());
    expect(tracks.length).toBeGreaterThan(0);
    expect(tracks.every((state) => state === 'ended')).toBe(true);
  });
  test('a lost connection ends the call with an error and releases the microphone', async () => {
    const { page, peer } = await call();
    await peer.until(() => (peer.frames.length >= 5 ? true : undefined));
    peer.socket.terminate();
    expect(await waitForEvent(page, 'ended')).toEqual({ reason: 'connection_lost' });
    const reported = await events(page);
    expect(reported.find((event) => event.type === 'error')?.value).toMatch(/connection closed/);
    const tracks = await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.microphoneTracks());
    expect(tracks.every((state) => state === 'ended')).toBe(true);
  });
});

describe("the assistant's audio", () => {
  for (const sampleRate of [16_000, 48_000]) {
    test(`plays gap-free and its marks come back once it has played (context at ${sampleRate} Hz)`, async () => {
      const { page, peer } = await call({ sampleRate });
      expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.sampleRate())).toBe(
        sampleRate,
      );
      // Rendering runs a quantum or two ahead of the loudspeaker: a few ms early at most.
      const first = await playAndTime(peer, 1000, 'first');
      expect(first).toBeGreaterThan(950);
      expect(first).toBeLessThan(1000 + 1500);
      expect(await waitForEvent(page, 'playing')).toBe(true);
      // Two utterances sent at once play one after the other: the second mark 600 ms after the first.
      const sentAt = performance.now();
      peer.sendAudio(tone(800));
      peer.send({ type: 'mark', name: 'a' });
      peer.sendAudio(tone(600));
      peer.send({ type: 'mark', name: 'b' });
      const a = await peer.text('mark', (message) => message.name === 'a');
      const b = await peer.text('mark', (message) => message.name === 'b');
      expect(a.at - sentAt).toBeGreaterThan(750);
      expect(b.at - a.at).toBeGreaterThan(550);
      expect(b.at - a.at).toBeLessThan(600 + 600);
      // A mark after audio that has all played comes back at once.
      const idle = await playAndTime(peer, 0, 'idle');
      expect(idle).toBeLessThan(1000);
      // The microphone kept flowing meanwhile.
      expect(peer.frames.length).toBeGreaterThan(50);
      expect(peer.frames.every((frame) => frame.bytes.length === FRAME_BYTES)).toBe(true);
    }, 60_000);
  }

  test('a clear drops what has not played: its mark comes back at once, new audio plays at once', async () => {
    const { peer } = await call();
    const sentAt = performance.now();
    peer.sendAudio(tone(5000));
    peer.send({ type: 'mark', name: 'long' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const clearedAt = performance.now();
    peer.send({ type: 'clear' });
    // Dropped marks are echoed at once, as carriers do (the server's playout has forgotten them).
    const long = await peer.text('mark', (message) => message.name === 'long');
    expect(long.at - sentAt).toBeLessThan(4000);
    expect(long.at - clearedAt).toBeLessThan(2000);
    // Had the 4.5 s left been kept, this mark would wait for them too.
    const after = await playAndTime(peer, 500, 'after');
    expect(after).toBeGreaterThan(450);
    expect(after).toBeLessThan(500 + 2000);
  }, 30_000);
});

describe('the commands', () => {
  test('interrupt cuts the assistant off and tells the server; dtmf is sent; transcripts, turns, events reach the page', async () => {
    const { page, peer } = await call();
    const sentAt = performance.now();
    peer.sendAudio(tone(4000));
    peer.send({ type: 'mark', name: 'answer' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.interrupt());
    const interrupt = await peer.text('interrupt');
    expect(interrupt.message).toEqual({ type: 'interrupt' });
    const answer = await peer.text('mark', (message) => message.name === 'answer');
    expect(answer.at - sentAt).toBeLessThan(3000);

    expect(
      await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.sendDigit('5')),
    ).toBeUndefined();
    expect((await peer.text('dtmf')).message).toEqual({ type: 'dtmf', digit: '5' });
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.sendDigit('55'))).toMatch(
      /Not a keypad digit/,
    );

    peer.send({ type: 'transcript', speaker: 'user', text: 'Hello there', final: true });
    peer.send({ type: 'turn', turn: 1, latency_ms: 812 });
    peer.send({ type: 'event', name: 'tool_called', tool: 'book' });
    // Messages the page does not know, or that lack what their type needs, are ignored.
    peer.send({ type: 'something_newer', detail: 1 });
    peer.send({ type: 'transcript', speaker: 'robot', text: 'ignored', final: true });
    peer.socket.send('not json');
    await waitForEvent(page, 'event');
    const seen = (await events(page)).filter((event) => ['transcript', 'turn', 'event'].includes(event.type));
    expect(seen.map((event) => event.value)).toEqual([
      { type: 'transcript', speaker: 'user', text: 'Hello there', final: true },
      { type: 'turn', turn: 1, latency_ms: 812 },
      { type: 'event', name: 'tool_called', tool: 'book' },
    ]);
  }, 30_000);

  test('hang-up tells the server, stops the microphone at once and ends with the server’s reason', async () => {
    const { page, peer } = await call();
    await peer.until(() => (peer.frames.length >= 10 ? true : undefined));
    await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.hangUp());
    const hangup = await peer.text('hangup');
    expect(hangup.message).toEqual({ type: 'hangup' });
    // The microphone is released before the server has even answered.
    const tracks = await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.microphoneTracks());
    expect(tracks.length).toBeGreaterThan(0);
    expect(tracks.every((state) => state === 'ended')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const framesAfter = peer.frames.filter((frame) => frame.at > hangup.at + 100);
    expect(framesAfter).toEqual([]);
    peer.send({ type: 'ended', reason: 'customer_hangup' });
    peer.socket.close(1000);
    expect(await waitForEvent(page, 'ended')).toEqual({ reason: 'customer_hangup' });
    expect(await page.evaluate(() => (globalThis as unknown as PageGlobals).talk.state())).toBe('ended');
    expect((await events(page)).some((event) => event.type === 'error')).toBe(false);
  }, 30_000);
});

describe('the harness', () => {
  test('keeps screenshots in its temporary directory unless CONSOLE_SCREENSHOTS=1', async () => {
    vi.stubEnv('CONSOLE_SCREENSHOTS', '');
    try {
      await harness.page().goto(server.url);
      const path = await harness.screenshot('talk-test-page');
      expect(path).toBe(join(harness.dir, 'screenshots', 'talk-test-page.png'));
      expect(readFileSync(path).subarray(1, 4).toString()).toBe('PNG');
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
