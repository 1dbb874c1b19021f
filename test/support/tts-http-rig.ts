/**
 * The conformance rig of a request-per-piece text-to-speech vendor (tts_b, tts_c) over its simulator
 * (sim/tts-http.ts): what the kit calls a stream is the requests made since the adapter last opened
 * one, so the rig hands the kit the real adapter behind a thin `open` that notes where each stream's
 * requests begin (it delegates; nothing of the adapter is replaced).
 */
import type { TtsAdapter } from '../../src/providers/tts/types.js';
import type { ScriptedAnswer, TtsHttpSimulator } from '../../src/sim/tts-http.js';
import type { AudioFormat } from '../../src/voice/audio.js';
import type { GoldenAnswer, GoldenCase, TtsRig } from './tts-conformance.js';

export interface HttpRigOptions {
  adapter: TtsAdapter;
  sim: TtsHttpSimulator;
  key: string;
  golden: GoldenCase[];
  formatName(format: AudioFormat): string;
  /** A golden case's frames as the body parts the simulator writes. */
  parts?(frames: string[], answer: GoldenAnswer): ScriptedAnswer['parts'];
  unknownKeyStatus?: number;
  voiceSettings?: Record<string, unknown>;
}

export function httpTtsRig(options: HttpRigOptions): TtsRig {
  const { sim } = options;
  let firstRequest = 0;
  const adapter: TtsAdapter = {
    id: options.adapter.id,
    open(streamOptions) {
      firstRequest = sim.requests.length;
      return options.adapter.open(streamOptions);
    },
  };
  return {
    adapter,
    requestPerPiece: true,
    unknownKeyStatus: options.unknownKeyStatus,
    voiceSettings: options.voiceSettings,
    async start() {
      sim.addKey(options.key);
      return { baseUrl: await sim.start(), apiKey: options.key };
    },
    stop: () => sim.stop(),
    golden: options.golden,
    replyNext: (frames, answer = {}) =>
      sim.replyNext({ ...answer, parts: options.parts ? options.parts(frames, answer) : frames }),
    refuseNext: (status, retryAfterSeconds, skip) => sim.failNext({ status, retryAfterSeconds, skip }),
    setFirstByteDelay: (ms) => {
      sim.options.ttfbMs = ms;
    },
    cutNextAfterAudio: (ms) => sim.cutAfterAudio(ms),
    delayText: (text, ms) => sim.delayText(text, ms),
    lastStream() {
      const requests = sim.requests.slice(firstRequest);
      const first = requests[0];
      return {
        voiceId: first?.voiceId ?? '',
        modelId: first?.modelId,
        outputFormat: first?.outputFormat,
        voiceSettings: first?.settings,
        texts: requests.map((request) => request.text),
        closed: requests.every((request) => request.closed),
        requestTimes: requests.map((request) => request.at),
      };
    },
    formatName: options.formatName,
  };
}
