/**
 * SMS: sending a message from one of the organization's numbers (the API's refusals — compliance,
 * missing carrier credentials, an unrouted number — shown in its words, with where to fix them), the
 * sent message's status (`/sms?message=<id>`, followed until it is final), and the queue's figures.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, navigate, type Place } from '../../lib/router.js';
import { useProfile } from '../../lib/session.js';
import {
  Button,
  CheckboxField,
  FormError,
  SelectField,
  TextArea,
  TextField,
  useSubmit,
} from '../../ui/form.js';
import { Empty, Loading, Page, Panel, when } from '../../ui/page.js';

/** Statuses after which a message changes no more (a receipt may still turn `sent` into `delivered`). */
const FINAL = new Set(['delivered', 'undelivered', 'failed', 'cancelled', 'received']);

/** Where a refusal is fixed, by the status the API answered. */
function Remedy(props: { error: Error | undefined }) {
  const { error } = props;
  if (!(error instanceof ApiError)) return null;
  if (error.status === 403)
    return (
      <p>
        The number needs approved <Link href="/compliance">SMS compliance</Link> before it sends.
      </p>
    );
  if (error.status === 404)
    return (
      <p>
        Route the number to an assistant on its <Link href="/numbers">number page</Link>.
      </p>
    );
  if (error.status === 400 && /credentials|SIP trunk/i.test(error.message))
    return (
      <p>
        Store the carrier's credentials in <Link href="/settings">Settings</Link>.
      </p>
    );
  return null;
}

function SendForm(props: { onSent(messageId: string): void }) {
  const numbers = useLoad(
    () => ok(api.GET('/api/v1/phone-numbers', { params: { query: { limit: 1000 } } })),
    [],
  );
  const [fields, setFields] = useState({ from: '', to: '', message: '', now: false });
  const form = useSubmit(async () => {
    const sent = await ok(
      api.POST('/sms/send', {
        body: {
          from_phone_number: fields.from,
          to_phone_number: fields.to,
          message: fields.message,
          queue: !fields.now,
        },
      }),
    );
    setFields((f) => ({ ...f, to: '', message: '' }));
    props.onSent(sent.message_id);
  });
  const list = numbers.data ?? [];
  useEffect(() => {
    // The first number routed to an assistant is the likeliest sender.
    const first = list.find((n) => n.assistant_id !== null) ?? list[0];
    if (!fields.from && first) setFields((f) => ({ ...f, from: first.phone_number }));
  }, [numbers.data]);
  if (numbers.data && list.length === 0)
    return (
      <Empty>
        Messages go out from one of your numbers: <Link href="/numbers">add a number</Link> first.
      </Empty>
    );
  return (
    <form onSubmit={form.submit} noValidate aria-label="Send an SMS">
      <FormError error={form.error} />
      <Remedy error={form.error} />
      <div class="row">
        <SelectField
          label="From"
          value={fields.from}
          onValue={(from) => setFields((f) => ({ ...f, from }))}
          options={list.map((n) => ({
            value: n.phone_number,
            label: `${n.phone_number}${n.friendly_name ? ` — ${n.friendly_name}` : ''}${n.assistant_id === null ? ' (not routed to an assistant)' : ''}`,
          }))}
          error={form.at('from_phone_number')}
        />
        <TextField
          label="To"
          type="tel"
          autoComplete="off"
          value={fields.to}
          onValue={(to) => setFields((f) => ({ ...f, to }))}
          help="With + and the country code."
          error={form.at('to_phone_number')}
        />
      </div>
      <TextArea
        label="Message"
        value={fields.message}
        onValue={(message) => setFields((f) => ({ ...f, message }))}
        rows={3}
        help={`${fields.message.length} of 1600 characters.`}
        error={form.at('message')}
      />
      <CheckboxField
        label="Send now instead of queueing"
        checked={fields.now}
        onValue={(now) => setFields((f) => ({ ...f, now }))}
        help="Queued messages go out at the number's SMS rate, in order, and are retried when the carrier fails for a while."
      />
      <Button type="submit" kind="primary" busy={form.busy}>
        Send
      </Button>
    </form>
  );
}

const STATUS_WORDS: Record<string, string> = {
  queued: 'Queued: waiting for its number’s turn',
  sending: 'Being handed to the carrier',
  sent: 'Sent: the carrier took it; waiting for the delivery receipt',
  delivered: 'Delivered',
  undelivered: 'Not delivered',
  failed: 'Failed',
  cancelled: 'Cancelled',
  received: 'Received',
};

