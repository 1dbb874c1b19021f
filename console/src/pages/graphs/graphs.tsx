/**
 * The organization's assistant graphs (docs/graphs.md): the list (name, nodes, edges, created) and
 * creating one. A graph cannot be stored without exactly one entry node, so creating asks for the
 * assistant that answers first; the rest is drawn and edited on the graph's own page.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, navigate } from '../../lib/router.js';
import { useProfile } from '../../lib/session.js';
import { Button, FormError, SelectField, TextArea, TextField, useSubmit } from '../../ui/form.js';
import { Empty, Loading, Page, Panel, when } from '../../ui/page.js';

/** The organization's assistants (the first 1000), for the graph pages' choices of assistant. */
export function useAssistants() {
  const profile = useProfile();
  return useLoad(
    () => ok(api.GET('/api/v1/assistants', { params: { query: { limit: 1000 } } })),
    [profile.organization_id],
  );
}

function CreateGraph() {
  const assistants = useAssistants();
  const [fields, setFields] = useState({ name: '', description: '', entry: '' });
  const entry = fields.entry || String(assistants.data?.[0]?.id ?? '');
  const form = useSubmit(async () => {
    const created = await ok(
      api.POST('/api/v1/assistant-graphs', {
        body: {
          name: fields.name,
          description: fields.description.trim() || null,
          nodes: entry ? [{ assistant_id: Number(entry), node_type: 'entry' }] : [],
          edges: [],
        },
      }),
    );
    navigate(`/graphs/${created.id}`);
  });
  if (assistants.data?.length === 0)
    return (
      <Empty>
        A graph routes a conversation between assistants: <Link href="/assistants">create an assistant</Link>{' '}
        first.
      </Empty>
    );
  return (
    <form onSubmit={form.submit} noValidate aria-label="Create a graph">
      <FormError error={form.error} />
      <div class="row">
        <TextField
          label="Name"
          value={fields.name}
          onValue={(name) => setFields({ ...fields, name })}
          error={form.at('name')}
          required
        />
        <SelectField
          label="Entry assistant"
          value={entry}
          onValue={(value) => setFields({ ...fields, entry: value })}
          options={(assistants.data ?? []).map((a) => ({ value: String(a.id), label: a.name }))}
          help="Every conversation of the graph starts with this assistant."
          error={form.at('nodes.0.assistant_id') ?? form.at('nodes')}
        />
      </div>
      <TextArea
        label="Description"
        rows={2}
        value={fields.description}
        onValue={(description) => setFields({ ...fields, description })}
        error={form.at('description')}
      />
      <Button type="submit" kind="primary" busy={form.busy}>
        Create the graph
      </Button>
    </form>
  );
}

export function Graphs() {
  const profile = useProfile();
  const graphs = useLoad(
    () => ok(api.GET('/api/v1/assistant-graphs', { params: { query: { limit: 1000, active_only: false } } })),
    [profile.organization_id],
  );
  return (
    <Page title="Graphs">
      <Panel title="Your graphs">
        <Loading loaded={graphs}>
          {(list) =>
            list.length === 0 ? (
              <Empty>
                No graphs yet. A graph hands a conversation from one assistant to another when a condition
                holds — a keyword, a question answered, a time on the call. Create one below.
              </Empty>
            ) : (
              <table>
                <caption class="visually-hidden">The organization's assistant graphs</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col" class="number">
                      Nodes
                    </th>
                    <th scope="col" class="number">
                      Edges
                    </th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((graph) => (
                    <tr key={graph.id}>
                      <th scope="row">
                        <Link href={`/graphs/${graph.id}`}>{graph.name}</Link>
                        {graph.is_active ? null : <span class="tag">inactive</span>}
                        {graph.description ? <div class="muted">{graph.description}</div> : null}
                      </th>
                      <td class="number">{graph.total_nodes}</td>
                      <td class="number">{graph.total_edges}</td>
                      <td>{when(graph.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </Loading>
      </Panel>
      <Panel title="Create a graph">
        <CreateGraph key={profile.organization_id} />
      </Panel>
    </Page>
  );
}
