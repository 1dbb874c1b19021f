/**
 * The organization's assistants: each with its model and voice and a way to talk to it (its name opens the editor), and a new
 * one made from a name (every other setting starts at the API's default; see docs/assistants.md).
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, navigate } from '../../lib/router.js';
import { useProfile } from '../../lib/session.js';
import { Button, FormError, TextField, useSubmit } from '../../ui/form.js';
import { Empty, Loading, Page, Panel } from '../../ui/page.js';

function NewAssistant(props: { onCreated(id: number): void }) {
  const [name, setName] = useState('');
  const form = useSubmit(async () => {
    const created = await ok(api.POST('/api/v1/assistants', { body: { name } }));
    setName('');
    props.onCreated(created.id);
  });
  return (
    <form onSubmit={form.submit} noValidate aria-label="New assistant">
      <FormError error={form.error} />
      <TextField
        label="Name"
        value={name}
        onValue={setName}
        help="Every other setting starts at its default: a friendly greeting, llm_a, stt_a and tts_a."
        error={form.at('name')}
      />
      <Button type="submit" kind="primary" busy={form.busy}>
        Create the assistant
      </Button>
    </form>
  );
}

export function Assistants() {
  const profile = useProfile();
  const list = useLoad(
    () => ok(api.GET('/api/v1/assistants', { params: { query: { limit: 1000 } } })),
    [profile.organization_id],
  );
  return (
    <Page title="Assistants">
      <Panel title="Your assistants">
        <Loading loaded={list}>
          {(assistants) =>
            assistants.length === 0 ? (
              <Empty>No assistant yet: create one below, then talk to it.</Empty>
            ) : (
              <table>
                <caption class="visually-hidden">Assistants</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Model</th>
                    <th scope="col">Voice</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {assistants.map((assistant) => (
                    <tr key={assistant.id}>
                      <td>
                        <Link href={`/assistants/${assistant.id}`}>{assistant.name}</Link>
                        {assistant.is_active ? '' : ' (inactive)'}
                      </td>
                      <td>
                        {assistant.llm_provider}
                        {assistant.llm_provider_config?.model
                          ? ` · ${assistant.llm_provider_config.model}`
                          : ''}
                      </td>
                      <td>{assistant.tts_settings?.provider ?? '—'}</td>
                      <td>
                        <Link
                          href={`/assistants/${assistant.id}/talk`}
                          aria-label={`Talk to ${assistant.name}`}
                        >
                          Talk
                        </Link>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </Loading>
      </Panel>
      <Panel title="New assistant">
        <NewAssistant onCreated={(id) => navigate(`/assistants/${id}/talk`)} />
      </Panel>
    </Page>
  );
}
