/**
 * Browser tests: real headless Chromium (Debian's `chromium`, or `CHROMIUM_PATH`) driven by
 * playwright-core. One browser per test file, a fresh context (cookies, storage, permissions) per test.
 * The browser's microphone is Chromium's fake capture device playing a WAV made from the committed
 * speech fixtures (test/fixtures/voice/*.ulaw) once — the `%noloop` suffix — and silence after it.
 *
 * When a test fails, a screenshot of its page and the page's console log are kept in the file's
 * temporary directory, whose path the failure prints. `screenshot()` writes the documentation's
 * pictures (docs/console/<name>.png) when `CONSOLE_SCREENSHOTS=1`, and into that directory otherwise,
 * so a run never changes the working tree unless asked to.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { ulawToPcm16 } from '../../src/voice/audio.js';
import { resample } from '../../src/voice/resample.js';
import { utterance } from './stt-speech.js';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const DOCS_SCREENSHOTS = resolve('docs/console');

export interface BrowserOptions {
  /** A WAV file the fake microphone plays once (see speechWav); silence when not given. */
  microphoneWav?: string;
}

export async function launchBrowser(options: BrowserOptions = {}): Promise<Browser> {
  const args = [
    // getUserMedia is granted without a prompt, and the devices are Chromium's fakes.
    '--use-fake-ui-for-media-stream',
    '--use-fake-device-for-media-stream',
    // An AudioContext may start without a click (the tests' pages start calls from code).
    '--autoplay-policy=no-user-gesture-required',
  ];
  if (options.microphoneWav) args.push(`--use-file-for-fake-audio-capture=${options.microphoneWav}%noloop`);
  // Chromium's sandbox refuses to run as root (CI containers); a normal user keeps it.
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args });
}

/** Part of the fake microphone's recording: a speech fixture by name, or silence. */
export type SpeechPart = string | { silenceMs: number };

export interface SpeechWav {
  path: string;
  /** What the WAV holds, 16-bit PCM at `sampleRate`: what the microphone should hear. */
  samples: Int16Array;
  sampleRate: number;
}

/**
 * Writes the fixtures (and silences) one after another as a 16 kHz 16-bit mono WAV into `dir` — the
 * μ-law 8 kHz recordings decoded and resampled by the platform's own code, nothing committed.
 */
export function speechWav(dir: string, parts: SpeechPart[], sampleRate = 16_000): SpeechWav {
  const pieces = parts.map((part) =>
    typeof part === 'string'
      ? resample(ulawToPcm16(utterance(part)), 8000, sampleRate)
      : new Int16Array(Math.round((sampleRate * part.silenceMs) / 1000)),
  );
  const samples = new Int16Array(pieces.reduce((sum, piece) => sum + piece.length, 0));
  let offset = 0;
  for (const piece of pieces) {
    samples.set(piece, offset);
    offset += piece.length;
  }
  const path = join(dir, 'microphone.wav');
  writeFileSync(path, wav(samples, sampleRate));
  return { path, samples, sampleRate };
}

/** A canonical 44-byte-header PCM WAV (RIFF, `fmt ` chunk of 16 bytes, `data`). */
function wav(samples: Int16Array, sampleRate: number): Buffer {
  const data = samples.length * 2;
  const out = Buffer.alloc(44 + data);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + data, 4);
  out.write('WAVEfmt ', 8, 'ascii');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(sampleRate * 2, 28); // bytes per second
  out.writeUInt16LE(2, 32); // bytes per frame
  out.writeUInt16LE(16, 34); // bits per sample
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(data, 40);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i]!, 44 + i * 2);
  return out;
}

export interface BrowserHarness {
  /** The file's temporary directory: fixtures' WAVs, failure artefacts, screenshots not for docs. */
  readonly dir: string;
  /** The current test's page (in its own context). */
  page(): Page;
  context(): BrowserContext;
  /** The current page's console messages and page errors, in order. */
  consoleLog(): string[];
  /**
   * screenshot() of the current page (or of one part of it, `of`), into the file's temporary
   * directory unless for the docs.
   */
  screenshot(name: string, of?: Locator): Promise<string>;
}

/**
 * Starts a browser for the test file (before its tests; `prepare` runs first, in the file's temporary
 * directory, and may name the microphone's WAV) and a fresh context and page for each test.
 */
export function useBrowser(prepare: (dir: string) => BrowserOptions = () => ({})): BrowserHarness {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-browser-'));
  let browser: Browser | undefined;
  let context: BrowserContext | undefined;
  let page: Page | undefined;
  let log: string[] = [];

  beforeAll(async () => {
    browser = await launchBrowser(prepare(dir));
  });
  beforeEach(async () => {
    context = await browser!.newContext();
    page = await context.newPage();
    log = [];
    const current = log;
    page.on('console', (message) => current.push(`[${message.type()}] ${message.text()}`));
    page.on('pageerror', (error) => current.push(`[pageerror] ${error.stack ?? error.message}`));
  });
  afterEach(async ({ task }) => {
    if (task.result?.state === 'fail' && page) {
      const name = task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 80);
      const failures = join(dir, 'failures');
      mkdirSync(failures, { recursive: true });
      await page.screenshot({ path: join(failures, `${name}.png`), fullPage: true }).catch(() => {});
      writeFileSync(join(failures, `${name}.log`), `${log.join('\n')}\n`);
      console.error(`browser test failed: its screenshot and console log are in ${failures}`);
    }
    await context?.close();
    context = undefined;
    page = undefined;
  });
  afterAll(async () => {
    await browser?.close();
    // A failure's artefacts stay for whoever debugs it; a clean run leaves nothing behind.
    if (!hasFailures(dir)) rmSync(dir, { recursive: true, force: true });
  });

  return {
    dir,
    page: () => page ?? fail('no page outside a test'),
    context: () => context ?? fail('no context outside a test'),
    consoleLog: () => log,
    screenshot: (name, of) => screenshot(of ?? page ?? fail('no page outside a test'), name, dir),
  };
}

function hasFailures(dir: string): boolean {
  return existsSync(join(dir, 'failures'));
}

function fail(message: string): never {
  throw new Error(message);
}

/**
 * A picture of the page for the documentation: docs/console/<name>.png with CONSOLE_SCREENSHOTS=1
 * (commit the ones that changed), `<dir>/screenshots/<name>.png` otherwise. Returns where it went.
 */
export async function screenshot(what: Page | Locator, name: string, dir: string): Promise<string> {
  const target = process.env.CONSOLE_SCREENSHOTS === '1' ? DOCS_SCREENSHOTS : join(dir, 'screenshots');
  mkdirSync(target, { recursive: true });
  const path = join(target, `${name}.png`);
  await ('goto' in what ? what.screenshot({ path, fullPage: true }) : what.screenshot({ path }));
  return path;
}
