/**
 * What the tts_d simulator answers a request with: the WAV the vendor documents — `fmt ` (plus a
 * `fact` chunk for μ-law, as non-PCM WAVs carry), `cue ` points and a `LIST`/`adtl` of `ltxt`
 * grapheme labels, then `data` — followed by the audio of the text from the tts_a simulator's tone
 * voice (sim/tts-a-voice.ts): audible, its length following the text, never silent. With
 * `unknownSizes` the header says 0xFFFFFFFF for the sizes, as the vendor's older models do.
 */
import { type Grapheme, UNKNOWN_SIZE, WAVE_MULAW, type WavFormat } from '../providers/tts/tts-d-wav.js';
import type { AudioFormat } from '../voice/audio.js';
import { ToneVoice } from './tts-a-voice.js';

export interface SpokenWav {
  header: Uint8Array;
  /** The audio, in pieces of about the voice's chunk length, with each piece's duration. */
  chunks: Array<{ audio: Uint8Array; ms: number }>;
}

/** The text as the vendor's WAV: header with grapheme cues, then the audio in pieces. */
export function speakWav(
  text: string,
  format: WavFormat,
  voice: { msPerCharacter: number; chunkMs: number; unknownSizes?: boolean },
): SpokenWav {
  const audioFormat: AudioFormat = {
    encoding: format.formatTag === WAVE_MULAW ? 'mulaw' : 'linear16',
    sampleRate: format.sampleRate as AudioFormat['sampleRate'],
  };
  const tone = new ToneVoice(audioFormat, voice.msPerCharacter, voice.chunkMs);
  const chunks = [...tone.speak(text)].map((chunk) => ({ audio: chunk.audio, ms: chunk.ms }));
  const perCharacter = Math.round((format.sampleRate * voice.msPerCharacter) / 1000);
  const graphemes = Array.from(text).map((char, i) => ({
    text: char,
    startSample: i * perCharacter,
    lengthSamples: perCharacter,
  }));
  const dataBytes = chunks.reduce((sum, chunk) => sum + chunk.audio.length, 0);
  return { header: wavHeader(format, graphemes, voice.unknownSizes ? undefined : dataBytes), chunks };
}

function chunk(id: string, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + body.length + (body.length % 2));
  out.set(Buffer.from(id, 'latin1'));
  new DataView(out.buffer).setUint32(4, body.length, true);
  out.set(body, 8);
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

/** A WAV header up to and including the `data` chunk's id and size; `dataBytes` undefined: unknown. */
export function wavHeader(
  format: WavFormat,
  graphemes: Grapheme[],
  dataBytes: number | undefined,
): Uint8Array {
  const pcm = format.formatTag !== WAVE_MULAW;
  const fmt = new DataView(new ArrayBuffer(pcm ? 16 : 18));
  const blockAlign = (format.channels * format.bitsPerSample) / 8;
  fmt.setUint16(0, format.formatTag, true);
  fmt.setUint16(2, format.channels, true);
  fmt.setUint32(4, format.sampleRate, true);
  fmt.setUint32(8, format.sampleRate * blockAlign, true);
  fmt.setUint16(12, blockAlign, true);
  fmt.setUint16(14, format.bitsPerSample, true);
  const parts = [chunk('fmt ', new Uint8Array(fmt.buffer))];
  if (!pcm) {
    const fact = new DataView(new ArrayBuffer(4));
    fact.setUint32(0, dataBytes === undefined ? UNKNOWN_SIZE : dataBytes / blockAlign, true);
    parts.push(chunk('fact', new Uint8Array(fact.buffer)));
  }
  const cue = new DataView(new ArrayBuffer(4 + graphemes.length * 24));
  cue.setUint32(0, graphemes.length, true);
  const labels: Uint8Array[] = [Buffer.from('adtl', 'latin1')];
  graphemes.forEach((grapheme, i) => {
    const at = 4 + i * 24;
    cue.setUint32(at, i + 1, true);
    cue.setUint32(at + 4, grapheme.startSample, true);
    cue.setUint32(at + 8, 0x61746164, true); // 'data'
    cue.setUint32(at + 20, grapheme.startSample, true);
    const text = Buffer.from(`${grapheme.text}\0`, 'utf8');
    const ltxt = new Uint8Array(20 + text.length);
    const view = new DataView(ltxt.buffer);
    view.setUint32(0, i + 1, true);
    view.setUint32(4, grapheme.lengthSamples, true);
    ltxt.set(Buffer.from('grph', 'latin1'), 8);
    ltxt.set(text, 20);
    labels.push(chunk('ltxt', ltxt));
  });
  parts.push(chunk('cue ', new Uint8Array(cue.buffer)), chunk('LIST', concat(labels)));
  const head = concat(parts);
  const riff = new DataView(new ArrayBuffer(12));
  riff.setUint32(0, 0x46464952, true); // 'RIFF'
  riff.setUint32(4, dataBytes === undefined ? UNKNOWN_SIZE : 4 + head.length + 8 + dataBytes, true);
  riff.setUint32(8, 0x45564157, true); // 'WAVE'
  const data = new DataView(new ArrayBuffer(8));
  data.setUint32(0, 0x61746164, true); // 'data'
  data.setUint32(4, dataBytes === undefined ? UNKNOWN_SIZE : dataBytes, true);
  return concat([new Uint8Array(riff.buffer), head, new Uint8Array(data.buffer)]);
}
