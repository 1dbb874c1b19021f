/**
 * One call (`/calls/:id`): its facts, the recording, the transcript, the latency waterfall of its
 * turns, what happened during it, and its analysis; hanging up a call under way, deleting one that
 * ended (admins; the API refuses the others and the page shows why). Another organization's call, or
 * one deleted, is "not found".
 */
import { useState } from 'preact/hooks';
import { ApiError, api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, navigate, type RouteParams } from '../../lib/router.js';
import { Button, FormError } from '../../ui/form.js';
import { Loading, Page, Panel, when } from '../../ui/page.js';
import {
  answeredBy,
  type Call,
  cost,
  directionLabel,
  duration,
  endedReason,
  isLive,
  numbers,
} from './call-facts.js';
import { useAssistantNames } from './call-filters.js';
import { AnalysisFacts, Events, Transcript } from './call-parts.js';
import { Waterfall } from './waterfall.js';

const path = (id: number) => ({ params: { path: { call_id: id } } });

function Facts(props: { call: Call; assistant: string }) {
  const { call } = props;
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd>
        <span class="tag">{call.status}</span>
      </dd>
      <dt>Direction</dt>
      <dd>{directionLabel(call)}</dd>
      <dt>From → to</dt>
      <dd class="mono">{call.call_meta.web ? 'Web call (a browser)' : numbers(call)}</dd>
      <dt>Assistant</dt>
      <dd>{props.assistant}</dd>
      <dt>Started</dt>
      <dd>{when(call.started_at ?? call.created_at)}</dd>
      <dt>Ended</dt>
      <dd>{when(call.ended_at)}</dd>
      <dt>Duration</dt>
      <dd>{duration(call.duration)}</dd>
      <dt>Ended because</dt>
      <dd>{endedReason(call)}</dd>
      <dt>Answered by</dt>
      <dd>{answeredBy(call)}</dd>
      <dt>Cost</dt>
      <dd>{cost(call.cost)}</dd>
    </dl>
  );
}

function Recording(props: { call: Call }) {
  const { recording } = props.call;
  if (!recording) return <p class="muted">This call was not recorded.</p>;
  if (recording.status === 'failed') return <p>The recording failed.</p>;
  if (recording.status === 'recording') return <p>Recording… the file is ready when the call ends.</p>;
  return (
    // biome-ignore lint/a11y/useMediaCaption: a phone call's audio has no captions; its transcript is on this page.
    <audio controls preload="none" src={recording.url} aria-label="Recording of the call" />
  );
}

function Actions(props: { call: Call; onChanged(): void }) {
  const { call } = props;
  const [error, setError] = useState<Error | undefined>();
  const [busy, setBusy] = useState(false);
  const act = async (action: () => Promise<void>) => {
    setError(undefined);
    setBusy(true);
    await action().catch(setError);
    setBusy(false);
  };
  return (
    <>
      <FormError error={error} />
      {isLive(call) ? (
        <Button
          kind="danger"
          busy={busy}
          onClick={() =>
            act(async () => {
              await ok(api.POST('/api/v1/calls/{call_id}/end', path(call.id)));
              props.onChanged();
            })
          }
        >
          End call
        </Button>
      ) : (
        <Button
          kind="danger"
          busy={busy}
          onClick={() =>
            act(async () => {
              if (!confirm('Delete this call, with its transcript, turns, events and recording?')) return;
              await ok(api.DELETE('/api/v1/calls/{call_id}', path(call.id)));
              navigate('/calls');
            })
          }
        >
          Delete
        </Button>
      )}
    </>
  );
}

/** The call's other parts, each loaded on its own so a slow one does not hold the others back. */
function CallDetails(props: { id: number }) {
  const { id } = props;
  const transcript = useLoad(() => ok(api.GET('/api/v1/calls/{call_id}/transcript', path(id))), [id]);
  const turns = useLoad(() => ok(api.GET('/api/v1/calls/{call_id}/turns', path(id))), [id]);
  const events = useLoad(
    () =>
      ok(
        api.GET('/api/v1/calls/{call_id}/events', {
          params: { path: { call_id: id }, query: { limit: 1000 } },
        }),
      ),
    [id],
  );
  return (
    <>
      <Panel title="Transcript">
        <Loading loaded={transcript}>{(segments) => <Transcript segments={segments} />}</Loading>
      </Panel>
      <Panel title="Latency of each turn">
        <Loading loaded={turns}>{(list) => <Waterfall turns={list} />}</Loading>
      </Panel>
      <Panel title="What happened">
        <Loading loaded={events}>{(list) => <Events events={list} />}</Loading>
      </Panel>
    </>
  );
}

export function CallPage(props: { params: RouteParams }) {
  const id = Number(props.params.id);
  const call = useLoad(() => ok(api.GET('/api/v1/calls/{call_id}', path(id))), [id]);
  const assistants = useAssistantNames();
  if (call.error instanceof ApiError && (call.error.status === 404 || call.error.status === 422))
    return (
      <Page title="Call not found">
        <p>
          There is no call {props.params.id} in this organization. <Link href="/calls">All calls</Link>
        </p>
      </Page>
    );
  return (
    <Page title={`Call ${props.params.id}`}>
      <p>
        <Link href="/calls">← All calls</Link>
      </p>
      <Loading loaded={call}>
        {(found) => (
          <>
            <Panel title="About">
              <Facts
                call={found}
                assistant={
                  found.assistant_id === null
                    ? '—'
                    : (assistants.data?.get(found.assistant_id) ?? `#${found.assistant_id}`)
                }
              />
              <div class="actions call-actions">
                <Actions call={found} onChanged={call.reload} />
              </div>
            </Panel>
            <Panel title="Recording">
              <Recording call={found} />
            </Panel>
            <CallDetails id={found.id} />
            <Panel title="Analysis">
              <AnalysisFacts analysis={found.analysis} />
            </Panel>
          </>
        )}
      </Loading>
    </Page>
  );
}
