/**
 * The organization's provider credentials, one form each so that a save changes only its part
 * (`PUT /api/v1/organization` with that one key): each carrier account, with a check of the saved
 * credentials against the carrier; the cloud account of function tools; the vendor API keys.
 * Identifiers are shown in clear, secrets masked (secret-field.tsx). Admins change them; members see
 * what is stored.
 */
import { useState } from 'preact/hooks';
import type { components, paths } from '../../../../clients/typescript/src/index.js';
import { api, ok } from '../../lib/api.js';
import { Button, FormError, TextField, useSubmit } from '../../ui/form.js';
import { SecretField, secretBody } from './secret-field.js';

export type Organization = components['schemas']['Organization'];
export type OrganizationUpdate =
  paths['/api/v1/organization']['put']['requestBody']['content']['application/json'];

interface CredentialField {
  name: string;
  label: string;
  secret?: boolean;
  optional?: boolean;
  multiline?: boolean;
  help?: string;
}

interface CredentialKind {
  id: 'carrier_a' | 'carrier_b' | 'carrier_c' | 'cloud_functions';
  title: string;
  fields: CredentialField[];
}

export const CREDENTIAL_KINDS: CredentialKind[] = [
  {
    id: 'carrier_a',
    title: 'Carrier A',
    fields: [
      { name: 'account_sid', label: 'Account SID' },
      { name: 'auth_token', label: 'Auth token', secret: true, help: 'Also verifies its webhooks.' },
    ],
  },
  {
    id: 'carrier_b',
    title: 'Carrier B',
    fields: [
      { name: 'api_key', label: 'API key', secret: true },
      { name: 'connection_id', label: 'Connection id' },
      {
        name: 'public_key',
        label: 'Webhook public key',
        optional: true,
        help: 'The account’s Ed25519 key; without it the carrier’s webhooks are refused.',
      },
    ],
  },
  {
    id: 'carrier_c',
    title: 'Carrier C',
    fields: [
      { name: 'application_id', label: 'Application id' },
      { name: 'private_key', label: 'Private key (PEM)', secret: true, multiline: true },
      {
        name: 'signature_secret',
        label: 'Signature secret',
        secret: true,
        optional: true,
        help: 'Without it the carrier’s webhooks are refused.',
      },
    ],
  },
  {
    id: 'cloud_functions',
    title: 'Cloud functions',
    fields: [
      { name: 'access_key', label: 'Access key' },
      { name: 'secret_key', label: 'Secret key', secret: true },
      {
        name: 'region',
        label: 'Region',
        optional: true,
        help: 'Where function tools run; us-east-1 when empty.',
      },
    ],
  },
];

function CheckCarrier(props: { id: 'carrier_a' | 'carrier_b' | 'carrier_c' }) {
  const [result, setResult] = useState<
    { valid: boolean; detail: string; account: string | null } | undefined
  >();
  const check = useSubmit(async () => {
    setResult(undefined);
    setResult(
      await ok(
        api.POST('/api/v1/organization/{carrier}/validate', { params: { path: { carrier: props.id } } }),
      ),
    );
  });
  return (
    <div class="check">
      <Button busy={check.busy} onClick={() => void check.submit()}>
        Check the saved credentials
      </Button>
      <FormError error={check.error} />
      {result ? (
        <p role="status" class={result.valid ? 'ok' : 'bad'}>
          {result.valid ? '✓ Accepted' : '✗ Refused'}: {result.detail}
          {result.account ? ` (account: ${result.account})` : ''}
        </p>
      ) : null}
    </div>
  );
}

