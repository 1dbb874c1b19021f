/**
 * Assistant graphs: POST/GET /api/v1/assistant-graphs, GET/PUT/DELETE /api/v1/assistant-graphs/{id},
 * PUT …/{id}/structure and POST …/{id}/simulate. The response shape (nodes with their assistants'
 * names, edges with stored ids), every 400 rule of a structure, the atomic structure replacement,
 * listing, the dry run of the routing engine, the 409s that protect graphs and assistants in use, and
 * who may (not) touch which graph. The tests share one platform; each creates the users it needs.
 */
import { eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { graphEdges, graphNodes, graphSessions, graphTransitions } from '../src/db/schema/index.js';
import { expectError, type Issue } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const BASE = '/api/v1/assistant-graphs';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const GRAPH_FIELDS = [
  'id',
  'organization_id',
  'name',
  'description',
  'is_active',
  'configuration',
  'nodes',
  'edges',
  'total_nodes',
  'total_edges',
  'created_at',
  'updated_at',
].sort();
const NODE_FIELDS = [
  'id',
  'graph_id',
  'assistant_id',
  'assistant_name',
  'assistant_description',
  'node_type',
  'position',
  'configuration',
  'created_at',
].sort();
const EDGE_FIELDS = [
  'id',
  'graph_id',
  'from_node_id',
  'to_node_id',
  'condition_type',
  'intent_pattern',
  'natural_language_trigger',
  'mathematical_expression',
  'state_variable_condition',
  'condition_logic',
  'priority',
  'is_active',
  'handoff_sentence',
  'description',
  'created_at',
  'updated_at',
].sort();

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;
type Json = Record<string, unknown>;
interface Node extends Json {
  id: number;
  assistant_id: number;
  assistant_name: string;
  node_type: string;
}
interface Edge extends Json {
  id: number;
  from_node_id: number;
  to_node_id: number;
}
interface Graph extends Json {
  id: number;
  name: string;
  nodes: Node[];
  edges: Edge[];
  total_nodes: number;
  total_edges: number;
  updated_at: string;
}

function create(headers: Headers, payload: unknown) {
  return t.app.inject({ method: 'POST', url: BASE, headers, payload: payload as object });
}
function list(headers: Headers, query = '') {
  return t.app.inject({ method: 'GET', url: `${BASE}${query}`, headers });
}
function get(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'GET', url: `${BASE}/${id}`, headers });
}
function update(headers: Headers, id: number | string, payload: unknown) {
  return t.app.inject({ method: 'PUT', url: `${BASE}/${id}`, headers, payload: payload as object });
}
function structure(headers: Headers, id: number | string, payload: unknown) {
  return t.app.inject({
    method: 'PUT',
    url: `${BASE}/${id}/structure`,
    headers,
    payload: payload as object,
  });
}
function remove(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers });
}
function simulate(headers: Headers, id: number | string, payload: unknown) {
  return t.app.inject({
    method: 'POST',
    url: `${BASE}/${id}/simulate`,
    headers,
    payload: payload as object,
  });
}

/** A 400 in the validation envelope with an issue at `loc` whose message matches `msg`. */
function expect400(response: LightMyRequestResponse, loc: Array<string | number>, msg?: RegExp) {
  expect(response.statusCode, response.body).toBe(400);
  const detail = response.json().detail as Issue[];
  expect(Array.isArray(detail), response.body).toBe(true);
  for (const each of detail) expect(Object.keys(each).sort()).toEqual(['loc', 'msg', 'type']);
  const issue = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(loc));
  expect(issue, `no issue at ${JSON.stringify(loc)} in ${response.body}`).toBeDefined();
  if (msg) expect(issue?.msg).toMatch(msg);
}

let serial = 0;
async function createAssistant(
  user: TestUser,
  description: string | null = null,
): Promise<{ id: number; name: string }> {
  serial += 1;
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: `Graph assistant ${serial}`, description },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

function nextNumber(): string {
  serial += 1;
  return `+1415777${String(1000 + serial).padStart(4, '0')}`;
}

interface Cast {
  reception: { id: number; name: string };
  billing: { id: number; name: string };
  goodbye: { id: number; name: string };
}

async function cast(user: TestUser): Promise<Cast> {
  return {
    reception: await createAssistant(user, 'Greets and sorts callers'),
    billing: await createAssistant(user, 'Answers invoices'),
    goodbye: await createAssistant(user),
  };
}

/**
 * reception (entry) → billing on "billing, invoice" (or a natural-language trigger, tried later);
 * reception → human (escalation) on "human, agent"; billing → goodbye (exit) on "bye" or after a
 * minute of call; billing → human when the context says the caller is a VIP.
 */
function supportStructure(c: Cast) {
  return {
    nodes: [
      { assistant_id: c.reception.id, node_type: 'entry', position: { x: 0, y: 0 } },
      { assistant_id: c.billing.id, node_type: 'standard', position: { x: 200, y: 0 } },
      { assistant_id: c.goodbye.id, node_type: 'exit', position: { x: 400, y: 0 } },
      {
        assistant_id: c.reception.id,
        node_type: 'escalation',
        position: { x: 200, y: 200 },
        configuration: { transfer_number: '+1 (415) 555-0100' },
      },
    ],
    edges: [
      {
        from_node_id: 0,
        to_node_id: 1,
        condition_type: 'intent',
        intent_pattern: 'billing, invoice',
        handoff_sentence: 'Let me get you to billing.',
        description: 'Billing questions',
      },
      {
        from_node_id: 0,
        to_node_id: 3,
        condition_type: 'intent',
        intent_pattern: 'human, agent',
        priority: 1,
      },
      {
        from_node_id: 0,
        to_node_id: 1,
        condition_type: 'natural_language',
        natural_language_trigger: 'The caller has a question about money they owe',
        priority: 9,
      },
      { from_node_id: 1, to_node_id: 2, condition_type: 'intent', intent_pattern: 'bye, goodbye' },
      {
        from_node_id: 1,
        to_node_id: 2,
        condition_type: 'mathematical',
        mathematical_expression: 'call_duration >= 60',
        priority: 5,
      },
      {
        from_node_id: 1,
        to_node_id: 3,
        condition_type: 'state_variable',
        state_variable_condition: "customer.tier == 'vip'",
        condition_logic: 'OR',
        priority: 2,
      },
    ],
  };
}

