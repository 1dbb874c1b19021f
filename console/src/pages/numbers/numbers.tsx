/**
 * The organization's phone numbers: the list (number, label, carrier, routing, SMS rate), adding
 * one (any member may), and deleting one. Each number's page (`/numbers/:id`) changes its routing
 * and SMS settings.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link } from '../../lib/router.js';
import { useProfile } from '../../lib/session.js';
import { Button, FormError, useSubmit } from '../../ui/form.js';
import { Empty, Loading, Page, Panel } from '../../ui/page.js';
import { NumberFields } from './fields.js';
import { type PhoneNumber, type Provider, providerLabel, rateBody, routingBody } from './routing.js';

/** "Assistant: Front desk", "Graph 4", or "Nobody". */
export function routedTo(number: PhoneNumber, graphNames: Map<number, string>): string {
  if (number.assistant_id !== null) return `Assistant: ${number.assistant_name ?? `#${number.assistant_id}`}`;
  if (number.graph_id !== null) return `Graph: ${graphNames.get(number.graph_id) ?? `#${number.graph_id}`}`;
  return 'Nobody';
}

function AddNumber(props: { onAdded(): void }) {
  const empty = {
    phone_number: '',
    provider: 'carrier_a' as Provider,
    friendly_name: '',
    routing: '',
    rate: '',
  };
  const [fields, setFields] = useState(empty);
  const [added, setAdded] = useState<string | undefined>();
  const form = useSubmit(async () => {
    setAdded(undefined);
    const created = await ok(
      api.POST('/api/v1/phone-numbers', {
        body: {
          phone_number: fields.phone_number,
          provider: fields.provider,
          friendly_name: fields.friendly_name.trim() || null,
          ...routingBody(fields.routing),
          sms_rate_per_second: rateBody(fields.rate),
        },
      }),
    );
    setAdded(created.phone_number);
    setFields(empty);
    props.onAdded();
  });
  return (
    <form onSubmit={form.submit} noValidate aria-label="Add a phone number">
      <FormError error={form.error} />
      <NumberFields adding fields={fields} setFields={setFields} at={form.at} />
      <Button type="submit" kind="primary" busy={form.busy}>
        Add the number
      </Button>
      {added ? <span role="status"> {added} is added.</span> : null}
    </form>
  );
}

export function Numbers() {
  const profile = useProfile();
  const numbers = useLoad(
    () => ok(api.GET('/api/v1/phone-numbers', { params: { query: { limit: 1000 } } })),
    [profile.organization_id],
  );
  const graphs = useLoad(
    () => ok(api.GET('/api/v1/assistant-graphs', { params: { query: { limit: 1000 } } })),
    [profile.organization_id],
  );
  const graphNames = new Map((graphs.data ?? []).map((g) => [g.id, g.name]));
  const [deleteError, setDeleteError] = useState<Error | undefined>();
  const [deleted, setDeleted] = useState<string | undefined>();
  return (
    <Page title="Phone numbers">
      <Panel title="Your numbers">
        <FormError error={deleteError} />
        {deleted ? <p role="status">{deleted} is deleted.</p> : null}
        <Loading loaded={numbers}>
          {(list) =>
            list.length === 0 ? (
              <Empty>
                No numbers yet. Add a number of one of your carrier accounts below (its credentials go in{' '}
                <Link href="/settings">Settings</Link>), and route it to an assistant.
              </Empty>
            ) : (
              <table>
                <caption class="visually-hidden">The organization's phone numbers</caption>
                <thead>
                  <tr>
                    <th scope="col">Number</th>
                    <th scope="col">Label</th>
                    <th scope="col">Carrier</th>
                    <th scope="col">Routed to</th>
                    <th scope="col" class="number">
                      SMS per second
                    </th>
                    <th scope="col">
                      <span class="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((number) => (
                    <tr key={number.id}>
                      <th scope="row">
                        <Link href={`/numbers/${number.id}`}>{number.phone_number}</Link>
                        {number.is_toll_free ? <span class="tag">toll-free</span> : null}
                      </th>
                      <td>{number.friendly_name ?? '—'}</td>
                      <td>{providerLabel(number.provider)}</td>
                      <td>{routedTo(number, graphNames)}</td>
                      <td class="number">{number.sms_rate_per_second}</td>
                      <td>
                        <Button
                          kind="danger"
                          aria-label={`Delete ${number.phone_number}`}
                          onClick={async () => {
                            if (
                              !confirm(
                                `Delete ${number.phone_number}? Calls and messages to it are no longer answered, and its SMS compliance record goes with it.`,
                              )
                            )
                              return;
                            setDeleteError(undefined);
                            setDeleted(undefined);
                            await ok(
                              api.DELETE('/api/v1/phone-numbers/{phone_number_id}', {
                                params: { path: { phone_number_id: number.id } },
                              }),
                            ).then(() => {
                              setDeleted(number.phone_number);
                              numbers.reload();
                            }, setDeleteError);
                          }}
                        >
                          Delete
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
      <Panel title="Add a number">
        <AddNumber key={profile.organization_id} onAdded={numbers.reload} />
      </Panel>
    </Page>
  );
}
