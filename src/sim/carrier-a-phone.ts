/**
 * The phone end of carrier_a's simulated calls. A test gives a number a script (what the person who
 * answers does: speak, wait for the assistant, hang up); when a call to that number is answered and
 * the platform's answer markup opens a `<Connect><Stream url="…">`, the simulator connects a
 * SimulatedPhone to that URL as carrier_a does — the `<Parameter>`s as `customParameters`, the query
 * string dropped, `X-Twilio-Signature` on the handshake (the webhook signature of the exact URL with
 * the account's auth token and no parameters) — and runs the script. The call lasts until the script
 * ends (the phone hangs up), the platform closes the stream, or the platform ends the call through
 * the REST API (hang-up, or a transfer that takes the call elsewhere), whichever comes first.
 */
import { carrierASignature } from '../providers/carriers/carrier-a.js';
import { SimulatedPhone, type SimulatedPhoneOptions } from './phone.js';
import type { PhoneWireFactory } from './phone-wire.js';

/** What the person who answers does. The phone hangs up when it resolves (or throws). */
export type PhoneScript = (phone: SimulatedPhone) => Promise<void>;

/** Options a test may give the phones of a number (memory, detection thresholds). */
export type PhoneSettings = Pick<SimulatedPhoneOptions, 'recordAudio' | 'speechLevel' | 'heardGapMs'>;

export type PhoneCallEnd = 'script' | 'platform' | 'hang-up' | 'transfer' | 'refused' | 'stopped';

