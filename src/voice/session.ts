/**
 * One live call: the caller's audio in, the assistant's voice out. The session wires the stages —
 * local VAD and the speech-to-text stream on the caller's audio, the turn manager deciding who has the
 * floor, answers from the language model spoken through the speech lane, the playout pacing audio to
 * the carrier — and records what happened (transcript, turns with their timing, vendor switches)
 * through the recorder, never on the audio path's time: records are written in the background, in
 * order. Rules of turn-taking live in `turn-manager.ts`; this file only carries out its actions.
 */
import type { ProviderError } from '../providers/errors.js';
import { toolResult } from './answer-actions.js';
import type { EarlySpeech } from './early-speech.js';
import { Hearing } from './hearing.js';
import { type Keypad, sessionKeypad } from './keypad.js';
import { Playout } from './playout.js';
import { type ReplyHost, reply } from './reply.js';
import { type AssistantSpec, type SessionSpec, tapped, type VoiceActivity } from './session-spec.js';
import { SpeechLane } from './speech-lane.js';
import { afterSaid } from './spoken-text.js';
import type { MediaHandlers } from './transport.js';
import { initialTurnState, step, type TurnAction, type TurnInput, type TurnState } from './turn-manager.js';
import { measure, type TurnMarks, type TurnRecord } from './turn-metrics.js';
import type { Utterance } from './utterance.js';
import { type Candidate, fallbackRecord } from './vendors.js';

export type {
  AssistantSpec,
  CallRecorder,
  CallRouting,
  RouteDecision,
  SessionObserver,
  SessionSpec,
  VoiceActivity,
  VoiceActivityFactory,
} from './session-spec.js';

export class CallSession implements MediaHandlers {
  readonly #origin: number;
  readonly #wallOrigin: number;
  readonly #playout: Playout;
  #turnState: TurnState = initialTurnState();
  #timer: NodeJS.Timeout | undefined;
  #utterance: Utterance | undefined;
  #utteranceSeq = 0;
  #turnPosition = 0;
  readonly #hearing: Hearing;
  readonly #vad: VoiceActivity;
  /** The clock time of the first caller frame: audio times count from it. */
  #audioOrigin: number | undefined;
  #ended = false;
  readonly #inputs: TurnInput[] = [];
  #stepping = false;
  /** Where the call goes once the last words have played (transfer_call). */
  #transferTo: string | undefined;
  #records: Promise<unknown> = Promise.resolve();
  /** Who the caller is talking to (a graph hand-off swaps it). */
  #assistant: AssistantSpec;
  readonly #keypad: Keypad;
  /** What a reply may do to the session (reply.ts). */
  readonly #replyHost: ReplyHost;

