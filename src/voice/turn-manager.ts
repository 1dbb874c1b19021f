/**
 * Turn-taking, as a pure state machine: who has the floor, when the caller's turn is over, when the
 * caller's speech interrupts the assistant, and when silence calls for an idle prompt. The session
 * feeds it what happened (local VAD, transcripts, playout progress, the clock) and carries out the
 * actions it returns; it holds no timers, sockets or vendors, so every rule is unit-tested with a
 * made-up timeline (test/voice-turns.test.ts). Times are milliseconds on the session's clock.
 *
 * The rules (runtime.md §4):
 * - **Endpointing**: the caller's turn ends on the speech-to-text vendor's finality (`speech_final`,
 *   `UtteranceEnd`) confirmed by local VAD silence of at least `endpointMinMs`; without finality it
 *   ends anyway after `endpointMaxMs` of silence if words were heard. If the VAD never heard the
 *   words (a quiet caller), finality alone counts, timed from its arrival.
 * - **Barge-in**: caller speech while the assistant's answer is under way pauses the audio at once;
 *   it becomes an interruption once the caller's words reach `interruptionThreshold`, the assistant
 *   has been audible for `minSpeakingTimeMs`, and no interruption happened in the last
 *   `interruptionCooldownMs`. Speech that ends short of that (a cough, "uh-huh") resumes the audio
 *   where it paused; its words go to the transcript but not into a turn.
 * - **Superseding**: a caller turn that ends while the previous answer has not been heard at all
 *   replaces it: the answer is dropped and the new words are answered.
 * - **Idle**: after `idleTimeoutMs` of silence on both sides, an idle prompt; after
 *   `maxIdleMessages` of them, the goodbye and the hang-up.
 * - **Keys** (DTMF no tool collects): keys pressed in a row are one caller turn, over at `#` or
 *   KEY_TURN_MS after the last key, told as "[The caller pressed: 1 2 3 #]" (with any words said
 *   beside them). A key is an explicit act: it stops the assistant at once — an interruption if the
 *   answer was audible (no threshold, minimum or cooldown), a dropped answer if not. A `stop` (a
 *   browser's Interrupt button) does the same without being a turn.
 */

export interface TurnSettings {
  interruptionThreshold: number;
  minSpeakingTimeMs: number;
  interruptionCooldownMs: number;
  endpointMinMs: number;
  endpointMaxMs: number;
  /** null: no idle prompts. */
  idleTimeoutMs: number | null;
  maxIdleMessages: number;
}

export type TurnInput =
  /** The stream is up: greet. */
  | { type: 'start'; at: number }
  /** The VAD heard speech begin at `speechStartedAt` (reported at `at`, a little later). */
  | { type: 'vad_start'; at: number; speechStartedAt: number }
  /** The VAD heard speech end: the silence began at `speechEndedAt` (reported at `at`). */
  | { type: 'vad_end'; at: number; speechEndedAt: number }
  | { type: 'stt_interim'; at: number; text: string }
  | { type: 'stt_final'; at: number; text: string; speechFinal: boolean }
  | { type: 'utterance_end'; at: number }
  /** The current answer's first audio went out. */
  | { type: 'response_audible'; at: number }
  /** The current answer has been played to its end (or had nothing to say). */
  | { type: 'response_done'; at: number }
  /** No more turns: the current answer is the last (end_call, transfer); hang up after it. */
  | { type: 'finish_after_response'; at: number }
  /** The caller pressed a key no tool was collecting (0-9, *, #, A-D). */
  | { type: 'dtmf'; at: number; digit: string }
  /** The caller asked the assistant to stop (a browser's Interrupt button): a key's effect, no key. */
  | { type: 'stop'; at: number }
  | { type: 'tick'; at: number };

export type TurnAction =
  | { type: 'greet' }
  /** Answer the caller: `text` is the whole turn (words of several finals joined). */
  | {
      type: 'respond';
      text: string;
      speechStartedAt: number | undefined;
      speechEndedAt: number | undefined;
      sttFinalAt: number | undefined;
    }
  /** Stop sending the answer's audio (the carrier plays out what it holds). */
  | { type: 'pause' }
  /** Go on with the answer's audio where it paused. */
  | { type: 'resume' }
  /** The caller took the floor: clear the carrier, cancel the answer, keep what was heard. */
  | { type: 'interrupt'; speechStartedAt: number }
  /** Drop an answer nobody heard yet (the caller went on talking). */
  | { type: 'supersede' }
  /** Words the caller said that are no turn (a backchannel): transcript only. */
  | { type: 'caller_aside'; text: string; startedAt: number; endedAt: number }
  | { type: 'idle_prompt'; count: number }
  | { type: 'goodbye' }
  | { type: 'hang_up' };

