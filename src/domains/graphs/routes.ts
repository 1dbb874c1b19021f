/**
 * /api/v1/assistant-graphs: graphs, their structure, and the dry run of their routing. A bad body
 * answers 400 on every graph write (platform-api.md Errors: create graph, update structure);
 * an out-of-range query parameter of the list answers 422. Sessions and analytics routes live in
 * session-routes of their own.
 */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { SkipLimitQuery, skipLimitOf } from '../../http/pagination.js';
import { errors, noContent } from '../../http/responses.js';
import { Id, IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { Nullable, OpenObject } from '../../lib/schema.js';
import { GRAPH_EXAMPLE } from './example.js';
import { DEFAULT_SECONDS_PER_TURN, type GraphService } from './service.js';
import {
  ConditionLogic,
  ConditionType,
  GraphOut,
  graphListView,
  graphView,
  NodeType,
  Position,
} from './views.js';

const tags = ['assistant-graphs'];
export const MAX_NODES = 200;
export const MAX_EDGES = 2000;

const NodeIn = Type.Object(
  {
    assistant_id: Id,
    node_type: NodeType,
    position: Type.Optional(Position),
    configuration: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description: 'Per-node settings; an escalation node needs transfer_number (E.164)',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

const NodeIndex = Type.Integer({
  minimum: 0,
  maximum: MAX_NODES - 1,
  description: '0-based index into the nodes array of this request',
});
const Condition = Nullable(Type.String({ maxLength: 2000 }));

const EdgeIn = Type.Object(
  {
    from_node_id: NodeIndex,
    to_node_id: NodeIndex,
    condition_type: ConditionType,
    intent_pattern: Type.Optional(Condition),
    natural_language_trigger: Type.Optional(Condition),
    mathematical_expression: Type.Optional(Condition),
    state_variable_condition: Type.Optional(Condition),
    condition_logic: Type.Optional(ConditionLogic),
    priority: Type.Optional(
      Type.Integer({
        minimum: -1_000_000,
        maximum: 1_000_000,
        description: 'Lower is tried first (default 0)',
      }),
    ),
    is_active: Type.Optional(Type.Boolean()),
    handoff_sentence: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  },
  { additionalProperties: false },
);

const Nodes = Type.Array(NodeIn, { maxItems: MAX_NODES });
const Edges = Type.Array(EdgeIn, { maxItems: MAX_EDGES });

const Metadata = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Nullable(Type.String({ maxLength: 2000 })),
  is_active: Type.Boolean(),
  configuration: OpenObject,
};

const GraphCreate = Type.Object(
  {
    name: Metadata.name,
    description: Type.Optional(Metadata.description),
    is_active: Type.Optional(Metadata.is_active),
    configuration: Type.Optional(Metadata.configuration),
    nodes: Nodes,
    edges: Type.Optional(Edges),
  },
  { additionalProperties: false, title: 'GraphCreate', examples: [GRAPH_EXAMPLE] },
);

const GraphUpdate = Type.Partial(Type.Object(Metadata), {
  additionalProperties: false,
  minProperties: 1,
  title: 'GraphUpdate',
});

const StructureBody = Type.Object(
  { nodes: Nodes, edges: Edges },
  { additionalProperties: false, title: 'GraphStructure' },
);

const SimulateBody = Type.Object(
  {
    utterances: Type.Array(
      Type.Union([
        Type.String({ maxLength: 10_000 }),
        Type.Object(
          {
            text: Type.String({ maxLength: 10_000 }),
            context_update: Type.Optional(
              Type.Object(
                {},
                {
                  additionalProperties: true,
                  description:
                    'Merged into the context before this utterance is routed, as the context tool does',
                },
              ),
            ),
          },
          { additionalProperties: false },
        ),
      ]),
      {
        maxItems: 1000,
        description: 'Final user utterances in order; {text, context_update} also updates the context first',
      },
    ),
    context: Type.Optional(OpenObject),
    call_duration_per_turn: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 86_400,
        description: `Seconds the simulated clock advances per turn (default ${DEFAULT_SECONDS_PER_TURN})`,
      }),
    ),
    assume_natural_language: Type.Optional(
      Type.Boolean({
        description:
          'No language model runs in a simulation: natural_language conditions are this value (default false)',
      }),
    ),
  },
  { additionalProperties: false },
);

const Step = Type.Object({
  node_id: Type.Integer(),
  node_type: Nullable(Type.String()),
  assistant_id: Nullable(Type.Integer()),
  assistant_name: Nullable(Type.String()),
});

