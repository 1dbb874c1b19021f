/**
 * Organization settings: what is missing before the first call (the configuration status as a
 * checklist), the provider credentials (carriers, SIP trunk, vendor keys, cloud functions), the
 * policies (SMS compliance enforcement, HIPAA), and outgoing webhooks. Saving a credential reads the
 * checklist again, so it shows at once what the change made ready.
 */
import { useState } from 'preact/hooks';
import type { paths } from '../../../../clients/typescript/src/index.js';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { useProfile } from '../../lib/session.js';
import { Button, CheckboxField, FormError, useSubmit } from '../../ui/form.js';
import { Loading, Page, Panel, when } from '../../ui/page.js';
import { CREDENTIAL_KINDS, CredentialForm, type Organization, VendorKeys } from './credentials.js';
import { SipTrunkForm } from './sip-trunk.js';
import { WebhookDeliveries, WebhookSecret } from './webhooks.js';

type Readiness =
  paths['/api/v1/organization/configuration-status']['get']['responses'][200]['content']['application/json'];

const KINDS: Array<{ key: keyof Readiness['providers']; label: string }> = [
  { key: 'telephony', label: 'Telephony (a carrier account or SIP trunk)' },
  { key: 'llm', label: 'Language model' },
  { key: 'stt', label: 'Speech-to-text' },
  { key: 'tts', label: 'Text-to-speech' },
];

const SOURCES: Record<string, string> = {
  organization: 'organization key',
  fallback: 'fallback key',
  assistant: 'an assistant’s own key',
};

function Checklist(props: { status: Readiness }) {
  const { status } = props;
  return (
    <>
      <p role="status" class={status.ready ? 'ok' : 'bad'}>
        <strong>
          {status.ready
            ? '✓ Ready: calls can be made.'
            : '✗ Not ready yet: some things are missing before the first call.'}
        </strong>
      </p>
      <ul class="checklist">
        {KINDS.map(({ key, label }) => {
          const kind = status.providers[key];
          return (
            <li key={key} class={kind.ready ? 'ok' : 'bad'}>
              <span aria-hidden="true">{kind.ready ? '✓' : '✗'}</span> <strong>{label}</strong>
              {': '}
              {kind.ready ? 'ready' : 'missing'}
              {kind.usable.length > 0 ? (
                <span>
                  {' '}
                  —{' '}
                  {kind.usable
                    .map((u) => `${u.provider} (${u.sources.map((s) => SOURCES[s] ?? s).join(', ')})`)
                    .join('; ')}
                </span>
              ) : null}
              {kind.inactive.length > 0 ? (
                <ul>
                  {kind.inactive.map((i) => (
                    <li key={`${i.provider}${i.source}`}>
                      {i.provider} ({SOURCES[i.source] ?? i.source}) not used: {i.reason}
                    </li>
                  ))}
                </ul>
              ) : null}
            </li>
          );
        })}
      </ul>
      {status.missing.length > 0 ? (
        <>
          <h3>Missing</h3>
          <ul>
            {status.missing.map((m) => (
              <li key={m}>{m}</li>
            ))}
          </ul>
        </>
      ) : null}
      {status.sip_trunk ? (
        <>
          <h3>SIP trunk</h3>
          <dl class="facts">
            <dt>SIP agent</dt>
            <dd>{status.sip_trunk.agent === 'running' ? 'running' : 'off on this server'}</dd>
            <dt>Reachable</dt>
            <dd>
              {status.sip_trunk.reachable === null
                ? 'not checked yet'
                : status.sip_trunk.reachable
                  ? 'yes'
                  : 'no'}
              {status.sip_trunk.last_status ? ` (last answer ${status.sip_trunk.last_status})` : ''}
            </dd>
            <dt>Registration</dt>
            <dd>
              {status.sip_trunk.registration}
              {status.sip_trunk.registration_status ? ` (${status.sip_trunk.registration_status})` : ''}
            </dd>
            <dt>Checked</dt>
            <dd>{when(status.sip_trunk.checked_at)}</dd>
            {status.sip_trunk.detail ? (
              <>
                <dt>Problem</dt>
                <dd>{status.sip_trunk.detail}</dd>
              </>
            ) : null}
          </dl>
        </>
      ) : null}
    </>
  );
}