interface Caller {
  speaking: boolean;
  speechStartedAt?: number;
  speechEndedAt?: number;
  /** Final transcripts of the turn so far. */
  finals: string[];
  /** The latest interim transcript after the finals. */
  interim: string;
  /** The vendor said the words are complete (speech_final / UtteranceEnd) since speech last began. */
  sttFinalAt?: number;
  lastSttFinalAt?: number;
  /** Keys pressed in this turn, and when the first and the last came. */
  keys: string;
  firstKeyAt?: number;
  lastKeyAt?: number;
}

interface Response {
  audibleAt?: number;
  paused: boolean;
  /** When caller speech paused this answer (barge-in candidate). */
  bargeStartedAt?: number;
  /** When the paused answer resumes unless the caller goes on speaking. */
  asideDueAt?: number;
  /** A goodbye or a tool's last words: hang up when played. */
  last: boolean;
}

export interface TurnState {
  caller: Caller;
  response: Response | null;
  lastInterruptAt: number | undefined;
  idleCount: number;
  /** Since when both sides have been silent (undefined while either speaks or an answer is due). */
  silentSince: number | undefined;
  finishing: boolean;
  ended: boolean;
}

export function initialTurnState(): TurnState {
  return {
    caller: emptyCaller(),
    response: null,
    lastInterruptAt: undefined,
    idleCount: 0,
    silentSince: undefined,
    finishing: false,
    ended: false,
  };
}

export interface TurnStep {
  state: TurnState;
  actions: TurnAction[];
  /** When to send the next `tick`, if something is waiting on the clock. */
  wakeAt: number | undefined;
}

/** How long after caller speech ends a paused answer waits before resuming (the caller may go on). */
export const BACKCHANNEL_GRACE_MS = 250;
/** Keys pressed without `#` are a turn once no other key has come for this long. */
export const KEY_TURN_MS = 2_000;

const words = (text: string): string[] => text.split(/\s+/).filter((word) => /[\p{L}\p{N}]/u.test(word));

function callerText(caller: Caller): string {
  return [...caller.finals, caller.interim]
    .map((part) => part.trim())
    .filter(Boolean)
    .join(' ');
}

/** How the model and the transcript are told the keys of a turn. */
export const keysText = (keys: string): string => `[The caller pressed: ${[...keys].join(' ')}]`;

/** The caller's whole turn so far: the words, then the keys. */
function turnText(caller: Caller): string {
  return [callerText(caller), caller.keys ? keysText(caller.keys) : ''].filter(Boolean).join(' ');
}

function emptyCaller(): Caller {
  return { speaking: false, finals: [], interim: '', keys: '' };
}

