/**
 * The console's home (`/`): how the organization's calls went over the last days, from
 * `GET /api/v1/calls/analytics` in the browser's time zone — a few headline numbers, the calls of each
 * day stacked by outcome, the minutes talked per day, and the turn latency percentiles by stage.
 * The range (7, 30 or 90 days) is in the URL (`/?days=7`).
 */
import type { components } from '../../../../clients/typescript/src/index.js';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, navigate, type Place } from '../../lib/router.js';
import { useProfile } from '../../lib/session.js';
import { BarChart, LineChart } from '../../ui/charts.js';
import { SelectField } from '../../ui/form.js';
import { Empty, Loading, Page, Panel } from '../../ui/page.js';
import { Headlines } from './headlines.js';

type Analytics = components['schemas']['CallAnalytics'];

const RANGES = [
  { value: '7', label: 'Last 7 days' },
  { value: '30', label: 'Last 30 days' },
  { value: '90', label: 'Last 90 days' },
];

/** yyyy-mm-dd of a moment in the browser's time zone (the Canadian format is ISO's). */
const day = (at: Date) => at.toLocaleDateString('en-CA');

/** The outcomes a day's bar is made of, in the API's `by_status` names. */
const OUTCOMES = [
  ['completed', 'Completed'],
  ['voicemail', 'Voicemail'],
  ['busy', 'Busy'],
  ['no-answer', 'No answer'],
  ['failed', 'Failed'],
  ['canceled', 'Canceled'],
] as const;

const STAGES = [
  ['end_to_end_ms', 'End to end'],
  ['stt_delay_ms', 'Transcript'],
  ['llm_ttft_ms', 'Model'],
  ['tts_ttfb_ms', 'Voice'],
  ['platform_ms', 'Platform'],
] as const;

/** "Nov 27" for a yyyy-mm-dd day (read at noon, so no time zone moves it). */
const shortDay = (date: string) =>
  new Date(`${date}T12:00:00`).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });

function Charts(props: { report: Analytics }) {
  const { report } = props;
  const days = report.per_day.map((d) => shortDay(d.date));
  return (
    <>
      <Headlines report={report} />
      <Panel title="Calls per day">
        <BarChart
          stacked
          title="Calls per day, by outcome"
          unit="calls"
          categories={days}
          series={OUTCOMES.map(([key, label]) => ({
            label,
            values: report.per_day.map((d) => d.by_status[key]),
          }))}
        />
      </Panel>
      <Panel title="Minutes talked per day">
        <LineChart
          title="Minutes talked per day (answered calls)"
          unit="minutes"
          categories={days}
          series={[{ label: 'Minutes', values: report.per_day.map((d) => d.duration_seconds / 60) }]}
        />
      </Panel>
      <Panel title="Latency of the turns">
        {report.latency.end_to_end_ms.turns === 0 ? (
          <Empty>No answered turns in these days yet: latency shows once an assistant has spoken.</Empty>
        ) : (
          <BarChart
            title="Turn latency percentiles by stage (ms)"
            unit="ms"
            format={(ms) => String(Math.round(ms))}
            categories={STAGES.map(([, label]) => label)}
            series={(['p50', 'p95', 'p99'] as const).map((p) => ({
              label: p,
              values: STAGES.map(([key]) => report.latency[key][p]),
            }))}
          />
        )}
      </Panel>
    </>
  );
}

export function Overview(props: { place: Place }) {
  const profile = useProfile();
  const days = RANGES.some((r) => r.value === props.place.query.get('days'))
    ? Number(props.place.query.get('days'))
    : 30;
  const timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const report = useLoad(
    () =>
      ok(
        api.GET('/api/v1/calls/analytics', {
          params: {
            query: {
              date_from: day(new Date(Date.now() - (days - 1) * 86_400_000)),
              date_to: day(new Date()),
              time_zone: timeZone,
            },
          },
        }),
      ),
    [profile.organization_id, days, timeZone],
  );
  return (
    <Page title="Overview">
      <div class="row overview-range">
        <SelectField
          label="Days shown"
          value={String(days)}
          options={RANGES}
          onValue={(value) => navigate(value === '30' ? '/' : `/?days=${value}`, { replace: true })}
        />
      </div>
      <Loading loaded={report}>
        {(found) =>
          found.totals.calls === 0 ? (
            <Empty>
              No calls in these days yet. Give an assistant a number, or talk to one from the browser:{' '}
              <Link href="/assistants">Assistants</Link>.
            </Empty>
          ) : (
            <Charts report={found} />
          )
        }
      </Loading>
    </Page>
  );
}
