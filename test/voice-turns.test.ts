/**
 * Turn-taking rules (src/voice/turn-manager.ts) on made-up timelines: the state machine is pure, so
 * every rule of runtime.md §4 is checked here without sockets or vendors; the end-to-end tests
 * check the same behaviour through the simulated phone.
 */
import { describe, expect, it } from 'vitest';
import {
  initialTurnState,
  KEY_TURN_MS,
  keysText,
  step,
  type TurnAction,
  type TurnInput,
  type TurnSettings,
  type TurnState,
} from '../src/voice/turn-manager.js';

const SETTINGS: TurnSettings = {
  interruptionThreshold: 3,
  minSpeakingTimeMs: 500,
  interruptionCooldownMs: 2000,
  endpointMinMs: 500,
  endpointMaxMs: 3000,
  idleTimeoutMs: 10_000,
  maxIdleMessages: 2,
};

/** Runs inputs in order; returns every action with the time it came, and the last wake-up asked. */
function run(inputs: TurnInput[], settings = SETTINGS, from: TurnState = initialTurnState()) {
  let state = from;
  const actions: Array<TurnAction & { at: number }> = [];
  let wakeAt: number | undefined;
  for (const input of inputs) {
    const next = step(settings, state, input);
    state = next.state;
    wakeAt = next.wakeAt;
    actions.push(...next.actions.map((action) => ({ ...action, at: input.at })));
  }
  return { state, actions, wakeAt, types: actions.map((action) => action.type) };
}

/** After the greeting has played: the caller has the floor. */
const greeted: TurnInput[] = [
  { type: 'start', at: 0 },
  { type: 'response_audible', at: 100 },
  { type: 'response_done', at: 2000 },
];

const speech = (start: number, end: number, text: string, speechFinal = true): TurnInput[] => [
  { type: 'vad_start', at: start + 100, speechStartedAt: start },
  { type: 'stt_interim', at: start + 400, text: text.split(' ').slice(0, 2).join(' ') },
  { type: 'vad_end', at: end + 300, speechEndedAt: end },
  { type: 'stt_final', at: end + 350, text, speechFinal },
];