export function step(settings: TurnSettings, previous: TurnState, input: TurnInput): TurnStep {
  const state: TurnState = {
    ...previous,
    caller: { ...previous.caller, finals: [...previous.caller.finals] },
    response: previous.response ? { ...previous.response } : null,
  };
  const actions: TurnAction[] = [];
  if (state.ended) return { state, actions, wakeAt: undefined };
  const at = input.at;
  const { caller } = state;

  switch (input.type) {
    case 'start':
      state.response = { paused: false, last: false };
      actions.push({ type: 'greet' });
      break;
    case 'vad_start':
      caller.speaking = true;
      caller.speechStartedAt ??= input.speechStartedAt;
      if (state.response) state.response.asideDueAt = undefined;
      caller.sttFinalAt = undefined;
      state.silentSince = undefined;
      if (state.response && !state.response.paused) {
        state.response.paused = true;
        state.response.bargeStartedAt = input.speechStartedAt;
        actions.push({ type: 'pause' });
      }
      break;
    case 'vad_end':
      caller.speaking = false;
      caller.speechEndedAt = input.speechEndedAt;
      // Speech that paused the answer: if the caller does not go on within a moment (a comma's
      // pause), it was no interruption and the answer resumes (see backchannelIfDue).
      if (state.response?.paused) state.response.asideDueAt = at + BACKCHANNEL_GRACE_MS;
      // Noise without words while nobody speaks: the silence goes on counting for the idle prompt.
      else if (!state.response && !turnText(caller)) state.silentSince = input.speechEndedAt;
      break;
    case 'stt_interim':
      if (lateAside(state)) break;
      caller.interim = input.text;
      break;
    case 'stt_final':
      // The last words of a backchannel, arriving after the VAD already gave the floor back.
      if (lateAside(state)) {
        if (input.text.trim())
          actions.push({ type: 'caller_aside', text: input.text.trim(), startedAt: at, endedAt: at });
        break;
      }
      if (input.text.trim()) caller.finals.push(input.text.trim());
      caller.interim = '';
      // Finality means something only for words heard: a late one must not end the next turn early.
      if (input.speechFinal && callerText(caller)) {
        caller.sttFinalAt = at;
        caller.lastSttFinalAt = at;
      }
      break;
    case 'utterance_end':
      if (!callerText(caller)) break;
      caller.sttFinalAt ??= at;
      caller.lastSttFinalAt = at;
      break;
    case 'response_audible':
      if (state.response) state.response.audibleAt ??= at;
      break;
    case 'response_done': {
      const last = state.response?.last || state.finishing;
      state.response = null;
      state.silentSince = caller.speaking ? undefined : at;
      if (last) {
        state.ended = true;
        actions.push({ type: 'hang_up' });
        return { state, actions, wakeAt: undefined };
      }
      break;
    }
    case 'finish_after_response':
      state.finishing = true;
      if (state.response) state.response.last = true;
      break;
    case 'dtmf':
      if (state.finishing) break;
      caller.keys += input.digit;
      caller.firstKeyAt ??= at;
      caller.lastKeyAt = at;
      state.silentSince = undefined;
      stopAnswer(state, actions, at);
      break;
    case 'stop':
      if (state.finishing || !state.response) break;
      stopAnswer(state, actions, at);
      if (!caller.speaking) state.silentSince = at;
      break;
    case 'tick':
      break;
  }

  if (!state.finishing) {
    interruptIfDue(settings, state, actions, at);
    backchannelIfDue(state, actions, at);
    endTurnIfDue(settings, state, actions, at);
    idleIfDue(settings, state, actions, at);
  }
  return { state, actions, wakeAt: state.finishing ? undefined : nextWake(settings, state) };
}

/** An explicit act of the caller (a key, Interrupt): the answer stops at once, heard or not. */
function stopAnswer(state: TurnState, actions: TurnAction[], at: number): void {
  if (!state.response) return;
  if (state.response.audibleAt !== undefined) {
    state.lastInterruptAt = at;
    actions.push({ type: 'interrupt', speechStartedAt: at });
  } else actions.push({ type: 'supersede' });
  state.response = null;
}

/**
 * Caller speech that paused the answer ended without reaching an interruption, and the caller has not
 * gone on: it was a backchannel (a cough, "uh-huh"). Its final words go to the transcript (words
 * still interim arrive as late finals, recorded then); the answer resumes where it paused.
 */
function backchannelIfDue(state: TurnState, actions: TurnAction[], at: number): void {
  const response = state.response;
  if (!response?.paused || response.asideDueAt === undefined || at < response.asideDueAt) return;
  const { caller } = state;
  const aside = caller.finals.join(' ').trim();
  if (aside && caller.speechStartedAt !== undefined)
    actions.push({
      type: 'caller_aside',
      text: aside,
      startedAt: caller.speechStartedAt,
      endedAt: caller.speechEndedAt ?? at,
    });
  state.caller = emptyCaller();
  response.paused = false;
  response.bargeStartedAt = undefined;
  response.asideDueAt = undefined;
  actions.push({ type: 'resume' });
}

/** Words while the assistant is audibly speaking and the caller is not (by the VAD): no turn. */
function lateAside(state: TurnState): boolean {
  return (
    state.response !== null &&
    state.response.audibleAt !== undefined &&
    !state.response.paused &&
    !state.caller.speaking
  );
}