export function CredentialForm(props: {
  kind: CredentialKind;
  stored: Record<string, string> | null;
  admin: boolean;
  onSaved(organization: Organization): void;
}) {
  const { kind, stored, admin } = props;
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(kind.fields.map((f) => [f.name, f.secret ? '' : (stored?.[f.name] ?? '')])),
  );
  const [saved, setSaved] = useState<string | undefined>();
  const save = async (credential: Record<string, string> | null, said: string) => {
    setSaved(undefined);
    const body = { [kind.id]: credential } as OrganizationUpdate;
    props.onSaved(await ok(api.PUT('/api/v1/organization', { body })));
    // Typed secrets are not kept on the page; after a removal nothing is.
    setValues((v) =>
      Object.fromEntries(
        kind.fields.map((f) => [f.name, credential === null || f.secret ? '' : (v[f.name] ?? '')]),
      ),
    );
    setSaved(said);
  };
  const form = useSubmit(() => {
    const credential: Record<string, string> = {};
    for (const field of kind.fields) {
      const value = field.secret
        ? secretBody(values[field.name] ?? '', stored?.[field.name])
        : values[field.name];
      if (value !== undefined && (value.trim() !== '' || !field.optional))
        credential[field.name] = value ?? '';
    }
    return save(credential, 'Saved.');
  });
  const remove = useSubmit(() => save(null, 'Removed.'));
  if (!admin)
    return (
      <dl class="facts">
        {kind.fields.map((f) => [
          <dt key={`t${f.name}`}>{f.label}</dt>,
          <dd key={`d${f.name}`}>{stored?.[f.name] ?? '—'}</dd>,
        ])}
      </dl>
    );
  return (
    <form onSubmit={form.submit} noValidate aria-label={`${kind.title} credentials`}>
      <FormError error={form.error ?? remove.error} />
      <div class="row">
        {kind.fields.map((field) =>
          field.secret ? (
            <SecretField
              key={field.name}
              label={field.label}
              stored={stored?.[field.name]}
              value={values[field.name] ?? ''}
              onValue={(value) => setValues((v) => ({ ...v, [field.name]: value }))}
              help={field.help}
              multiline={field.multiline}
              error={form.at(`${kind.id}.${field.name}`)}
            />
          ) : (
            <TextField
              key={field.name}
              label={field.label}
              autoComplete="off"
              value={values[field.name] ?? ''}
              onValue={(value) => setValues((v) => ({ ...v, [field.name]: value }))}
              help={field.help}
              error={form.at(`${kind.id}.${field.name}`)}
            />
          ),
        )}
      </div>
      <div class="actions">
        <Button type="submit" kind="primary" busy={form.busy}>
          Save {kind.title}
        </Button>
        {stored ? (
          <Button
            kind="danger"
            busy={remove.busy}
            onClick={() => {
              if (confirm(`Remove the ${kind.title} credentials? Calls and messages through it stop.`))
                void remove.submit();
            }}
          >
            Remove
          </Button>
        ) : null}
        {saved ? <span role="status">{saved}</span> : null}
      </div>
      {stored && kind.id !== 'cloud_functions' ? <CheckCarrier id={kind.id} /> : null}
    </form>
  );
}

/** Vendor ids as the API names them, with what they are. */
export const VENDORS: Array<{ id: string; label: string }> = [
  ...['a', 'b', 'c', 'd', 'e'].map((x) => ({ id: `llm_${x}`, label: `Language model ${x.toUpperCase()}` })),
  { id: 'stt_a', label: 'Speech-to-text A' },
  ...['a', 'b', 'c', 'd'].map((x) => ({ id: `tts_${x}`, label: `Text-to-speech ${x.toUpperCase()}` })),
];

export function VendorKeys(props: {
  organization: Organization;
  admin: boolean;
  onSaved(o: Organization): void;
}) {
  const stored = props.organization.api_keys;
  const [typed, setTyped] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState<string | undefined>();
  const put = async (apiKeys: Record<string, { api_key: string } | null>, said: string) => {
    setSaved(undefined);
    const body = { api_keys: apiKeys } as OrganizationUpdate;
    props.onSaved(await ok(api.PUT('/api/v1/organization', { body })));
    setTyped({});
    setSaved(said);
  };
  const form = useSubmit(() => {
    // Only the keys typed are sent: the others stay as they are.
    const changes = Object.fromEntries(
      Object.entries(typed)
        .filter(([, value]) => value.trim() !== '')
        .map(([id, value]) => [id, { api_key: value.trim() }]),
    );
    return put(changes, Object.keys(changes).length > 0 ? 'Saved.' : 'Nothing typed: nothing changed.');
  });
  const [removeError, setRemoveError] = useState<Error | undefined>();
  const remove = async (id: string) => {
    setRemoveError(undefined);
    await put({ [id]: null }, 'Removed.').catch(setRemoveError);
  };
  const inactive = new Map(props.organization.inactive_keys.map((k) => [k.provider, k.reason]));
  return (
    <form onSubmit={form.submit} noValidate aria-label="Vendor API keys">
      <FormError error={form.error ?? removeError} />
      <div class="grid">
        {VENDORS.map((vendor) => (
          <div key={vendor.id} class="vendor-key">
            {props.admin ? (
              <SecretField
                label={`${vendor.label} (${vendor.id})`}
                stored={stored[vendor.id]?.api_key}
                value={typed[vendor.id] ?? ''}
                onValue={(value) => setTyped((t) => ({ ...t, [vendor.id]: value }))}
                error={form.at(`api_keys.${vendor.id}.api_key`) ?? form.at(`api_keys.${vendor.id}`)}
              />
            ) : (
              <p>
                {vendor.label}: {stored[vendor.id]?.api_key ?? 'not saved'}
              </p>
            )}
            {inactive.has(vendor.id) ? <p class="field-error">Not used: {inactive.get(vendor.id)}</p> : null}
            {props.admin && stored[vendor.id] ? (
              <Button
                kind="danger"
                aria-label={`Remove the ${vendor.label} key`}
                onClick={() => void remove(vendor.id)}
              >
                Remove
              </Button>
            ) : null}
          </div>
        ))}
      </div>
      {props.admin ? (
        <div class="actions">
          <Button type="submit" kind="primary" busy={form.busy}>
            Save the keys
          </Button>
          {saved ? <span role="status">{saved}</span> : null}
        </div>
      ) : null}
    </form>
  );
}
