/** The overview's headline numbers: calls, how many were answered, talk time, cost, the usual wait. */
import type { components } from '../../../../clients/typescript/src/index.js';
import { Panel } from '../../ui/page.js';
import { cost, duration } from '../calls/call-facts.js';

type Analytics = components['schemas']['CallAnalytics'];

const ms = (value: number | null) => (value === null ? '—' : `${Math.round(value)} ms`);

export function Headlines(props: { report: Analytics }) {
  const { totals, latency, transfers } = props.report;
  const answeredShare = totals.calls > 0 ? Math.round((totals.answered / totals.calls) * 100) : 0;
  const figures: Array<[string, string]> = [
    ['Calls', String(totals.calls)],
    ['Answered', `${totals.answered} (${answeredShare}%)`],
    ['Inbound / outbound', `${totals.inbound} / ${totals.outbound}`],
    [
      'Average call',
      duration(totals.duration_seconds.avg === null ? null : Math.round(totals.duration_seconds.avg)),
    ],
    ['Caller waited (p50 / p95)', `${ms(latency.end_to_end_ms.p50)} / ${ms(latency.end_to_end_ms.p95)}`],
    ['Transfers', String(transfers.count)],
    ['Cost', cost(totals.cost)],
  ];
  return (
    <Panel title="In these days">
      <dl class="grid headlines">
        {figures.map(([label, value]) => (
          <div class="figure" key={label}>
            <dt class="figure-label">{label}</dt>
            <dd class="figure-value">{value}</dd>
          </div>
        ))}
      </dl>
    </Panel>
  );
}