export interface PhoneCall {
  callSid: string;
  phone: SimulatedPhone;
  /** The stream the answer markup named, as the phone connected to it (no query string). */
  streamUrl: string;
  parameters: Record<string, string>;
  answeredAt: Date;
  endedAt?: Date;
  /** Why it ended: the script finished, the platform closed the stream, hung up or transferred
   * through the REST API, refused the stream's handshake, or the simulator stopped. */
  endedBy?: PhoneCallEnd;
  /** The script's failure, when it failed while the call was up. */
  scriptError?: Error;
  /** Resolves when the call has ended (never rejects). */
  done: Promise<void>;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const unescapeXml = (text: string) => text.replace(/&(amp|lt|gt|quot|apos);/g, (_, name) => ENTITIES[name]!);

function attributes(tag: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const match of tag.matchAll(/([A-Za-z_][\w.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g))
    found[match[1]!] = unescapeXml(match[2] ?? match[3] ?? '');
  return found;
}

/** The `<Connect><Stream>` of carrier_a answer markup: its URL and `<Parameter>`s. */
export function streamOfMarkup(
  markup: string,
): { url: string; parameters: Record<string, string> } | undefined {
  const connect = /<Connect\b[^>]*>([\s\S]*?)<\/Connect>/.exec(markup)?.[1];
  const stream = connect && /<Stream\b([^>]*?)(\/>|>([\s\S]*?)<\/Stream>)/.exec(connect);
  if (!stream) return undefined;
  const url = attributes(stream[1]!).url;
  if (!url) return undefined;
  const parameters: Record<string, string> = {};
  for (const parameter of (stream[3] ?? '').matchAll(/<Parameter\b([^>]*?)\/?>/g)) {
    const { name, value } = attributes(parameter[1]!);
    if (name) parameters[name] = value ?? '';
  }
  return { url, parameters };
}

/** A call's duration as the carrier bills it: answer to end, in seconds rounded up. */
export function callDurationSeconds(call: PhoneCall): number {
  return Math.ceil(((call.endedAt ?? new Date()).getTime() - call.answeredAt.getTime()) / 1000);
}

/**
 * The phones of one simulated carrier: scripts by number, and the calls they answered. `S` is what a
 * test may set for a number's phones (another carrier's simulator adds its own wire's options).
 */
export class PhoneCalls<S extends PhoneSettings = PhoneSettings> {
  /** Every call a phone answered, by call SID. */
  readonly calls = new Map<string, PhoneCall>();
  readonly #scripts = new Map<string, { script: PhoneScript; settings: S }>();
  readonly #enders = new Map<string, (why: PhoneCallEnd) => void>();

  set(number: string, script: PhoneScript, settings: S = {} as S): void {
    this.#scripts.set(number, { script, settings });
  }

  /** The script for calls to `number` (or the `'*'` default), if any. */
  scriptFor(number: string) {
    return this.#scripts.get(number) ?? this.#scripts.get('*');
  }

  /**
   * Connects a phone to the stream `answer` opens and runs `script`; undefined when the answer opens
   * no stream. The call's `done` resolves when it has ended and the phone has hung up.
   */
  start(options: {
    callSid: string;
    accountSid: string;
    authToken: string;
    answer: string;
    script: PhoneScript;
    settings?: PhoneSettings;
  }): PhoneCall | undefined {
    const stream = streamOfMarkup(options.answer);
    if (!stream) return undefined;
    // carrier_a drops a stream URL's query string; the signature covers the URL it connected to.
    const url = stream.url.split('?')[0]!;
    return this.connect({
      callSid: options.callSid,
      accountSid: options.accountSid,
      url,
      headers: { 'x-twilio-signature': carrierASignature(options.authToken, url, {}) },
      parameters: stream.parameters,
      script: options.script,
      ...(options.settings ? { settings: options.settings } : {}),
    });
  }

  /**
   * Connects a phone to `url` with the carrier's handshake `headers`, speaking `wire` (carrier_a's
   * by default), and runs `script`; the call's `done` resolves when it has ended.
   */
  connect(options: {
    callSid: string;
    accountSid: string;
    url: string;
    headers: Record<string, string>;
    parameters: Record<string, string>;
    script: PhoneScript;
    settings?: PhoneSettings;
    wire?: PhoneWireFactory;
  }): PhoneCall {
    const { recordAudio, speechLevel, heardGapMs } = options.settings ?? {};
    const phone = new SimulatedPhone({
      ...(recordAudio !== undefined ? { recordAudio } : {}),
      ...(speechLevel !== undefined ? { speechLevel } : {}),
      ...(heardGapMs !== undefined ? { heardGapMs } : {}),
      url: options.url,
      headers: options.headers,
      callSid: options.callSid,
      accountSid: options.accountSid,
      customParameters: options.parameters,
      ...(options.wire ? { wire: options.wire } : {}),
    });
    return this.run(
      { callSid: options.callSid, phone, streamUrl: options.url, parameters: options.parameters },
      options.script,
    );
  }

  /**
   * Runs `script` on a phone any carrier's simulator made for an answered call (its wire, URL and
   * handshake headers are that carrier's): connects it, and ends the call when the script ends, the
   * platform closes the stream, or `end` is called.
   */
  run(
    call: Pick<PhoneCall, 'callSid' | 'phone' | 'streamUrl' | 'parameters'>,
    script: PhoneScript,
  ): PhoneCall {
    let end!: (why: PhoneCallEnd) => void;
    const ended = new Promise<PhoneCallEnd>((resolve) => {
      end = resolve;
    });
    this.#enders.set(call.callSid, end);
    const running: PhoneCall = { ...call, answeredAt: new Date(), done: Promise.resolve() };
    running.done = this.#run(running, script, ended, end);
    this.calls.set(call.callSid, running);
    return running;
  }

  /** Ends a live call from outside the stream (REST hang-up, transfer); false when none is live. */
  end(callSid: string, why: PhoneCallEnd): boolean {
    const end = this.#enders.get(callSid);
    end?.(why);
    return end !== undefined;
  }

  /** Hangs up every live call (the simulator is stopping). */
  async stopAll(): Promise<void> {
    for (const callSid of [...this.#enders.keys()]) this.end(callSid, 'stopped');
    await Promise.all([...this.calls.values()].map((call) => call.done));
  }

  async #run(
    call: PhoneCall,
    script: PhoneScript,
    ended: Promise<PhoneCallEnd>,
    end: (why: PhoneCallEnd) => void,
  ): Promise<void> {
    const { phone } = call;
    let connected = false;
    try {
      await phone.connect();
      connected = true;
    } catch {
      end('refused');
    }
    if (connected) {
      // Whatever the script awaits rejects once the call is over; only a failure while it was up counts.
      void script(phone).then(
        () => end('script'),
        (error: Error) => {
          if (!phone.close) call.scriptError = error;
          end('script');
        },
      );
      void phone.waitForClose().then(() => end('platform'));
    }
    call.endedBy = await ended;
    this.#enders.delete(call.callSid);
    await phone.hangUp();
    call.endedAt = new Date();
  }
}
