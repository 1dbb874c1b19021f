/**
 * Outgoing webhooks: the signing secret (admins: shown on request, rotated after a confirmation),
 * the delivery log (newest first, filtered by status, a page at a time) with redelivery, and a test
 * event to a URL of the admin's choice.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Button, FormError, SelectField, TextField, useSubmit } from '../../ui/form.js';
import { Empty, Loading, Panel, when } from '../../ui/page.js';

export function WebhookSecret() {
  const [secret, setSecret] = useState<string | undefined>();
  const [rotated, setRotated] = useState(false);
  const show = useSubmit(async () => {
    setSecret((await ok(api.GET('/api/v1/organization/webhook-secret'))).webhook_secret);
  });
  const rotate = useSubmit(async () => {
    setSecret((await ok(api.POST('/api/v1/organization/webhook-secret/rotate'))).webhook_secret);
    setRotated(true);
  });
  return (
    <Panel title="Webhook secret">
      <p>
        Every event Switchboard posts is signed with this secret (<code>X-Switchboard-Signature</code>); your
        endpoint checks the signature with it.
      </p>
      <FormError error={show.error ?? rotate.error} />
      {secret ? <code class="secret">{secret}</code> : null}
      {rotated ? (
        <p role="status">A new secret is in use from now on: events are no longer signed with the old one.</p>
      ) : null}
      <div class="actions">
        {secret ? (
          <Button onClick={() => setSecret(undefined)}>Hide</Button>
        ) : (
          <Button busy={show.busy} onClick={() => void show.submit()}>
            Show the secret
          </Button>
        )}
        <Button
          kind="danger"
          busy={rotate.busy}
          onClick={() => {
            if (confirm('Rotate the webhook secret? Endpoints checking the old one refuse events at once.'))
              void rotate.submit();
          }}
        >
          Rotate
        </Button>
      </div>
    </Panel>
  );
}

type DeliveryStatus = '' | 'pending' | 'delivered' | 'failed';
const PER_PAGE = 20;

function TestEvent(props: { onSent(): void }) {
  const [url, setUrl] = useState('');
  const [sent, setSent] = useState<string | undefined>();
  const form = useSubmit(async () => {
    setSent(undefined);
    const delivery = await ok(api.POST('/api/v1/organization/webhook-deliveries/test', { body: { url } }));
    setSent(`A test event is on its way (delivery ${delivery.id}).`);
    props.onSent();
  });
  return (
    <form onSubmit={form.submit} noValidate class="inline-form" aria-label="Send a test event">
      <h3>Send a test event</h3>
      <FormError error={form.error} />
      <div class="row">
        <TextField label="Endpoint URL" type="url" value={url} onValue={setUrl} error={form.at('url')} />
      </div>
      <Button type="submit" busy={form.busy}>
        Send a test event
      </Button>
      {sent ? <span role="status"> {sent}</span> : null}
    </form>
  );
}

export function WebhookDeliveries(props: { admin: boolean }) {
  const [status, setStatus] = useState<DeliveryStatus>('');
  const [page, setPage] = useState(1);
  const deliveries = useLoad(
    () =>
      ok(
        api.GET('/api/v1/organization/webhook-deliveries', {
          params: { query: { page, per_page: PER_PAGE, ...(status ? { status } : {}) } },
        }),
      ),
    [status, page],
  );
  const [actionError, setActionError] = useState<Error | undefined>();
  return (
    <Panel title="Webhook deliveries">
      <div class="row">
        <SelectField
          label="Status"
          value={status}
          onValue={(value) => {
            setStatus(value as DeliveryStatus);
            setPage(1);
          }}
          options={[
            { value: '', label: 'All' },
            { value: 'pending', label: 'Pending' },
            { value: 'delivered', label: 'Delivered' },
            { value: 'failed', label: 'Failed' },
          ]}
        />
      </div>
      <FormError error={actionError} />
      <Loading loaded={deliveries}>
        {({ items, pagination }) =>
          items.length === 0 ? (
            <Empty>No deliveries{status ? ` with status ${status}` : ''} yet.</Empty>
          ) : (
            <>
              <table>
                <caption class="visually-hidden">Webhook deliveries, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">URL</th>
                    <th scope="col">Status</th>
                    <th scope="col" class="number">
                      Attempts
                    </th>
                    <th scope="col">Last problem</th>
                    <th scope="col">Created</th>
                    {props.admin ? (
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    ) : null}
                  </tr>
                </thead>
                <tbody>
                  {items.map((d) => (
                    <tr key={d.id}>
                      <th scope="row">{d.event_type}</th>
                      <td class="mono">{d.url}</td>
                      <td>{d.status}</td>
                      <td class="number">{d.attempts}</td>
                      <td>
                        {d.last_status_code ? `${d.last_status_code} ` : ''}
                        {d.last_error ?? ''}
                      </td>
                      <td>{when(d.created_at)}</td>
                      {props.admin ? (
                        <td>
                          <Button
                            disabled={d.status === 'pending'}
                            aria-label={`Redeliver ${d.event_type} ${d.id}`}
                            onClick={async () => {
                              setActionError(undefined);
                              await ok(
                                api.POST('/api/v1/organization/webhook-deliveries/{delivery_id}/redeliver', {
                                  params: { path: { delivery_id: d.id } },
                                }),
                              ).then(deliveries.reload, setActionError);
                            }}
                          >
                            Redeliver
                          </Button>
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
              <div class="pager">
                <Button disabled={!pagination.has_prev} onClick={() => setPage((p) => p - 1)}>
                  Newer
                </Button>
                <span>
                  Page {pagination.page} of {pagination.total_pages} ({pagination.total_items} deliveries)
                </span>
                <Button disabled={!pagination.has_next} onClick={() => setPage((p) => p + 1)}>
                  Older
                </Button>
              </div>
            </>
          )
        }
      </Loading>
      {props.admin ? <TestEvent onSent={deliveries.reload} /> : null}
    </Panel>
  );
}