const SimulateOut = Type.Object(
  {
    path_taken: Type.Array(Step, { description: 'The entry node, then every node entered' }),
    transitions: Type.Array(
      Type.Object({
        turn: Type.Integer({ description: '1-based index of the utterance that caused it' }),
        utterance: Type.String(),
        from_node_id: Type.Integer(),
        to_node_id: Type.Integer(),
        edge_id: Type.Integer(),
        reason: Type.String(),
        handoff_sentence: Nullable(Type.String()),
        call_duration: Type.Number({ description: 'Simulated seconds since the start' }),
      }),
    ),
    final_context: OpenObject,
    final_node_id: Type.Integer(),
    turns_processed: Type.Integer({
      description: 'Utterances used; the rest are ignored once the session ends',
    }),
    ended: Nullable(Type.Union([Type.Literal('exit'), Type.Literal('escalation')])),
    transfer_number: Nullable(Type.String()),
  },
  { title: 'GraphSimulation' },
);

export function graphRoutes(app: App, graphs: GraphService): void {
  const config = { access: access.area('graphs') };
  // Bodies answer 400 when invalid (platform-api.md Errors), path ids likewise on these routes.
  const write = { ...config, validationStatus: 400 as const };
  const params = IdParam('graph_id');

  app.post(
    '/api/v1/assistant-graphs',
    {
      config: write,
      schema: {
        operationId: 'createGraph',
        tags,
        summary: 'Create a graph with its nodes and edges (edge ends are indexes into nodes)',
        description:
          '400: invalid body, not exactly one entry node, an edge end that is no index of nodes, a missing or ' +
          'unparsable condition, an escalation node without an E.164 transfer_number, or an assistant not in ' +
          'your organization.',
        body: GraphCreate,
        response: { 201: GraphOut },
      },
    },
    async (request, reply) =>
      reply.code(201).send(graphView(await graphs.create(principalOf(request), request.body))),
  );

  app.get(
    '/api/v1/assistant-graphs',
    {
      config,
      schema: {
        operationId: 'listGraphs',
        tags,
        summary: "The organization's graphs without nodes and edges (total in X-Total-Count)",
        querystring: Type.Object({
          ...SkipLimitQuery,
          active_only: Type.Optional(Type.Boolean({ default: true })),
        }),
        response: { 200: Type.Array(GraphOut) },
      },
    },
    async (request, reply) => {
      const { rows, total } = await graphs.list(principalOf(request), {
        ...skipLimitOf(request.query),
        activeOnly: request.query.active_only ?? true,
      });
      reply.header('X-Total-Count', total);
      return rows.map(graphListView);
    },
  );

  app.get(
    '/api/v1/assistant-graphs/:graph_id',
    {
      config,
      schema: {
        operationId: 'getGraph',
        tags,
        summary: 'One graph with its nodes (and their assistants) and edges',
        params,
        response: { 200: GraphOut, ...errors({ 404: 'Graph not found in your organization' }) },
      },
    },
    async (request) => graphView(await graphs.get(principalOf(request), request.params.graph_id)),
  );

  app.put(
    '/api/v1/assistant-graphs/:graph_id',
    {
      config: write,
      schema: {
        operationId: 'updateGraph',
        tags,
        summary: 'Change the metadata named (name, description, is_active, configuration)',
        params,
        body: GraphUpdate,
        response: { 200: GraphOut, ...errors({ 404: 'Graph not found in your organization' }) },
      },
    },
    async (request) =>
      graphView(await graphs.update(principalOf(request), request.params.graph_id, request.body)),
  );

  app.put(
    '/api/v1/assistant-graphs/:graph_id/structure',
    {
      config: write,
      schema: {
        operationId: 'replaceGraphStructure',
        tags,
        summary: 'Replace every node and edge at once (edge ends are indexes into nodes)',
        description:
          'All of the new structure is stored or none of it. 400 for the rules of creation; nodes and edges are both required.',
        params,
        body: StructureBody,
        response: { 200: GraphOut, ...errors({ 404: 'Graph not found in your organization' }) },
      },
    },
    async (request) =>
      graphView(await graphs.replaceStructure(principalOf(request), request.params.graph_id, request.body)),
  );

  app.delete(
    '/api/v1/assistant-graphs/:graph_id',
    {
      config,
      schema: {
        operationId: 'deleteGraph',
        tags,
        summary: 'Delete a graph and its sessions; 409 while a phone number routes to it',
        params,
        response: {
          204: Type.Null(),
          ...errors({
            404: 'Graph not found in your organization',
            409: 'A phone number routes to the graph',
          }),
        },
      },
    },
    async (request, reply) => {
      await graphs.remove(principalOf(request), request.params.graph_id);
      return noContent(reply);
    },
  );

  app.post(
    '/api/v1/assistant-graphs/:graph_id/simulate',
    {
      config: write,
      schema: {
        operationId: 'simulateGraph',
        tags,
        summary: 'Run the routing over utterances from the entry node, without a call; records nothing',
        params,
        body: SimulateBody,
        response: { 200: SimulateOut, ...errors({ 404: 'Graph not found in your organization' }) },
      },
    },
    async (request) => graphs.simulate(principalOf(request), request.params.graph_id, request.body),
  );
}
