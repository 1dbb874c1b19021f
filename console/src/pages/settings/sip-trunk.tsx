/**
 * The organization's own SIP trunk (`sip_trunk_config`): where it is, how to reach it, the digest
 * credentials (the password write-only, and bound to the domain: the API asks for it again when the
 * domain changes), and who may call in through it.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import {
  Button,
  CheckboxField,
  FormError,
  SelectField,
  TextArea,
  TextField,
  useSubmit,
} from '../../ui/form.js';
import type { Organization, OrganizationUpdate } from './credentials.js';
import { SecretField, secretBody } from './secret-field.js';

type Transport = 'udp' | 'tcp' | 'tls';

export function SipTrunkForm(props: {
  stored: Record<string, unknown> | null;
  admin: boolean;
  onSaved(organization: Organization): void;
}) {
  const stored = props.stored ?? {};
  const text = (key: string) => (typeof stored[key] === 'string' ? (stored[key] as string) : '');
  const [fields, setFields] = useState({
    sip_domain: text('sip_domain'),
    port: stored.port === undefined ? '' : String(stored.port),
    transport: (text('transport') || 'udp') as Transport,
    username: text('username'),
    password: '',
    inbound_enabled: stored.inbound_enabled === true,
    register: stored.register === true,
    inbound_addresses: Array.isArray(stored.inbound_addresses) ? stored.inbound_addresses.join('\n') : '',
  });
  const set =
    <K extends keyof typeof fields>(key: K) =>
    (value: (typeof fields)[K]) =>
      setFields((f) => ({ ...f, [key]: value }));
  const [saved, setSaved] = useState<string | undefined>();
  const put = async (config: OrganizationUpdate['sip_trunk_config'], said: string) => {
    setSaved(undefined);
    props.onSaved(await ok(api.PUT('/api/v1/organization', { body: { sip_trunk_config: config } })));
    setFields((f) => ({ ...f, password: '' }));
    setSaved(said);
  };
  const form = useSubmit(() => {
    const password = secretBody(fields.password, text('password') || undefined);
    const addresses = fields.inbound_addresses
      .split(/[\s,]+/)
      .map((a) => a.trim())
      .filter(Boolean);
    return put(
      {
        sip_domain: fields.sip_domain.trim(),
        transport: fields.transport,
        inbound_enabled: fields.inbound_enabled,
        register: fields.register,
        inbound_addresses: addresses,
        ...(fields.port.trim() ? { port: Number(fields.port) } : {}),
        ...(fields.username.trim() ? { username: fields.username.trim() } : {}),
        ...(password ? { password } : {}),
      },
      'Saved.',
    );
  });
  const remove = useSubmit(() => put(null, 'Removed.'));
  if (!props.admin)
    return (
      <dl class="facts">
        <dt>Domain</dt>
        <dd>{text('sip_domain') || '—'}</dd>
        <dt>Username</dt>
        <dd>{text('username') || '—'}</dd>
        <dt>Password</dt>
        <dd>{text('password') || '—'}</dd>
      </dl>
    );
  return (
    <form onSubmit={form.submit} noValidate aria-label="SIP trunk">
      <FormError error={form.error ?? remove.error} />
      <div class="row">
        <TextField
          label="SIP domain"
          value={fields.sip_domain}
          onValue={set('sip_domain')}
          help="The trunk's host name or address."
          error={form.at('sip_trunk_config.sip_domain')}
        />
        <TextField
          label="Port"
          inputMode="numeric"
          value={fields.port}
          onValue={set('port')}
          help="Empty: 5060 (5061 over TLS)."
          error={form.at('sip_trunk_config.port')}
        />
        <SelectField
          label="Transport"
          value={fields.transport}
          onValue={(value) => set('transport')(value as Transport)}
          options={[
            { value: 'udp', label: 'UDP' },
            { value: 'tcp', label: 'TCP' },
            { value: 'tls', label: 'TLS' },
          ]}
          error={form.at('sip_trunk_config.transport')}
        />
      </div>
      <div class="row">
        <TextField
          label="Username"
          autoComplete="off"
          value={fields.username}
          onValue={set('username')}
          error={form.at('sip_trunk_config.username')}
        />
        <SecretField
          label="Password"
          stored={text('password') || undefined}
          value={fields.password}
          onValue={set('password')}
          help="Sent only to this domain: type it again when the domain changes."
          error={form.at('sip_trunk_config.password')}
        />
      </div>
      <CheckboxField
        label="Answer calls coming in through the trunk"
        checked={fields.inbound_enabled}
        onValue={set('inbound_enabled')}
      />
      <CheckboxField
        label="Register with the trunk (needs the username and password)"
        checked={fields.register}
        onValue={set('register')}
      />
      <TextArea
        label="Addresses calls may come in from"
        value={fields.inbound_addresses}
        onValue={set('inbound_addresses')}
        rows={2}
        help="IPv4/IPv6 addresses or CIDR blocks, one per line. None: the addresses the domain resolves to."
        error={form.at('sip_trunk_config.inbound_addresses')}
      />
      <div class="actions">
        <Button type="submit" kind="primary" busy={form.busy}>
          Save the SIP trunk
        </Button>
        {props.stored ? (
          <Button
            kind="danger"
            busy={remove.busy}
            onClick={() => {
              if (confirm('Remove the SIP trunk? Its numbers can no longer call.')) void remove.submit();
            }}
          >
            Remove
          </Button>
        ) : null}
        {saved ? <span role="status">{saved}</span> : null}
      </div>
    </form>
  );
}
