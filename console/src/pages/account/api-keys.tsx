/**
 * The user's API keys in this organization: the list (prefix, permissions, use), a new key — shown
 * once, with a copy button, never again — and revoking one. Creating keys needs a confirmed email.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { useProfile } from '../../lib/session.js';
import { Button, FormError, SelectField, TextField, useSubmit } from '../../ui/form.js';
import { Empty, Loading, Page, Panel, when } from '../../ui/page.js';

/** The permission areas of a key, as the API names them. */
const AREAS = ['assistants', 'calls', 'campaigns', 'graphs', 'sms', 'phone_numbers', 'organization'] as const;
type Area = (typeof AREAS)[number];
type Level = 'none' | 'read' | 'read_write';

const LEVELS = [
  { value: 'none', label: 'No access' },
  { value: 'read', label: 'Read' },
  { value: 'read_write', label: 'Read and write' },
];

function Created(props: { secret: string; onDone(): void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="secret-once" role="status">
      <p>
        <strong>Your new key.</strong> Copy it now: it is shown only once.
      </p>
      <code class="secret">{props.secret}</code>
      <div class="actions">
        <Button
          onClick={async () => {
            await navigator.clipboard.writeText(props.secret).then(
              () => setCopied(true),
              () => setCopied(false),
            );
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </Button>
        <Button onClick={props.onDone}>Done</Button>
      </div>
    </div>
  );
}

function NewKey(props: { onCreated(): void }) {
  const [name, setName] = useState('');
  const [rateLimit, setRateLimit] = useState('');
  const [levels, setLevels] = useState<Record<Area, Level>>(
    () => Object.fromEntries(AREAS.map((area) => [area, 'read'])) as Record<Area, Level>,
  );
  const [secret, setSecret] = useState<string | undefined>();
  const form = useSubmit(async () => {
    const permissions = Object.fromEntries(
      AREAS.filter((a) => levels[a] !== 'none').map((a) => [a, levels[a]]),
    );
    const created = await ok(
      api.POST('/api/v1/users/me/api-keys', {
        body: { name, permissions, rate_limit: rateLimit.trim() ? Number(rateLimit) : null },
      }),
    );
    setSecret(created.key);
    setName('');
    props.onCreated();
  });
  if (secret) return <Created secret={secret} onDone={() => setSecret(undefined)} />;
  return (
    <form onSubmit={form.submit} noValidate aria-label="Create an API key">
      <FormError error={form.error} />
      <div class="row">
        <TextField label="Name" value={name} onValue={setName} error={form.at('name')} />
        <TextField
          label="Requests per minute"
          inputMode="numeric"
          value={rateLimit}
          onValue={setRateLimit}
          help="Empty: the platform's default limit."
          error={form.at('rate_limit')}
        />
      </div>
      <fieldset>
        <legend>Permissions</legend>
        <div class="grid">
          {AREAS.map((area) => (
            <SelectField
              key={area}
              label={area.replace('_', ' ')}
              value={levels[area]}
              onValue={(level) => setLevels((l) => ({ ...l, [area]: level as Level }))}
              options={LEVELS}
              error={form.at(`permissions.${area}`)}
            />
          ))}
        </div>
      </fieldset>
      <Button type="submit" kind="primary" busy={form.busy}>
        Create the key
      </Button>
    </form>
  );
}

export function ApiKeys() {
  const profile = useProfile();
  const keys = useLoad(() => ok(api.GET('/api/v1/users/me/api-keys')), [profile.organization_id]);
  const [revokeError, setRevokeError] = useState<Error | undefined>();
  return (
    <Page title="API keys">
      <Panel title="Your keys">
        <FormError error={revokeError} />
        <Loading loaded={keys}>
          {(list) =>
            list.length === 0 ? (
              <Empty>
                No keys yet. A key lets a program use the API as you, within the permissions you give it.
              </Empty>
            ) : (
              <table>
                <caption class="visually-hidden">Your API keys</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Key</th>
                    <th scope="col">Permissions</th>
                    <th scope="col">Last used</th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((key) => (
                    <tr key={key.id}>
                      <td>{key.name}</td>
                      <td>
                        <code>{key.key_prefix}…</code>
                      </td>
                      <td>
                        {Object.entries(key.permissions)
                          .map(
                            ([area, level]) =>
                              `${area.replace('_', ' ')}: ${level === 'read_write' ? 'write' : 'read'}`,
                          )
                          .join(', ') || 'none'}
                      </td>
                      <td>{key.last_used_at ? `${when(key.last_used_at)} (${key.usage_count})` : 'never'}</td>
                      <td>
                        <Button
                          kind="danger"
                          aria-label={`Revoke ${key.name}`}
                          onClick={async () => {
                            if (
                              !confirm(
                                `Revoke the key “${key.name}”? Programs using it stop working at once.`,
                              )
                            )
                              return;
                            setRevokeError(undefined);
                            await ok(
                              api.DELETE('/api/v1/users/me/api-keys/{key_id}', {
                                params: { path: { key_id: key.id } },
                              }),
                            ).then(keys.reload, setRevokeError);
                          }}
                        >
                          Revoke
                        </Button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </Loading>
      </Panel>
      <Panel title="New key">
        <NewKey onCreated={keys.reload} />
      </Panel>
    </Page>
  );
}
