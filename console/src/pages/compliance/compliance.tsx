/**
 * SMS compliance: every number's review status (the summary), and for the number chosen
 * (`/compliance?number=<id>`) its record — when submitted, why rejected — and the submission form
 * (use case, business, sample messages, contacts). Admins also review: approve, reject with a
 * reason, or set back to pending. These routes take only a JWT: see access-gate.tsx.
 */
import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../../clients/typescript/src/index.js';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, type Place } from '../../lib/router.js';
import { useProfile } from '../../lib/session.js';
import { Button, FormError, SelectField, TextArea, TextField, useSubmit } from '../../ui/form.js';
import { Empty, Loading, Page, Panel, when } from '../../ui/page.js';
import { AccessGate, needsAccessToken } from './access-gate.js';

type Status = components['schemas']['SmsComplianceStatus'];
type UseCase =
  | 'customer_support'
  | 'appointment_reminders'
  | 'order_notifications'
  | 'two_factor_auth'
  | 'marketing'
  | 'other';

export const STATUS_WORDS: Record<Status['status'], string> = {
  approved: 'Approved — may send',
  pending: 'Pending review',
  rejected: 'Rejected',
  not_submitted: 'Not submitted',
};

const USE_CASES: Array<{ value: UseCase; label: string }> = [
  { value: 'customer_support', label: 'Customer support' },
  { value: 'appointment_reminders', label: 'Appointment reminders' },
  { value: 'order_notifications', label: 'Order notifications' },
  { value: 'two_factor_auth', label: 'Two-factor authentication' },
  { value: 'marketing', label: 'Marketing' },
  { value: 'other', label: 'Other' },
];

/** Shows the password form again when the API refused a request for want of an access token. */
function useLost(error: Error | undefined, lost: () => void) {
  useEffect(() => {
    if (needsAccessToken(error)) lost();
  }, [error]);
}

