/**
 * The calls list's filters, kept in the page's URL query (`/calls?status=completed&assistant=3&from=
 * 2026-11-01&page=2`, or `?q=refund` for a search) so a link or a reload shows the same calls: reading
 * them from the URL, turning them into the API's query (the list's and the export's), and the form
 * that changes them.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { navigate } from '../../lib/router.js';
import { Button, SelectField, TextField } from '../../ui/form.js';
import { CALL_STATUSES, type CallStatus } from './call-facts.js';

export interface CallFilters {
  status: string;
  assistant: string;
  /** Days (yyyy-mm-dd) in the browser's time zone, both included. */
  from: string;
  to: string;
  page: number;
  /** A full-text search: the list shows its matches instead of the filtered calls. */
  q: string;
}

export const PAGE_SIZE = 25;

export function filtersOf(query: URLSearchParams): CallFilters {
  const page = Number(query.get('page'));
  return {
    status: query.get('status') ?? '',
    assistant: query.get('assistant') ?? '',
    from: query.get('from') ?? '',
    to: query.get('to') ?? '',
    page: Number.isInteger(page) && page > 1 ? page : 1,
    q: query.get('q') ?? '',
  };
}

/** The console URL of these filters (empty ones left out). */
export function callsHref(filters: CallFilters): string {
  const query = new URLSearchParams();
  for (const key of ['q', 'status', 'assistant', 'from', 'to'] as const)
    if (filters[key]) query.set(key, filters[key]);
  if (filters.page > 1) query.set('page', String(filters.page));
  const text = query.toString();
  return text ? `/calls?${text}` : '/calls';
}

/** A day's first or last moment in the browser's time zone, as the API's date-time. */
const dayEdge = (day: string, edge: 'start' | 'end') =>
  new Date(`${day}T${edge === 'start' ? '00:00:00.000' : '23:59:59.999'}`).toISOString();

/** What `GET /api/v1/calls` and `/calls/export` are filtered by. */
export function apiFilters(filters: CallFilters) {
  return {
    ...(filters.status ? { status: filters.status as CallStatus } : {}),
    ...(filters.assistant ? { assistant_id: Number(filters.assistant) } : {}),
    ...(filters.from ? { date_from: dayEdge(filters.from, 'start') } : {}),
    ...(filters.to ? { date_to: dayEdge(filters.to, 'end') } : {}),
  };
}

/** The export download (through the session cookie, as any link) of the filtered calls. */
export function exportHref(filters: CallFilters, format: 'csv' | 'json'): string {
  const query = new URLSearchParams({ format });
  for (const [key, value] of Object.entries(apiFilters(filters))) query.set(key, String(value));
  return `/api/v1/calls/export?${query}`;
}

/** The assistants by id, for the filter and for naming each call's assistant. */
export function useAssistantNames() {
  return useLoad(async () => {
    const list = await ok(api.GET('/api/v1/assistants', { params: { query: { limit: 1000 } } }));
    return new Map(list.map((assistant) => [assistant.id, assistant.name]));
  }, []);
}

const STATUS_OPTIONS = [
  { value: '', label: 'Any status' },
  ...CALL_STATUSES.map((status) => ({ value: status, label: status })),
];

/** The filters: each change shows its calls at once (page 1), and lands in the URL. */
export function FilterForm(props: { filters: CallFilters; assistants: Map<number, string> }) {
  const { filters } = props;
  const change = (patch: Partial<CallFilters>) =>
    navigate(callsHref({ ...filters, ...patch, q: '', page: 1 }), { replace: true });
  const assistantOptions = [
    { value: '', label: 'Any assistant' },
    ...[...props.assistants].map(([id, name]) => ({ value: String(id), label: name })),
  ];
  return (
    <form class="row call-filters" aria-label="Filter the calls" onSubmit={(event) => event.preventDefault()}>
      <SelectField
        label="Status"
        value={filters.status}
        options={STATUS_OPTIONS}
        onValue={(status) => change({ status })}
      />
      <SelectField
        label="Assistant"
        value={filters.assistant}
        options={assistantOptions}
        onValue={(assistant) => change({ assistant })}
      />
      <TextField label="From day" type="date" value={filters.from} onValue={(from) => change({ from })} />
      <TextField label="To day" type="date" value={filters.to} onValue={(to) => change({ to })} />
    </form>
  );
}

/** The full-text search: assistant names, numbers (3+ digits), transcripts. */
export function SearchForm(props: { filters: CallFilters }) {
  const [q, setQ] = useState(props.filters.q);
  const [problem, setProblem] = useState<string | undefined>();
  return (
    <form
      class="inline-form"
      aria-label="Search the calls"
      onSubmit={(event) => {
        event.preventDefault();
        const words = q.trim();
        // The API wants 3 characters at least; saying so here spares a round trip.
        if (words.length > 0 && words.length < 3) return setProblem('Type at least 3 characters');
        setProblem(undefined);
        // The search answers its best matches over every call: the filters do not apply to it.
        navigate(callsHref({ status: '', assistant: '', from: '', to: '', q: words, page: 1 }));
      }}
    >
      <TextField
        label="Search calls"
        type="search"
        value={q}
        onValue={setQ}
        error={problem}
        help="Words said, an assistant's name, or 3+ digits of a number"
      />
      <Button type="submit">Search</Button>
    </form>
  );
}
