/**
 * GET /api/v1/campaigns/{id}/executions and /progress: how a campaign is going, for polling clients.
 * The live equivalent is the WebSocket in progress-socket.ts.
 */

import { Type } from 'typebox';
import { access } from '../../../http/access.js';
import { principalOf } from '../../../http/auth.js';
import { PageQuery, PaginationOut, pageOf, paginationView } from '../../../http/pagination.js';
import { errors } from '../../../http/responses.js';
import { IdParam } from '../../../http/schemas.js';
import type { App } from '../../../http/types.js';
import type { CampaignProgressService } from './service.js';
import { ExecutionOut, executionView, ProgressOut } from './views.js';

const tags = ['campaigns'];

export function campaignProgressRoutes(app: App, progress: CampaignProgressService): void {
  const config = { access: access.area('campaigns') };
  const params = IdParam('campaign_id');

  app.get(
    '/api/v1/campaigns/:campaign_id/executions',
    {
      config,
      schema: {
        operationId: 'listCampaignExecutions',
        tags,
        summary: "The campaign's executions (one per attempt at a contact), newest first",
        params,
        querystring: Type.Object(PageQuery),
        response: {
          200: Type.Object({ executions: Type.Array(ExecutionOut), pagination: PaginationOut }),
          ...errors({ 404: 'Campaign not found in your organization' }),
        },
      },
    },
    async (request) => {
      const page = pageOf(request.query);
      const { rows, total } = await progress.executions(
        principalOf(request),
        request.params.campaign_id,
        page,
      );
      return { executions: rows.map(executionView), pagination: paginationView(page, total) };
    },
  );

  app.get(
    '/api/v1/campaigns/:campaign_id/progress',
    {
      config,
      schema: {
        operationId: 'getCampaignProgress',
        tags,
        summary: 'Contacts by status, metrics, cost estimate and the latest executions',
        description:
          'Live: the WebSocket /ws/campaigns/{campaign_id}/progress sends the same object on every change.',
        params,
        response: { 200: ProgressOut, ...errors({ 404: 'Campaign not found in your organization' }) },
      },
    },
    async (request) => progress.progress(principalOf(request), request.params.campaign_id),
  );
}
