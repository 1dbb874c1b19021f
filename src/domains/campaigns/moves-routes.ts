/**
 * The campaign moves (decisions §4): start (draft or scheduled → running; paused → running is the
 * resume), pause (running → paused) and stop (any live state → cancelled). Each answers the
 * campaign as it now is; a move the campaign's state does not allow answers 409 and changes nothing.
 */
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors } from '../../http/responses.js';
import { IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import type { CampaignExecutor } from './execution/executor.js';
import type { CampaignService } from './service.js';
import { CampaignOut, campaignView } from './views.js';

const tags = ['campaigns'];

const MOVES = [
  {
    path: 'start',
    summary: 'Start a draft or scheduled campaign now, or resume a paused one',
    description:
      '400 when it could not run (no contacts, no assistant, no number routed to the assistant, no carrier ' +
      'credentials, an SMS campaign without sms_message_template); 402 without balance; 409 when the ' +
      'campaign is running, completed, cancelled or failed.',
  },
  {
    path: 'pause',
    summary: 'Pause a running campaign: no new attempts start, those under way finish',
    description: '409 unless the campaign is running.',
  },
  {
    path: 'stop',
    summary: 'Cancel a campaign: waiting contacts are skipped, attempts under way finish without retries',
    description: '409 when the campaign is completed, cancelled or failed already.',
  },
] as const;

export function campaignMoveRoutes(
  app: App,
  services: { campaigns: CampaignService; executor: CampaignExecutor },
): void {
  const params = IdParam('campaign_id');
  const notFound = 'Campaign not found in your organization';
  const declared = {
    start: {
      operationId: 'startCampaign',
      errors: errors({
        400: 'It could not run: no contacts, no assistant or number for it, no carrier credentials…',
        402: 'Insufficient balance: add credits to run the campaign',
        404: notFound,
        409: 'The campaign is running, completed, cancelled or failed',
      }),
    },
    pause: {
      operationId: 'pauseCampaign',
      errors: errors({ 404: notFound, 409: 'The campaign is not running' }),
    },
    stop: {
      operationId: 'stopCampaign',
      errors: errors({ 404: notFound, 409: 'The campaign is completed, cancelled or failed already' }),
    },
  } as const;
  for (const move of MOVES) {
    app.post(
      `/api/v1/campaigns/:campaign_id/${move.path}`,
      {
        config: { access: access.area('campaigns') },
        schema: {
          operationId: declared[move.path].operationId,
          tags,
          summary: move.summary,
          description: move.description,
          params,
          response: { 200: CampaignOut, ...declared[move.path].errors },
        },
      },
      async (request) => {
        const principal = principalOf(request);
        const id = request.params.campaign_id;
        await services.executor[move.path](principal, id);
        const { row, metrics } = await services.campaigns.get(principal, id);
        return campaignView(row, metrics);
      },
    );
  }
}
