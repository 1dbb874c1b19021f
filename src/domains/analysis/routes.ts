/** GET /api/v1/calls/{call_id}/analysis: what the after-call analysis found (or that it is pending). */
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors } from '../../http/responses.js';
import { IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import type { AnalysisService } from './service.js';
import { AnalysisOut, analysisView } from './views.js';

export function analysisRoutes(app: App, analysis: AnalysisService): void {
  app.get(
    '/api/v1/calls/:call_id/analysis',
    {
      config: { access: access.area('calls') },
      schema: {
        tags: ['calls'],
        operationId: 'getCallAnalysis',
        summary: "The call's summary, sentiment and structured data, worked out after it ended",
        description:
          'The analysis exists once the call has ended: `pending` for a few seconds (the job waits for ' +
          'the transcript’s last words), then `completed`, `failed` (with `error`), or `skipped` when ' +
          'there was no conversation. 404 while the call is still under way.',
        params: IdParam('call_id'),
        response: {
          200: AnalysisOut,
          ...errors({ 404: 'Call not found in your organization, or not ended yet' }),
        },
      },
    },
    async (request) => analysisView(await analysis.get(principalOf(request), request.params.call_id)),
  );
}