function interruptIfDue(settings: TurnSettings, state: TurnState, actions: TurnAction[], at: number): void {
  const response = state.response;
  if (!response?.paused || response.bargeStartedAt === undefined) return;
  if (words(callerText(state.caller)).length < settings.interruptionThreshold) return;
  // An answer nobody has heard yet is no one's floor to defend: the caller simply goes on.
  if (response.audibleAt !== undefined) {
    if (at - response.audibleAt < settings.minSpeakingTimeMs) return;
    if (state.lastInterruptAt !== undefined && at - state.lastInterruptAt < settings.interruptionCooldownMs)
      return;
  }
  state.lastInterruptAt = at;
  state.response = null;
  actions.push({
    type: 'interrupt',
    speechStartedAt: state.caller.speechStartedAt ?? response.bargeStartedAt,
  });
}

function endTurnIfDue(settings: TurnSettings, state: TurnState, actions: TurnAction[], at: number): void {
  const { caller } = state;
  if (caller.speaking || state.response?.paused) return;
  const text = turnText(caller);
  if (!text) return;
  const due = turnEndDue(settings, caller);
  if (due === undefined || at < due) return;
  // The answer still being prepared was for words the caller has since added to: drop it.
  if (state.response && state.response.audibleAt === undefined && !state.response.last) {
    actions.push({ type: 'supersede' });
    state.response = null;
  }
  if (state.response) return;
  actions.push({
    type: 'respond',
    text,
    speechStartedAt: earliest(caller.speechStartedAt, caller.firstKeyAt),
    speechEndedAt: latest(caller.speechEndedAt, caller.lastKeyAt),
    sttFinalAt: caller.lastSttFinalAt,
  });
  state.caller = emptyCaller();
  state.response = { paused: false, last: false };
  state.idleCount = 0;
  state.silentSince = undefined;
}

/**
 * When the caller's turn is over, given what has been heard and keyed (both must be done);
 * undefined while it cannot end yet.
 */
function turnEndDue(settings: TurnSettings, caller: Caller): number | undefined {
  const keys =
    caller.lastKeyAt === undefined
      ? undefined
      : caller.keys.endsWith('#')
        ? caller.lastKeyAt
        : caller.lastKeyAt + KEY_TURN_MS;
  if (!callerText(caller)) return keys;
  const speech = speechEndDue(settings, caller);
  return keys === undefined || speech === undefined ? speech : Math.max(keys, speech);
}

const earliest = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);
const latest = (a: number | undefined, b: number | undefined) =>
  a === undefined ? b : b === undefined ? a : Math.max(a, b);

/** When the caller's spoken words are over; undefined while they cannot end yet. */
function speechEndDue(settings: TurnSettings, caller: Caller): number | undefined {
  if (caller.speechEndedAt === undefined) {
    // The VAD never heard these words: the vendor's finality alone decides.
    return caller.sttFinalAt;
  }
  const base = caller.speechEndedAt;
  if (caller.sttFinalAt !== undefined) return Math.max(base + settings.endpointMinMs, caller.sttFinalAt);
  return base + settings.endpointMaxMs;
}

function idleIfDue(settings: TurnSettings, state: TurnState, actions: TurnAction[], at: number): void {
  if (settings.idleTimeoutMs === null || state.silentSince === undefined) return;
  if (state.response || state.caller.speaking || turnText(state.caller)) return;
  if (at - state.silentSince < settings.idleTimeoutMs) return;
  state.silentSince = undefined;
  if (state.idleCount < settings.maxIdleMessages) {
    state.idleCount += 1;
    state.response = { paused: false, last: false };
    actions.push({ type: 'idle_prompt', count: state.idleCount });
  } else {
    state.finishing = true;
    state.response = { paused: false, last: true };
    actions.push({ type: 'goodbye' });
  }
}

function nextWake(settings: TurnSettings, state: TurnState): number | undefined {
  const { caller } = state;
  const candidates: number[] = [];
  if (state.response?.asideDueAt !== undefined) candidates.push(state.response.asideDueAt);
  if (!caller.speaking && !state.response?.paused && turnText(caller)) {
    const due = turnEndDue(settings, caller);
    if (due !== undefined) candidates.push(due);
  }
  if (settings.idleTimeoutMs !== null && state.silentSince !== undefined && !state.response)
    candidates.push(state.silentSince + settings.idleTimeoutMs);
  return candidates.length > 0 ? Math.min(...candidates) : undefined;
}
