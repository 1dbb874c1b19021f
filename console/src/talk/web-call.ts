/**
 * A live conversation with an assistant from the browser: the microphone goes to the platform as
 * 20 ms frames of 16 kHz PCM over the call's WebSocket, the assistant's audio comes back and plays,
 * and the server's marks are echoed once the audio before them has played — the same pacing a
 * telephone carrier gives the platform, so the server runs the call like any other.
 *
 * The microphone is asked for with echo cancellation: the assistant's voice from the loudspeaker must
 * not come back as the caller barging in. Chrome cancels Web Audio output only with its browser-wide
 * echo canceller (audio played outside WebRTC is no reference to the older per-page one); where that
 * is missing, the echo reaches the server as the caller's speech, and headphones are the remedy.
 *
 * Bounded: one microphone, one AudioContext, one socket per call; when the call ends, however it ends
 * (hang-up, the server's `ended`, a refused or lost socket, a failed start), capture stops, the
 * microphone is released and the AudioContext closed, once.
 */
import { DEFAULT_WORKLET_BASE, type TalkWorklet } from './entries.js';
import {
  CLOSE_REFUSED,
  type ClientMessage,
  type EventMessage,
  isCallFormat,
  parseServerMessage,
  type ServerMessage,
  type TranscriptMessage,
  type TurnMessage,
  type WebCallSession,
} from './protocol.js';
import {
  CALL_SAMPLE_RATE,
  CAPTURE_PROCESSOR,
  type CapturedFrame,
  PLAYBACK_PROCESSOR,
  type PlaybackCommand,
  type PlaybackReport,
} from './worklet-messages.js';

export interface WebCallEvents {
  /** The server accepted the socket: audio flows from now on. */
  started: { callId: number | string };
  transcript: TranscriptMessage;
  turn: TurnMessage;
  event: EventMessage;
  /** The microphone's level, 0…1 of full scale, every 20 ms: for an input meter. */
  level: number;
  /** The assistant's audio started (true) or stopped (false) coming out. */
  playing: boolean;
  /** Something went wrong; `ended` follows. */
  error: Error;
  /** The call is over and everything is released. `reason` is the server's, or one of ours (below). */
  ended: { reason: string };
}

export type WebCallState = 'idle' | 'connecting' | 'live' | 'ending' | 'ended';

export interface WebCallOptions {
  /** Where the worklet modules are served (`<base>talk-capture.js`, `<base>talk-playback.js`). */
  workletBase?: string;
  /** How long the server has to answer `start`, and to close after a hang-up (ms). */
  timeoutMs?: number;
  /**
   * The AudioContext's rate. 16 kHz by default — Chromium resamples the microphone into it, so the
   * worklets only copy; another rate makes the worklets resample (what a browser that cannot gets).
   */
  sampleRate?: number;
}