describe('turn-taking', () => {
  it('greets at the start', () => {
    expect(run([{ type: 'start', at: 0 }]).types).toEqual(['greet']);
  });

  it('ends the turn on the vendor finality once the VAD silence has lasted the minimum', () => {
    const { actions, wakeAt } = run([...greeted, ...speech(3000, 4500, 'I need an appointment')]);
    // speech_final at 4850 but the VAD silence began at 4500: the turn ends at 5000, not before.
    expect(actions.filter((a) => a.type === 'respond')).toEqual([]);
    expect(wakeAt).toBe(5000);
    const after = run([
      ...greeted,
      ...speech(3000, 4500, 'I need an appointment'),
      { type: 'tick', at: 5000 },
    ]);
    const respond = after.actions.find((a) => a.type === 'respond');
    expect(respond).toMatchObject({
      text: 'I need an appointment',
      speechStartedAt: 3000,
      speechEndedAt: 4500,
      at: 5000,
    });
  });

  it('waits while the VAD still hears speech, even after the vendor says final', () => {
    const { types } = run([
      ...greeted,
      { type: 'vad_start', at: 3100, speechStartedAt: 3000 },
      { type: 'stt_final', at: 3900, text: 'one moment', speechFinal: true },
      { type: 'tick', at: 6000 },
    ]);
    expect(types).not.toContain('respond');
  });

  it('ends the turn after the maximum wait when the vendor never says final', () => {
    const early = run([...greeted, ...speech(3000, 4500, 'hello there', false), { type: 'tick', at: 7400 }]);
    expect(early.types).not.toContain('respond');
    expect(early.wakeAt).toBe(7500);
    const late = run([...greeted, ...speech(3000, 4500, 'hello there', false), { type: 'tick', at: 7500 }]);
    expect(late.types).toContain('respond');
  });

  it('answers words the VAD never heard once the vendor says final', () => {
    const { actions } = run([
      ...greeted,
      { type: 'stt_final', at: 5000, text: 'quiet words', speechFinal: true },
    ]);
    expect(actions.find((a) => a.type === 'respond')).toMatchObject({ text: 'quiet words' });
  });

  it('joins several finals of one turn', () => {
    const { actions } = run([
      ...greeted,
      { type: 'vad_start', at: 3100, speechStartedAt: 3000 },
      { type: 'stt_final', at: 3600, text: 'I would like', speechFinal: false },
      { type: 'stt_final', at: 4200, text: 'to book a table', speechFinal: true },
      { type: 'vad_end', at: 4500, speechEndedAt: 4200 },
      { type: 'tick', at: 4700 },
    ]);
    expect(actions.find((a) => a.type === 'respond')).toMatchObject({ text: 'I would like to book a table' });
  });

  describe('barge-in', () => {
    /** The caller asked; the answer has been audible since 6000. */
    const answering: TurnInput[] = [
      ...greeted,
      ...speech(3000, 4500, 'what are your hours'),
      { type: 'tick', at: 5000 },
      { type: 'response_audible', at: 6000 },
    ];

    it('pauses at once on caller speech, and interrupts when the words reach the threshold', () => {
      const { actions, state } = run([
        ...answering,
        { type: 'vad_start', at: 7100, speechStartedAt: 7000 },
        { type: 'stt_interim', at: 7400, text: 'wait' },
        { type: 'stt_interim', at: 7700, text: 'wait stop I' },
      ]);
      expect(actions.filter((a) => a.at >= 7000).map((a) => a.type)).toEqual(['pause', 'interrupt']);
      expect(actions.find((a) => a.type === 'interrupt')).toMatchObject({ speechStartedAt: 7000, at: 7700 });
      expect(state.response).toBeNull();
    });

    it('the interrupting words become the next turn', () => {
      const { actions } = run([
        ...answering,
        { type: 'vad_start', at: 7100, speechStartedAt: 7000 },
        { type: 'stt_interim', at: 7700, text: 'wait stop I' },
        { type: 'stt_final', at: 8200, text: 'wait stop I have a question', speechFinal: true },
        { type: 'vad_end', at: 8500, speechEndedAt: 8200 },
        { type: 'tick', at: 8700 },
      ]);
      expect(actions.filter((a) => a.type === 'respond').at(-1)).toMatchObject({
        text: 'wait stop I have a question',
      });
    });

    it('resumes after a backchannel, keeping its words out of the turns', () => {
      const { actions, state } = run([
        ...answering,
        { type: 'vad_start', at: 7100, speechStartedAt: 7000 },
        { type: 'stt_interim', at: 7300, text: 'uh-huh' },
        { type: 'vad_end', at: 7600, speechEndedAt: 7300 },
        { type: 'stt_final', at: 7700, text: 'uh-huh', speechFinal: true },
        { type: 'tick', at: 9000 },
      ]);
      expect(actions.filter((a) => a.at >= 7000).map((a) => a.type)).toEqual([
        'pause',
        'caller_aside',
        'resume',
      ]);
      // Once, with the vendor's final words: not again when the final arrives.
      expect(actions.filter((a) => a.type === 'caller_aside')).toEqual([
        expect.objectContaining({ text: 'uh-huh', startedAt: 7000, endedAt: 7300 }),
      ]);
      expect(state.response).not.toBeNull();
      expect(actions.filter((a) => a.type === 'respond')).toHaveLength(1);
    });

    it('a pause inside the caller sentence does not resume the answer', () => {
      const { actions } = run([
        ...answering,
        { type: 'vad_start', at: 7100, speechStartedAt: 7000 },
        { type: 'stt_interim', at: 7300, text: 'wait' },
        { type: 'vad_end', at: 7500, speechEndedAt: 7200 },
        // The caller goes on within the grace: no backchannel, and the words add up to an interruption.
        { type: 'vad_start', at: 7650, speechStartedAt: 7600 },
        { type: 'stt_interim', at: 7900, text: 'wait stop I have' },
        { type: 'tick', at: 8000 },
      ]);
      expect(actions.filter((a) => a.at >= 7000).map((a) => a.type)).toEqual(['pause', 'interrupt']);
    });

    it('a late finality from the last turn does not end the next one early', () => {
      const { types } = run([
        ...answering,
        { type: 'response_done', at: 9000 },
        { type: 'utterance_end', at: 9100 },
        { type: 'stt_final', at: 10_000, text: 'That', speechFinal: false },
        { type: 'tick', at: 10_100 },
      ]);
      expect(types.filter((type) => type === 'respond')).toHaveLength(1);
    });

    it('does not interrupt before the assistant has spoken its minimum time', () => {
      const { types } = run([
        ...answering,
        { type: 'vad_start', at: 6150, speechStartedAt: 6100 },
        { type: 'stt_interim', at: 6300, text: 'no no no' },
      ]);
      expect(types.slice(-1)).toEqual(['pause']);
    });

    it('does not interrupt again within the cooldown', () => {
      const first = run([
        ...answering,
        { type: 'vad_start', at: 7100, speechStartedAt: 7000 },
        { type: 'stt_interim', at: 7700, text: 'wait stop I' },
        { type: 'stt_final', at: 8200, text: 'wait stop I', speechFinal: true },
        { type: 'vad_end', at: 8500, speechEndedAt: 8200 },
        { type: 'tick', at: 8700 },
        { type: 'response_audible', at: 8800 },
        { type: 'vad_start', at: 9400, speechStartedAt: 9350 },
        { type: 'stt_interim', at: 9600, text: 'no wait again' },
      ]);
      expect(first.types.filter((type) => type === 'interrupt')).toHaveLength(1);
      const later = run(
        [
          { type: 'vad_end', at: 9700, speechEndedAt: 9650 },
          { type: 'vad_start', at: 10_100, speechStartedAt: 10_000 },
          { type: 'stt_interim', at: 10_300, text: 'listen to me please' },
        ],
        SETTINGS,
        first.state,
      );
      expect(later.types).toContain('interrupt');
    });
  });

  it('drops an answer nobody heard when the caller adds to the turn', () => {
    // The second final comes after the first answer began but before it was audible: that answer is
    // dropped and the added words answered (the conversation already holds the first words).
    const { actions } = run([
      ...greeted,
      { type: 'stt_final', at: 5000, text: 'book it', speechFinal: true },
      { type: 'stt_final', at: 5200, text: 'for tomorrow', speechFinal: true },
    ]);
    expect(actions.filter((a) => a.type !== 'greet').map((a) => [a.type, 'text' in a ? a.text : ''])).toEqual(
      [
        ['respond', 'book it'],
        ['supersede', ''],
        ['respond', 'for tomorrow'],
      ],
    );
  });

  it('prompts after idle silence, then says goodbye and hangs up', () => {
    const idle = run([...greeted, { type: 'tick', at: 12_000 }]);
    expect(idle.actions.at(-1)).toMatchObject({ type: 'idle_prompt', count: 1 });
    const second = run([
      ...greeted,
      { type: 'tick', at: 12_000 },
      { type: 'response_audible', at: 12_100 },
      { type: 'response_done', at: 13_000 },
      { type: 'tick', at: 23_000 },
      { type: 'response_audible', at: 23_100 },
      { type: 'response_done', at: 24_000 },
      { type: 'tick', at: 34_000 },
      { type: 'response_audible', at: 34_100 },
      { type: 'response_done', at: 35_000 },
    ]);
    expect(second.types.slice(1)).toEqual(['idle_prompt', 'idle_prompt', 'goodbye', 'hang_up']);
    expect(second.state.ended).toBe(true);
  });

  it('caller speech resets the idle count', () => {
    const { state } = run([
      ...greeted,
      { type: 'tick', at: 12_000 },
      { type: 'response_done', at: 13_000 },
      ...speech(14_000, 15_000, 'yes I am here'),
      { type: 'tick', at: 15_500 },
    ]);
    expect(state.idleCount).toBe(0);
  });

  it('hangs up after the last answer when a tool ends the call', () => {
    const { types } = run([
      ...greeted,
      ...speech(3000, 4500, 'that is all'),
      { type: 'tick', at: 5000 },
      { type: 'finish_after_response', at: 5500 },
      { type: 'response_audible', at: 5600 },
      { type: 'response_done', at: 7000 },
    ]);
    expect(types.slice(-1)).toEqual(['hang_up']);
  });

  it('no idle prompts when idle_timeout is off', () => {
    const { types, wakeAt } = run([...greeted, { type: 'tick', at: 100_000 }], {
      ...SETTINGS,
      idleTimeoutMs: null,
    });
    expect(types).toEqual(['greet']);
    expect(wakeAt).toBeUndefined();
  });
});

