/**
 * The text-to-speech adapters, one per provider id. Unlike the carriers', their base URL and key come
 * with each stream (`TtsStreamOptions`), since an organization may bring its own key; a provider
 * without an adapter yet is absent, and the session treats it as unavailable.
 */
import type { TtsProvider } from '../ids.js';
import { TtsAAdapter } from './tts-a.js';
import { TtsBAdapter } from './tts-b.js';
import { TtsCAdapter } from './tts-c.js';
import { TtsDAdapter } from './tts-d.js';
import type { TtsAdapter } from './types.js';

export type TtsAdapters = Partial<Record<TtsProvider, TtsAdapter>>;

export function createTtsAdapters(): TtsAdapters {
  return {
    tts_a: new TtsAAdapter(),
    tts_b: new TtsBAdapter(),
    tts_c: new TtsCAdapter(),
    tts_d: new TtsDAdapter(),
  };
}