/** Unsent audio allowed to pile up in the socket before frames are dropped: 1 s of it. */
const MAX_BUFFERED_BYTES = CALL_SAMPLE_RATE * 2;
const DTMF_DIGIT = /^[0-9*#A-D]$/;

type Listener<T> = (value: T) => void;

export class WebCall {
  #state: WebCallState = 'idle';
  #listeners = new Map<keyof WebCallEvents, Set<Listener<never>>>();
  #context: AudioContext | undefined;
  #stream: MediaStream | undefined;
  #source: MediaStreamAudioSourceNode | undefined;
  #capture: AudioWorkletNode | undefined;
  #playback: AudioWorkletNode | undefined;
  #socket: WebSocket | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The server's reason from its `ended` message, kept for the close that follows it. */
  #endedReason: string | undefined;
  readonly #workletBase: string;
  readonly #timeoutMs: number;
  readonly #sampleRate: number;

  constructor(
    private readonly session: WebCallSession,
    options: WebCallOptions = {},
  ) {
    this.#workletBase = options.workletBase ?? DEFAULT_WORKLET_BASE;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#sampleRate = options.sampleRate ?? CALL_SAMPLE_RATE;
  }

  get state(): WebCallState {
    return this.#state;
  }

  /** The rate audio runs at in this browser (undefined before start): 16 kHz unless it fell back. */
  get audioSampleRate(): number | undefined {
    return this.#context?.sampleRate;
  }

  on<K extends keyof WebCallEvents>(type: K, listener: Listener<WebCallEvents[K]>): () => void {
    let set = this.#listeners.get(type);
    if (!set) {
      set = new Set();
      this.#listeners.set(type, set);
    }
    set.add(listener as Listener<never>);
    return () => set.delete(listener as Listener<never>);
  }

  /**
   * Asks for the microphone, sets up audio and opens the socket. Call it from the click that starts
   * the call (browsers let an AudioContext start only after a user gesture). Rejects, after releasing
   * whatever it had taken, when the microphone is refused or audio cannot be set up.
   */
  async start(): Promise<void> {
    if (this.#state !== 'idle') throw new Error('A web call starts once');
    this.#state = 'connecting';
    try {
      if (!isCallFormat(this.session.audio))
        throw new Error(`Unsupported call audio: ${JSON.stringify(this.session.audio)}`);
      // Created before the first await, while the click's user activation is fresh.
      let context = new AudioContext({ sampleRate: this.#sampleRate, latencyHint: 'interactive' });
      this.#context = context;
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true, channelCount: 1 },
      });
      this.#stream = stream;
      if (this.#state !== 'connecting') return this.#release();
      let source: MediaStreamAudioSourceNode;
      try {
        source = context.createMediaStreamSource(stream);
      } catch {
        // A browser that cannot resample the microphone into a 16 kHz context (Firefox refuses
        // other rates than the device's): run at the device's rate; the worklets resample.
        await context.close();
        context = new AudioContext({ latencyHint: 'interactive' });
        this.#context = context;
        source = context.createMediaStreamSource(stream);
      }
      this.#source = source;
      await this.#wire(context, source);
      if (this.#state !== 'connecting') return this.#release();
      await context.resume();
      this.#open();
    } catch (error) {
      this.#finish('error', error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
  }

  /** Cuts the assistant off: its unplayed audio is dropped here at once, and the server is told. */
  interrupt(): void {
    if (this.#state !== 'live') return;
    this.#toPlayback({ type: 'clear' });
    this.#send({ type: 'interrupt' });
  }

  /** Presses a key of the phone's keypad (0-9, *, #, A-D). */
  sendDigit(digit: string): void {
    if (!DTMF_DIGIT.test(digit)) throw new RangeError(`Not a keypad digit: ${digit}`);
    if (this.#state === 'live') this.#send({ type: 'dtmf', digit });
  }

  /**
   * Ends the call: the microphone is released at once, the server is told and closes the socket
   * (`ended` follows); a server that does not close within the time-out is closed on.
   */
  hangUp(): void {
    if (this.#state === 'ended' || this.#state === 'ending') return;
    if (this.#state !== 'live') {
      this.#finish('hangup');
      return;
    }
    this.#send({ type: 'hangup' });
    this.#ending('hangup');
  }

  async #wire(context: AudioContext, source: MediaStreamAudioSourceNode): Promise<void> {
    await Promise.all([
      context.audioWorklet.addModule(this.#workletUrl('talk-capture')),
      context.audioWorklet.addModule(this.#workletUrl('talk-playback')),
    ]);
    const capture = new AudioWorkletNode(context, CAPTURE_PROCESSOR, {
      numberOfInputs: 1,
      numberOfOutputs: 0,
      channelCount: 1,
      channelCountMode: 'explicit',
    });
    capture.port.onmessage = (event: MessageEvent<CapturedFrame>) => this.#onFrame(event.data);
    const playback = new AudioWorkletNode(context, PLAYBACK_PROCESSOR, {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [1],
    });
    playback.port.onmessage = (event: MessageEvent<PlaybackReport>) => this.#onPlayback(event.data);
    source.connect(capture);
    playback.connect(context.destination);
    this.#capture = capture;
    this.#playback = playback;
  }

  #workletUrl(name: TalkWorklet): string {
    return new URL(`${name}.js`, new URL(this.#workletBase, location.href)).href;
  }

  #open(): void {
    const socket = new WebSocket(this.session.socket_url);
    socket.binaryType = 'arraybuffer';
    this.#socket = socket;
    socket.onopen = () => this.#send({ type: 'start', token: this.session.token });
    socket.onmessage = (event: MessageEvent<ArrayBuffer | string>) => {
      if (typeof event.data === 'string') {
        const message = parseServerMessage(event.data);
        if (message) this.#onMessage(message);
      } else if (this.#state === 'live') {
        this.#toPlayback({ type: 'audio', pcm: event.data }, [event.data]);
      }
    };
    socket.onclose = (event) => {
      if (event.code === CLOSE_REFUSED) {
        this.#finish('refused', new Error('The platform refused the call (its token is invalid or used)'));
      } else if (this.#endedReason !== undefined) {
        this.#finish(this.#endedReason);
      } else if (this.#state === 'ending') {
        this.#finish('hangup');
      } else {
        this.#finish('connection_lost', new Error(`The call's connection closed (${event.code})`));
      }
    };
    this.#timer = setTimeout(
      () => this.#finish('timeout', new Error('The platform did not answer the call')),
      this.#timeoutMs,
    );
  }

  #onMessage(message: ServerMessage): void {
    switch (message.type) {
      case 'started':
        if (this.#state !== 'connecting') return;
        clearTimeout(this.#timer);
        this.#state = 'live';
        this.#emit('started', { callId: message.call_id });
        return;
      case 'mark':
        this.#toPlayback({ type: 'mark', name: message.name });
        return;
      case 'clear':
        this.#toPlayback({ type: 'clear' });
        return;
      case 'transcript':
        this.#emit('transcript', message);
        return;
      case 'turn':
        this.#emit('turn', message);
        return;
      case 'event':
        this.#emit('event', message);
        return;
      case 'ended':
        this.#endedReason = message.reason;
        this.#ending(message.reason);
        return;
    }
  }

  #onFrame(frame: CapturedFrame): void {
    this.#emit('level', frame.level);
    const socket = this.#socket;
    // Audio goes out only once the server has accepted the call; a socket that cannot keep up drops
    // frames rather than letting a backlog (and the delay with it) grow.
    if (this.#state !== 'live' || socket?.readyState !== WebSocket.OPEN) return;
    if (socket.bufferedAmount > MAX_BUFFERED_BYTES) return;
    socket.send(frame.pcm);
  }

  #onPlayback(report: PlaybackReport): void {
    if (report.type === 'playing') this.#emit('playing', report.playing);
    else if (report.type === 'played') this.#send({ type: 'mark', name: report.name });
    else for (const name of report.names) this.#send({ type: 'mark', name });
  }

  /** The call is ending: the microphone goes now; the socket's close (or the time-out) finishes. */
  #ending(reason: string): void {
    if (this.#state === 'ended') return;
    this.#state = 'ending';
    this.#stopCapture();
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#finish(reason), this.#timeoutMs);
  }

  #finish(reason: string, error?: Error): void {
    if (this.#state === 'ended') return;
    this.#state = 'ended';
    this.#release();
    if (error) this.#emit('error', error);
    this.#emit('ended', { reason });
  }

  #release(): void {
    clearTimeout(this.#timer);
    this.#stopCapture();
    if (this.#playback) this.#playback.port.onmessage = null;
    this.#playback?.disconnect();
    const socket = this.#socket;
    if (socket) {
      socket.onclose = null;
      socket.onmessage = null;
      if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING)
        socket.close(1000);
    }
    if (this.#context && this.#context.state !== 'closed') void this.#context.close().catch(() => {});
  }

  #stopCapture(): void {
    for (const track of this.#stream?.getTracks() ?? []) track.stop();
    this.#source?.disconnect();
    if (this.#capture) this.#capture.port.onmessage = null;
    this.#capture?.disconnect();
  }

  #send(message: ClientMessage): void {
    if (this.#socket?.readyState === WebSocket.OPEN) this.#socket.send(JSON.stringify(message));
  }

  #toPlayback(command: PlaybackCommand, transfer: Transferable[] = []): void {
    this.#playback?.port.postMessage(command, transfer);
  }

  #emit<K extends keyof WebCallEvents>(type: K, value: WebCallEvents[K]): void {
    for (const listener of this.#listeners.get(type) ?? []) {
      try {
        (listener as Listener<WebCallEvents[K]>)(value);
      } catch (error) {
        // A listener's failure is the page's bug, not the call's: keep the call going.
        console.error(error);
      }
    }
  }
}