const keys = (from: number, digits: string, everyMs = 300): TurnInput[] =>
  [...digits].map((digit, i) => ({ type: 'dtmf' as const, at: from + i * everyMs, digit }));

describe("the caller's stop (a browser's Interrupt)", () => {
  it('interrupts an audible answer at once, without being a turn; silence counts from then', () => {
    const { actions, state, wakeAt } = run([
      ...greeted,
      ...speech(3000, 4500, 'what are my options'),
      { type: 'tick', at: 5000 },
      { type: 'response_audible', at: 5600 },
      { type: 'stop', at: 5700 },
    ]);
    expect(actions.filter((a) => a.type !== 'greet').map((a) => [a.type, a.at])).toEqual([
      ['respond', 5000],
      ['interrupt', 5700],
    ]);
    expect(state.response).toBeNull();
    expect(state.caller.keys).toBe('');
    expect(wakeAt).toBe(5700 + SETTINGS.idleTimeoutMs!);
  });

  it('drops an answer nobody has heard yet, and does nothing when the assistant is silent', () => {
    const unheard = run([
      ...greeted,
      ...speech(3000, 4500, 'what are my options'),
      { type: 'tick', at: 5000 },
      { type: 'stop', at: 5200 },
    ]);
    expect(unheard.types.slice(1)).toEqual(['respond', 'supersede']);
    const silent = run([...greeted, { type: 'stop', at: 2500 }]);
    expect(silent.types).toEqual(['greet']);
  });
});

