/**
 * The session's tool machinery without a call: running one answer's tool calls (together, the filler
 * once when they run long, one record each, failures told rather than thrown), the keypad's digit
 * collector, and how an utterance's text is split between what the conversation has and what it
 * still needs.
 */
import { describe, expect, it } from 'vitest';
import { Keypad } from '../src/voice/keypad.js';
import { afterSaid, joinText } from '../src/voice/spoken-text.js';
import { parseArguments, runTools } from '../src/voice/tools/run-tools.js';
import { type CallTool, DEFAULT_FILLER, FILLER_AFTER_MS } from '../src/voice/tools/types.js';

const noControls = new Keypad({ sendDigits: async () => false });
const silentLog = { warn() {} };

function tool(name: string, run: CallTool['run'], filler?: string): CallTool {
  return {
    definition: { name, description: name, parameters: { type: 'object', properties: {} } },
    run,
    ...(filler !== undefined ? { filler } : {}),
  };
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

function options(tools: CallTool[], signal = new AbortController().signal) {
  const fillers: string[] = [];
  const records: Array<Record<string, unknown>> = [];
  const start = performance.now();
  return {
    fillers,
    records,
    run: {
      tools,
      signal,
      callId: 7,
      controls: noControls,
      clock: () => performance.now() - start,
      filler: (text: string) => fillers.push(text),
      record: (data: Record<string, unknown>) => records.push(data),
      log: silentLog,
    },
  };
}

describe('running the tool calls of an answer', () => {
  it('runs them together and records each with its arguments, result and duration', async () => {
    const weather = tool('weather', async (args) => ({ ok: true, result: `sunny in ${String(args.city)}` }));
    const slowSum = tool('sum', async (args, context) => {
      await sleep(200, context.signal);
      return { ok: true, result: String(Number(args.a) + Number(args.b)), record: { status: 200 } };
    });
    const o = options([weather, slowSum]);
    const started = performance.now();
    const runs = await runTools(
      [
        { id: 'c1', name: 'sum', arguments: '{"a":2,"b":3}' },
        { id: 'c2', name: 'weather', arguments: '{"city":"Oslo"}' },
      ],
      o.run,
    );
    expect(performance.now() - started).toBeLessThan(FILLER_AFTER_MS);
    expect(runs.map((r) => [r.call.id, r.outcome.result])).toEqual([
      ['c1', '5'],
      ['c2', 'sunny in Oslo'],
    ]);
    expect(o.fillers).toEqual([]);
    const sum = o.records.find((r) => r.name === 'sum');
    expect(sum).toMatchObject({ arguments: '{"a":2,"b":3}', ok: true, result: '5', status: 200 });
    expect(sum?.duration_ms).toBeGreaterThanOrEqual(190);
  });

  it('says the filler once when a tool runs past the threshold, its own when it has one', async () => {
    const slow = tool('lookup', async (_args, context) => {
      await sleep(FILLER_AFTER_MS + 300, context.signal);
      return { ok: true, result: 'found' };
    });
    const o = options([slow]);
    await runTools([{ id: 'c1', name: 'lookup', arguments: '{}' }], o.run);
    expect(o.fillers).toEqual([DEFAULT_FILLER]);

    const own = options([tool('lookup', slow.run, 'Let me look that up.')]);
    await runTools([{ id: 'c1', name: 'lookup', arguments: '{}' }], own.run);
    expect(own.fillers).toEqual(['Let me look that up.']);

    const quiet = options([tool('lookup', slow.run, '')]);
    await runTools([{ id: 'c1', name: 'lookup', arguments: '{}' }], quiet.run);
    expect(quiet.fillers).toEqual([]);
  }, 15_000);

  it('tells the model about a tool the call lacks and one that throws, and goes on', async () => {
    const broken = tool('broken', async () => {
      throw new Error('bug');
    });
    const o = options([broken]);
    const runs = await runTools(
      [
        { id: 'c1', name: 'missing', arguments: '{}' },
        { id: 'c2', name: 'broken', arguments: 'not json' },
      ],
      o.run,
    );
    expect(runs.map((r) => r.outcome.ok)).toEqual([false, false]);
    expect(runs[0]?.outcome.result).toContain('not available');
    expect(runs[1]?.outcome.result).toContain('failed');
    expect(o.records.map((r) => [r.name, r.ok, r.arguments])).toEqual([
      ['missing', false, '{}'],
      ['broken', false, '{}'],
    ]);
  });

  it('stops waiting and records nothing once the answer is aborted', async () => {
    const abort = new AbortController();
    const hanging = tool('hang', async (_args, context) => {
      await sleep(60_000, context.signal);
      return { ok: false, result: 'stopped' };
    });
    const o = options([hanging], abort.signal);
    setTimeout(() => abort.abort(), 50);
    const runs = await runTools([{ id: 'c1', name: 'hang', arguments: '{}' }], o.run);
    expect(runs[0]?.outcome.result).toBe('stopped');
    expect(o.records).toEqual([]);
  });

  it('reads arguments as an object, or nothing', () => {
    expect(parseArguments('{"a":1}')).toEqual({ a: 1 });
    expect(parseArguments('')).toEqual({});
    expect(parseArguments('[1]')).toEqual({});
    expect(parseArguments('{oops')).toEqual({});
  });
});

describe('the keypad', () => {
  it('collects digits up to the terminator, which it leaves out', async () => {
    const keypad = new Keypad({ sendDigits: async () => true });
    const collected = keypad.collectDigits(
      { maxDigits: 10, terminator: '#', timeoutMs: 2000 },
      new AbortController().signal,
    );
    for (const digit of '4521#') expect(keypad.press(digit)).toBe(true);
    await expect(collected).resolves.toBe('4521');
    expect(keypad.press('9')).toBe(false);
  });

  it('stops at the number of digits wanted, or after a quiet time-out', async () => {
    const keypad = new Keypad({ sendDigits: async () => true });
    const four = keypad.collectDigits({ maxDigits: 4, timeoutMs: 2000 }, new AbortController().signal);
    for (const digit of '12345') keypad.press(digit);
    await expect(four).resolves.toBe('1234');
    const partial = keypad.collectDigits({ maxDigits: 6, timeoutMs: 100 }, new AbortController().signal);
    keypad.press('7');
    await expect(partial).resolves.toBe('7');
    await expect(
      keypad.collectDigits({ maxDigits: 6, timeoutMs: 50 }, new AbortController().signal),
    ).resolves.toBeNull();
  });

  it('gives nothing once aborted or closed', async () => {
    const keypad = new Keypad({ sendDigits: async () => true });
    const abort = new AbortController();
    const waiting = keypad.collectDigits({ maxDigits: 4, timeoutMs: 5000 }, abort.signal);
    abort.abort();
    await expect(waiting).resolves.toBeNull();
    const closing = keypad.collectDigits({ maxDigits: 4, timeoutMs: 5000 }, new AbortController().signal);
    keypad.close();
    await expect(closing).resolves.toBeNull();
  });

  it('sends tones through the carrier, refusing what is no DTMF digit and a carrier without the command', async () => {
    const sent: string[] = [];
    const keypad = new Keypad({
      sendDigits: async (digits) => {
        sent.push(digits);
        return true;
      },
    });
    await keypad.sendDigits('1w2#', new AbortController().signal);
    expect(sent).toEqual(['1w2#']);
    await expect(keypad.sendDigits('12x', new AbortController().signal)).rejects.toThrow(/DTMF/);
    await expect(noControls.sendDigits('1', new AbortController().signal)).rejects.toThrow(/cannot/);
  });
});

describe("an utterance's text across tool rounds", () => {
  it('gives the conversation only what follows the words it already has', () => {
    const said = joinText('Let me check.', 'One moment, please.');
    expect(said).toBe('Let me check. One moment, please.');
    expect(afterSaid('Let me check. One moment, please. It is 5.', said)).toBe('It is 5.');
    // Spacing the voice gave back differently does not matter; a cut before the rest leaves nothing.
    expect(afterSaid('Let me  check.One moment, please.  It is 5.', said)).toBe('It is 5.');
    expect(afterSaid('Let me', said)).toBe('');
    expect(afterSaid('Hello there.', '')).toBe('Hello there.');
  });
});
