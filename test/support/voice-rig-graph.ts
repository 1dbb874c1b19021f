/**
 * Puts a voice rig organization's number on an assistant graph, through the API as a user would:
 * more assistants (each with its own prompt and voice), the graph (POST /api/v1/assistant-graphs,
 * nodes naming assistants by key, edges by node index), and the number routed to it
 * (PUT /api/v1/phone-numbers/{id} with `graph_id`). Used from a call's `prepare` hook, so the call
 * placed next is answered by the graph's entry assistant and walks the graph.
 */
import { expectStatus } from './factories.js';
import type { TestPlatform } from './harness.js';
import type { RigOrganization } from './voice-rig-vendors.js';

export interface RigGraph {
  id: number;
  /** The stored node ids, in the order the nodes were given. */
  nodeIds: number[];
  edgeIds: number[];
  /** Assistant ids by the keys given (`entry`: the organization's own assistant). */
  assistants: Record<string, number>;
}

export interface RigGraphSpec {
  /** Assistants to create, by key, with their settings (POST /api/v1/assistants body, less the name). */
  assistants: Record<string, Record<string, unknown>>;
  /** `assistant`: a key of `assistants`, or `entry` for the organization's own assistant. */
  nodes: Array<{ assistant: string; node_type: string; configuration?: Record<string, unknown> }>;
  /** As POST /api/v1/assistant-graphs takes them (`from_node_id`, `to_node_id`: node indexes). */
  edges: Array<Record<string, unknown>>;
}

export async function routeNumberToGraph(
  t: TestPlatform,
  org: RigOrganization,
  spec: RigGraphSpec,
): Promise<RigGraph> {
  const headers = org.admin.headers;
  const assistants: Record<string, number> = { entry: org.assistantId };
  for (const [key, settings] of Object.entries(spec.assistants)) {
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers,
      payload: { name: `${key} ${org.assistantId}`, ...settings },
    });
    expectStatus(created, 201);
    assistants[key] = created.json().id;
  }
  const graph = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistant-graphs',
    headers,
    payload: {
      name: `Graph of ${org.number}`,
      nodes: spec.nodes.map(({ assistant, ...node }) => ({ assistant_id: assistants[assistant], ...node })),
      edges: spec.edges,
    },
  });
  expectStatus(graph, 201);
  const body = graph.json() as { id: number; nodes: Array<{ id: number }>; edges: Array<{ id: number }> };
  const numbers = await t.app.inject({ method: 'GET', url: '/api/v1/phone-numbers', headers });
  expectStatus(numbers, 200);
  const number = (numbers.json() as Array<{ id: number; phone_number: string }>).find(
    (row) => row.phone_number === org.number,
  );
  if (!number) throw new Error(`the organization has no number ${org.number}`);
  const routed = await t.app.inject({
    method: 'PUT',
    url: `/api/v1/phone-numbers/${number.id}`,
    headers,
    payload: { graph_id: body.id },
  });
  expectStatus(routed, 200);
  return {
    id: body.id,
    nodeIds: body.nodes.map((node) => node.id),
    edgeIds: body.edges.map((edge) => edge.id),
    assistants,
  };
}
