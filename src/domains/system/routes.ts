/** Operational endpoints: health, Prometheus metrics, the OpenAPI document. */
import type { Registry } from 'prom-client';
import { Type } from 'typebox';
import type { Database } from '../../db/client.js';
import { access } from '../../http/access.js';
import { errors } from '../../http/responses.js';
import type { App } from '../../http/types.js';
import { safeEqual } from '../../lib/crypto.js';
import type { JobQueue } from '../../queue/queue.js';
import { unauthorized } from '../errors.js';

const tags = ['system'];

export function systemRoutes(
  app: App,
  deps: {
    database: Database;
    queue: JobQueue;
    metrics: Registry;
    metricsToken: string | undefined;
    version: string;
  },
): void {
  app.get(
    '/health',
    {
      config: { access: access.public },
      schema: {
        operationId: 'getHealth',
        tags,
        summary: 'Liveness and readiness: 200 when the database and the job queue answer, 503 otherwise',
        response: {
          '2xx': Type.Object({
            status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
            database: Type.String(),
            queue: Type.String(),
            version: Type.String(),
          }),
          503: Type.Object(
            {
              status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
              database: Type.String(),
              queue: Type.String(),
              version: Type.String(),
            },
            { description: 'The database or the job queue is not answering' },
          ),
        },
      },
    },
    async (_request, reply) => {
      const database = await deps.database
        .executeSql('select 1')
        .then(() => 'ok')
        .catch(() => 'unavailable');
      const queue = deps.queue.running ? 'ok' : 'stopped';
      const healthy = database === 'ok' && queue === 'ok';
      return reply
        .code(healthy ? 200 : 503)
        .send({ status: healthy ? 'ok' : 'degraded', database, queue, version: deps.version });
    },
  );

  app.get(
    '/metrics',
    {
      config: { access: access.public },
      schema: {
        operationId: 'getMetrics',
        tags,
        summary: 'Prometheus metrics (bearer METRICS_TOKEN when configured)',
        response: {
          200: {
            description: 'The metrics in the Prometheus text format',
            content: { 'text/plain': { schema: Type.String() } },
          },
          ...errors({ 401: 'METRICS_TOKEN is configured and the bearer token is not it' }),
        },
      },
      onRequest: async (request) => {
        if (!deps.metricsToken) return;
        const presented = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
        if (!safeEqual(presented, deps.metricsToken)) throw unauthorized('Metrics token required');
      },
    },
    async (_request, reply) => reply.type(deps.metrics.contentType).send(await deps.metrics.metrics()),
  );

  app.get(
    '/openapi.json',
    {
      config: { access: access.public },
      schema: { tags, summary: 'This API as an OpenAPI 3.1 document', hide: true },
    },
    async () => app.swagger(),
  );
}