function MessageStatus(props: { messageId: string; onStatus(status: string): void }) {
  const loaded = useLoad(
    () => ok(api.GET('/sms/{message_id}', { params: { path: { message_id: props.messageId } } })),
    [props.messageId],
  );
  const status = loaded.data?.status;
  // Follow the message until its status is final: queued → sending → sent → delivered.
  useEffect(() => {
    if (status) props.onStatus(status);
  }, [status]);
  useEffect(() => {
    if (!status || FINAL.has(status)) return;
    const timer = setTimeout(loaded.reload, 1500);
    return () => clearTimeout(timer);
  }, [status, loaded.data]);
  const cancel = useSubmit(async () => {
    await ok(api.DELETE('/sms/{message_id}', { params: { path: { message_id: props.messageId } } }));
    loaded.reload();
  });
  return (
    <Panel title="The message">
      <Loading loaded={loaded}>
        {(message) => (
          <>
            <p role="status" class="sms-status">
              Status: <strong>{message.status}</strong> — {STATUS_WORDS[message.status] ?? message.status}
            </p>
            <dl class="facts">
              <dt>From</dt>
              <dd>{message.from_phone_number}</dd>
              <dt>To</dt>
              <dd>{message.to_phone_number}</dd>
              <dt>Message</dt>
              <dd>{message.message}</dd>
              <dt>Segments</dt>
              <dd>{message.segments}</dd>
              <dt>Cost</dt>
              <dd>{message.cost === null ? '—' : message.cost.toFixed(4)}</dd>
              <dt>Sent</dt>
              <dd>{when(message.sent_at)}</dd>
              <dt>Delivered</dt>
              <dd>{when(message.delivered_at)}</dd>
              {message.error ? (
                <>
                  <dt>Error</dt>
                  <dd>{message.error}</dd>
                </>
              ) : null}
              <dt>Id</dt>
              <dd class="mono">{message.message_id}</dd>
            </dl>
            <FormError error={cancel.error} />
            <div class="actions">
              <Button onClick={loaded.reload}>Refresh</Button>
              {message.status === 'queued' ? (
                <Button kind="danger" busy={cancel.busy} onClick={() => void cancel.submit()}>
                  Cancel the message
                </Button>
              ) : null}
            </div>
          </>
        )}
      </Loading>
    </Panel>
  );
}

function QueueStats(props: { round: number }) {
  const stats = useLoad(() => ok(api.GET('/sms/queue/stats')), [props.round]);
  return (
    <Panel title="Queue">
      <Loading loaded={stats}>
        {(data) => (
          <>
            <p>
              {data.total} message{data.total === 1 ? '' : 's'} in all; {data.queued} waiting to be sent.
            </p>
            {Object.keys(data.by_status).length > 0 ? (
              <table>
                <caption>Messages by status</caption>
                <thead>
                  <tr>
                    <th scope="col">Status</th>
                    <th scope="col" class="number">
                      Messages
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {Object.entries(data.by_status).map(([status, count]) => (
                    <tr key={status}>
                      <th scope="row">{status}</th>
                      <td class="number">{count}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : null}
            {data.numbers.length > 0 ? (
              <table>
                <caption>Waiting, per sending number</caption>
                <thead>
                  <tr>
                    <th scope="col">Number</th>
                    <th scope="col" class="number">
                      Queued
                    </th>
                    <th scope="col">Oldest since</th>
                  </tr>
                </thead>
                <tbody>
                  {data.numbers.map((n) => (
                    <tr key={n.phone_number}>
                      <th scope="row">{n.phone_number}</th>
                      <td class="number">{n.queued}</td>
                      <td>{when(n.oldest_queued_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : null}
          </>
        )}
      </Loading>
    </Panel>
  );
}

function LookUp() {
  const [id, setId] = useState('');
  return (
    <form
      class="inline-form"
      aria-label="Look up a message"
      onSubmit={(event) => {
        event.preventDefault();
        if (id.trim()) navigate(`/sms?message=${encodeURIComponent(id.trim())}`);
      }}
    >
      <div class="row">
        <TextField label="Message id" value={id} onValue={setId} autoComplete="off" />
      </div>
      <Button type="submit">Show its status</Button>
    </form>
  );
}

export function Sms(props: { place: Place }) {
  const profile = useProfile();
  const messageId = props.place.query.get('message');
  const [round, setRound] = useState(0);
  return (
    <Page title="SMS">
      <Panel title="Send a message">
        <SendForm
          key={profile.organization_id}
          onSent={(id) => {
            navigate(`/sms?message=${encodeURIComponent(id)}`, { replace: true });
          }}
        />
      </Panel>
      {messageId ? (
        // The queue's figures are read again as the message moves on.
        <MessageStatus key={messageId} messageId={messageId} onStatus={() => setRound((n) => n + 1)} />
      ) : null}
      <QueueStats round={round} />
      <Panel title="A message's status">
        <LookUp />
      </Panel>
    </Page>
  );
}
