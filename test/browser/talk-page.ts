/**
 * The page of test/console-talk-audio.test.ts: the Talk page's WebCall with nothing around it, driven
 * from the test through `window.talk`. It records what the call reports, and every microphone stream
 * the page was given, so the test can see that the microphone is released.
 */
import type { WebCallSession } from '../../console/src/talk/protocol.js';
import { WebCall, type WebCallEvents, type WebCallOptions } from '../../console/src/talk/web-call.js';

interface Recorded {
  type: keyof WebCallEvents;
  value: unknown;
  /** performance.now() when it was reported. */
  at: number;
}

const streams: MediaStream[] = [];
const getUserMedia = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
navigator.mediaDevices.getUserMedia = async (constraints) => {
  const stream = await getUserMedia(constraints);
  streams.push(stream);
  return stream;
};

const RECORDED: (keyof WebCallEvents)[] = [
  'started',
  'transcript',
  'turn',
  'event',
  'playing',
  'error',
  'ended',
];
let call: WebCall | undefined;
const events: Recorded[] = [];
let levels = 0;
let loudest = 0;

const talk = {
  /** Starts a call; resolves with the start's error message, if any. */
  async start(session: WebCallSession, options: WebCallOptions = {}): Promise<string | undefined> {
    call = new WebCall(session, { workletBase: '/assets/', timeoutMs: 5000, ...options });
    for (const type of RECORDED) {
      call.on(type, (value) =>
        events.push({ type, value: value instanceof Error ? value.message : value, at: performance.now() }),
      );
    }
    call.on('level', (level) => {
      levels += 1;
      loudest = Math.max(loudest, level);
    });
    return call.start().then(
      () => undefined,
      (error: unknown) => String(error),
    );
  },
  events: () => events,
  levels: () => ({ count: levels, loudest }),
  state: () => call?.state,
  sampleRate: () => call?.audioSampleRate,
  interrupt: () => call?.interrupt(),
  sendDigit: (digit: string) => {
    try {
      call?.sendDigit(digit);
      return undefined;
    } catch (error) {
      return String(error);
    }
  },
  hangUp: () => call?.hangUp(),
  /** The readyState of every microphone track the page was given ('live' or 'ended'). */
  microphoneTracks: () => streams.flatMap((stream) => stream.getTracks().map((track) => track.readyState)),
};

(window as unknown as { talk: typeof talk }).talk = talk;
document.body.dataset.ready = 'true';
