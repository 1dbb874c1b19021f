/**
 * How real conversations walked the graph (GET …/analytics): sessions, transitions and the mean
 * session length over a period, each node's sessions, mean time and exit rate, and the most used
 * moves. The per-node session counts also ride on the drawing (the page passes them on).
 */
import type { Loaded } from '../../lib/load.js';
import { SelectField } from '../../ui/form.js';
import { Empty, Loading } from '../../ui/page.js';
import { type Analytics, nodeKey } from './draft.js';

const PERIODS = [7, 30, 90, 365].map((days) => ({ value: String(days), label: `Last ${days} days` }));

/** Sessions that entered each node, by the drawing's node keys. */
export function countsOf(analytics: Analytics | undefined): Map<string, number> | undefined {
  if (!analytics) return undefined;
  return new Map(
    Object.entries(analytics.node_usage_stats).map(([id, stats]) => [
      nodeKey(Number(id)),
      stats.sessions_started,
    ]),
  );
}

const seconds = (value: number) => `${value.toFixed(1)} s`;

export function AnalyticsPanel(props: {
  loaded: Loaded<Analytics>;
  days: number;
  onDays(days: number): void;
}) {
  return (
    <>
      <SelectField
        label="Period"
        value={String(props.days)}
        onValue={(value) => props.onDays(Number(value))}
        options={PERIODS}
      />
      <Loading loaded={props.loaded}>
        {(analytics) => (
          <>
            <div class="row graph-figures">
              <p class="figure">
                <span class="figure-value">{analytics.total_sessions}</span>
                <span class="figure-label">sessions</span>
              </p>
              <p class="figure">
                <span class="figure-value">{analytics.total_transitions}</span>
                <span class="figure-label">transitions</span>
              </p>
              <p class="figure">
                <span class="figure-value">{seconds(analytics.avg_session_duration)}</span>
                <span class="figure-label">mean session (ended ones)</span>
              </p>
            </div>
            {analytics.total_sessions === 0 ? (
              <Empty>No conversation went through this graph in the period yet.</Empty>
            ) : null}
            <table class="graph-analytics">
              <caption>Nodes</caption>
              <thead>
                <tr>
                  <th scope="col">Node</th>
                  <th scope="col" class="number">
                    Sessions
                  </th>
                  <th scope="col" class="number">
                    Mean time in node
                  </th>
                  <th scope="col" class="number">
                    Exit rate
                  </th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(analytics.node_usage_stats).map(([id, stats]) => (
                  <tr key={id}>
                    <th scope="row">
                      {stats.node_name} <span class="muted">(id {id})</span>
                    </th>
                    <td class="number">{stats.sessions_started}</td>
                    <td class="number">{seconds(stats.avg_time_in_node)}</td>
                    <td class="number">{(stats.exit_rate * 100).toFixed(1)} %</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {analytics.most_used_transitions.length > 0 ? (
              <table class="graph-analytics">
                <caption>Most used moves</caption>
                <thead>
                  <tr>
                    <th scope="col">From</th>
                    <th scope="col">To</th>
                    <th scope="col" class="number">
                      Count
                    </th>
                    <th scope="col" class="number">
                      Share
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {analytics.most_used_transitions.map((move) => (
                    <tr key={`${move.from_node}>${move.to_node}`}>
                      <td>{move.from_node}</td>
                      <td>{move.to_node}</td>
                      <td class="number">{move.count}</td>
                      <td class="number">{move.percentage.toFixed(1)} %</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : null}
          </>
        )}
      </Loading>
    </>
  );
}
