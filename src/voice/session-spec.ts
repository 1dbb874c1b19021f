/**
 * What a live session is built from: the carrier side (format, sender), where records go, the
 * conversation's prompt and tools, the fixed things the assistant says, turn-taking settings, the
 * vendors to try, and the local voice activity detector. `runtime.ts` assembles it from the call and
 * the assistant's settings; tests and the benchmark may assemble their own.
 */
import type { ProviderError } from '../providers/errors.js';
import type { LlmAdapter, LlmParameters, ToolDefinition } from '../providers/llm/types.js';
import type { SttAdapter, SttStreamOptions } from '../providers/stt/types.js';
import type { TtsAdapter, TtsVoice } from '../providers/tts/types.js';

import type { AudioFormat } from './audio.js';
import type { Conversation } from './conversation.js';
import type { EarlySpeech } from './early-speech.js';
import type { MediaSender } from './transport.js';
import type { TurnSettings } from './turn-manager.js';
import type { TurnRecord } from './turn-metrics.js';
import type { VendorPlan } from './vendors.js';

/** Where the session writes what happened; each write is queued, never awaited on the audio path. */
export interface CallRecorder {
  transcript(segment: {
    speaker: 'user' | 'assistant';
    text: string;
    startedAt: Date;
    endedAt: Date;
  }): Promise<unknown>;
  turn(turn: TurnRecord): Promise<unknown>;
  event(type: string, data: Record<string, unknown>): Promise<unknown>;
  /** Ends the call at the carrier. */
  hangUp(): Promise<unknown>;
  /** Moves the call to `to` at the carrier. */
  transfer(to: string): Promise<unknown>;
}

/** Voice activity of the caller's audio; times are milliseconds of audio since the first frame. */
export interface VoiceActivity {
  /** The caller's audio, in the stream's format. */
  push(frame: Uint8Array): void;
  close(): void;
}
export type VoiceActivityFactory = (
  listener: {
    speechStart(audioMs: number): void;
    speechEnd(audioMs: number): void;
  },
  format: AudioFormat,
) => VoiceActivity;

/** Told as things happen, for the metrics (`voice/metrics.ts`); never on the records' path. */
export interface SessionObserver {
  turn?(turn: TurnRecord): void;
  /** Caller speech start → audio paused, and → carrier cleared. */
  bargeIn?(stage: 'paused' | 'cleared', ms: number): void;
  interruption?(): void;
  vendorFailure?(kind: 'llm' | 'stt' | 'tts', error: ProviderError): void;
  ended?(): void;
}

export interface SessionSpec {
  format: AudioFormat;
  send: MediaSender;
  recorder: CallRecorder;
  conversation: Conversation;
  tools: ToolDefinition[];
  greeting: string;
  idleMessage: string;
  goodbyeMessage: string;
  transferMessage: string;
  turn: TurnSettings;
  llmParameters: LlmParameters;
  plan: VendorPlan;
  stt: {
    adapter: SttAdapter | undefined;
    options: Omit<SttStreamOptions, 'apiKey' | 'baseUrl' | 'signal' | 'format'>;
  };
  tts: {
    adapter: TtsAdapter | undefined;
    voice: TtsVoice;
  };
  llmAdapterFor(provider: string): LlmAdapter | undefined;
  vad: VoiceActivityFactory;
  observer: SessionObserver;
  log: { warn(data: object, message: string): void };
  /** The session's clock origin (`performance.now()`), when the call was prepared before its stream. */
  origin?: number;
  /** The greeting, already being spoken (prepared while the stream connected). */
  earlyGreeting?: EarlySpeech;
  /** Per-turn time budget for reaching a language model (ms). */
  llmBudgetMs?: number;
}
