/**
 * Makes the apology a call hears when every key of its voice is at its concurrent_limit
 * (src/voice/busy-apology.ts): no voice is left to speak it, so it is a recording, made once with
 * espeak-ng and committed as raw 16-bit little-endian PCM, 16 kHz, mono (the widest format a carrier
 * streams; 8 kHz carriers get it resampled at run time). Run again only to change the words:
 *   apt-get install -y espeak-ng && npx tsx scripts/make-busy-apology.ts
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { pcm16ToL16 } from '../src/voice/audio.js';
import { BUSY_APOLOGY_FILE, BUSY_APOLOGY_RATE, BUSY_APOLOGY_TEXT } from '../src/voice/busy-apology.js';
import { resample } from '../src/voice/resample.js';

/** The 16-bit mono samples and rate of a RIFF/WAVE file (what espeak-ng writes). */
function readWav(wav: Buffer): { samples: Int16Array; rate: number } {
  if (wav.toString('ascii', 0, 4) !== 'RIFF' || wav.toString('ascii', 8, 12) !== 'WAVE')
    throw new Error('not a WAVE file');
  let rate = 0;
  for (let offset = 12; offset + 8 <= wav.length; ) {
    const id = wav.toString('ascii', offset, offset + 4);
    // espeak-ng writing to a pipe leaves the data chunk's size unknown (0xffffffff): read to the end.
    const size = Math.min(wav.readUInt32LE(offset + 4), wav.length - offset - 8);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (wav.readUInt16LE(body + 2) !== 1 || wav.readUInt16LE(body + 14) !== 16)
        throw new Error('expected 16-bit mono PCM');
      rate = wav.readUInt32LE(body + 4);
    } else if (id === 'data') {
      const samples = new Int16Array(size >> 1);
      for (let i = 0; i < samples.length; i++) samples[i] = wav.readInt16LE(body + i * 2);
      return { samples, rate };
    }
    offset = body + size + (size & 1);
  }
  throw new Error('no data chunk');
}

const wav = execFileSync('espeak-ng', ['-v', 'en-us', '-s', '160', '--stdout', BUSY_APOLOGY_TEXT]);
const { samples, rate } = readWav(wav);
const audio = pcm16ToL16(resample(samples, rate, BUSY_APOLOGY_RATE));
writeFileSync(BUSY_APOLOGY_FILE, audio);
console.log(`${BUSY_APOLOGY_FILE}: ${audio.length} bytes, ${(samples.length / rate).toFixed(2)} s`);
