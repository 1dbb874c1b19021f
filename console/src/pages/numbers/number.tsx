/**
 * One phone number: its label, carrier, routing (an assistant or a graph) and SMS rate, changed with
 * one save (the PUT names both routing fields, so routing to one ends the other); its SMS compliance
 * status with a way to the compliance page; deleting it.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, navigate, type RouteParams } from '../../lib/router.js';
import { Button, FormError, useSubmit } from '../../ui/form.js';
import { Loading, Page, Panel, when } from '../../ui/page.js';
import { NumberFields } from './fields.js';
import { type PhoneNumber, providerLabel, rateBody, routingBody, routingOf } from './routing.js';

function EditNumber(props: { number: PhoneNumber; onSaved(number: PhoneNumber): void }) {
  const { number } = props;
  const [fields, setFields] = useState({
    phone_number: number.phone_number,
    provider: number.provider,
    friendly_name: number.friendly_name ?? '',
    routing: routingOf(number),
    rate: String(number.sms_rate_per_second),
  });
  const [saved, setSaved] = useState(false);
  const form = useSubmit(async () => {
    setSaved(false);
    const updated = await ok(
      api.PUT('/api/v1/phone-numbers/{phone_number_id}', {
        params: { path: { phone_number_id: number.id } },
        body: {
          phone_number: fields.phone_number,
          provider: fields.provider,
          friendly_name: fields.friendly_name.trim() || null,
          ...routingBody(fields.routing),
          sms_rate_per_second: rateBody(fields.rate),
        },
      }),
    );
    setSaved(true);
    props.onSaved(updated);
  });
  return (
    <form onSubmit={form.submit} noValidate aria-label="Edit the number">
      <FormError error={form.error} />
      <NumberFields fields={fields} setFields={setFields} at={form.at} />
      <Button type="submit" kind="primary" busy={form.busy}>
        Save
      </Button>
      {saved ? <span role="status"> Saved.</span> : null}
    </form>
  );
}

/** The compliance summary is a JWT-only route: the summary lives on the compliance page instead. */
function ComplianceLink(props: { id: number }) {
  return (
    <p>
      Before sending SMS, carriers want to know who sends what:{' '}
      <Link href={`/compliance?number=${props.id}`}>see or submit this number's SMS compliance</Link>.
    </p>
  );
}

export function NumberPage(props: { params: RouteParams }) {
  const id = Number(props.params.id);
  const loaded = useLoad(
    () =>
      ok(api.GET('/api/v1/phone-numbers/{phone_number_id}', { params: { path: { phone_number_id: id } } })),
    [id],
  );
  const [deleteError, setDeleteError] = useState<Error | undefined>();
  return (
    <Page title={loaded.data ? loaded.data.phone_number : 'Phone number'}>
      <p>
        <Link href="/numbers">← All numbers</Link>
      </p>
      <Loading loaded={loaded}>
        {(number) => (
          <>
            <Panel title="About">
              <dl class="facts">
                <dt>Carrier</dt>
                <dd>{providerLabel(number.provider)}</dd>
                <dt>Toll-free</dt>
                <dd>{number.is_toll_free ? 'Yes' : 'No'}</dd>
                <dt>Added</dt>
                <dd>{when(number.created_at)}</dd>
              </dl>
            </Panel>
            <Panel title="Routing and SMS">
              <EditNumber key={number.id} number={number} onSaved={loaded.reload} />
            </Panel>
            <Panel title="SMS compliance">
              <ComplianceLink id={number.id} />
            </Panel>
            <Panel title="Delete">
              <FormError error={deleteError} />
              <Button
                kind="danger"
                onClick={async () => {
                  if (!confirm(`Delete ${number.phone_number}?`)) return;
                  setDeleteError(undefined);
                  await ok(
                    api.DELETE('/api/v1/phone-numbers/{phone_number_id}', {
                      params: { path: { phone_number_id: number.id } },
                    }),
                  ).then(() => navigate('/numbers'), setDeleteError);
                }}
              >
                Delete this number
              </Button>
            </Panel>
          </>
        )}
      </Loading>
    </Page>
  );
}
