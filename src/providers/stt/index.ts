/** The speech-to-text adapters, one per provider id (each stream is given its base URL and key). */
import type { SttProvider } from '../ids.js';
import { SttAAdapter } from './stt-a.js';
import type { SttAdapter } from './types.js';

export type SttAdapters = Record<SttProvider, SttAdapter>;

export function createSttAdapters(): SttAdapters {
  return { stt_a: new SttAAdapter() };
}
