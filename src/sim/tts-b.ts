/**
 * A local tts_b: the vendor's speech endpoint (`POST /v1/audio/speech`, providers/tts/tts-b-wire.ts)
 * on loopback. It checks the bearer key (401 `invalid_api_key` otherwise), refuses what the vendor
 * refuses (a missing input or voice, an input over 4,096 characters, a speed out of range,
 * instructions for a `tts-1` model, a format it does not offer), and streams the text's audio as raw
 * 24 kHz 16-bit PCM (`response_format: "pcm"`, the only one it offers) in chunks as it is generated. The shared machinery (sim/tts-http.ts) plays the injected failures.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  TTS_B_MAX_INPUT,
  TTS_B_PCM_RATE,
  TTS_B_SPEECH_PATH,
  TTS_B_SPEED,
  takesInstructions,
  ttsBErrorBody,
} from '../providers/tts/tts-b-wire.js';
import { pcm16ToL16 } from '../voice/audio.js';
import {
  type CutState,
  type ParsedSpeechRequest,
  type TtsHttpFailure,
  type TtsHttpRequestRecord,
  TtsHttpSimulator,
  type VendorError,
} from './tts-http.js';

export { TTS_HTTP_SIMULATOR_DEFAULTS as TTS_B_SIMULATOR_DEFAULTS } from './tts-http.js';

const invalid = (message: string, param: string): VendorError => ({
  status: 400,
  body: ttsBErrorBody(message, 'invalid_request_error', null).replace('"param":null', `"param":"${param}"`),
});

export class TtsBSimulator extends TtsHttpSimulator {
  protected readonly path = TTS_B_SPEECH_PATH;
  protected readonly basePath = '/v1';

  protected keyOf(request: IncomingMessage): string | undefined {
    const header = request.headers.authorization;
    return header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : undefined;
  }

  protected keyRefusal(key: string | undefined): VendorError {
    return {
      status: 401,
      body: ttsBErrorBody(
        key === undefined
          ? "You didn't provide an API key."
          : // The vendor quotes a masked key back; the adapter must keep even that out of its errors.
            `Incorrect API key provided: ${key.slice(0, 3)}***${key.slice(-4)}.`,
        'invalid_request_error',
        key === undefined ? null : 'invalid_api_key',
      ),
    };
  }

  protected parse(body: Record<string, unknown>): ParsedSpeechRequest | VendorError {
    const { model, input, voice, response_format: format = 'mp3', speed, instructions } = body;
    if (typeof model !== 'string' || !model) return invalid('Missing required parameter: model', 'model');
    if (typeof input !== 'string' || !input) return invalid('Missing required parameter: input', 'input');
    if (input.length > TTS_B_MAX_INPUT) return invalid('Input is longer than 4096 characters', 'input');
    const voiceId =
      typeof voice === 'string'
        ? voice
        : typeof (voice as { id?: unknown })?.id === 'string'
          ? (voice as { id: string }).id
          : '';
    if (!voiceId) return invalid('Missing required parameter: voice', 'voice');
    if (format !== 'pcm') {
      return invalid('The simulator answers response_format pcm only', 'response_format');
    }
    if (
      speed !== undefined &&
      (typeof speed !== 'number' || speed < TTS_B_SPEED.min || speed > TTS_B_SPEED.max)
    ) {
      return invalid('speed must be between 0.25 and 4', 'speed');
    }
    if (instructions !== undefined && !takesInstructions(model)) {
      return invalid('instructions are not supported for this model', 'instructions');
    }
    const settings: Record<string, unknown> = {};
    if (speed !== undefined) settings.speed = speed;
    if (instructions !== undefined) settings.instructions = instructions;
    return {
      text: input,
      voiceId,
      modelId: model,
      outputFormat: format,
      rate: TTS_B_PCM_RATE,
      encode: pcm16ToL16,
      settings,
    };
  }

  protected failure({ status, retryAfterSeconds }: TtsHttpFailure): VendorError {
    const headers: Record<string, string> = {};
    if (retryAfterSeconds !== undefined) headers['retry-after'] = String(retryAfterSeconds);
    if (status === 429) {
      return {
        status,
        headers,
        body: ttsBErrorBody('Rate limit reached for requests', 'requests', 'rate_limit_exceeded'),
      };
    }
    return {
      status,
      headers,
      body: ttsBErrorBody('The server had an error while processing your request.', 'server_error', null),
    };
  }

  protected async answer(
    response: ServerResponse,
    record: TtsHttpRequestRecord,
    chunks: AsyncIterable<Uint8Array>,
    cut: CutState | undefined,
  ): Promise<void> {
    // Chunked, with no length: the body streams as it is synthesized.
    response.writeHead(200, { 'content-type': 'audio/pcm', 'transfer-encoding': 'chunked' });
    for await (const audio of chunks) {
      if (response.destroyed) return;
      response.write(audio);
      if (cut) {
        cut.sentMs += (audio.length / 2 / TTS_B_PCM_RATE) * 1000;
        if (cut.sentMs >= cut.afterMs) {
          record.closed = true;
          record.closedBy = 'server';
          cut.fired = true;
          // Abruptly, mid-body: the chunked answer never reaches its last chunk.
          response.socket?.destroy();
          return;
        }
      }
    }
    response.end();
  }
}
