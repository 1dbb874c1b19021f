/**
 * A campaign's contacts and its executions (one per attempt at a contact), each a page at a time.
 * `round` reloads them when something changed (an import, progress from the live feed).
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link } from '../../lib/router.js';
import { Empty, Loading, when } from '../../ui/page.js';
import { Pager } from './campaigns.js';

const PER_PAGE = 20;

export function ContactsList(props: { campaignId: number; round: number }) {
  const [page, setPage] = useState(1);
  const contacts = useLoad(
    () =>
      ok(
        api.GET('/api/v1/campaigns/{campaign_id}/contacts', {
          params: { path: { campaign_id: props.campaignId }, query: { page, per_page: PER_PAGE } },
        }),
      ),
    [props.campaignId, page, props.round],
  );
  return (
    <Loading loaded={contacts}>
      {({ contacts: list, pagination }) =>
        list.length === 0 ? (
          <Empty>No contacts yet: import a file above.</Empty>
        ) : (
          <>
            <p class="muted">{pagination.total_items} contacts in all.</p>
            <div class="table-scroll">
              <table>
                <caption class="visually-hidden">The campaign's contacts</caption>
                <thead>
                  <tr>
                    <th scope="col">Phone</th>
                    <th scope="col">Name</th>
                    <th scope="col">Company</th>
                    <th scope="col">Custom fields</th>
                    <th scope="col">Status</th>
                    <th scope="col" class="number">
                      Attempts
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((contact) => (
                    <tr key={contact.id}>
                      <th scope="row">{contact.phone_number}</th>
                      <td>{contact.name ?? '—'}</td>
                      <td>{contact.company ?? '—'}</td>
                      <td>
                        {Object.entries(contact.custom_fields)
                          .map(([key, value]) => `${key}: ${String(value)}`)
                          .join(', ') || '—'}
                      </td>
                      <td>{contact.status.replace('_', ' ')}</td>
                      <td class="number">{contact.attempts}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager page={page} pages={pagination.total_pages} onPage={setPage} />
          </>
        )
      }
    </Loading>
  );
}

export function ExecutionsList(props: { campaignId: number; round: number }) {
  const [page, setPage] = useState(1);
  const executions = useLoad(
    () =>
      ok(
        api.GET('/api/v1/campaigns/{campaign_id}/executions', {
          params: { path: { campaign_id: props.campaignId }, query: { page, per_page: PER_PAGE } },
        }),
      ),
    [props.campaignId, page, props.round],
  );
  return (
    <Loading loaded={executions}>
      {({ executions: list, pagination }) =>
        list.length === 0 ? (
          <Empty>No attempts yet: they appear here once the campaign runs.</Empty>
        ) : (
          <>
            <div class="table-scroll">
              <table>
                <caption class="visually-hidden">The campaign's attempts, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Contact</th>
                    <th scope="col" class="number">
                      Attempt
                    </th>
                    <th scope="col">Status</th>
                    <th scope="col">Call or message</th>
                    <th scope="col">When</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((execution) => (
                    <tr key={execution.id}>
                      <th scope="row">
                        {execution.contact_name ? `${execution.contact_name} ` : ''}
                        <span class="muted">{execution.contact_phone ?? `#${execution.contact_id}`}</span>
                      </th>
                      <td class="number">{execution.attempt_number}</td>
                      <td>{execution.status.replace('_', ' ')}</td>
                      <td>
                        {execution.call_id ? (
                          <Link href={`/calls/${execution.call_id}`}>Call {execution.call_id}</Link>
                        ) : execution.sms_id ? (
                          `SMS ${execution.sms_id}`
                        ) : (
                          '—'
                        )}
                      </td>
                      <td>{when(execution.executed_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager page={page} pages={pagination.total_pages} onPage={setPage} />
          </>
        )
      }
    </Loading>
  );
}
