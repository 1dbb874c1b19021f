/**
 * One graph (`/graphs/:id`): its drawing with the lists that say the same in words, the side form
 * of the node or edge picked, adding and removing them, and "Save structure", which sends the whole
 * structure at once (PUT …/structure) — a refusal is listed at the top naming the node or edge, and
 * shown at the field when that item is open. Below: the simulation, whose path lights up on the
 * drawing, and the analytics. Another organization's graph is "not found", as the API says.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, type RouteParams } from '../../lib/router.js';
import { Button, useSubmit } from '../../ui/form.js';
import { Loading, Page, Panel } from '../../ui/page.js';
import { AnalyticsPanel, countsOf } from './analytics.js';
import {
  type Draft,
  type DraftEdge,
  type DraftNode,
  draftOf,
  type Graph,
  newKey,
  placeProblem,
  structureBody,
} from './draft.js';
import { Drawing, type Highlight, NO_HIGHLIGHT, nodeName, type Selection } from './drawing.js';
import { EdgeForm, NodeForm } from './editor.js';
import { useAssistants } from './graphs.js';
import { EdgeList, NodeList, Problems } from './lists.js';
import { GraphSettings } from './settings.js';
import { highlightOf, SimulatePanel } from './simulate.js';

const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

function newNode(draft: Draft, assistantId: number): DraftNode {
  return {
    key: newKey('n'),
    id: null,
    assistant_id: assistantId,
    node_type: draft.nodes.some((n) => n.node_type === 'entry') ? 'standard' : 'entry',
    position: { x: 0, y: 0 },
    configuration: {},
  };
}

function newEdge(draft: Draft, selected: Selection): DraftEdge {
  const from =
    (selected?.kind === 'node' ? selected.key : undefined) ??
    draft.nodes.find((n) => n.node_type === 'entry')?.key ??
    draft.nodes[0]!.key;
  const to = draft.nodes.find((n) => n.key !== from)?.key ?? from;
  return {
    key: newKey('e'),
    id: null,
    from,
    to,
    condition_type: 'intent',
    intent_pattern: '',
    natural_language_trigger: '',
    mathematical_expression: '',
    state_variable_condition: '',
    condition_logic: 'AND',
    priority: 0,
    is_active: true,
    handoff_sentence: '',
    description: '',
  };
}

function Workspace(props: { graph: Graph; onSaved(graph: Graph): void }) {
  const [saved, setSaved] = useState(props.graph);
  const [draft, setDraft] = useState(() => draftOf(props.graph));
  const [sent, setSent] = useState(draft);
  const [selected, setSelected] = useState<Selection>(null);
  const [highlight, setHighlight] = useState<Highlight>(NO_HIGHLIGHT);
  const [notice, setNotice] = useState<string | undefined>();
  const [days, setDays] = useState(30);
  const assistants = useAssistants();
  const analytics = useLoad(
    () =>
      ok(
        api.GET('/api/v1/assistant-graphs/{graph_id}/analytics', {
          params: { path: { graph_id: saved.id }, query: { days } },
        }),
      ),
    [saved.id, days, saved.updated_at],
  );
  const names = new Map<number, string>(saved.nodes.map((n) => [n.assistant_id, n.assistant_name]));
  for (const a of assistants.data ?? []) names.set(a.id, a.name);
  const assistantOptions = (assistants.data ?? []).map((a) => ({ value: String(a.id), label: a.name }));
  const unsaved = JSON.stringify(structureBody(draft)) !== JSON.stringify(structureBody(draftOf(saved)));

  const save = useSubmit(async () => {
    setNotice(undefined);
    setSent(draft);
    const updated = await ok(
      api.PUT('/api/v1/assistant-graphs/{graph_id}/structure', {
        params: { path: { graph_id: saved.id } },
        body: structureBody(draft),
      }),
    );
    // Stored ids are new after every save: the draft, the selection and the path start again.
    setSaved(updated);
    setDraft(draftOf(updated));
    setSelected(null);
    setHighlight(NO_HIGHLIGHT);
    setNotice(`Saved: ${count(updated.total_nodes, 'node')}, ${count(updated.total_edges, 'edge')}.`);
    props.onSaved(updated);
  });
  const problems =
    save.error instanceof ApiError ? save.error.problems.map((p) => placeProblem(sent, p)) : [];
  const errorAt = (key: string) => (field: string) =>
    problems.find((p) => p.key === key && p.field === field)?.message;

  const select = (selection: Selection) => {
    setSelected(selection);
    // On a narrow screen the form is below the drawing: bring it into view.
    requestAnimationFrame(() => document.getElementById('graph-side')?.scrollIntoView({ block: 'nearest' }));
  };
  const change = (next: Draft) => {
    setDraft(next);
    setNotice(undefined);
  };
  const node = selected?.kind === 'node' ? draft.nodes.find((n) => n.key === selected.key) : undefined;
  const edge = selected?.kind === 'edge' ? draft.edges.find((e) => e.key === selected.key) : undefined;
  const nodeOptions = draft.nodes.map((n) => ({ value: n.key, label: nodeName(draft, n.key, names) }));
  const firstAssistant = assistants.data?.[0]?.id;

  return (
    <>
      <Panel title="Structure">
        <div class="actions graph-toolbar">
          <Button
            disabled={firstAssistant === undefined}
            onClick={() => {
              const added = newNode(draft, firstAssistant!);
              change({ ...draft, nodes: [...draft.nodes, added] });
              select({ kind: 'node', key: added.key });
            }}
          >
            Add a node
          </Button>
          <Button
            disabled={draft.nodes.length === 0}
            onClick={() => {
              const added = newEdge(draft, selected);
              change({ ...draft, edges: [...draft.edges, added] });
              select({ kind: 'edge', key: added.key });
            }}
          >
            Add an edge
          </Button>
          <Button kind="primary" busy={save.busy} onClick={() => save.submit()}>
            Save structure
          </Button>
          <Button
            disabled={!unsaved}
            onClick={() => {
              change(draftOf(saved));
              setSelected(null);
              save.setError(undefined);
            }}
          >
            Discard changes
          </Button>
          {unsaved ? <span class="tag">unsaved changes</span> : null}
        </div>
        {notice ? <p role="status">{notice}</p> : null}
        {save.error && problems.length === 0 ? (
          <div class="form-error" role="alert">
            {save.error.message}
          </div>
        ) : null}
        <Problems problems={problems} draft={sent} names={names} onSelect={select} />
        <div class="graph-workspace">
          <div class="graph-main">
            <Drawing
              draft={draft}
              names={names}
              selected={selected}
              onSelect={select}
              highlight={highlight}
              counts={countsOf(analytics.data)}
              title={`The graph ${saved.name}: ${count(draft.nodes.length, 'node')}, ${count(draft.edges.length, 'edge')} (listed below)`}
            />
            <NodeList
              draft={draft}
              names={names}
              highlight={highlight}
              counts={countsOf(analytics.data)}
              onSelect={select}
            />
            <EdgeList draft={draft} names={names} highlight={highlight} onSelect={select} />
          </div>
          <aside id="graph-side" class="graph-side" aria-label="The node or edge picked">
            {node ? (
              <NodeForm
                key={node.key}
                node={node}
                index={draft.nodes.indexOf(node)}
                assistants={assistantOptions}
                onChange={(changed) =>
                  change({ ...draft, nodes: draft.nodes.map((n) => (n.key === changed.key ? changed : n)) })
                }
                onRemove={() => {
                  const dropped = draft.edges.filter((e) => e.from === node.key || e.to === node.key);
                  change({
                    nodes: draft.nodes.filter((n) => n !== node),
                    edges: draft.edges.filter((e) => !dropped.includes(e)),
                  });
                  setSelected(null);
                  if (dropped.length > 0)
                    setNotice(
                      `The node and its ${dropped.length} edge${dropped.length === 1 ? '' : 's'} are removed.`,
                    );
                }}
                errorAt={errorAt(node.key)}
              />
            ) : edge ? (
              <EdgeForm
                key={edge.key}
                edge={edge}
                index={draft.edges.indexOf(edge)}
                nodes={nodeOptions}
                onChange={(changed) =>
                  change({ ...draft, edges: draft.edges.map((e) => (e.key === changed.key ? changed : e)) })
                }
                onRemove={() => {
                  change({ ...draft, edges: draft.edges.filter((e) => e !== edge) });
                  setSelected(null);
                }}
                errorAt={errorAt(edge.key)}
              />
            ) : (
              <p class="muted">
                Pick a node or an edge — on the drawing or in the lists — to change it here. Changes are kept
                until you save the structure.
              </p>
            )}
          </aside>
        </div>
      </Panel>
      <Panel title="Simulate a conversation">
        <SimulatePanel
          graphId={saved.id}
          draft={draftOf(saved)}
          names={names}
          unsaved={unsaved}
          onResult={(result) => setHighlight(result ? highlightOf(result) : NO_HIGHLIGHT)}
        />
      </Panel>
      <Panel title="Analytics">
        <AnalyticsPanel loaded={analytics} days={days} onDays={setDays} />
      </Panel>
      <Panel title="About this graph">
        <GraphSettings
          graph={saved}
          onSaved={(updated) => {
            setSaved(updated);
            props.onSaved(updated);
          }}
        />
      </Panel>
    </>
  );
}

export function GraphPage(props: { params: RouteParams }) {
  const id = Number(props.params.id);
  const loaded = useLoad(
    () => ok(api.GET('/api/v1/assistant-graphs/{graph_id}', { params: { path: { graph_id: id } } })),
    [id],
  );
  const [name, setName] = useState<string | undefined>();
  return (
    <Page title={name ?? loaded.data?.name ?? 'Graph'}>
      <p>
        <Link href="/graphs">← All graphs</Link>
      </p>
      <Loading loaded={loaded}>
        {(graph) => <Workspace key={graph.id} graph={graph} onSaved={(updated) => setName(updated.name)} />}
      </Loading>
    </Page>
  );
}
