/**
 * The organization's calls: a page of them (newest first) narrowed by status, assistant and days, or
 * the matches of a full-text search; the total from `X-Total-Count`; pages of PAGE_SIZE; and the
 * filtered calls as a CSV or JSON download. Everything shown is in the URL (call-filters.tsx).
 */
import { api, apiError } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, navigate, type Place } from '../../lib/router.js';
import { useProfile } from '../../lib/session.js';
import { Button } from '../../ui/form.js';
import { Empty, Loading, Page, Panel, when } from '../../ui/page.js';
import { type Call, cost, directionLabel, duration, numbers } from './call-facts.js';
import {
  apiFilters,
  type CallFilters,
  callsHref,
  exportHref,
  FilterForm,
  filtersOf,
  PAGE_SIZE,
  SearchForm,
  useAssistantNames,
} from './call-filters.js';

interface Listed {
  calls: Call[];
  /** Null for a search, which answers its best matches without a total. */
  total: number | null;
}

async function listed(filters: CallFilters): Promise<Listed> {
  if (filters.q) {
    const { data, error, response } = await api.GET('/api/v1/calls/search', {
      params: { query: { q: filters.q, limit: 50 } },
    });
    if (error !== undefined || !data) throw apiError(response.status, error);
    return { calls: data, total: null };
  }
  const { data, error, response } = await api.GET('/api/v1/calls', {
    params: {
      query: { ...apiFilters(filters), skip: (filters.page - 1) * PAGE_SIZE, limit: PAGE_SIZE },
    },
  });
  if (error !== undefined || !data) throw apiError(response.status, error);
  return { calls: data, total: Number(response.headers.get('X-Total-Count') ?? data.length) };
}

function CallsTable(props: { calls: Call[]; assistants: Map<number, string> }) {
  const showCost = props.calls.some((call) => call.cost !== null);
  return (
    <table class="calls">
      <caption class="visually-hidden">Calls</caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Direction</th>
          <th scope="col">From → to</th>
          <th scope="col">Assistant</th>
          <th scope="col">Status</th>
          <th scope="col" class="number">
            Duration
          </th>
          {showCost ? (
            <th scope="col" class="number">
              Cost
            </th>
          ) : null}
        </tr>
      </thead>
      <tbody>
        {props.calls.map((call) => (
          <tr key={call.id}>
            <th scope="row">
              {/* When it was made: what the list is ordered by (a call that never started has no start). */}
              <Link href={`/calls/${call.id}`}>{when(call.created_at)}</Link>
            </th>
            <td>{directionLabel(call)}</td>
            <td class="mono">{call.call_meta.web ? 'Web call' : numbers(call)}</td>
            <td>
              {call.assistant_id === null
                ? '—'
                : (props.assistants.get(call.assistant_id) ?? `#${call.assistant_id}`)}
            </td>
            <td>
              <span class="tag">{call.status}</span>
            </td>
            <td class="number">{duration(call.duration)}</td>
            {showCost ? <td class="number">{cost(call.cost)}</td> : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Pager(props: { filters: CallFilters; total: number }) {
  const { filters, total } = props;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const go = (page: number) => navigate(callsHref({ ...filters, page }));
  return (
    <div class="pager">
      <Button disabled={filters.page <= 1} onClick={() => go(filters.page - 1)}>
        Newer
      </Button>
      <span role="status">
        Page {filters.page} of {pages} ({total} {total === 1 ? 'call' : 'calls'})
      </span>
      <Button disabled={filters.page >= pages} onClick={() => go(filters.page + 1)}>
        Older
      </Button>
    </div>
  );
}

export function Calls(props: { place: Place }) {
  const profile = useProfile();
  const filters = filtersOf(props.place.query);
  const assistants = useAssistantNames();
  const names = assistants.data ?? new Map<number, string>();
  const calls = useLoad(() => listed(filters), [profile.organization_id, callsHref(filters)]);
  return (
    <Page
      title="Calls"
      actions={
        <>
          <a class="button plain" href={exportHref(filters, 'csv')} download>
            Export CSV
          </a>
          <a class="button plain" href={exportHref(filters, 'json')} download>
            Export JSON
          </a>
        </>
      }
    >
      <Panel title="Find calls">
        <SearchForm key={filters.q} filters={filters} />
        {filters.q ? null : <FilterForm filters={filters} assistants={names} />}
      </Panel>
      <Panel title={filters.q ? `Calls matching “${filters.q}”` : 'Calls'}>
        {filters.q ? (
          <p>
            Best matches first. <Link href={callsHref({ ...filters, q: '' })}>Back to all calls</Link>
          </p>
        ) : null}
        <Loading loaded={calls}>
          {({ calls: list, total }) =>
            list.length === 0 ? (
              <Empty>
                {filters.q
                  ? 'No call matches these words.'
                  : 'No calls here yet. Calls appear as soon as an assistant makes or takes one.'}
              </Empty>
            ) : (
              <>
                <CallsTable calls={list} assistants={names} />
                {total === null ? (
                  <p role="status">
                    {list.length} {list.length === 1 ? 'match' : 'matches'}
                  </p>
                ) : (
                  <Pager filters={filters} total={total} />
                )}
              </>
            )
          }
        </Loading>
      </Panel>
    </Page>
  );
}
