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
import type { KnowledgeSource } from './knowledge.js';
import type { CallTool } from './tools/types.js';
import type { MediaSender } from './transport.js';
import type { TurnSettings } from './turn-manager.js';
import type { TurnRecord } from './turn-metrics.js';
import type { VendorPlan } from './vendors.js';
import type { VoicemailSpec } from './voicemail.js';

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
  /** Plays DTMF tones through the carrier's own command, where it has one (false: it has none). */
  sendDigits(digits: string): Promise<boolean>;
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

/**
 * Hears both sides of the call as they go (call recordings): the caller's frames as they arrive and
 * the assistant's as they are sent to the carrier, both in the stream's format, on the audio path —
 * so it must only copy, never wait.
 */
export interface AudioTap {
  caller(frame: Uint8Array): void;
  assistant(frame: Uint8Array): void;
  /** The stream ended: nothing more comes. */
  close(): void;
}

/** `send`, with what it sends heard by `tap` first (recordings hear the assistant's side so). */
export function tapped(send: MediaSender, tap: AudioTap | undefined): MediaSender {
  if (!tap) return send;
  return {
    ...send,
    media: (audio) => {
      tap.assistant(audio);
      send.media(audio);
    },
  };
}

/** Told as things happen, for the metrics (`voice/metrics.ts`); never on the records' path. */
export interface SessionObserver {
  turn?(turn: TurnRecord): void;
  /** Caller speech start → audio paused, and → carrier cleared. */
  bargeIn?(stage: 'paused' | 'cleared', ms: number): void;
  interruption?(): void;
  vendorFailure?(kind: 'llm' | 'stt' | 'tts', error: ProviderError): void;
  /** The caller's words, as each final transcript arrives (the voicemail detection reads them). */
  heard?(text: string): void;
  ended?(): void;
}

/**
 * Who the caller is talking to: what a graph hand-off swaps without dropping the call — the prompt,
 * the tools, the fixed lines, the models and the voice. (The hearing stays: the speech-to-text stream
 * of the first assistant serves the whole call.)
 */
export interface AssistantSpec {
  assistantId: number;
  systemPrompt: string;
  /** The built-in tools the model is shown (end_call, transfer_call); answer-actions.ts carries them out. */
  tools: ToolDefinition[];
  /** The tools the session runs (custom, graph, keypad); their definitions are shown too. */
  callTools: CallTool[];
  idleMessage: string;
  goodbyeMessage: string;
  transferMessage: string;
  llmParameters: LlmParameters;
  plan: VendorPlan;
  tts: {
    adapter: TtsAdapter | undefined;
    voice: TtsVoice;
  };
  /** Per-turn time budget for reaching a language model (ms). */
  llmBudgetMs?: number;
  /** The assistant's documents, searched at each turn (knowledge.ts); absent: it has none. */
  knowledge?: KnowledgeSource;
}

/**
 * Where a call goes at the end of each caller turn, before it is answered (graphs: graph-call.ts).
 * The session awaits it with the turn's abort signal; it must answer quickly (natural-language
 * conditions have their own time budget) and never throw — a failure is `stay`.
 */
export interface CallRouting {
  route(callerText: string, signal: AbortSignal): Promise<RouteDecision>;
}

export type RouteDecision =
  | { type: 'stay' }
  /** Speak `sentence` in the next assistant's voice, then it answers the caller's words. */
  | { type: 'handoff'; sentence: string; assistant: AssistantSpec }
  /** The conversation is over (an exit node): say `sentence` (may be empty), then hang up. */
  | { type: 'end'; sentence: string }
  /** Move the call to a person (an escalation node): say `sentence`, then transfer to `to`. */
  | { type: 'transfer'; sentence: string; to: string };

export interface SessionSpec extends AssistantSpec {
  format: AudioFormat;
  send: MediaSender;
  recorder: CallRecorder;
  /** The call, for its tools. */
  callId: number;
  conversation: Conversation;
  greeting: string;
  turn: TurnSettings;
  stt: {
    adapter: SttAdapter | undefined;
    options: Omit<SttStreamOptions, 'apiKey' | 'baseUrl' | 'signal' | 'format'>;
  };
  llmAdapterFor(provider: string): LlmAdapter | undefined;
  vad: VoiceActivityFactory;
  observer: SessionObserver;
  log: { warn(data: object, message: string): void };
  /** The session's clock origin (`performance.now()`), when the call was prepared before its stream. */
  origin?: number;
  /** The greeting, already being spoken (prepared while the stream connected). */
  earlyGreeting?: EarlySpeech;
  /** Hears both sides (recordings); absent when the call is not recorded. */
  tap?: AudioTap;
  /** Answering machines on an outbound call (voicemail.ts): the runtime runs the flow beside the session. */
  voicemail?: VoicemailSpec;
  /** Routes each caller turn (a call on a number routed to a graph); absent: one assistant throughout. */
  routing?: CallRouting;
  /** False: the call's line cannot be moved (a web call): transfer_call is refused and the model told. */
  transferable?: boolean;
}