async function createGraph(user: TestUser, c?: Cast, extra: Json = {}): Promise<Graph> {
  const response = await create(user.headers, {
    name: `Support ${++serial}`,
    description: 'Front line',
    ...supportStructure(c ?? (await cast(user))),
    ...extra,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

/** A graph with one entry node and nothing else. */
async function tinyGraph(user: TestUser, extra: Json = {}): Promise<Graph> {
  const assistant = await createAssistant(user);
  const response = await create(user.headers, {
    name: `Tiny ${++serial}`,
    nodes: [{ assistant_id: assistant.id, node_type: 'entry' }],
    ...extra,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function storedCounts(graphId: number) {
  const nodes = await t.database.db.select().from(graphNodes).where(eq(graphNodes.graphId, graphId));
  const edges = await t.database.db.select().from(graphEdges).where(eq(graphEdges.graphId, graphId));
  return { nodes: nodes.length, edges: edges.length };
}

describe('POST /api/v1/assistant-graphs', () => {
  it('answers 201 with the documented fields, stored node ids in edges and the assistants of the nodes; GET returns the same', async () => {
    const user = await f.user();
    const c = await cast(user);
    const response = await create(user.headers, {
      name: '  Support line  ',
      description: 'Front line',
      configuration: { language: 'en' },
      ...supportStructure(c),
    });
    expect(response.statusCode, response.body).toBe(201);
    const graph = response.json() as Graph;
    expect(Object.keys(graph).sort()).toEqual(GRAPH_FIELDS);
    expect(graph).toMatchObject({
      organization_id: user.organizationId,
      name: 'Support line',
      description: 'Front line',
      is_active: true,
      configuration: { language: 'en' },
      total_nodes: 4,
      total_edges: 6,
    });
    expect(graph.created_at).toMatch(ISO);
    expect(graph.updated_at).toMatch(ISO);

    // Nodes in the order sent, with their assistants' names and descriptions.
    expect(graph.nodes.map((n) => [n.node_type, n.assistant_id, n.assistant_name])).toEqual([
      ['entry', c.reception.id, c.reception.name],
      ['standard', c.billing.id, c.billing.name],
      ['exit', c.goodbye.id, c.goodbye.name],
      ['escalation', c.reception.id, c.reception.name],
    ]);
    expect(graph.nodes.map((n) => n.assistant_description)).toEqual([
      'Greets and sorts callers',
      'Answers invoices',
      null,
      'Greets and sorts callers',
    ]);
    for (const node of graph.nodes) {
      expect(Object.keys(node).sort()).toEqual(NODE_FIELDS);
      expect(node.graph_id).toBe(graph.id);
      expect(node.created_at).toMatch(ISO);
    }
    expect(graph.nodes[1]?.position).toEqual({ x: 200, y: 0 });
    expect(graph.nodes[0]?.configuration).toEqual({});
    // The transfer number is stored in E.164.
    expect(graph.nodes[3]?.configuration).toEqual({ transfer_number: '+14155550100' });

    // Edges: indexes became stored ids; defaults filled in.
    const ids = graph.nodes.map((n) => n.id);
    expect(graph.edges.map((e) => [e.from_node_id, e.to_node_id])).toEqual([
      [ids[0], ids[1]],
      [ids[0], ids[3]],
      [ids[0], ids[1]],
      [ids[1], ids[2]],
      [ids[1], ids[2]],
      [ids[1], ids[3]],
    ]);
    for (const edge of graph.edges) {
      expect(Object.keys(edge).sort()).toEqual(EDGE_FIELDS);
      expect(edge.graph_id).toBe(graph.id);
      expect(edge.created_at).toMatch(ISO);
    }
    expect(graph.edges[0]).toMatchObject({
      condition_type: 'intent',
      intent_pattern: 'billing, invoice',
      natural_language_trigger: null,
      mathematical_expression: null,
      state_variable_condition: null,
      condition_logic: 'AND',
      priority: 0,
      is_active: true,
      handoff_sentence: 'Let me get you to billing.',
      description: 'Billing questions',
    });
    expect(graph.edges[1]).toMatchObject({ priority: 1, handoff_sentence: null, description: null });
    expect(graph.edges[5]).toMatchObject({ condition_logic: 'OR', priority: 2 });

    const fetched = await get(user.headers, graph.id);
    expect(fetched.statusCode, fetched.body).toBe(200);
    expect(fetched.json()).toEqual(graph);
  });

  it('creates a graph of one entry node without edges; is_active false is kept', async () => {
    const user = await f.user();
    const graph = await tinyGraph(user, { is_active: false });
    expect(graph).toMatchObject({ is_active: false, total_nodes: 1, total_edges: 0, description: null });
    expect(graph.edges).toEqual([]);
  });

  it('an API key with graphs read_write creates, changes, simulates and deletes', async () => {
    const user = await f.user();
    const key = await f.apiKey(user, { permissions: { graphs: 'read_write' } });
    const assistant = await createAssistant(user);
    const created = await create(key.headers, {
      name: 'By key',
      nodes: [{ assistant_id: assistant.id, node_type: 'entry' }],
      edges: [],
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().id;
    expect((await update(key.headers, id, { description: 'via key' })).json().description).toBe('via key');
    expect(
      (
        await structure(key.headers, id, {
          nodes: [{ assistant_id: assistant.id, node_type: 'entry' }],
          edges: [],
        })
      ).statusCode,
    ).toBe(200);
    expect((await simulate(key.headers, id, { utterances: ['hi'] })).statusCode).toBe(200);
    expect((await remove(key.headers, id)).statusCode).toBe(204);
  });
});

describe('validation: 400 naming what is wrong, and nothing is written', () => {
  let user: TestUser;
  let c: Cast;
  beforeAll(async () => {
    user = await f.user();
    c = await cast(user);
  });

  /** The support structure with `change` applied to a copy. */
  type Loose = { nodes: Json[]; edges: Json[] };
  function changed(change: (s: Loose) => void) {
    const s = structuredClone(supportStructure(c)) as unknown as Loose;
    change(s);
    return { name: 'Invalid', ...s };
  }

  async function expectNothingCreated() {
    const listed = await list(user.headers, '?active_only=false');
    expect(listed.headers['x-total-count']).toBe('0');
  }

  it('no entry node, and two entry nodes', async () => {
    expect400(
      await create(
        user.headers,
        changed((s) => (s.nodes[0]!.node_type = 'standard')),
      ),
      ['body', 'nodes'],
      /exactly one entry node/,
    );
    expect400(
      await create(
        user.headers,
        changed((s) => (s.nodes[1]!.node_type = 'entry')),
      ),
      ['body', 'nodes'],
      /exactly one entry node.*0, 1/,
    );
    expect400(
      await create(user.headers, { name: 'Empty', nodes: [], edges: [] }),
      ['body', 'nodes'],
      /entry/,
    );
    await expectNothingCreated();
  });

  it('edge ends that are not indexes of nodes', async () => {
    const response = await create(
      user.headers,
      changed((s) => {
        s.edges[0]!.to_node_id = 4;
        s.edges[2]!.from_node_id = 17;
      }),
    );
    expect400(
      response,
      ['body', 'edges', 0, 'to_node_id'],
      /edge 0: to_node_id 4 is not an index of nodes \(0 to 3\)/,
    );
    expect400(response, ['body', 'edges', 2, 'from_node_id'], /edge 2: from_node_id 17/);
    // Negative indexes and indexes beyond any possible node are refused by the schema.
    expect400(
      await create(
        user.headers,
        changed((s) => (s.edges[0]!.from_node_id = -1)),
      ),
      ['body', 'edges', 0, 'from_node_id'],
    );
    expect400(
      await create(
        user.headers,
        changed((s) => (s.edges[0]!.to_node_id = 1.5)),
      ),
      ['body', 'edges', 0, 'to_node_id'],
    );
    await expectNothingCreated();
  });

  it('each condition type without its field (missing, null or blank)', async () => {
    const fields = {
      intent: 'intent_pattern',
      natural_language: 'natural_language_trigger',
      mathematical: 'mathematical_expression',
      state_variable: 'state_variable_condition',
    } as const;
    for (const [type, field] of Object.entries(fields)) {
      for (const value of [undefined, null, '  ']) {
        const response = await create(user.headers, {
          name: 'Invalid',
          nodes: supportStructure(c).nodes,
          edges: [
            {
              from_node_id: 0,
              to_node_id: 1,
              condition_type: type,
              ...(value === undefined ? {} : { [field]: value }),
            },
          ],
        });
        expect400(
          response,
          ['body', 'edges', 0, field],
          new RegExp(`edge 0: condition_type ${type} needs ${field}`),
        );
      }
    }
    expect400(
      await create(
        user.headers,
        changed((s) => (s.edges[3]!.intent_pattern = ' , ,')),
      ),
      ['body', 'edges', 3, 'intent_pattern'],
      /names no keyword/,
    );
    await expectNothingCreated();
  });

  it('expressions that do not parse, with the edge index and the position', async () => {
    const response = await create(
      user.headers,
      changed((s) => {
        s.edges[4]!.mathematical_expression = 'call_duration >= ';
        s.edges[5]!.state_variable_condition = "customer.tier == 'vip' and";
      }),
    );
    expect400(response, ['body', 'edges', 4, 'mathematical_expression'], /^edge 4: .* at position \d+$/);
    expect400(response, ['body', 'edges', 5, 'state_variable_condition'], /^edge 5: .* at position \d+$/);
    // A condition field beside the one of the condition type is checked too.
    expect400(
      await create(
        user.headers,
        changed((s) => Object.assign(s.edges[0]!, { mathematical_expression: '1 +' })),
      ),
      ['body', 'edges', 0, 'mathematical_expression'],
      /position/,
    );
    // A state_variable condition takes no arithmetic (that is what mathematical is for).
    expect400(
      await create(
        user.headers,
        changed((s) => (s.edges[5]!.state_variable_condition = 'count + 1 > 2')),
      ),
      ['body', 'edges', 5, 'state_variable_condition'],
    );
    await expectNothingCreated();
  });

  it('assistants that are not in the organization: "assistant N not found"', async () => {
    const stranger = await f.user();
    const theirs = await createAssistant(stranger);
    const response = await create(
      user.headers,
      changed((s) => {
        s.nodes[1]!.assistant_id = theirs.id;
        s.nodes[2]!.assistant_id = 2_147_483_000;
      }),
    );
    expect400(
      response,
      ['body', 'nodes', 1, 'assistant_id'],
      new RegExp(`^assistant ${theirs.id} not found$`),
    );
    expect400(response, ['body', 'nodes', 2, 'assistant_id'], /^assistant 2147483000 not found$/);
    await expectNothingCreated();
  });

  it('an escalation node without an E.164 transfer_number', async () => {
    expect400(
      await create(
        user.headers,
        changed((s) => (s.nodes[3]!.configuration = {})),
      ),
      ['body', 'nodes', 3, 'configuration', 'transfer_number'],
      /escalation node needs configuration.transfer_number/,
    );
    for (const transfer_number of ['12345', 'call me', 42]) {
      expect400(
        await create(
          user.headers,
          changed((s) => (s.nodes[3]!.configuration = { transfer_number })),
        ),
        ['body', 'nodes', 3, 'configuration', 'transfer_number'],
      );
    }
    await expectNothingCreated();
  });

  it('an edge leaving an exit or escalation node', async () => {
    const response = await create(
      user.headers,
      changed((s) => {
        s.edges.push({ from_node_id: 2, to_node_id: 0, condition_type: 'intent', intent_pattern: 'again' });
        s.edges.push({ from_node_id: 3, to_node_id: 0, condition_type: 'intent', intent_pattern: 'again' });
      }),
    );
    expect400(response, ['body', 'edges', 6, 'from_node_id'], /an exit node/);
    expect400(response, ['body', 'edges', 7, 'from_node_id'], /an escalation node/);
    await expectNothingCreated();
  });

  it('the schema: name, nodes, node_type, condition_type, condition_logic, priority, position, unknown fields', async () => {
    const base = { name: 'Invalid', ...supportStructure(c) };
    const cases: Array<[unknown, Array<string | number>]> = [
      [{ ...base, name: undefined }, ['body', 'name']],
      [{ ...base, name: '' }, ['body', 'name']],
      [{ ...base, name: '   ' }, ['body', 'name']],
      [{ ...base, name: 'x'.repeat(201) }, ['body', 'name']],
      [{ ...base, nodes: undefined }, ['body', 'nodes']],
      [{ ...base, nodes: 'all' }, ['body', 'nodes']],
      [changed((s) => (s.nodes[1]!.node_type = 'middle')), ['body', 'nodes', 1, 'node_type']],
      [
        changed((s) => Object.assign(s.nodes[1]!, { assistant_id: 'one' })),
        ['body', 'nodes', 1, 'assistant_id'],
      ],
      [
        changed((s) => Object.assign(s.nodes[1]!, { position: { x: 'left' } })),
        ['body', 'nodes', 1, 'position', 'x'],
      ],
      [changed((s) => (s.edges[0]!.condition_type = 'regex')), ['body', 'edges', 0, 'condition_type']],
      [changed((s) => (s.edges[5]!.condition_logic = 'XOR')), ['body', 'edges', 5, 'condition_logic']],
      [changed((s) => (s.edges[1]!.priority = 1.5)), ['body', 'edges', 1, 'priority']],
      [changed((s) => Object.assign(s.edges[1]!, { is_active: 'yes' })), ['body', 'edges', 1, 'is_active']],
      [changed((s) => Object.assign(s.edges[1]!, { weight: 3 })), ['body', 'edges', 1, 'weight']],
      [{ ...base, owner: 'me' }, ['body', 'owner']],
    ];
    for (const [payload, loc] of cases) expect400(await create(user.headers, payload), loc);
    const notJson = await t.app.inject({
      method: 'POST',
      url: BASE,
      headers: { ...user.headers, 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expect400(notJson, ['body']);
    await expectNothingCreated();
  });
});

describe('GET /api/v1/assistant-graphs', () => {
  let user: TestUser;
  let graphs: Graph[];
  let inactive: Graph;
  beforeAll(async () => {
    user = await f.user();
    const c = await cast(user);
    graphs = [await createGraph(user, c), await tinyGraph(user), await createGraph(user, c)];
    inactive = await tinyGraph(user, { is_active: false });
    // Another organization's graph never shows.
    await tinyGraph(await f.user());
  });

  it('lists active graphs in creation order with empty nodes and edges, exact totals and X-Total-Count', async () => {
    const response = await list(user.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['x-total-count']).toBe('3');
    const listed = response.json() as Graph[];
    expect(listed.map((g) => g.id)).toEqual(graphs.map((g) => g.id));
    for (const [index, graph] of listed.entries()) {
      expect(Object.keys(graph).sort()).toEqual(GRAPH_FIELDS);
      expect(graph.nodes).toEqual([]);
      expect(graph.edges).toEqual([]);
      const full = graphs[index]!;
      expect(graph).toEqual({ ...full, nodes: [], edges: [] });
    }
    expect(listed.map((g) => [g.total_nodes, g.total_edges])).toEqual([
      [4, 6],
      [1, 0],
      [4, 6],
    ]);
  });

  it('active_only=false lists inactive graphs too', async () => {
    const response = await list(user.headers, '?active_only=false');
    expect(response.headers['x-total-count']).toBe('4');
    expect((response.json() as Graph[]).map((g) => g.id)).toEqual([...graphs, inactive].map((g) => g.id));
    expect((await list(user.headers, '?active_only=true')).headers['x-total-count']).toBe('3');
  });

  it('pages with skip and limit; the total counts every match', async () => {
    const page = await list(user.headers, '?skip=1&limit=1');
    expect((page.json() as Graph[]).map((g) => g.id)).toEqual([graphs[1]?.id]);
    expect(page.headers['x-total-count']).toBe('3');
    expect((await list(user.headers, '?skip=10')).json()).toEqual([]);
    expect((await list(user.headers, '?limit=1000')).statusCode).toBe(200);
  });

  it('answers 422 for a limit out of 1..1000, a negative skip and a non-boolean active_only', async () => {
    for (const [query, name] of [
      ['?limit=0', 'limit'],
      ['?limit=1001', 'limit'],
      ['?limit=ten', 'limit'],
      ['?skip=-1', 'skip'],
      ['?active_only=maybe', 'active_only'],
    ] as const) {
      const response = await list(user.headers, query);
      expect(response.statusCode, `${query}: ${response.body}`).toBe(422);
      expect((response.json().detail as Issue[]).map((d) => d.loc)).toContainEqual(['query', name]);
    }
  });

  it('is an empty list for an organization without graphs', async () => {
    const response = await list((await f.user()).headers);
    expect(response.json()).toEqual([]);
    expect(response.headers['x-total-count']).toBe('0');
  });
});

describe('PUT /api/v1/assistant-graphs/{graph_id}', () => {
  it('changes the metadata named and keeps the rest and the structure', async () => {
    const user = await f.user();
    const graph = await createGraph(user);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const response = await update(user.headers, graph.id, { name: 'Renamed ' });
    expect(response.statusCode, response.body).toBe(200);
    const renamed = response.json() as Graph;
    expect(renamed).toEqual({ ...graph, name: 'Renamed', updated_at: renamed.updated_at });
    expect(Date.parse(renamed.updated_at)).toBeGreaterThan(Date.parse(graph.updated_at));

    const more = await update(user.headers, graph.id, {
      description: null,
      is_active: false,
      configuration: { max_transfers: 3 },
    });
    expect(more.json()).toMatchObject({
      name: 'Renamed',
      description: null,
      is_active: false,
      configuration: { max_transfers: 3 },
      total_nodes: 4,
    });
    expect((await get(user.headers, graph.id)).json()).toEqual(more.json());
  });

  it('answers 400 for an empty body, a blank name, an unknown field or structure fields; 404 for an unknown id', async () => {
    const user = await f.user();
    const graph = await tinyGraph(user);
    expect((await update(user.headers, graph.id, {})).statusCode).toBe(400);
    expect400(await update(user.headers, graph.id, { name: ' ' }), ['body', 'name']);
    expect400(await update(user.headers, graph.id, { nodes: [] }), ['body', 'nodes']);
    expect400(await update(user.headers, graph.id, { is_active: 'no' }), ['body', 'is_active']);
    expect((await get(user.headers, graph.id)).json()).toEqual(graph);
    expectError(await update(user.headers, 2_147_483_647, { name: 'x' }), 404, /Graph not found/);
  });
});

describe('PUT /api/v1/assistant-graphs/{graph_id}/structure', () => {
  it('replaces every node and edge, answering the stored ids; the old ones are gone', async () => {
    const user = await f.user();
    const c = await cast(user);
    const graph = await createGraph(user, c);
    const response = await structure(user.headers, graph.id, {
      nodes: [
        { assistant_id: c.billing.id, node_type: 'exit' },
        { assistant_id: c.goodbye.id, node_type: 'entry', configuration: { note: 'start here' } },
      ],
      edges: [{ from_node_id: 1, to_node_id: 0, condition_type: 'intent', intent_pattern: 'done' }],
    });
    expect(response.statusCode, response.body).toBe(200);
    const replaced = response.json() as Graph;
    expect(replaced).toMatchObject({ id: graph.id, name: graph.name, total_nodes: 2, total_edges: 1 });
    expect(replaced.nodes.map((n) => [n.node_type, n.assistant_name])).toEqual([
      ['exit', c.billing.name],
      ['entry', c.goodbye.name],
    ]);
    const oldIds = new Set(graph.nodes.map((n) => n.id));
    for (const node of replaced.nodes) expect(oldIds.has(node.id)).toBe(false);
    expect(replaced.edges[0]).toMatchObject({
      from_node_id: replaced.nodes[1]?.id,
      to_node_id: replaced.nodes[0]?.id,
    });
    expect(await storedCounts(graph.id)).toEqual({ nodes: 2, edges: 1 });
    expect((await get(user.headers, graph.id)).json()).toEqual(replaced);
  });

  it('answers 400 when nodes or edges is missing', async () => {
    const user = await f.user();
    const graph = await tinyGraph(user);
    const node = graph.nodes[0]!;
    expect400(await structure(user.headers, graph.id, { edges: [] }), ['body', 'nodes']);
    expect400(
      await structure(user.headers, graph.id, {
        nodes: [{ assistant_id: node.assistant_id, node_type: 'entry' }],
      }),
      ['body', 'edges'],
    );
    expect((await structure(user.headers, graph.id, {})).statusCode).toBe(400);
    expect((await get(user.headers, graph.id)).json()).toEqual(graph);
  });

  it('applies the rules of creation (400) and changes nothing', async () => {
    const user = await f.user();
    const c = await cast(user);
    const graph = await createGraph(user, c);
    const s = supportStructure(c);
    expect400(
      await structure(user.headers, graph.id, { nodes: s.nodes.slice(1), edges: [] }),
      ['body', 'nodes'],
      /entry/,
    );
    expect400(
      await structure(user.headers, graph.id, {
        nodes: s.nodes,
        edges: [{ from_node_id: 0, to_node_id: 9, condition_type: 'intent', intent_pattern: 'x' }],
      }),
      ['body', 'edges', 0, 'to_node_id'],
    );
    expect400(
      await structure(user.headers, graph.id, {
        nodes: s.nodes,
        edges: [
          { from_node_id: 0, to_node_id: 1, condition_type: 'mathematical', mathematical_expression: '>' },
        ],
      }),
      ['body', 'edges', 0, 'mathematical_expression'],
      /position 0/,
    );
    expect((await get(user.headers, graph.id)).json()).toEqual(graph);
  });

  it('is atomic: an unknown assistant in the last node leaves the old structure whole', async () => {
    const user = await f.user();
    const c = await cast(user);
    const graph = await createGraph(user, c);
    const nodes = [
      ...supportStructure(c).nodes,
      { assistant_id: c.billing.id, node_type: 'standard' },
      { assistant_id: 2_147_483_001, node_type: 'standard' },
    ];
    const edges = [
      { from_node_id: 0, to_node_id: 4, condition_type: 'intent', intent_pattern: 'four' },
      { from_node_id: 4, to_node_id: 5, condition_type: 'intent', intent_pattern: 'five' },
    ];
    expect400(
      await structure(user.headers, graph.id, { nodes, edges }),
      ['body', 'nodes', 5, 'assistant_id'],
      /^assistant 2147483001 not found$/,
    );
    // The same ids, fields and counts as before: nothing was deleted, nothing added.
    expect((await get(user.headers, graph.id)).json()).toEqual(graph);
    expect(await storedCounts(graph.id)).toEqual({ nodes: 4, edges: 6 });
    const listed = (await list(user.headers)).json() as Graph[];
    expect(listed.find((g) => g.id === graph.id)).toMatchObject({ total_nodes: 4, total_edges: 6 });
  });

  it('two concurrent replacements of one graph leave exactly one of them', async () => {
    const user = await f.user();
    const c = await cast(user);
    const graph = await tinyGraph(user);
    const a = { nodes: [{ assistant_id: c.billing.id, node_type: 'entry' }], edges: [] };
    const b = supportStructure(c);
    const responses = await Promise.all([
      structure(user.headers, graph.id, a),
      structure(user.headers, graph.id, b),
      structure(user.headers, graph.id, a),
    ]);
    for (const response of responses) expect(response.statusCode, response.body).toBe(200);
    const final = (await get(user.headers, graph.id)).json() as Graph;
    expect([1, 4]).toContain(final.total_nodes);
    expect(await storedCounts(graph.id)).toEqual({ nodes: final.total_nodes, edges: final.total_edges });
  });
});

describe('DELETE /api/v1/assistant-graphs/{graph_id}', () => {
  it('answers 204 with no body; then every route answers 404 and its nodes and edges are gone', async () => {
    const user = await f.user();
    const graph = await createGraph(user);
    const kept = await tinyGraph(user);
    const response = await remove(user.headers, graph.id);
    expect(response.statusCode, response.body).toBe(204);
    expect(response.body).toBe('');
    expectError(await get(user.headers, graph.id), 404, /Graph not found/);
    expectError(await update(user.headers, graph.id, { name: 'x' }), 404);
    expect400(await structure(user.headers, graph.id, { nodes: [], edges: [] }), ['body', 'nodes']);
    expectError(
      await structure(user.headers, graph.id, {
        nodes: [{ assistant_id: kept.nodes[0]!.assistant_id, node_type: 'entry' }],
        edges: [],
      }),
      404,
    );
    expectError(await simulate(user.headers, graph.id, { utterances: [] }), 404);
    expectError(await remove(user.headers, graph.id), 404);
    expect(await storedCounts(graph.id)).toEqual({ nodes: 0, edges: 0 });
    expect(((await list(user.headers)).json() as Graph[]).map((g) => g.id)).toEqual([kept.id]);
  });

  it('answers 409 naming the numbers while a phone number routes to the graph; 204 once it does not', async () => {
    const user = await f.user();
    const graph = await tinyGraph(user);
    const number = nextNumber();
    const routed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: user.headers,
      payload: { phone_number: number, provider: 'carrier_a', graph_id: graph.id },
    });
    expect(routed.statusCode, routed.body).toBe(201);
    expect(routed.json()).toMatchObject({ graph_id: graph.id, assistant_id: null });
    const refused = await remove(user.headers, graph.id);
    expectError(refused, 409, new RegExp(`phone number \\${number} \\(id ${routed.json().id}\\)`));
    expect((await get(user.headers, graph.id)).json()).toEqual(graph);

    const moved = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/phone-numbers/${routed.json().id}`,
      headers: user.headers,
      payload: { graph_id: null },
    });
    expect(moved.statusCode, moved.body).toBe(200);
    expect((await remove(user.headers, graph.id)).statusCode).toBe(204);
  });
});

describe('an assistant used by a graph node cannot be deleted', () => {
  it('answers 409 naming the graph and its nodes, also beside phone numbers; 204 once no node uses it', async () => {
    const user = await f.user();
    const c = await cast(user);
    const graph = await createGraph(user, c, { name: 'Front desk flow' });
    const deleteAssistant = (id: number) =>
      t.app.inject({ method: 'DELETE', url: `/api/v1/assistants/${id}`, headers: user.headers });

    const refused = await deleteAssistant(c.reception.id);
    const [entry, , , escalation] = graph.nodes;
    expectError(
      refused,
      409,
      new RegExp(`graph "Front desk flow" \\(id ${graph.id}, nodes ${entry!.id}, ${escalation!.id}\\)`),
    );
    expect((await get(user.headers, graph.id)).json()).toEqual(graph);

    const number = nextNumber();
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: user.headers,
      payload: { phone_number: number, provider: 'carrier_a', assistant_id: c.billing.id },
    });
    const both = await deleteAssistant(c.billing.id);
    expectError(both, 409, new RegExp(`phone number \\${number}.*graph "Front desk flow"`));

    // Another structure without the assistant frees it.
    const replaced = await structure(user.headers, graph.id, {
      nodes: [{ assistant_id: c.goodbye.id, node_type: 'entry' }],
      edges: [],
    });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect((await deleteAssistant(c.reception.id)).statusCode).toBe(204);
  });
});

describe('POST /api/v1/assistant-graphs/{graph_id}/simulate', () => {
  let user: TestUser;
  let c: Cast;
  let graph: Graph;
  let ids: number[];
  beforeAll(async () => {
    user = await f.user();
    c = await cast(user);
    graph = await createGraph(user, c);
    ids = graph.nodes.map((n) => n.id);
  });

  it('follows an intent transition, then ends at an exit node; ignores the utterances after the end', async () => {
    const response = await simulate(user.headers, graph.id, {
      utterances: ['Hello there', 'I have a question about my invoice', 'thanks, goodbye', 'still there?'],
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body.path_taken).toEqual([
      { node_id: ids[0], node_type: 'entry', assistant_id: c.reception.id, assistant_name: c.reception.name },
      { node_id: ids[1], node_type: 'standard', assistant_id: c.billing.id, assistant_name: c.billing.name },
      { node_id: ids[2], node_type: 'exit', assistant_id: c.goodbye.id, assistant_name: c.goodbye.name },
    ]);
    expect(body.transitions).toEqual([
      {
        turn: 2,
        utterance: 'I have a question about my invoice',
        from_node_id: ids[0],
        to_node_id: ids[1],
        edge_id: graph.edges[0]?.id,
        reason: expect.stringMatching(/intent: matched 'invoice'/),
        handoff_sentence: 'Let me get you to billing.',
        call_duration: 20,
      },
      {
        turn: 3,
        utterance: 'thanks, goodbye',
        from_node_id: ids[1],
        to_node_id: ids[2],
        edge_id: graph.edges[3]?.id,
        reason: expect.stringMatching(/intent: matched 'goodbye'/),
        handoff_sentence: null,
        call_duration: 30,
      },
    ]);
    expect(body).toMatchObject({
      final_context: {},
      final_node_id: ids[2],
      turns_processed: 3,
      ended: 'exit',
      transfer_number: null,
    });
  });

  it('stays on the entry node when nothing matches; natural_language counts false unless assumed', async () => {
    const none = await simulate(user.headers, graph.id, { utterances: ['I owe you money, I think'] });
    expect(none.json()).toMatchObject({
      path_taken: [{ node_id: ids[0] }],
      transitions: [],
      final_node_id: ids[0],
      turns_processed: 1,
      ended: null,
    });
    const assumed = await simulate(user.headers, graph.id, {
      utterances: ['I owe you money, I think'],
      assume_natural_language: true,
    });
    expect(assumed.json().transitions).toEqual([
      expect.objectContaining({ edge_id: graph.edges[2]?.id, to_node_id: ids[1] }),
    ]);
  });

  it('advances the simulated clock by call_duration_per_turn: a mathematical edge on call_duration fires', async () => {
    const slow = await simulate(user.headers, graph.id, {
      utterances: ['billing please', 'hmm', 'and another thing'],
      call_duration_per_turn: 30,
    });
    const body = slow.json();
    expect(body.transitions.map((tr: Json) => [tr.turn, tr.edge_id, tr.call_duration])).toEqual([
      [1, graph.edges[0]?.id, 30],
      [2, graph.edges[4]?.id, 60],
    ]);
    expect(body.transitions[1].reason).toMatch(/call_duration >= 60 was true/);
    expect(body.ended).toBe('exit');
    // At the default 10 seconds per turn a minute is not reached in three turns.
    const fast = await simulate(user.headers, graph.id, {
      utterances: ['billing please', 'hmm', 'and another thing'],
    });
    expect(fast.json()).toMatchObject({ ended: null, final_node_id: ids[1] });
  });

  it('routes on the context: initial context and context_update, and ends at an escalation with its number', async () => {
    const response = await simulate(user.headers, graph.id, {
      context: { customer: { tier: 'gold' } },
      utterances: ['invoice', 'hm', { text: 'still here', context_update: { 'customer.tier': 'vip' } }],
    });
    const body = response.json();
    expect(body.transitions.map((tr: Json) => tr.edge_id)).toEqual([graph.edges[0]?.id, graph.edges[5]?.id]);
    expect(body).toMatchObject({
      ended: 'escalation',
      transfer_number: '+14155550100',
      final_node_id: ids[3],
      final_context: { customer: { tier: 'vip' } },
    });
    expect(body.path_taken.at(-1)).toMatchObject({
      node_type: 'escalation',
      assistant_name: c.reception.name,
    });
    // An intent to a human escalates straight from the entry node.
    const human = await simulate(user.headers, graph.id, { utterances: ['Can I talk to a human?'] });
    expect(human.json()).toMatchObject({ ended: 'escalation', transfer_number: '+14155550100' });
  });

  it('with no utterances answers the entry node alone; records nothing', async () => {
    const before = await t.database.db.select().from(graphSessions);
    const beforeTransitions = await t.database.db.select().from(graphTransitions);
    const response = await simulate(user.headers, graph.id, { utterances: [], context: { a: 1 } });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      path_taken: [
        {
          node_id: ids[0],
          node_type: 'entry',
          assistant_id: c.reception.id,
          assistant_name: c.reception.name,
        },
      ],
      transitions: [],
      final_context: { a: 1 },
      final_node_id: ids[0],
      turns_processed: 0,
      ended: null,
      transfer_number: null,
    });
    await simulate(user.headers, graph.id, { utterances: ['invoice', 'bye'] });
    expect(await t.database.db.select().from(graphSessions)).toHaveLength(before.length);
    expect(await t.database.db.select().from(graphTransitions)).toHaveLength(beforeTransitions.length);
    expect((await get(user.headers, graph.id)).json()).toEqual(graph);
  });

  it('answers 400 for a bad body', async () => {
    for (const [payload, loc] of [
      [{}, ['body', 'utterances']],
      [{ utterances: 'hello' }, ['body', 'utterances']],
      [{ utterances: [1] }, ['body', 'utterances', 0]],
      [{ utterances: [], call_duration_per_turn: -1 }, ['body', 'call_duration_per_turn']],
      [{ utterances: [], context: [] }, ['body', 'context']],
      [{ utterances: [], speed: 2 }, ['body', 'speed']],
      [
        { utterances: [{ text: 'x', context_update: { 'a..b': 1 } }] },
        ['body', 'utterances', 0, 'context_update'],
      ],
    ] as const) {
      expect400(await simulate(user.headers, graph.id, payload), [...loc]);
    }
  });
});

describe('security', () => {
  /** Every route, for a graph id, with a valid body. */
  function everyRoute(headers: Headers, graph: Graph) {
    const entry = { assistant_id: graph.nodes[0]!.assistant_id, node_type: 'entry' };
    return [
      ['POST', () => create(headers, { name: 'x', nodes: [entry] })],
      ['GET list', () => list(headers)],
      ['GET', () => get(headers, graph.id)],
      ['PUT', () => update(headers, graph.id, { name: 'hijacked' })],
      ['PUT structure', () => structure(headers, graph.id, { nodes: [entry], edges: [] })],
      ['POST simulate', () => simulate(headers, graph.id, { utterances: ['hi'] })],
      ['DELETE', () => remove(headers, graph.id)],
    ] as const;
  }

  it('answers 401 without credentials or with a bad token on every route, and changes nothing', async () => {
    const user = await f.user();
    const graph = await tinyGraph(user);
    for (const headers of [{}, { authorization: 'Bearer not-a-real-token' }] as Headers[]) {
      for (const [name, call] of everyRoute(headers, graph)) {
        const response = await call();
        expect(response.statusCode, `${name}: ${response.body}`).toBe(401);
        expectError(response, 401);
      }
    }
    expect((await get(user.headers, graph.id)).json()).toEqual(graph);
    expect((await list(user.headers)).headers['x-total-count']).toBe('1');
  });

  it('refuses an API key without the graphs area (403) on every route', async () => {
    const user = await f.user();
    const graph = await tinyGraph(user);
    const key = await f.apiKey(user, {
      permissions: { assistants: 'read_write', phone_numbers: 'read_write' },
    });
    for (const [name, call] of everyRoute(key.headers, graph)) {
      const response = await call();
      expect(response.statusCode, `${name}: ${response.body}`).toBe(403);
    }
    expect((await get(user.headers, graph.id)).json()).toEqual(graph);
  });

  it('lets a graphs:read key read but not write (403)', async () => {
    const user = await f.user();
    const graph = await tinyGraph(user);
    const key = await f.apiKey(user, { permissions: { graphs: 'read' } });
    for (const [name, call] of everyRoute(key.headers, graph)) {
      const response = await call();
      expect(response.statusCode, `${name}: ${response.body}`).toBe(name.startsWith('GET') ? 200 : 403);
    }
    expect((await get(key.headers, graph.id)).json()).toEqual(graph);
    expect((await list(user.headers)).headers['x-total-count']).toBe('1');
  });

  it("answers 404 for another organization's graph on every route, and never lists it", async () => {
    const owner = await f.user();
    const stranger = await f.user();
    const theirs = await createGraph(owner);
    const mine = await createAssistant(stranger);
    const entry = { assistant_id: mine.id, node_type: 'entry' };
    const key = await f.apiKey(stranger, { permissions: { graphs: 'read_write' } });
    for (const headers of [stranger.headers, key.headers]) {
      expectError(await get(headers, theirs.id), 404, /Graph not found/);
      expectError(await update(headers, theirs.id, { name: 'hijacked' }), 404);
      expectError(await structure(headers, theirs.id, { nodes: [entry], edges: [] }), 404);
      expectError(await simulate(headers, theirs.id, { utterances: ['invoice'] }), 404);
      expectError(await remove(headers, theirs.id), 404);
      const listed = await list(headers, '?active_only=false');
      expect(listed.json()).toEqual([]);
      expect(listed.headers['x-total-count']).toBe('0');
    }
    // Nor can the stranger's graph use the owner's assistants (400, as unknown).
    const response = await create(stranger.headers, {
      name: 'borrowing',
      nodes: [{ assistant_id: theirs.nodes[0]!.assistant_id, node_type: 'entry' }],
    });
    expect400(response, ['body', 'nodes', 0, 'assistant_id'], /not found/);
    expect((await get(owner.headers, theirs.id)).json()).toEqual(theirs);
  });

  it('a member of the organization sees and manages its graphs', async () => {
    const admin = await f.user();
    const graph = await tinyGraph(admin);
    const member = await f.member(admin.organizationId);
    expect((await get(member.headers, graph.id)).statusCode).toBe(200);
    expect((await update(member.headers, graph.id, { name: 'by member' })).statusCode).toBe(200);
    expect((await remove(member.headers, graph.id)).statusCode).toBe(204);
  });

  it('answers 404 for an unknown id; an id that is not a number is refused (422 on reads, 400 on writes)', async () => {
    const user = await f.user();
    expectError(await get(user.headers, 2_147_483_647), 404);
    expectError(await remove(user.headers, 2_147_483_647), 404);
    for (const id of ['0', '-1', '2147483648', 'abc']) {
      expect((await get(user.headers, id)).statusCode).toBe(422);
      expect((await remove(user.headers, id)).statusCode).toBe(422);
      expect((await update(user.headers, id, { name: 'x' })).statusCode).toBe(400);
      expect((await simulate(user.headers, id, { utterances: [] })).statusCode).toBe(400);
    }
  });
});
