/**
 * The playout (src/voice/playout.ts) and the sentence splitter (src/voice/sentences.ts), with a
 * made-up clock and a sender that keeps what the carrier would receive: pacing by marks, pause and
 * resume, clear with what was heard, and the pieces the voice gets from streamed text.
 */
import { describe, expect, it } from 'vitest';
import { MULAW_8K } from '../src/voice/audio.js';
import { Playout } from '../src/voice/playout.js';
import { SentenceSplitter } from '../src/voice/sentences.js';
import type { MediaSender } from '../src/voice/transport.js';

function rig() {
  let now = 0;
  const sent: Array<{ kind: 'media'; bytes: number } | { kind: 'mark'; name: string } | { kind: 'clear' }> =
    [];
  const events: string[] = [];
  const sender: MediaSender = {
    media: (audio) => sent.push({ kind: 'media', bytes: audio.length }),
    mark: (name) => sent.push({ kind: 'mark', name }),
    clear: () => sent.push({ kind: 'clear' }),
    close: () => {},
  };
  const playout = new Playout(
    sender,
    MULAW_8K,
    {
      audible: (id, at) => events.push(`audible ${id} @${at}`),
      firstPlayed: (id, at) => events.push(`first ${id} @${at}`),
      played: (id, at) => events.push(`played ${id} @${at}`),
    },
    () => now,
  );
  const marks = () => sent.filter((m) => m.kind === 'mark').map((m) => (m as { name: string }).name);
  const mediaBytes = () => sent.reduce((sum, m) => sum + (m.kind === 'media' ? m.bytes : 0), 0);
  return {
    playout,
    sent,
    events,
    marks,
    mediaBytes,
    advance(ms: number) {
      now += ms;
    },
  };
}

/** `ms` of μ-law audio. */
const audio = (ms: number) => new Uint8Array(ms * 8).fill(0x10);

describe('playout', () => {
  it('keeps at most 500 ms unplayed at the carrier, in 100 ms slices each followed by a mark', () => {
    const r = rig();
    r.playout.begin(1);
    r.playout.enqueue(1, audio(2000));
    expect(r.mediaBytes()).toBe(500 * 8);
    expect(r.sent.slice(0, 2)).toEqual([
      { kind: 'media', bytes: 800 },
      { kind: 'mark', name: expect.any(String) },
    ]);
    expect(r.events).toEqual(['audible 1 @0']);
    // A mark back means its slice has played: one more slice goes.
    r.advance(100);
    r.playout.onMark(r.marks()[0]!);
    expect(r.mediaBytes()).toBe(600 * 8);
    expect(r.events).toContain('first 1 @100');
  });

  it('reports the utterance played once every mark has come back', () => {
    const r = rig();
    r.playout.begin(1);
    r.playout.enqueue(1, audio(250));
    r.playout.finish(1);
    expect(r.mediaBytes()).toBe(250 * 8);
    for (const name of r.marks()) r.playout.onMark(name);
    expect(r.events.at(-1)).toBe('played 1 @0');
  });

  it('pause stops sending, resume goes on where it stopped', () => {
    const r = rig();
    r.playout.begin(1);
    r.playout.enqueue(1, audio(1000));
    r.playout.pause();
    for (const name of r.marks()) r.playout.onMark(name);
    expect(r.mediaBytes()).toBe(500 * 8);
    r.playout.resume();
    expect(r.mediaBytes()).toBe(1000 * 8);
  });

  it('clear drops the unplayed audio, tells the carrier, and says how much was heard', () => {
    const r = rig();
    r.playout.begin(1);
    r.playout.enqueue(1, audio(1000));
    const [first, second] = r.marks();
    r.advance(100);
    r.playout.onMark(first!);
    r.advance(100);
    r.playout.onMark(second!);
    r.advance(50);
    const heard = r.playout.clear();
    expect(heard).toBe(250);
    expect(r.sent.at(-1)).toEqual({ kind: 'clear' });
    // The carrier echoes the marks it dropped: they must not count as played.
    for (const name of r.marks()) r.playout.onMark(name);
    expect(r.events.filter((e) => e.startsWith('played'))).toEqual([]);
  });

  it('an utterance with no audio is played at once', () => {
    const r = rig();
    r.playout.begin(3);
    r.playout.finish(3);
    expect(r.events).toEqual(['played 3 @0']);
  });
});

describe('sentence splitter', () => {
  it('sends a long first clause early, then whole sentences', () => {
    const splitter = new SentenceSplitter();
    expect(splitter.push('Sure, ')).toEqual([]);
    expect(splitter.push('I can book that appointment for you, ')).toEqual([
      'Sure, I can book that appointment for you,',
    ]);
    expect(splitter.push('what time suits you? Morning')).toEqual(['what time suits you?']);
    expect(splitter.push(' or afternoon, ')).toEqual([]);
    expect(splitter.flush()).toBe('Morning or afternoon,');
    expect(splitter.flush()).toBeUndefined();
  });
});
