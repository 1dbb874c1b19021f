/**
 * A campaign's live progress: the WebSocket `/ws/campaigns/{id}/progress` (the session cookie
 * identifies the page; no token), reopened when it closes. While it is closed the page polls
 * `GET …/progress` instead, so a proxy that refuses WebSockets still leaves a moving bar. The bar
 * stacks completed, failed, in progress and pending contacts, with the numbers written out and
 * announced as they change.
 */
import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../../clients/typescript/src/index.js';
import { api, ok } from '../../lib/api.js';

export type Progress = components['schemas']['CampaignProgress'];
export type Feed = 'connecting' | 'live' | 'polling';

const POLL_MS = 3000;
const MAX_RETRY_MS = 15_000;

function socketUrl(campaignId: number): string {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  return `${scheme}://${location.host}/ws/campaigns/${campaignId}/progress`;
}

/** The latest progress and how it arrives; `error` when the campaign cannot be watched at all. */
export function useLiveProgress(campaignId: number) {
  const [progress, setProgress] = useState<Progress | undefined>();
  const [feed, setFeed] = useState<Feed>('connecting');
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    let socket: WebSocket | undefined;
    let poller: ReturnType<typeof setInterval> | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let retryMs = 1000;
    let ended = false;

    const poll = () =>
      ok(
        api.GET('/api/v1/campaigns/{campaign_id}/progress', {
          params: { path: { campaign_id: campaignId } },
        }),
      ).then(
        (answer) => !ended && setProgress(answer),
        (caught: Error) => !ended && setError(caught.message),
      );
    const startPolling = () => {
      if (poller || ended) return;
      setFeed('polling');
      void poll();
      poller = setInterval(poll, POLL_MS);
    };
    const stopPolling = () => {
      if (poller) clearInterval(poller);
      poller = undefined;
    };
    const connect = () => {
      if (ended) return;
      socket = new WebSocket(socketUrl(campaignId));
      socket.onmessage = (event) => {
        const message = JSON.parse(String(event.data)) as { type: string; data?: Progress };
        if ((message.type === 'initial_progress' || message.type === 'progress_update') && message.data) {
          stopPolling();
          retryMs = 1000;
          setFeed('live');
          setError(undefined);
          setProgress(message.data);
        }
      };
      socket.onclose = (event) => {
        if (ended) return;
        // 4404 and the like: the REST route would refuse too; polling shows its words.
        startPolling();
        if (event.code >= 4000 && event.code !== 4429) return;
        retry = setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      };
    };
    connect();
    return () => {
      ended = true;
      stopPolling();
      if (retry) clearTimeout(retry);
      socket?.close();
    };
  }, [campaignId]);
  return { progress, feed, error };
}

const PARTS = [
  { key: 'completed', label: 'Completed' },
  { key: 'failed', label: 'Failed' },
  { key: 'processing', label: 'In progress' },
  { key: 'pending', label: 'Pending' },
] as const;

export function ProgressBar(props: { progress: Progress; feed: Feed }) {
  const counts = props.progress.progress;
  const total = counts.total_contacts;
  const skipped = Math.max(0, total - counts.completed - counts.failed - counts.processing - counts.pending);
  const percent = Math.round(counts.progress_percentage);
  return (
    <div class="campaign-progress">
      <div
        class="stacked-bar"
        role="progressbar"
        aria-label="Contacts done"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
        aria-valuetext={`${percent}% done`}
      >
        {total > 0
          ? PARTS.map((part) =>
              counts[part.key] > 0 ? (
                <span
                  key={part.key}
                  class={`segment ${part.key}`}
                  style={{ width: `${(100 * counts[part.key]) / total}%` }}
                />
              ) : null,
            )
          : null}
      </div>
      <dl class="progress-counts" aria-live="polite">
        <div>
          <dt>Done</dt>
          <dd>{percent}%</dd>
        </div>
        {PARTS.map((part) => (
          <div key={part.key} class={part.key}>
            <dt>{part.label}</dt>
            <dd>{counts[part.key]}</dd>
          </div>
        ))}
        {skipped > 0 ? (
          <div>
            <dt>Skipped</dt>
            <dd>{skipped}</dd>
          </div>
        ) : null}
        <div>
          <dt>Status</dt>
          <dd>{props.progress.status}</dd>
        </div>
      </dl>
      <p class="muted">
        {props.feed === 'live'
          ? 'Live: updates as attempts finish.'
          : props.feed === 'polling'
            ? 'The live connection is closed: checking every few seconds, and reconnecting.'
            : 'Connecting…'}
      </p>
    </div>
  );
}
