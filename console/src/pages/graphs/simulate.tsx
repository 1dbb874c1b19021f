/**
 * The dry run of a graph's routing (POST …/simulate): the caller's messages, one per line, routed
 * from the entry node as a call would route them — but no language model runs, so natural-language
 * conditions take the value chosen here. The answer lists each move (turn, edge, reason, handoff
 * sentence) and hands the path to the page, which highlights it on the drawing. It runs the saved
 * graph: unsaved changes are not part of it, and the form says so.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, ok } from '../../lib/api.js';
import { Button, CheckboxField, FormError, TextArea, TextField, useSubmit } from '../../ui/form.js';
import { type Draft, edgeKey, nodeKey, type Simulation } from './draft.js';
import { type Highlight, nodeName } from './drawing.js';

/** The path of a simulation as the drawing's keys. */
export function highlightOf(result: Simulation): Highlight {
  return {
    nodes: new Set(result.path_taken.map((step) => nodeKey(step.node_id))),
    edges: new Set(result.transitions.map((move) => edgeKey(move.edge_id))),
  };
}

function readContext(text: string): Record<string, unknown> | undefined {
  if (text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ApiError(400, 'Starting context: not a JSON object', [
      { path: ['context'], message: 'A JSON object, like {"customer": {"tier": "gold"}}' },
    ]);
  return parsed as Record<string, unknown>;
}

export function SimulatePanel(props: {
  graphId: number;
  draft: Draft;
  names: Map<number, string>;
  unsaved: boolean;
  onResult(result: Simulation | undefined): void;
}) {
  const [fields, setFields] = useState({ messages: '', natural: false, seconds: '', context: '' });
  const [result, setResult] = useState<Simulation | undefined>();
  const form = useSubmit(async () => {
    const seconds = fields.seconds.trim() === '' ? undefined : Number(fields.seconds);
    const answer = await ok(
      api.POST('/api/v1/assistant-graphs/{graph_id}/simulate', {
        params: { path: { graph_id: props.graphId } },
        body: {
          utterances: fields.messages.split('\n').filter((line) => line.trim() !== ''),
          assume_natural_language: fields.natural,
          context: readContext(fields.context),
          ...(seconds === undefined ? {} : { call_duration_per_turn: seconds }),
        },
      }),
    );
    setResult(answer);
    props.onResult(answer);
  });
  const name = (id: number) => nodeName(props.draft, nodeKey(id), props.names);
  return (
    <>
      <form onSubmit={form.submit} noValidate aria-label="Simulate a conversation">
        <FormError error={form.error} />
        {props.unsaved ? (
          <p class="notice" role="status">
            The simulation runs the saved graph: save your changes first to include them.
          </p>
        ) : null}
        <TextArea
          label="Caller's messages (one per line)"
          rows={4}
          value={fields.messages}
          onValue={(messages) => setFields({ ...fields, messages })}
          help="Each line is one thing the caller says, routed in order from the entry node."
          error={form.at('utterances')}
        />
        <div class="row">
          <CheckboxField
            label="Natural-language conditions hold"
            checked={fields.natural}
            onValue={(natural) => setFields({ ...fields, natural })}
            help="No language model runs in a simulation: this is their answer."
          />
          <TextField
            label="Seconds per turn"
            type="number"
            min={0}
            value={fields.seconds}
            onValue={(seconds) => setFields({ ...fields, seconds })}
            help="How far the call's clock moves each turn (empty: the default)."
            error={form.at('call_duration_per_turn')}
          />
        </div>
        <TextArea
          label="Starting context (JSON)"
          rows={2}
          value={fields.context}
          onValue={(context) => setFields({ ...fields, context })}
          error={form.at('context')}
        />
        <Button type="submit" kind="primary" busy={form.busy}>
          Run the simulation
        </Button>
        {result ? (
          <Button
            onClick={() => {
              setResult(undefined);
              props.onResult(undefined);
            }}
          >
            Clear the path
          </Button>
        ) : null}
      </form>
      {result ? (
        <div class="graph-simulation" aria-live="polite">
          <h3>Path</h3>
          <p>
            {result.path_taken.map((step) => name(step.node_id)).join(' → ')}. {result.turns_processed}{' '}
            message{result.turns_processed === 1 ? '' : 's'} routed;{' '}
            {result.ended === 'exit'
              ? 'the conversation ended at an exit node.'
              : result.ended === 'escalation'
                ? `the call is transferred to ${result.transfer_number ?? 'the escalation number'}.`
                : `it is still at ${name(result.final_node_id)}.`}
          </p>
          {result.transitions.length === 0 ? (
            <p>No edge fired: the conversation stayed at the entry node.</p>
          ) : (
            <ol class="graph-steps">
              {result.transitions.map((move) => (
                <li key={`${move.turn}-${move.edge_id}`}>
                  Turn {move.turn}, “{move.utterance}”: {name(move.from_node_id)} → {name(move.to_node_id)} by
                  edge {props.draft.edges.findIndex((e) => e.key === edgeKey(move.edge_id))}, because{' '}
                  {move.reason}
                  {move.handoff_sentence ? <> — says “{move.handoff_sentence}”</> : null} (at{' '}
                  {move.call_duration} s)
                </li>
              ))}
            </ol>
          )}
          <h3>Final context</h3>
          <pre class="mono">{JSON.stringify(result.final_context, null, 2)}</pre>
        </div>
      ) : null}
    </>
  );
}
