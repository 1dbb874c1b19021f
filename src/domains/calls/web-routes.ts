/**
 * POST /api/v1/calls/web: start a web call — a person talking to an assistant from a browser. The
 * answer holds the call record, the WebSocket URL the browser streams on (`/web-call/{id}`, described
 * in docs/voice.md, "Talking from a browser") and the single-call token its first message presents.
 */
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors } from '../../http/responses.js';
import { Id } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { OpenObject } from '../../lib/schema.js';
import { CallOut, callView } from './views.js';
import type { WebCallService } from './web-calls.js';

const WebCallBody = Type.Object(
  {
    assistant_id: Id,
    variables: Type.Optional(OpenObject),
  },
  {
    additionalProperties: false,
    title: 'WebCallCreate',
    examples: [{ assistant_id: 7, variables: { name: 'Ada' } }],
  },
);

const WebCallAnswer = Type.Object(
  {
    call: CallOut,
    socket_url: Type.String({ description: 'Where the browser opens its WebSocket (ws: or wss:)' }),
    token: Type.String({
      description: 'Single-call token: the first message on the socket presents it; good for one stream',
    }),
    audio: Type.Object(
      {
        encoding: Type.Literal('pcm_s16le'),
        sample_rate: Type.Literal(16000),
        channels: Type.Literal(1),
      },
      { description: 'The audio both ways, in binary frames' },
    ),
  },
  { title: 'WebCall' },
);

export function webCallRoutes(app: App, webCalls: WebCallService): void {
  app.post(
    '/api/v1/calls/web',
    {
      config: { access: access.area('calls', 'read_write') },
      schema: {
        tags: ['calls'],
        operationId: 'createWebCall',
        summary: 'Start a web call: talk to an assistant from a browser over a WebSocket',
        description:
          'Records the call (provider `web`, direction `inbound`, no phone number) and returns the socket URL ' +
          'and single-call token of its stream. A browser that does not connect within a minute leaves the ' +
          'call `no-answer`. 402 no balance, 404 no such assistant in your organization.',
        body: WebCallBody,
        response: {
          201: WebCallAnswer,
          ...errors(402, { 404: 'Assistant not found in your organization' }),
        },
      },
    },
    async (request, reply) => {
      const created = await webCalls.create(principalOf(request), request.body);
      reply.code(201);
      return {
        call: { ...callView(created.call, null), recording: null },
        socket_url: created.socketUrl,
        token: created.token,
        audio: created.audio,
      };
    },
  );
}