function Policies(props: { organization: Organization; admin: boolean; onSaved(o: Organization): void }) {
  const settings = props.organization.settings;
  const [fields, setFields] = useState({
    enforce_sms_compliance: settings.enforce_sms_compliance === true,
    hipaa_enabled: settings.hipaa_enabled === true,
    baa_signed: settings.baa_signed === true,
  });
  const [saved, setSaved] = useState(false);
  const form = useSubmit(async () => {
    setSaved(false);
    props.onSaved(await ok(api.PUT('/api/v1/organization', { body: { settings: fields } })));
    setSaved(true);
  });
  const set = (key: keyof typeof fields) => (value: boolean) => setFields((f) => ({ ...f, [key]: value }));
  return (
    <form onSubmit={form.submit} noValidate aria-label="Policies">
      <FormError error={form.error} />
      <fieldset disabled={!props.admin}>
        <legend class="visually-hidden">Policies</legend>
        <CheckboxField
          label="Send SMS only from numbers whose compliance is approved"
          checked={fields.enforce_sms_compliance}
          onValue={set('enforce_sms_compliance')}
        />
        <CheckboxField
          label="HIPAA: this organization handles health information"
          checked={fields.hipaa_enabled}
          onValue={set('hipaa_enabled')}
          help="Without a signed business associate agreement, your own vendor keys are then saved but not used."
        />
        <CheckboxField
          label="A business associate agreement is signed"
          checked={fields.baa_signed}
          onValue={set('baa_signed')}
        />
      </fieldset>
      {props.admin ? (
        <Button type="submit" kind="primary" busy={form.busy}>
          Save the policies
        </Button>
      ) : null}
      {saved ? <span role="status"> Saved.</span> : null}
    </form>
  );
}

export function Settings() {
  const profile = useProfile();
  const admin = profile.role === 'admin';
  const status = useLoad(
    () => ok(api.GET('/api/v1/organization/configuration-status')),
    [profile.organization_id],
  );
  const organization = useLoad(() => ok(api.GET('/api/v1/organization')), [profile.organization_id]);
  // The forms keep what was typed (secrets cleared) and show the stored values as read again.
  const saved = () => {
    organization.reload();
    status.reload();
  };
  return (
    <Page title="Settings">
      {admin ? null : <p class="notice">Only admins change these settings; you see what is stored.</p>}
      <Panel title="Ready for calls?">
        <Loading loaded={status}>{(data) => <Checklist status={data} />}</Loading>
      </Panel>
      <Loading loaded={organization}>
        {(org) => (
          <>
            {CREDENTIAL_KINDS.filter((k) => k.id !== 'cloud_functions').map((kind) => (
              <Panel key={kind.id} title={`${kind.title} account`}>
                <CredentialForm kind={kind} stored={org[kind.id]} admin={admin} onSaved={saved} />
              </Panel>
            ))}
            <Panel title="SIP trunk">
              <SipTrunkForm stored={org.sip_trunk_config} admin={admin} onSaved={saved} />
            </Panel>
            <Panel title="Vendor API keys">
              <p>
                The organization's keys for the language, speech-to-text and text-to-speech vendors; an
                assistant's own key wins over them.
              </p>
              <VendorKeys organization={org} admin={admin} onSaved={saved} />
            </Panel>
            {CREDENTIAL_KINDS.filter((k) => k.id === 'cloud_functions').map((kind) => (
              <Panel key={kind.id} title="Cloud functions account">
                <p>Where function tools run.</p>
                <CredentialForm kind={kind} stored={org[kind.id]} admin={admin} onSaved={saved} />
              </Panel>
            ))}
            <Panel title="Policies">
              <Policies organization={org} admin={admin} onSaved={saved} />
            </Panel>
          </>
        )}
      </Loading>
      {admin ? <WebhookSecret /> : null}
      <WebhookDeliveries admin={admin} />
    </Page>
  );
}
