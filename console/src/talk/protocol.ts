/**
 * The web-call protocol between the Talk page and the platform (`POST /api/v1/calls/web`, then the
 * WebSocket it names): the browser sends `start` with the call's token first, then 20 ms binary frames
 * of microphone audio and a few text commands; the server sends the assistant's audio as binary frames
 * and the messages below. A close with 1008 means the socket was refused (a bad or used token).
 */

export interface WebCallAudioFormat {
  encoding: string;
  sample_rate: number;
  channels: number;
}

/** What `POST /api/v1/calls/web` answers with, as much of it as the browser needs. */
export interface WebCallSession {
  socket_url: string;
  token: string;
  audio: WebCallAudioFormat;
}

export type ClientMessage =
  | { type: 'start'; token: string }
  | { type: 'mark'; name: string }
  | { type: 'interrupt' }
  | { type: 'dtmf'; digit: string }
  | { type: 'hangup' };

export interface TranscriptMessage {
  type: 'transcript';
  speaker: 'user' | 'assistant';
  text: string;
  final: boolean;
}

/** A finished turn and its latencies; the fields are the server's (see docs/voice.md). */
export interface TurnMessage {
  type: 'turn';
  [field: string]: unknown;
}

export interface EventMessage {
  type: 'event';
  name: string;
  [field: string]: unknown;
}

export type ServerMessage =
  | { type: 'started'; call_id: number | string; audio?: WebCallAudioFormat }
  | { type: 'mark'; name: string }
  | { type: 'clear' }
  | TranscriptMessage
  | TurnMessage
  | EventMessage
  | { type: 'ended'; reason: string };

/** The close code of a refused socket (RFC 6455 policy violation). */
export const CLOSE_REFUSED = 1008;

/** The one audio format the protocol speaks; anything else is a server this page does not know. */
export function isCallFormat(audio: WebCallAudioFormat): boolean {
  return audio.encoding === 'pcm_s16le' && audio.sample_rate === 16_000 && audio.channels === 1;
}

/**
 * A text message from the server, or undefined for one that is not JSON, has no known `type`, or
 * lacks the fields its type needs (ignored, so a newer server's additions do not break the page).
 */
export function parseServerMessage(text: string): ServerMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const message = value as Record<string, unknown>;
  switch (message.type) {
    case 'started':
      return typeof message.call_id === 'number' || typeof message.call_id === 'string'
        ? (message as ServerMessage)
        : undefined;
    case 'mark':
    case 'event':
      return typeof message.name === 'string' ? (message as ServerMessage) : undefined;
    case 'transcript':
      return (message.speaker === 'user' || message.speaker === 'assistant') &&
        typeof message.text === 'string'
        ? { type: 'transcript', speaker: message.speaker, text: message.text, final: message.final === true }
        : undefined;
    case 'ended':
      return { type: 'ended', reason: typeof message.reason === 'string' ? message.reason : 'ended' };
    case 'clear':
    case 'turn':
      return message as ServerMessage;
    default:
      return undefined;
  }
}
