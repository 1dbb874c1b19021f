/**
 * A graph's own fields (PUT /api/v1/assistant-graphs/{id}: name, description, active) and deleting
 * it — refused with the API's words (409) while a phone number routes to it.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { navigate } from '../../lib/router.js';
import { Button, CheckboxField, FormError, TextArea, TextField, useSubmit } from '../../ui/form.js';
import type { Graph } from './draft.js';

export function GraphSettings(props: { graph: Graph; onSaved(graph: Graph): void }) {
  const { graph } = props;
  const [fields, setFields] = useState({
    name: graph.name,
    description: graph.description ?? '',
    is_active: graph.is_active,
  });
  const [saved, setSaved] = useState(false);
  const form = useSubmit(async () => {
    setSaved(false);
    const updated = await ok(
      api.PUT('/api/v1/assistant-graphs/{graph_id}', {
        params: { path: { graph_id: graph.id } },
        body: {
          name: fields.name,
          description: fields.description.trim() || null,
          is_active: fields.is_active,
        },
      }),
    );
    setSaved(true);
    props.onSaved(updated);
  });
  const remove = useSubmit(async () => {
    if (!confirm(`Delete the graph ${graph.name} and its recorded sessions?`)) return;
    await ok(api.DELETE('/api/v1/assistant-graphs/{graph_id}', { params: { path: { graph_id: graph.id } } }));
    navigate('/graphs');
  });
  return (
    <>
      <form onSubmit={form.submit} noValidate aria-label="The graph's name and description">
        <FormError error={form.error} />
        <TextField
          label="Graph name"
          value={fields.name}
          onValue={(name) => setFields({ ...fields, name })}
          error={form.at('name')}
        />
        <TextArea
          label="Graph description"
          rows={2}
          value={fields.description}
          onValue={(description) => setFields({ ...fields, description })}
          error={form.at('description')}
        />
        <CheckboxField
          label="Active"
          checked={fields.is_active}
          onValue={(is_active) => setFields({ ...fields, is_active })}
          help="Inactive graphs are left out of the usual list."
        />
        <Button type="submit" busy={form.busy}>
          Save name and description
        </Button>
        {saved ? <span role="status"> Saved.</span> : null}
      </form>
      <h3>Delete</h3>
      <FormError error={remove.error} />
      <Button kind="danger" busy={remove.busy} onClick={() => remove.submit()}>
        Delete this graph
      </Button>
    </>
  );
}
