/**
 * What a caller hears when the call cannot be served because every key of a vendor it needs is at
 * its concurrent_limit (`call-leases.ts`): a short apology, then the stream closes — never silence.
 * When the voice is what ran out, nothing can speak, so the apology is a recording shipped with the
 * platform (`assets/busy-apology.l16`, made by `scripts/make-busy-apology.ts`), converted to the
 * carrier's format; otherwise the assistant's own voice says the same words. The stream closes once
 * the carrier echoes the mark after the apology (it has played), or after its length and a margin.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type AudioFormat, durationMs, encodeAudio, l16ToPcm16 } from './audio.js';
import type { ApologyVoice } from './call-leases.js';
import { resample } from './resample.js';
import { SpeechLane } from './speech-lane.js';
import type { MediaHandlers, MediaSender } from './transport.js';

export const BUSY_APOLOGY_TEXT =
  "I'm sorry, all of our lines are busy right now. Please call again in a few minutes. Goodbye.";
/** The recording's format: 16-bit little-endian PCM at this rate, mono, no header. */
export const BUSY_APOLOGY_RATE = 16_000;
export const BUSY_APOLOGY_FILE = fileURLToPath(new URL('./assets/busy-apology.l16', import.meta.url));

/** How long the assistant's voice may take to say the apology before the recording is used instead. */
const VOICE_BUDGET_MS = 5000;
/** Beyond the apology's own length, how long to wait for the carrier to say it has played. */
const PLAYED_MARGIN_MS = 3000;
const MARK = 'busy-apology';

let recording: Int16Array | undefined;
const converted = new Map<string, Uint8Array>();

/** The recorded apology in `format`. */
export function busyApologyClip(format: AudioFormat): Uint8Array {
  const id = `${format.encoding}/${format.sampleRate}`;
  let audio = converted.get(id);
  if (!audio) {
    recording ??= l16ToPcm16(readFileSync(BUSY_APOLOGY_FILE));
    const samples =
      format.sampleRate === BUSY_APOLOGY_RATE
        ? recording
        : resample(recording, BUSY_APOLOGY_RATE, format.sampleRate);
    audio = encodeAudio(format, samples);
    converted.set(id, audio);
  }
  return audio;
}

/**
 * Says the apology on the stream and closes it; the handlers to give the stream meanwhile (they
 * only listen for the mark). `done` is told once the stream is closed or gone.
 */
export function turnAway(
  send: MediaSender,
  format: AudioFormat,
  voice: ApologyVoice | undefined,
  done: () => void,
): MediaHandlers {
  const gone = new AbortController();
  let played!: () => void;
  const heard = new Promise<void>((resolve) => {
    played = resolve;
  });
  const say = async () => {
    let bytes = voice ? await speak(voice, format, send, gone.signal) : 0;
    if (gone.signal.aborted) return;
    if (bytes === 0) {
      const clip = busyApologyClip(format);
      send.media(clip);
      bytes = clip.length;
    }
    send.mark(MARK);
    const timer = setTimeout(played, durationMs(format, bytes) + PLAYED_MARGIN_MS);
    await heard;
    clearTimeout(timer);
    send.close();
  };
  void say()
    .catch(() => send.close())
    .finally(done);
  return {
    media() {},
    mark(name) {
      if (name === MARK) played();
    },
    dtmf() {},
    ended() {
      gone.abort();
      played();
    },
  };
}

/** The apology in the assistant's voice, sent as it comes; the bytes sent (0: the voice failed). */
async function speak(
  voice: ApologyVoice,
  format: AudioFormat,
  send: MediaSender,
  gone: AbortSignal,
): Promise<number> {
  const abort = new AbortController();
  const stop = () => abort.abort();
  gone.addEventListener('abort', stop, { once: true });
  const timer = setTimeout(stop, VOICE_BUDGET_MS);
  let bytes = 0;
  const lane = new SpeechLane({
    adapter: voice.adapter,
    candidates: voice.candidates,
    format,
    voice: voice.voice,
    signal: abort.signal,
    clock: () => performance.now(),
    onAudio: (audio) => {
      bytes += audio.length;
      send.media(audio);
    },
    onFallback: () => {},
  });
  lane.send(BUSY_APOLOGY_TEXT);
  await lane.end();
  clearTimeout(timer);
  gone.removeEventListener('abort', stop);
  return bytes;
}