describe('keys the caller presses (DTMF no tool collects)', () => {
  it('are one turn ended by #, told as the keys pressed', () => {
    const { actions, wakeAt } = run([...greeted, ...keys(3000, '123#')]);
    expect(keysText('123#')).toBe('[The caller pressed: 1 2 3 #]');
    expect(actions.filter((a) => a.type === 'respond')).toEqual([
      {
        type: 'respond',
        text: '[The caller pressed: 1 2 3 #]',
        speechStartedAt: 3000,
        speechEndedAt: 3900,
        sttFinalAt: undefined,
        at: 3900,
      },
    ]);
    expect(wakeAt).toBeUndefined();
  });

  it('without #, end the turn once no key has come for a while; a key in between waits again', () => {
    const waiting = run([...greeted, ...keys(3000, '42')]);
    expect(waiting.types).not.toContain('respond');
    expect(waiting.wakeAt).toBe(3300 + KEY_TURN_MS);
    const more = run([
      ...greeted,
      ...keys(3000, '42'),
      { type: 'tick', at: 3300 + KEY_TURN_MS - 100 },
      ...keys(3300 + KEY_TURN_MS - 50, '7'),
      { type: 'tick', at: 3300 + KEY_TURN_MS },
    ]);
    expect(more.types).not.toContain('respond');
    expect(more.wakeAt).toBe(3250 + 2 * KEY_TURN_MS);
    const ended = step(SETTINGS, more.state, { type: 'tick', at: 3250 + 2 * KEY_TURN_MS });
    expect(ended.actions).toMatchObject([{ type: 'respond', text: '[The caller pressed: 4 2 7]' }]);
  });

  it('interrupt the assistant at once while it is heard, with no threshold, minimum or cooldown', () => {
    const { actions, state } = run([
      ...greeted,
      ...speech(3000, 4500, 'what are my options'),
      { type: 'tick', at: 5000 },
      { type: 'response_audible', at: 5600 },
      // 100 ms into the answer: short of min_speaking_time, and one key is no word.
      { type: 'dtmf', at: 5700, digit: '2' },
    ]);
    expect(actions.filter((a) => a.type !== 'greet').map((a) => [a.type, a.at])).toEqual([
      ['respond', 5000],
      ['interrupt', 5700],
    ]);
    expect(state.response).toBeNull();
    expect(state.lastInterruptAt).toBe(5700);
  });

  it('drop an answer nobody has heard yet, and end the greeting too', () => {
    const unheard = run([
      ...greeted,
      ...speech(3000, 4500, 'what are my options'),
      { type: 'tick', at: 5000 },
      ...keys(5200, '3#'),
    ]);
    expect(unheard.types.slice(1)).toEqual(['respond', 'supersede', 'respond']);
    expect(unheard.actions.at(-1)).toMatchObject({ text: '[The caller pressed: 3 #]' });
    const greeting = run([
      { type: 'start', at: 0 },
      { type: 'response_audible', at: 100 },
      ...keys(400, '0#'),
    ]);
    expect(greeting.types).toEqual(['greet', 'interrupt', 'respond']);
  });

  it('join the words said beside them in one turn, once both are over', () => {
    const inputs: TurnInput[] = [
      ...greeted,
      ...speech(3000, 4500, 'my extension is'),
      ...keys(4000, '5'),
      { type: 'tick', at: 5000 },
    ];
    // The words are over at 5000, the key only at 4000 + the wait.
    const { actions, wakeAt } = run(inputs);
    expect(actions.filter((a) => a.type === 'respond')).toEqual([]);
    expect(wakeAt).toBe(4000 + KEY_TURN_MS);
    const after = run([...inputs, { type: 'tick', at: 4000 + KEY_TURN_MS }]);
    expect(after.actions.find((a) => a.type === 'respond')).toMatchObject({
      text: 'my extension is [The caller pressed: 5]',
      speechStartedAt: 3000,
      speechEndedAt: 4500,
      at: 4000 + KEY_TURN_MS,
    });
  });

  it('hold off the idle prompt, and do nothing once the call is finishing', () => {
    const pending = run([...greeted, ...keys(11_000, '9'), { type: 'tick', at: 12_000 }]);
    expect(pending.types).not.toContain('idle_prompt');
    const finishing = run([
      ...greeted,
      ...speech(3000, 4500, 'that is all'),
      { type: 'tick', at: 5000 },
      { type: 'finish_after_response', at: 5500 },
      { type: 'response_audible', at: 5600 },
      ...keys(5700, '1#'),
      { type: 'response_done', at: 7000 },
    ]);
    expect(finishing.types.slice(-2)).toEqual(['respond', 'hang_up']);
  });
});
