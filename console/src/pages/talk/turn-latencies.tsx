/**
 * Each finished turn's latency as it arrives on the web call: how long the caller waited from the
 * end of their words to the assistant's first sound (`end_to_end_ms`), and what that wait was made
 * of — the same fields `GET /api/v1/calls/{id}/turns` gives (docs/voice.md "Measurements").
 */
import { Empty } from '../../ui/page.js';

export interface LiveTurn {
  position?: number;
  kind?: string;
  user_text?: string;
  end_to_end_ms?: number | null;
  endpointing_ms?: number | null;
  stt_delay_ms?: number | null;
  retrieval_ms?: number | null;
  llm_ttft_ms?: number | null;
  tts_ttfb_ms?: number | null;
  platform_ms?: number | null;
}

/** The stages of a turn's wait, in the order they happen. */
export const STAGES = [
  { field: 'endpointing_ms', label: 'End of speech' },
  { field: 'stt_delay_ms', label: 'Transcript' },
  { field: 'retrieval_ms', label: 'Knowledge' },
  { field: 'llm_ttft_ms', label: 'Model' },
  { field: 'tts_ttfb_ms', label: 'Voice' },
  { field: 'platform_ms', label: 'Platform' },
] as const;

const ms = (value: number | null | undefined) =>
  typeof value === 'number' ? `${Math.round(value)} ms` : '—';

export function TurnLatencies(props: { turns: LiveTurn[] }) {
  const turns = props.turns.filter((turn) => turn.kind !== 'greeting');
  if (turns.length === 0)
    return <Empty>Each turn's latency appears here as soon as the assistant starts to answer.</Empty>;
  const widest = Math.max(1, ...turns.map((turn) => turn.end_to_end_ms ?? 0));
  return (
    <table class="turn-latencies">
      <caption class="visually-hidden">Latency of each turn</caption>
      <thead>
        <tr>
          <th scope="col">Turn</th>
          <th scope="col">You said</th>
          <th scope="col" class="number">
            Waited
          </th>
          {STAGES.map((stage) => (
            <th scope="col" class="number" key={stage.field}>
              {stage.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {turns.map((turn, index) => (
          <tr key={turn.position ?? index}>
            <td>{turn.position ?? index + 1}</td>
            <td>{turn.user_text || '—'}</td>
            <td class="number">
              <span
                class="bar"
                style={{ width: `${((turn.end_to_end_ms ?? 0) / widest) * 6}rem` }}
                aria-hidden="true"
              />
              {ms(turn.end_to_end_ms)}
            </td>
            {STAGES.map((stage) => (
              <td class="number" key={stage.field}>
                {ms(turn[stage.field])}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
