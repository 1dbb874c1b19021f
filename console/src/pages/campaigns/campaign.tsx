/**
 * One campaign's page (`/campaigns/:id`): what it is, the moves its status allows (start, pause,
 * stop; the API's refusal shown when it says no), its live progress, its contacts and their import,
 * a preview of its templates, its schedule, and its executions. The live feed drives the rest: when
 * the progress changes, the campaign, its contacts and executions are read again.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link } from '../../lib/router.js';
import { Button, FormError } from '../../ui/form.js';
import { Loading, Page, Panel, when } from '../../ui/page.js';
import { ContactsImport } from './import.js';
import { ContactsList, ExecutionsList } from './lists.js';
import { type Campaign, canMove, type Move, typeLabel } from './model.js';
import { ProgressBar, useLiveProgress } from './progress.js';
import { Schedule } from './schedule.js';
import { TemplatePreview } from './template-preview.js';

const MOVE_LABELS: Record<Move, string> = { start: 'Start', pause: 'Pause', stop: 'Stop' };
const MOVE_DONE: Record<Move, string> = { start: 'Started.', pause: 'Paused.', stop: 'Stopped.' };
const MOVE_PATHS = {
  start: '/api/v1/campaigns/{campaign_id}/start',
  pause: '/api/v1/campaigns/{campaign_id}/pause',
  stop: '/api/v1/campaigns/{campaign_id}/stop',
} as const;

function Moves(props: { campaign: Campaign; onMoved(): void }) {
  const [done, setDone] = useState<string | undefined>();
  const [busy, setBusy] = useState<Move | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const run = async (move: Move) => {
    if (move === 'stop' && !confirm('Stop the campaign? Waiting contacts are skipped; it cannot be resumed.'))
      return;
    setDone(undefined);
    setError(undefined);
    setBusy(move);
    try {
      await ok(api.POST(MOVE_PATHS[move], { params: { path: { campaign_id: props.campaign.id } } }));
      setDone(MOVE_DONE[move]);
      props.onMoved();
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
    } finally {
      setBusy(undefined);
    }
  };
  return (
    <div class="campaign-moves">
      <div class="actions">
        {(['start', 'pause', 'stop'] as const).map((move) => (
          <Button
            key={move}
            kind={move === 'start' ? 'primary' : move === 'stop' ? 'danger' : 'plain'}
            disabled={!canMove(move, props.campaign.status) || (busy !== undefined && busy !== move)}
            busy={busy === move}
            onClick={() => void run(move)}
          >
            {move === 'start' && props.campaign.status === 'paused' ? 'Resume' : MOVE_LABELS[move]}
          </Button>
        ))}
      </div>
      <FormError error={error} />
      {done ? <p role="status">{done}</p> : null}
    </div>
  );
}

function Summary(props: { campaign: Campaign }) {
  const c = props.campaign;
  return (
    <dl class="facts">
      <div>
        <dt>Status</dt>
        <dd>
          <span class={`tag status-${c.status}`}>{c.status}</span>
          {c.failure_reason ? ` — ${c.failure_reason}` : ''}
        </dd>
      </div>
      <div>
        <dt>Type</dt>
        <dd>{typeLabel(c.campaign_type)}</dd>
      </div>
      <div>
        <dt>Assistant</dt>
        <dd>{c.assistant_name ?? '—'}</dd>
      </div>
      <div>
        <dt>Attempts</dt>
        <dd>
          up to {c.max_attempts}, {c.retry_delay_minutes} min apart, {c.concurrency_limit} at once
        </dd>
      </div>
      <div>
        <dt>Started</dt>
        <dd>{when(c.started_at)}</dd>
      </div>
      <div>
        <dt>Finished</dt>
        <dd>{when(c.completed_at)}</dd>
      </div>
    </dl>
  );
}

function CampaignView(props: { campaign: Campaign; reload(): void }) {
  const { campaign } = props;
  const live = useLiveProgress(campaign.id);
  const [round, setRound] = useState(0);
  const stamp = live.progress?.metrics.last_updated;
  const liveStatus = live.progress?.status;
  useEffect(() => {
    if (stamp) setRound((n) => n + 1);
  }, [stamp]);
  // The page's own copy follows the feed's status (a run that completes, a pause from elsewhere).
  useEffect(() => {
    if (liveStatus && liveStatus !== campaign.status) props.reload();
  }, [liveStatus]);
  const editable = ['draft', 'scheduled', 'paused'].includes(campaign.status);
  return (
    <>
      <Summary campaign={campaign} />
      <Moves campaign={campaign} onMoved={props.reload} />
      <Panel title="Progress" id="progress">
        {live.progress ? (
          <ProgressBar progress={live.progress} feed={live.feed} />
        ) : live.error ? (
          <p class="form-error" role="alert">
            {live.error}
          </p>
        ) : (
          <p class="muted">Connecting…</p>
        )}
      </Panel>
      <Panel title="Import contacts" id="import">
        {editable ? (
          <ContactsImport campaignId={campaign.id} onImported={() => setRound((n) => n + 1)} />
        ) : (
          <p class="muted">Contacts can be added while the campaign is a draft, scheduled or paused.</p>
        )}
      </Panel>
      <Panel title="Contacts" id="contacts">
        <ContactsList campaignId={campaign.id} round={round} />
      </Panel>
      <Panel title="Template preview" id="templates">
        <TemplatePreview campaign={campaign} />
      </Panel>
      <Panel title="Schedule" id="schedule">
        <Schedule campaign={campaign} onChanged={props.reload} />
      </Panel>
      <Panel title="Executions" id="executions">
        <ExecutionsList campaignId={campaign.id} round={round} />
      </Panel>
    </>
  );
}

export function CampaignPage(props: { params: Record<string, string> }) {
  const id = Number(props.params.id);
  const campaign = useLoad(
    () => ok(api.GET('/api/v1/campaigns/{campaign_id}', { params: { path: { campaign_id: id } } })),
    [id],
  );
  return (
    <Page title={campaign.data?.name ?? (campaign.error ? 'Campaign not found' : 'Campaign')}>
      <p>
        <Link href="/campaigns">All campaigns</Link>
      </p>
      <Loading loaded={campaign}>{(c) => <CampaignView campaign={c} reload={campaign.reload} />}</Loading>
    </Page>
  );
}
