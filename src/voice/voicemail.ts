/**
 * Voicemail on outbound calls: what the live session does once an answering machine picks up. The
 * detection (voicemail-detect.ts) hears the callee's audio and words and the carrier's verdicts;
 * when it finds a machine, the assistant stops talking at once (as if interrupted) and no longer
 * takes turns, the call is recorded as answered by a machine (so a campaign attempt ends as
 * `voicemail` and is retried), and once the greeting is over — its beep, the carrier's "greeting
 * ended", a silence, or `max_wait_seconds` — the assistant says the voicemail message and hangs up,
 * or hangs up at once (`action: hang_up`, or no message to leave). `call.voicemail` records how.
 */
import type { AssistantSettings } from '../domains/assistants/schemas.js';
import type { TemplateVariables } from '../lib/templates.js';
import { type AudioFormat, durationMs } from './audio.js';
import { renderLenient } from './conversation.js';
import type { MediaHandlers } from './transport.js';
import { type MachineSource, VoicemailWatch, type WatchAction } from './voicemail-detect.js';

export type { MachineSource } from './voicemail-detect.js';

/** What a session does about answering machines: present only where detection is on. */
export interface VoicemailSpec {
  action: 'leave_message' | 'hang_up';
  /** The message to leave (rendered); null: hang up. */
  message: string | null;
  maxWaitMs: number;
}

/** The carrier's verdict, as the carrier webhooks pass it on (calls/answered-by.ts). */
export interface MachineVerdict {
  answeredBy?: 'human' | 'machine';
  greetingEnded?: 'beep' | 'other';
}

/**
 * The voicemail behaviour of a call from its assistant's `voicemail_settings`: outbound calls only,
 * while `detection` is on (default). The message is `message`, else the assistant's
 * `end_call_message`, rendered with the call's variables; without either the call hangs up. A
 * campaign's personalized goodbye is a farewell to a person, so it is not left on a machine.
 */
export function voicemailSpec(
  settings: AssistantSettings,
  call: { direction: 'inbound' | 'outbound' },
  variables: TemplateVariables,
): VoicemailSpec | undefined {
  const voicemail = settings.voicemail_settings;
  if (call.direction !== 'outbound' || voicemail?.detection === false) return undefined;
  const template = voicemail?.message ?? settings.end_call_message ?? null;
  const message = template ? renderLenient(template, variables).trim() || null : null;
  const leave = message !== null && (voicemail?.action ?? 'leave_message') === 'leave_message';
  return {
    action: leave ? 'leave_message' : 'hang_up',
    message: leave ? message : null,
    maxWaitMs: (voicemail?.max_wait_seconds ?? 20) * 1000,
  };
}

/** What the session does for the voicemail flow. */
export interface VoicemailHost {
  /** The session's clock (ms). */
  clock(): number;
  /** The assistant stops talking now (clears the carrier, like an interruption) and takes no more turns. */
  takeOver(): void;
  /** Says `text`, then ends the call once it has played. */
  leaveMessage(text: string): void;
  hangUp(): void;
  /** Records that a machine answered; the call ends only once this is written. */
  machineAnswered(source: MachineSource): Promise<unknown>;
  event(type: string, data: Record<string, unknown>): void;
}

export class Voicemail {
  readonly #watch: VoicemailWatch;
  #recorded: Promise<unknown> = Promise.resolve();
  /** The clock time of the first frame, and the audio received since (ms): the audio's own time. */
  #audioStart: number | undefined;
  #audioMs = 0;

