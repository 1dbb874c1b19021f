/**
 * The parts of a call's page below its facts: the transcript (speaker-labelled, in spoken order), what
 * happened during the call (tool runs, graph moves, every other event), and the after-call analysis.
 */
import type { components } from '../../../../clients/typescript/src/index.js';
import { Empty, when } from '../../ui/page.js';

type Segment = components['schemas']['TranscriptSegment'];
type CallEvent = components['schemas']['CallRecordedEvent'];
type Analysis = components['schemas']['CallAnalysis'];

const SPEAKERS: Record<Segment['speaker'], string> = { user: 'Caller', assistant: 'Assistant' };

export function Transcript(props: { segments: Segment[] }) {
  if (props.segments.length === 0) return <Empty>Nothing was said on this call.</Empty>;
  return (
    <ol class="transcript call-transcript" aria-label="Transcript">
      {props.segments.map((segment, index) => (
        <li key={index} class={`line ${segment.speaker}`}>
          <span class="speaker">{SPEAKERS[segment.speaker]}:</span> {segment.text}
        </li>
      ))}
    </ol>
  );
}

const json = (value: unknown) => (value === undefined ? '—' : JSON.stringify(value));

/** One event in words: a tool run, a graph move, or its type and data as recorded. */
function EventDetail(props: { event: CallEvent }) {
  const data = props.event.data as Record<string, unknown>;
  if (props.event.type === 'call.tool')
    return (
      <>
        Tool <strong>{String(data.name ?? '?')}</strong>
        {data.ok === undefined ? null : data.ok ? (
          <span class="ok"> ✓ ok</span>
        ) : (
          <span class="bad"> ✗ failed</span>
        )}
        {typeof data.duration_ms === 'number' ? ` in ${Math.round(data.duration_ms)} ms` : ''}
        <div class="mono">arguments: {json(data.arguments ?? data.to)}</div>
        {data.result === undefined ? null : <div class="mono">result: {json(data.result)}</div>}
      </>
    );
  if (props.event.type === 'call.graph_transition')
    return (
      <>
        Graph moved from node {String(data.from_node_id ?? '?')} to node {String(data.to_node_id ?? '?')}
        {data.reason ? ` (${String(data.reason)})` : ''}
      </>
    );
  return <span class="mono">{json(data)}</span>;
}

export function Events(props: { events: CallEvent[] }) {
  if (props.events.length === 0) return <Empty>No tools ran and nothing else was recorded.</Empty>;
  return (
    <table class="call-events">
      <caption class="visually-hidden">What happened during the call, oldest first</caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Event</th>
          <th scope="col">Details</th>
        </tr>
      </thead>
      <tbody>
        {props.events.map((event) => (
          <tr key={event.id}>
            <td>{new Date(event.created_at).toLocaleTimeString()}</td>
            <td class="mono">{event.type}</td>
            <td>
              <EventDetail event={event} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function AnalysisFacts(props: { analysis: Analysis | null | undefined }) {
  const { analysis } = props;
  if (!analysis) return <Empty>The analysis is made once the call has ended.</Empty>;
  if (analysis.status !== 'completed')
    return (
      <p>
        Analysis {analysis.status}
        {analysis.error ? `: ${analysis.error}` : '.'}
      </p>
    );
  return (
    <dl class="facts">
      <dt>Summary</dt>
      <dd>{analysis.summary ?? '—'}</dd>
      <dt>Sentiment</dt>
      <dd>
        {analysis.sentiment ?? '—'}
        {typeof analysis.sentiment_score === 'number' ? ` (${analysis.sentiment_score.toFixed(2)})` : ''}
      </dd>
      {analysis.structured_data === null ? null : (
        <>
          <dt>Structured data</dt>
          <dd class="mono">
            {json(analysis.structured_data)}
            {analysis.structured_data_valid === false
              ? ` — not valid: ${analysis.structured_data_error}`
              : ''}
          </dd>
        </>
      )}
      <dt>Done</dt>
      <dd>{when(analysis.completed_at)}</dd>
    </dl>
  );
}
