/**
 * A call's latency waterfall: each turn one row of horizontal bars on a shared millisecond scale,
 * offset from the moment the caller stopped speaking (a greeting, with no caller speech, from the
 * first thing the turn did) — so the stages' overlap and the gaps between them show. The marks come
 * from `GET /api/v1/calls/{id}/turns` (docs/voice.md "Measurements"); the same numbers are in the
 * turn table below the bars (talk/turn-latencies.tsx), which is what screen readers get.
 */
import { TurnLatencies } from '../talk/turn-latencies.js';
import type { CallTurn } from './call-facts.js';

type Marks = CallTurn['marks'];
type MarkName = keyof Marks;

/** The stages drawn, each from one mark to another, in the order they start. */
const BARS: Array<{ label: string; from: MarkName; to: MarkName; tone: string }> = [
  { label: 'End of speech', from: 'caller_speech_ended_at', to: 'turn_end_decided_at', tone: 'wait' },
  { label: 'Transcript', from: 'caller_speech_ended_at', to: 'stt_final_at', tone: 'stt' },
  { label: 'Knowledge', from: 'retrieval_started_at', to: 'retrieval_ended_at', tone: 'platform' },
  { label: 'Model first token', from: 'llm_request_at', to: 'llm_first_token_at', tone: 'llm' },
  { label: 'Voice first audio', from: 'tts_request_at', to: 'tts_first_byte_at', tone: 'tts' },
  { label: 'Audio played', from: 'first_audio_sent_at', to: 'first_mark_played_at', tone: 'played' },
];

interface Bar {
  label: string;
  tone: string;
  start: number;
  length: number;
}

/** The moment a turn's bars are offset from. */
function originOf(marks: Marks): number | undefined {
  const times = Object.values(marks).filter((at): at is number => typeof at === 'number');
  return marks.caller_speech_ended_at ?? (times.length > 0 ? Math.min(...times) : undefined);
}

/** The turn's bars in ms from its origin, and where its answer's first audio went out. */
export function barsOf(turn: CallTurn): { bars: Bar[]; firstAudio: number | undefined; end: number } {
  const origin = originOf(turn.marks);
  if (origin === undefined) return { bars: [], firstAudio: undefined, end: 0 };
  const bars: Bar[] = [];
  for (const stage of BARS) {
    const from = turn.marks[stage.from];
    const to = turn.marks[stage.to];
    if (from === undefined || to === undefined || to < from) continue;
    bars.push({ label: stage.label, tone: stage.tone, start: from - origin, length: to - from });
  }
  const sent = turn.marks.first_audio_sent_at;
  const firstAudio = sent === undefined ? undefined : sent - origin;
  const end = Math.max(firstAudio ?? 0, ...bars.map((bar) => bar.start + bar.length));
  return { bars, firstAudio, end };
}

const ms = (value: number) => `${Math.round(value)} ms`;

const WIDTH = 640;
const LABELS = 150;
const LANE = 20;
const TRACK = WIDTH - LABELS - 70;

function TurnRow(props: { turn: CallTurn; scale: number }) {
  const { turn, scale } = props;
  const { bars, firstAudio } = barsOf(turn);
  const x = (at: number) => LABELS + Math.max(0, at) * scale;
  const height = bars.length * LANE + 6;
  const said = turn.kind === 'greeting' ? 'Greeting' : turn.user_text || `(${turn.kind})`;
  const summary = bars.map((bar) => `${bar.label} ${ms(bar.length)}`).join(', ');
  return (
    <figure class="waterfall-turn">
      <figcaption>
        <strong>Turn {turn.position}</strong> · {said}
        {typeof turn.end_to_end_ms === 'number' ? ` · waited ${ms(turn.end_to_end_ms)}` : ''}
      </figcaption>
      {bars.length === 0 ? (
        <p class="muted">No timings were recorded for this turn.</p>
      ) : (
        <svg
          viewBox={`0 0 ${WIDTH} ${height}`}
          role="img"
          aria-label={`Turn ${turn.position}: ${summary}`}
          preserveAspectRatio="xMinYMin meet"
        >
          <title>{`Turn ${turn.position}: ${summary}`}</title>
          {bars.map((bar, lane) => (
            <g key={bar.label} transform={`translate(0 ${lane * LANE + 3})`}>
              <text x={LABELS - 8} y={LANE / 2 + 1} text-anchor="end" dominant-baseline="middle">
                {bar.label}
              </text>
              <rect
                class={`tone-${bar.tone}`}
                x={x(bar.start)}
                y={3}
                width={Math.max(2, bar.length * scale)}
                height={LANE - 6}
                rx={2}
              />
              <text x={x(bar.start + bar.length) + 4} y={LANE / 2 + 1} dominant-baseline="middle">
                {ms(bar.length)}
              </text>
            </g>
          ))}
          {firstAudio === undefined ? null : (
            <line class="first-audio" x1={x(firstAudio)} x2={x(firstAudio)} y1={0} y2={height} />
          )}
        </svg>
      )}
    </figure>
  );
}

export function Waterfall(props: { turns: CallTurn[] }) {
  const timed = props.turns.map((turn) => ({ turn, end: barsOf(turn).end }));
  const widest = Math.max(1, ...timed.map((entry) => entry.end));
  const scale = TRACK / widest;
  return (
    <div class="waterfall">
      <p class="muted">
        Each row starts when the caller stopped speaking; the upright line is when the answer's first audio
        went out. One scale for every turn: 0 to {ms(widest)}.
      </p>
      {timed.map(({ turn }) => (
        <TurnRow key={turn.position} turn={turn} scale={scale} />
      ))}
      <TurnLatencies turns={props.turns} />
    </div>
  );
}