  constructor(private readonly spec: SessionSpec) {
    this.#assistant = spec;
    this.#keypad = sessionKeypad(
      spec,
      () => this.#utterance,
      (type, data) => this.#record(() => spec.recorder.event(type, data)),
    );
    const send = tapped(spec.send, spec.tap);
    this.#origin = spec.origin ?? performance.now();
    this.#wallOrigin = Date.now() - (performance.now() - this.#origin);
    this.#hearing = new Hearing(spec, {
      event: (event) => {
        const at = this.clock();
        if (event.type === 'transcript')
          this.#input(
            event.isFinal
              ? { type: 'stt_final', at, text: event.text, speechFinal: event.speechFinal }
              : { type: 'stt_interim', at, text: event.text },
          );
        else if (event.type === 'utterance_end') this.#input({ type: 'utterance_end', at });
      },
      fallback: (from, error, next, midCall) => this.#fallback('stt', from, error, next, midCall),
      unavailable: () => this.#record(() => this.spec.recorder.event('call.stt_unavailable', {})),
    });
    this.#playout = new Playout(
      send,
      spec.format,
      {
        audible: (id, at) => this.#onAudible(id, at),
        firstPlayed: (id, at) => {
          if (this.#utterance?.id === id) this.#utterance.marks.firstMarkPlayedAt ??= at;
        },
        played: (id, at) => this.#onPlayed(id, at),
      },
      this.clock,
    );
    this.#vad = spec.vad(
      {
        speechStart: (audioMs) =>
          this.#input({ type: 'vad_start', at: this.clock(), speechStartedAt: this.#audioTime(audioMs) }),
        speechEnd: (audioMs) =>
          this.#input({ type: 'vad_end', at: this.clock(), speechEndedAt: this.#audioTime(audioMs) }),
      },
      spec.format,
    );
    this.#replyHost = {
      spec: this.spec,
      assistant: () => this.#assistant,
      handOff: (assistant) => {
        this.#assistant = assistant;
        this.spec.conversation.setSystem(assistant.systemPrompt);
      },
      controls: () => this.#keypad,
      clock: this.clock,
      lane: (utterance) => this.#lane(utterance.abort.signal, this.#sink(utterance.id, utterance.marks)),
      fallback: (kind, from, error, next, mid) => this.#fallback(kind, from, error, next, mid),
      record: (type, data) => this.#record(() => this.spec.recorder.event(type, data)),
      finishAfterResponse: () => this.#input({ type: 'finish_after_response', at: this.clock() }),
      transferTo: (to) => {
        this.#transferTo = to;
      },
      endLane: (utterance) => this.#endLane(utterance),
    };
  }

  /** Milliseconds since the session began, on the monotonic clock. */
  readonly clock = (): number => performance.now() - this.#origin;

  readonly #wall = (at: number): Date => new Date(this.#wallOrigin + at);

  #audioTime(audioMs: number): number {
    return Math.min(this.clock(), (this.#audioOrigin ?? 0) + audioMs);
  }

  /** Starts the call: the greeting at once, the speech-to-text stream beside it. */
  start(): void {
    this.#input({ type: 'start', at: this.clock() });
    this.#hearing.start();
  }

  // ——— media handlers ———

  media(audio: Uint8Array): void {
    if (this.#ended) return;
    this.#audioOrigin ??= this.clock();
    this.spec.tap?.caller(audio);
    this.#vad.push(audio);
    this.#hearing.send(audio);
  }

  mark(name: string): void {
    this.#playout.onMark(name);
  }

  /** The caller asked the assistant to stop (a browser's Interrupt): as a key does, without a key. */
  readonly interrupt = (): void => this.#input({ type: 'stop', at: this.clock() });

  /** A key the caller pressed: to the tool collecting keys, else a caller turn (turn-manager.ts). */
  dtmf(digit: string): void {
    this.#record(() => this.spec.recorder.event('call.dtmf', { digit }));
    if (!this.#keypad.press(digit)) this.#input({ type: 'dtmf', at: this.clock(), digit });
  }

  ended(reason: 'stop' | 'closed' | 'error'): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#timer);
    const utterance = this.#utterance;
    if (utterance && !utterance.finished) this.#closeUtterance(utterance, this.#playout.heardMs(), true);
    this.#hearing.close();
    this.#vad.close();
    this.#keypad.close();
    this.spec.tap?.close();
    this.#record(() => this.spec.recorder.event('call.stream_ended', { reason }));
    this.spec.observer.ended?.();
  }

  /** Voicemail (voicemail.ts): stop talking and taking turns; then say `message`, ending the call once played. */
  voicemail(message?: string): void {
    if (message !== undefined) {
      this.#say('goodbye', message);
      return;
    }
    const utterance = this.#utterance;
    if (utterance && !utterance.finished) this.#closeUtterance(utterance, this.#playout.clear(), true);
    this.#turnState = { ...initialTurnState(), finishing: true };
  }

  // ——— turn-taking ———

  #input(input: TurnInput): void {
    // An action may cause an input at once (held greeting audio makes the answer audible while the
    // greeting starts): it waits its turn, so every step sees the state the previous one left.
    this.#inputs.push(input);
    if (this.#stepping) return;
    this.#stepping = true;
    try {
      for (let next = this.#inputs.shift(); next && !this.#ended; next = this.#inputs.shift())
        this.#step(next);
    } finally {
      this.#stepping = false;
      this.#inputs.length = 0;
    }
  }

  #step(input: TurnInput): void {
    const next = step(this.spec.turn, this.#turnState, input);
    this.#turnState = next.state;
    for (const action of next.actions) this.#act(action);
    clearTimeout(this.#timer);
    if (next.wakeAt !== undefined) {
      this.#timer = setTimeout(
        () => this.#input({ type: 'tick', at: this.clock() }),
        Math.max(0, next.wakeAt - this.clock()),
      );
    }
  }

  #act(action: TurnAction): void {
    const now = this.clock();
    switch (action.type) {
      case 'greet':
        this.#say('greeting', this.spec.greeting, this.spec.earlyGreeting);
        break;
      case 'respond':
        this.#transcript('user', action.text, action.speechStartedAt ?? now, action.speechEndedAt ?? now);
        this.spec.conversation.user(action.text);
        this.#answer(action.text, {
          callerSpeechStartedAt: action.speechStartedAt,
          callerSpeechEndedAt: action.speechEndedAt,
          sttFinalAt: action.sttFinalAt,
          turnEndDecidedAt: now,
        });
        break;
      case 'pause':
        this.#playout.pause();
        this.#bargeIn('paused');
        break;
      case 'resume':
        this.#playout.resume();
        break;
      case 'interrupt': {
        const utterance = this.#utterance;
        const heard = this.#playout.clear();
        this.#bargeIn('cleared');
        this.spec.observer.interruption?.();
        if (utterance && !utterance.finished) this.#closeUtterance(utterance, heard, true);
        this.#record(() => this.spec.recorder.event('call.interrupted', { heard_ms: Math.round(heard) }));
        break;
      }
      case 'supersede': {
        const utterance = this.#utterance;
        if (utterance && !utterance.finished) {
          utterance.finished = true;
          utterance.abort.abort();
          this.#playout.clear();
        }
        break;
      }
      case 'caller_aside':
        this.#transcript('user', action.text, action.startedAt, action.endedAt);
        break;
      case 'idle_prompt':
        this.#say('idle', this.#assistant.idleMessage);
        break;
      case 'goodbye':
        this.#say('goodbye', this.#assistant.goodbyeMessage);
        break;
      case 'hang_up':
        void this.#hangUp();
        break;
    }
  }

  #bargeIn(stage: 'paused' | 'cleared'): void {
    const started = this.#turnState.caller.speechStartedAt;
    if (started !== undefined) this.spec.observer.bargeIn?.(stage, Math.max(0, this.clock() - started));
  }

  // ——— utterances ———

  #newUtterance(
    kind: TurnRecord['kind'],
    userText: string,
    marks: TurnMarks,
    early?: EarlySpeech,
  ): Utterance {
    const id = ++this.#utteranceSeq;
    this.#playout.begin(id);
    const sink = this.#sink(id, marks);
    const abort = early?.abort ?? new AbortController();
    const lane = early?.lane ?? this.#lane(abort.signal, sink);
    const utterance: Utterance = {
      id,
      kind,
      abort,
      lane,
      marks,
      startedAt: this.#wall(marks.callerSpeechStartedAt ?? this.clock()),
      userText,
      provider: null,
      text: '',
      said: '',
      committed: '',
      toolCalls: [],
      finished: false,
    };
    this.#utterance = utterance;
    if (early) {
      // Spoken before the stream was up: its request and first byte were on this session's clock too.
      marks.ttsRequestAt = lane.timing.requestedAt;
      if (lane.timing.firstByteAt !== undefined) marks.ttsFirstByteAt = lane.timing.firstByteAt;
      early.connect(sink);
    }
    return utterance;
  }

  /** Where an utterance's audio goes: the playout, while it is the current one. */
  #sink(id: number, marks: TurnMarks): (audio: Uint8Array) => void {
    return (audio) => {
      if (this.#utterance?.id !== id) return;
      marks.ttsFirstByteAt ??= this.clock();
      this.#playout.enqueue(id, audio);
    };
  }

  /** A speech lane in the current assistant's voice, feeding `sink`. */
  #lane(signal: AbortSignal, sink: (audio: Uint8Array) => void): SpeechLane {
    return new SpeechLane({
      adapter: this.#assistant.tts.adapter,
      candidates: this.#assistant.plan.tts,
      format: this.spec.format,
      voice: this.#assistant.tts.voice,
      signal,
      clock: this.clock,
      onAudio: sink,
      onFallback: (from, error, next, midUtterance) => this.#fallback('tts', from, error, next, midUtterance),
    });
  }

  /** Speaks fixed text (greeting, idle prompt, goodbye); `early`: already being spoken. */
  #say(kind: TurnRecord['kind'], text: string, early?: EarlySpeech): void {
    const utterance = this.#newUtterance(kind, '', {}, early);
    utterance.text = text;
    if (!early) utterance.lane.send(text);
    void this.#endLane(utterance);
  }

  #answer(userText: string, marks: TurnMarks): void {
    const utterance = this.#newUtterance('reply', userText, marks);
    reply(this.#replyHost, utterance).catch((error: unknown) =>
      this.spec.log.warn({ err: error }, 'answer failed'),
    );
  }

  async #endLane(utterance: Utterance): Promise<void> {
    await utterance.lane.end();
    if (utterance.abort.signal.aborted || this.#utterance?.id !== utterance.id) return;
    const marks = utterance.marks;
    marks.ttsRequestAt ??= utterance.lane.timing.requestedAt;
    if (utterance.lane.error && utterance.lane.spoken.audioMs === 0) {
      this.#record(() =>
        this.spec.recorder.event('call.tts_unavailable', { reason: utterance.lane.error?.message }),
      );
    }
    this.#playout.finish(utterance.id);
  }

  #onAudible(id: number, at: number): void {
    const utterance = this.#utterance;
    if (utterance?.id !== id) return;
    utterance.marks.firstAudioSentAt ??= at;
    utterance.marks.ttsRequestAt ??= utterance.lane.timing.requestedAt;
    this.#input({ type: 'response_audible', at });
  }

  #onPlayed(id: number, at: number): void {
    const utterance = this.#utterance;
    if (utterance?.id !== id || utterance.finished) return;
    this.#closeUtterance(utterance, Number.POSITIVE_INFINITY, false);
    this.#input({ type: 'response_done', at });
  }

  /** Ends an utterance: the conversation keeps what was heard, the records get the turn. */
  #closeUtterance(utterance: Utterance, heardMs: number, interrupted: boolean): void {
    utterance.finished = true;
    if (interrupted) utterance.abort.abort();
    const heard = interrupted ? utterance.lane.spoken.heard(heardMs) : utterance.text;
    this.spec.conversation.assistant(
      afterSaid(heard, utterance.committed),
      interrupted ? [] : utterance.toolCalls,
    );
    for (const call of interrupted ? [] : utterance.toolCalls)
      this.spec.conversation.toolResult(call.id, toolResult(call, this.spec));
    const now = this.clock();
    if (heard) this.#transcript('assistant', heard, utterance.marks.firstAudioSentAt ?? now, now);
    const turn: TurnRecord = {
      position: this.#turnPosition++,
      kind: utterance.kind,
      startedAt: utterance.startedAt,
      userText: utterance.userText,
      assistantText: heard,
      interrupted,
      llmProvider: utterance.provider,
      marks: utterance.marks,
      measurements: measure(utterance.marks),
      ...(utterance.passages ? { passages: utterance.passages } : {}),
    };
    this.spec.observer.turn?.(turn);
    this.#record(() => this.spec.recorder.turn(turn));
  }

  #fallback(
    kind: 'llm' | 'stt' | 'tts',
    from: Candidate,
    error: ProviderError,
    next: Candidate | undefined,
    midStream = false,
  ): void {
    this.spec.observer.vendorFailure?.(kind, error);
    // mid_stream: the failure came after the vendor's first output (a token, audio, a transcript).
    const record = { ...fallbackRecord(kind, from, error, next), mid_stream: midStream };
    this.#record(() => this.spec.recorder.event('call.vendor_fallback', record));
  }

  /** A transcript segment; `from` and `to` on the session clock. */
  #transcript(speaker: 'user' | 'assistant', text: string, from: number, to: number): void {
    this.#record(() =>
      this.spec.recorder.transcript({ speaker, text, startedAt: this.#wall(from), endedAt: this.#wall(to) }),
    );
  }

  /** The last words have played: the call goes to its transfer target, or ends. */
  async #hangUp(): Promise<void> {
    try {
      if (this.#transferTo) await this.spec.recorder.transfer(this.#transferTo);
      else await this.spec.recorder.hangUp();
    } catch (error) {
      this.spec.log.warn({ err: error }, 'hang-up failed');
    }
    this.spec.send.close();
  }

  #record(write: () => Promise<unknown>): void {
    this.#records = this.#records.then(write).catch((error: unknown) => {
      this.spec.log.warn({ err: error }, 'a call record was not written');
    });
  }
}