function Summary(props: { selected: number | undefined; round: number; lost(): void }) {
  const summary = useLoad(() => ok(api.GET('/v1/sms-compliance/summary')), [props.round]);
  useLost(summary.error, props.lost);
  return (
    <Panel title="Your numbers">
      <Loading loaded={summary}>
        {(data) =>
          data.total_numbers === 0 ? (
            <Empty>
              No numbers yet: <Link href="/numbers">add one</Link> first.
            </Empty>
          ) : (
            <>
              <p>
                {data.approved} approved, {data.pending} pending, {data.rejected} rejected,{' '}
                {data.not_submitted} not submitted.
              </p>
              <table>
                <caption class="visually-hidden">SMS compliance of each number</caption>
                <thead>
                  <tr>
                    <th scope="col">Number</th>
                    <th scope="col">Status</th>
                    <th scope="col">Use case</th>
                  </tr>
                </thead>
                <tbody>
                  {data.numbers.map((n) => (
                    <tr key={n.phone_number_id}>
                      <th scope="row">
                        <Link
                          href={`/compliance?number=${n.phone_number_id}`}
                          aria-current={props.selected === n.phone_number_id ? 'page' : undefined}
                        >
                          {n.phone_number}
                        </Link>
                      </th>
                      <td>{STATUS_WORDS[n.status]}</td>
                      <td>{USE_CASES.find((u) => u.value === n.use_case)?.label ?? n.use_case ?? '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )
        }
      </Loading>
    </Panel>
  );
}

function SubmitForm(props: {
  numberId: number;
  /** The use case submitted before (the API gives back no other part of a submission). */
  useCase: string | null;
  onSubmitted(status: Status): void;
  lost(): void;
}) {
  const [fields, setFields] = useState({
    use_case: (USE_CASES.find((u) => u.value === props.useCase)?.value ?? 'customer_support') as UseCase,
    business_name: '',
    business_description: '',
    samples: ['', '', ''],
    website_url: '',
    contact_email: '',
  });
  const form = useSubmit(async () => {
    const status = await ok(
      api.POST('/v1/sms-compliance/submit', {
        body: {
          phone_number_id: props.numberId,
          use_case: fields.use_case,
          business_name: fields.business_name,
          business_description: fields.business_description,
          // Empty boxes are not messages: only the ones filled in are sent.
          sample_messages: fields.samples.filter((s) => s.trim() !== ''),
          website_url: fields.website_url.trim() || null,
          contact_email: fields.contact_email.trim() || null,
        },
      }),
    );
    props.onSubmitted(status);
  });
  useLost(form.error, props.lost);
  const filled = fields.samples.map((s, i) => ({ s, i })).filter(({ s }) => s.trim() !== '');
  /** The API numbers the messages it was sent; the boxes have their own numbers. */
  const sampleError = (box: number) => {
    const index = filled.findIndex(({ i }) => i === box);
    return index >= 0 ? form.at(`sample_messages.${index}`) : undefined;
  };
  return (
    <form onSubmit={form.submit} noValidate aria-label="Submit SMS compliance">
      <FormError error={form.error} />
      <div class="row">
        <SelectField
          label="Use case"
          value={fields.use_case}
          onValue={(use_case) => setFields((f) => ({ ...f, use_case: use_case as UseCase }))}
          options={USE_CASES}
          error={form.at('use_case')}
        />
        <TextField
          label="Business name"
          value={fields.business_name}
          onValue={(business_name) => setFields((f) => ({ ...f, business_name }))}
          error={form.at('business_name')}
        />
      </div>
      <TextArea
        label="What the business does, and why it sends messages"
        value={fields.business_description}
        onValue={(business_description) => setFields((f) => ({ ...f, business_description }))}
        rows={3}
        error={form.at('business_description')}
      />
      <fieldset>
        <legend>Sample messages (1 to 3, 10 to 320 characters each)</legend>
        {fields.samples.map((sample, box) => (
          <TextArea
            key={box}
            label={`Sample message ${box + 1}${box === 0 ? '' : ' (optional)'}`}
            value={sample}
            rows={2}
            onValue={(value) =>
              setFields((f) => ({ ...f, samples: f.samples.map((s, i) => (i === box ? value : s)) }))
            }
            help={box === 0 ? 'Include how to opt out, e.g. “Reply STOP to opt out.”' : undefined}
            error={sampleError(box) ?? (box === 0 ? form.at('sample_messages') : undefined)}
          />
        ))}
      </fieldset>
      <div class="row">
        <TextField
          label="Website"
          type="url"
          value={fields.website_url}
          onValue={(website_url) => setFields((f) => ({ ...f, website_url }))}
          help="Optional."
          error={form.at('website_url')}
        />
        <TextField
          label="Contact email"
          type="email"
          value={fields.contact_email}
          onValue={(contact_email) => setFields((f) => ({ ...f, contact_email }))}
          help="Optional."
          error={form.at('contact_email')}
        />
      </div>
      <Button type="submit" kind="primary" busy={form.busy}>
        Submit for review
      </Button>
    </form>
  );
}

/** Admins' review of a submitted number. */
function Review(props: { numberId: number; onChanged(status: Status): void; lost(): void }) {
  const [reason, setReason] = useState('');
  const [next, setNext] = useState<'approved' | 'rejected' | 'pending'>('approved');
  const form = useSubmit(async () => {
    const status = await ok(
      api.PUT('/v1/sms-compliance/admin/status/{phone_number_id}', {
        params: {
          path: { phone_number_id: props.numberId },
          query: { new_status: next, ...(next === 'rejected' ? { rejection_reason: reason } : {}) },
        },
      }),
    );
    setReason('');
    props.onChanged(status);
  });
  useLost(form.error, props.lost);
  return (
    <form onSubmit={form.submit} noValidate class="inline-form" aria-label="Review the submission">
      <h3>Review (admins)</h3>
      <FormError error={form.error} />
      <div class="row">
        <SelectField
          label="New status"
          value={next}
          onValue={(value) => setNext(value as typeof next)}
          options={[
            { value: 'approved', label: 'Approved' },
            { value: 'rejected', label: 'Rejected' },
            { value: 'pending', label: 'Pending' },
          ]}
          error={form.at('new_status')}
        />
        {next === 'rejected' ? (
          <TextField
            label="Reason"
            value={reason}
            onValue={setReason}
            help="Told to whoever submitted it."
            error={form.at('rejection_reason')}
          />
        ) : null}
      </div>
      <Button type="submit" busy={form.busy}>
        Set the status
      </Button>
    </form>
  );
}

function NumberRecord(props: { numberId: number; admin: boolean; onChanged(): void; lost(): void }) {
  const record = useLoad(
    () =>
      ok(
        api.GET('/v1/sms-compliance/status/{phone_number_id}', {
          params: { path: { phone_number_id: props.numberId } },
        }),
      ),
    [props.numberId],
  );
  useLost(record.error, props.lost);
  const changed = () => {
    record.reload();
    props.onChanged();
  };
  return (
    <Loading loaded={record}>
      {(status) => (
        <Panel title={`SMS compliance of ${status.phone_number}`}>
          <p role="status">
            <strong>{STATUS_WORDS[status.status]}</strong>
            {status.rejection_reason ? `: ${status.rejection_reason}` : ''}
          </p>
          <dl class="facts">
            <dt>Use case</dt>
            <dd>{USE_CASES.find((u) => u.value === status.use_case)?.label ?? status.use_case ?? '—'}</dd>
            <dt>Submitted</dt>
            <dd>{when(status.submitted_at)}</dd>
            <dt>Approved</dt>
            <dd>{when(status.approved_at)}</dd>
            <dt>Toll-free</dt>
            <dd>{status.is_toll_free ? 'Yes' : 'No'}</dd>
          </dl>
          {status.status === 'approved' ? (
            <p class="muted">
              An approved number cannot be resubmitted; an admin sets it back to pending first.
            </p>
          ) : (
            <>
              <h3>{status.found ? 'Submit again (replaces the submission)' : 'Submit for review'}</h3>
              <SubmitForm
                key={status.submitted_at ?? 'new'}
                numberId={props.numberId}
                useCase={status.use_case}
                onSubmitted={changed}
                lost={props.lost}
              />
            </>
          )}
          {props.admin && status.found ? (
            <Review numberId={props.numberId} onChanged={changed} lost={props.lost} />
          ) : null}
        </Panel>
      )}
    </Loading>
  );
}

export function Compliance(props: { place: Place }) {
  const profile = useProfile();
  const selected = Number(props.place.query.get('number')) || undefined;
  const [round, setRound] = useState(0);
  return (
    <Page title="SMS compliance">
      <p>
        Carriers want to know who sends what to whom before a number sends SMS. Submit each sending number; an
        admin reviews it.
      </p>
      <AccessGate key={profile.organization_id}>
        {(lost) => (
          <>
            <Summary selected={selected} round={round} lost={lost} />
            {selected ? (
              <NumberRecord
                key={selected}
                numberId={selected}
                admin={profile.role === 'admin'}
                onChanged={() => setRound((n) => n + 1)}
                lost={lost}
              />
            ) : (
              <p>Choose a number above to see its record and submit it.</p>
            )}
          </>
        )}
      </AccessGate>
    </Page>
  );
}
