/**
 * What `npm run demo` (scripts/demo.ts) prints: the transcript as "Caller: …" / "Assistant: …" lines,
 * and the table of each turn's latency breakdown as `GET /api/v1/calls/{id}/turns` gives it. Plain
 * text, no colours: the output is read by people and by test/demo.test.ts alike.
 */
import type { CallTurn, TranscriptSegment } from '../clients/typescript/src/index.js';

/** A transcript segment of `GET /api/v1/calls/{id}/transcript`, as far as the lines need it. */
export type Segment = Pick<TranscriptSegment, 'speaker' | 'text'>;

/** The fields of a turn of `GET /api/v1/calls/{id}/turns` the table shows. */
export type TurnFigures = Pick<
  CallTurn,
  | 'position'
  | 'kind'
  | 'interrupted'
  | 'end_to_end_ms'
  | 'endpointing_ms'
  | 'stt_delay_ms'
  | 'llm_ttft_ms'
  | 'tts_ttfb_ms'
  | 'platform_ms'
>;

const SPEAKERS: Record<string, string> = { user: 'Caller', assistant: 'Assistant' };

export function segmentLine(segment: Segment): string {
  return `${SPEAKERS[segment.speaker] ?? segment.speaker}: ${segment.text}`;
}

const COLUMNS: Array<{ title: string; figure: keyof TurnFigures }> = [
  { title: 'end-to-end', figure: 'end_to_end_ms' },
  { title: 'endpointing', figure: 'endpointing_ms' },
  { title: 'STT delay', figure: 'stt_delay_ms' },
  { title: 'LLM TTFT', figure: 'llm_ttft_ms' },
  { title: 'TTS TTFB', figure: 'tts_ttfb_ms' },
  { title: 'platform', figure: 'platform_ms' },
];

/** Marks a turn the caller cut short, in the table and in its footnote. */
const INTERRUPTED = '*';

/**
 * The turns as a table, one row per turn, figures in milliseconds ("-" where the turn had no such
 * stage: a greeting has no caller speech to wait for), and a footnote when a turn was interrupted.
 */
export function turnsTable(turns: TurnFigures[]): string {
  const header = ['turn', 'kind', ...COLUMNS.map((column) => column.title)];
  const rows = turns.map((turn) => [
    `${turn.position}${turn.interrupted ? INTERRUPTED : ''}`,
    turn.kind,
    ...COLUMNS.map(({ figure }) => {
      const value = turn[figure];
      return typeof value === 'number' ? String(Math.round(value)) : '-';
    }),
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  // Text columns align left, figures right, as a reader scans them.
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const lines = [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)];
  lines.push('Figures in milliseconds; "platform" is the time the platform itself added.');
  if (turns.some((turn) => turn.interrupted))
    lines.push(
      `${INTERRUPTED} interrupted: the caller spoke again before the answer was over, and the assistant stopped.`,
    );
  return lines.join('\n');
}