  constructor(
    private readonly spec: VoicemailSpec,
    private readonly format: AudioFormat,
    private readonly host: VoicemailHost,
  ) {
    this.#watch = new VoicemailWatch({
      format,
      maxWaitMs: spec.maxWaitMs,
      waitForGreeting: spec.action === 'leave_message',
    });
  }

  /** A machine answered: the callee's speech is no turn any more. */
  get machine(): boolean {
    return this.#watch.machine;
  }

  /** A frame of the callee's audio. */
  audio(frame: Uint8Array): void {
    if (!this.#watch.watching) return;
    this.#audioStart ??= this.host.clock();
    const at = this.#audioStart + this.#audioMs;
    this.#audioMs += durationMs(this.format, frame.length);
    this.#act(this.#watch.audio(frame, at));
  }

  /** A final transcript of the callee's words. */
  words(text: string): void {
    this.#act(this.#watch.words(text, this.host.clock()));
  }

  /** The carrier's asynchronous verdict. */
  carrier(verdict: MachineVerdict): void {
    this.#act(this.#watch.carrier(verdict, this.host.clock()));
  }

  #act(actions: WatchAction[]): void {
    for (const action of actions) {
      if (action.type === 'machine') {
        this.host.takeOver();
        this.#recorded = this.host.machineAnswered(action.source).catch(() => undefined);
        continue;
      }
      this.host.event('call.voicemail', {
        source: action.source,
        action: this.spec.action,
        waited_ms: action.waitedMs,
        ...(action.end ? { greeting_end: action.end } : {}),
      });
      const { message } = this.spec;
      void this.#recorded.then(() =>
        this.spec.action === 'leave_message' && message
          ? this.host.leaveMessage(message)
          : this.host.hangUp(),
      );
    }
  }
}

/** What the session itself does for the voicemail flow (CallSession.voicemail). */
export interface VoicemailSession {
  clock(): number;
  /** Without a message: stop talking and taking turns. With one: say it, ending the call once played. */
  voicemail(message?: string): void;
}

/** Where the flow of one live call records and ends it. */
export interface VoicemailCall {
  /** Ends the call at the carrier. */
  hangUp(): Promise<unknown>;
  event(type: string, data: Record<string, unknown>): Promise<unknown>;
  machineAnswered(source: MachineSource): Promise<unknown>;
  /** Closes the media stream (after the hang-up, whether or not the carrier took it). */
  close(): void;
  log: { warn(data: object, message: string): void };
}

/** The flow beside one live session (`session`) of the call `call`. */
export function sessionVoicemail(
  spec: VoicemailSpec,
  format: AudioFormat,
  session: VoicemailSession,
  call: VoicemailCall,
): Voicemail {
  return new Voicemail(spec, format, {
    clock: () => session.clock(),
    takeOver: () => session.voicemail(),
    leaveMessage: (text) => session.voicemail(text),
    hangUp: () => {
      void call
        .hangUp()
        .catch((error: unknown) => call.log.warn({ err: error }, 'hang-up failed'))
        .finally(() => call.close());
    },
    machineAnswered: (source) => call.machineAnswered(source),
    event: (type, data) => void call.event(type, data).catch(() => {}),
  });
}

/** The session's media handlers with the callee's audio heard by the voicemail detection first. */
export function withVoicemail(handlers: MediaHandlers, voicemail: Voicemail): MediaHandlers {
  return {
    media: (audio, timestampMs) => {
      voicemail.audio(audio);
      handlers.media(audio, timestampMs);
    },
    mark: (name) => handlers.mark(name),
    dtmf: (digit) => handlers.dtmf(digit),
    interrupt: () => handlers.interrupt?.(),
    ended: (reason) => handlers.ended(reason),
  };
}

/**
 * The voicemail flows of one runtime's live calls, by call id, and the carrier verdicts that came
 * before their call's stream did (kept `keepMs`, then forgotten).
 */
export class VoicemailFlows {
  readonly #flows = new Map<number, Voicemail>();
  readonly #early = new Map<number, MachineVerdict>();

  constructor(private readonly keepMs: number) {}

  /** The flow beside a call's session, given any verdict that came first. */
  start(
    callId: number,
    spec: VoicemailSpec,
    format: AudioFormat,
    session: VoicemailSession,
    call: VoicemailCall,
  ): Voicemail {
    const flow = sessionVoicemail(spec, format, session, call);
    this.#flows.set(callId, flow);
    const early = this.#early.get(callId);
    this.#early.delete(callId);
    if (early) flow.carrier(early);
    return flow;
  }

  /** The carrier's verdict on a call: to its flow, or kept for the flow to come. */
  verdict(callId: number, verdict: MachineVerdict): void {
    const flow = this.#flows.get(callId);
    if (flow) {
      flow.carrier(verdict);
      return;
    }
    this.#early.set(callId, { ...this.#early.get(callId), ...verdict });
    setTimeout(() => this.#early.delete(callId), this.keepMs).unref();
  }

  /** The callee's final words on a call. */
  words(callId: number, text: string): void {
    this.#flows.get(callId)?.words(text);
  }

  /** The call's stream ended. */
  ended(callId: number): void {
    this.#flows.delete(callId);
  }
}
