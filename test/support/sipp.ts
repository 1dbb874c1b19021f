/**
 * sipp (Debian's `sip-tester`, installed by `.ci/run`) playing a customer's SIP trunk or caller in
 * the SIP tests: one process per scenario of `test/sipp/`, in a temporary directory holding the
 * scenario and the caller's audio (the committed μ-law fixtures of test/fixtures/voice, headerless,
 * as sipp's `rtp_stream` plays them), on free loopback ports. sipp's exit code says whether every
 * call followed the scenario (0), some did not (1), or it could not run; its error log says why.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pcm16ToAlaw, pcm16ToUlaw, ulawToPcm16 } from '../../src/voice/audio.js';

const SCENARIOS = path.resolve(import.meta.dirname, '..', 'sipp');
const VOICE = path.resolve(import.meta.dirname, '..', 'fixtures', 'voice');

export interface SippOptions {
  /** A scenario file of test/sipp/. */
  scenario: string;
  /** Where a calling scenario sends its INVITE (host:port); none for a scenario that waits for one. */
  remote?: string;
  transport?: 'udp' | 'tcp';
  /** Calls to make or take before exiting (-m), at `rate` a second, at most `concurrent` at once. */
  calls?: number;
  rate?: number;
  concurrent?: number;
  /** The Request-URI's user of a calling scenario (-s). */
  service?: string;
  /** The credentials of the scenario's [authentication] (-au, -ap). */
  auth?: { username: string; password: string };
  /** Values for the scenario's [keywords] (-key). */
  keys?: Record<string, string>;
  /**
   * The voice fixture the scenario's `rtp_stream` plays: written beside it as `tone.ulaw` and, in
   * A-law, `tone.alaw`. None: a second of a 440 Hz tone.
   */
  audio?: string;
  /** A second fixture, written as `tone2.ulaw` (a scenario's second utterance). */
  audio2?: string;
  /** sipp gives up (and fails) after this long. */
  timeoutSeconds?: number;
}

export interface SippResult {
  /** 0: every call as the scenario says; 1: some failed; others: sipp could not run. */
  code: number | null;
  /** Unexpected messages and failures sipp logged (-trace_err). */
  errors: string;
  output: string;
}

export interface Sipp {
  /** sipp's SIP port on 127.0.0.1. */
  port: number;
  /** Its RTP port ([media_port]). */
  mediaPort: number;
  done: Promise<SippResult>;
  /** Stops sipp now (SIGKILL) and removes its directory. */
  kill(): void;
}

/** One second of a 440 Hz tone in μ-law. */
function tone(): Uint8Array {
  const samples = new Int16Array(8000);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return pcm16ToUlaw(samples);
}

/** A port free for both UDP and TCP on 127.0.0.1 at the moment of asking. */
export async function freePort(): Promise<number> {
  for (;;) {
    const udp = createSocket('udp4');
    const port = await new Promise<number>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(0, '127.0.0.1', () => resolve(udp.address().port));
    });
    const tcpFree = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    udp.close();
    if (tcpFree) return port;
  }
}

/** Starts sipp with a scenario; resolves once it was spawned (it needs a moment to bind). */
export async function startSipp(options: SippOptions): Promise<Sipp> {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchboard-sipp-'));
  copyFileSync(path.join(SCENARIOS, options.scenario), path.join(dir, options.scenario));
  const ulaw = options.audio ? readFileSync(path.join(VOICE, `${options.audio}.ulaw`)) : tone();
  writeFileSync(path.join(dir, 'tone.ulaw'), ulaw);
  writeFileSync(path.join(dir, 'tone.alaw'), pcm16ToAlaw(ulawToPcm16(ulaw)));
  if (options.audio2) copyFileSync(path.join(VOICE, `${options.audio2}.ulaw`), path.join(dir, 'tone2.ulaw'));
  const port = await freePort();
  let mediaPort = await freePort();
  while (mediaPort === port || mediaPort % 2 === 1) mediaPort = await freePort();
  const errorFile = path.join(dir, 'errors.log');
  const args = [
    ...(options.remote ? [options.remote] : []),
    '-sf',
    options.scenario,
    '-t',
    options.transport === 'tcp' ? 't1' : 'u1',
    '-i',
    '127.0.0.1',
    '-mi',
    '127.0.0.1',
    '-p',
    String(port),
    '-mp',
    String(mediaPort),
    '-m',
    String(options.calls ?? 1),
    '-r',
    String(options.rate ?? 10),
    '-l',
    String(options.concurrent ?? options.calls ?? 1),
    '-timeout',
    `${options.timeoutSeconds ?? 30}s`,
    '-timeout_error',
    '-nostdin',
    '-trace_err',
    '-error_file',
    errorFile,
    ...(options.service ? ['-s', options.service] : []),
    ...(options.auth ? ['-au', options.auth.username, '-ap', options.auth.password] : []),
    ...Object.entries(options.keys ?? {}).flatMap(([key, value]) => ['-key', key, value]),
  ];
  const child: ChildProcess = spawn('sipp', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString('latin1')).slice(-20_000);
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString('latin1')).slice(-20_000);
  });
  const done = new Promise<SippResult>((resolve) => {
    const finish = (code: number | null) => {
      let errors = '';
      try {
        errors = readFileSync(errorFile, 'latin1');
      } catch {
        // No error file: nothing unexpected happened.
      }
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, errors, output });
    };
    child.once('error', (error) => {
      output += `\n${error.message}`;
      finish(null);
    });
    child.once('exit', (code) => finish(code));
  });
  return {
    port,
    mediaPort,
    done,
    kill: () => {
      child.kill('SIGKILL');
    },
  };
}
