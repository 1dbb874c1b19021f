/**
 * One pagination contract for every paged list: walks the app's own OpenAPI document for the GET
 * operations that take `page` and `per_page` (and those that take `skip` and `limit`) and checks each
 * the same way — the documented bounds, a refusal (422 at the parameter) for every value outside them
 * or not an integer, the largest page size accepted, and, for page-numbered lists, the pagination
 * object: exactly its six fields, consistent with each other, an empty page past the end, and a walk two
 * rows at a time that sees every row once, in the list's order. A paged route is covered as soon as it
 * is documented; the per-route test files keep only what is particular to their route.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { expectValidation } from './support/assertions.js';
import { addContacts, addExecutions, ownCampaign } from './support/campaign-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { documentedOperations, type Operation } from './support/openapi-walk.js';

const t = useTestPlatform();
let user: TestUser;
let operations: Operation[];
/** A value for each path parameter the paged routes take, naming a row of `user`'s organization. */
const pathValues: Record<string, number> = {};

beforeAll(async () => {
  const f = new Factories(t);
  const { user: owner, campaignId } = await ownCampaign(t, f);
  user = owner;
  // Rows to page through: campaigns, contacts and executions (an odd number of each, so the last
  // page of two is short).
  await ownCampaign(t, f, user);
  await ownCampaign(t, f, user);
  const contacts = await addContacts(t, user, campaignId, [
    'completed',
    'failed',
    'pending',
    'pending',
    'pending',
  ]);
  await addExecutions(
    t,
    user,
    campaignId,
    contacts.slice(0, 3).map((contact) => ({
      contactId: contact.id,
      attemptNumber: 1,
      channel: 'call' as const,
      status: 'completed' as const,
    })),
  );
  pathValues.campaign_id = campaignId;
  operations = await documentedOperations(t);
});

const queryOf = (operation: Operation) =>
  new Map(operation.parameters.filter((p) => p.in === 'query').map((p) => [p.name, p]));
const takes = (operation: Operation, ...names: string[]) =>
  operation.method === 'GET' && names.every((name) => queryOf(operation).has(name));
const pagedBy = (...names: string[]) => operations.filter((operation) => takes(operation, ...names));

/** The operation's URL with its path parameters filled in (1 where no row was seeded) and `query`. */
function urlOf(operation: Operation, query: string): string {
  const path = operation.path.replace(/\{(\w+)\}/g, (_m, name: string) => String(pathValues[name] ?? 1));
  return `${path}${query}`;
}
const get = (operation: Operation, query = '') =>
  t.app.inject({ method: 'GET', url: urlOf(operation, query), headers: user.headers });
/** Whether every path parameter of the operation names a seeded row (so that it can answer 200). */
const answerable = (operation: Operation) =>
  [...operation.path.matchAll(/\{(\w+)\}/g)].every(([, name]) => pathValues[name!] !== undefined);

/**
 * Values a bounded integer parameter must refuse: one step outside each bound, a fraction, a word —
 * with the issue type where it is the bound's (a negative number is refused as not decimal digits).
 */
function refusedValues(schema: { minimum?: number; maximum?: number }): Array<[string, string | undefined]> {
  const below = (schema.minimum as number) - 1;
  return [
    [String(below), below >= 0 ? 'greater_than_equal' : undefined],
    [String((schema.maximum as number) + 1), 'less_than_equal'],
    ['-1', undefined],
    ['1.5', undefined],
    ['x', undefined],
  ];
}

const PAGINATION_FIELDS = ['has_next', 'has_prev', 'page', 'per_page', 'total_items', 'total_pages'];

/** The one array of a page-numbered answer besides `pagination`, and the pagination object. */
function pageOf(body: Record<string, unknown>) {
  const keys = Object.keys(body).filter((key) => key !== 'pagination');
  expect(keys, JSON.stringify(body)).toHaveLength(1);
  const items = body[keys[0]!] as Array<{ id: number }>;
  expect(Array.isArray(items)).toBe(true);
  const pagination = body.pagination as Record<string, number | boolean>;
  expect(Object.keys(pagination).sort()).toEqual(PAGINATION_FIELDS);
  return { items, pagination };
}

describe('page-numbered lists (page, per_page)', () => {
  it('are the lists the API documents as paged, and each documents the same bounds', () => {
    const paths = pagedBy('page', 'per_page').map((operation) => operation.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/v1/billing/ledger',
        '/api/v1/campaigns',
        '/api/v1/campaigns/{campaign_id}/executions',
        '/api/v1/campaigns/{campaign_id}/contacts',
        '/api/v1/organization/webhook-deliveries',
      ]),
    );
    for (const operation of pagedBy('page', 'per_page')) {
      const query = queryOf(operation);
      expect(query.get('page')?.schema, operation.path).toMatchObject({
        type: 'integer',
        minimum: 1,
        maximum: 1_000_000,
        default: 1,
      });
      expect(query.get('per_page')?.schema, operation.path).toMatchObject({
        type: 'integer',
        minimum: 1,
        maximum: 1000,
        default: 50,
      });
    }
  });

  it('refuse a page or per_page outside its bounds or not an integer (422 at the parameter)', async () => {
    for (const operation of pagedBy('page', 'per_page')) {
      for (const name of ['page', 'per_page']) {
        for (const [value, type] of refusedValues(queryOf(operation).get(name)!.schema)) {
          expectValidation(await get(operation, `?${name}=${value}`), ['query', name], type);
        }
      }
    }
  });

  it('answer the first page of 50 by default, and take per_page up to 1000', async () => {
    for (const operation of pagedBy('page', 'per_page').filter(answerable)) {
      const first = await get(operation);
      expect(first.statusCode, `${operation.path}: ${first.body}`).toBe(200);
      expect(pageOf(first.json()).pagination).toMatchObject({ page: 1, per_page: 50, has_prev: false });
      const largest = await get(operation, '?per_page=1000');
      expect(largest.statusCode, `${operation.path}: ${largest.body}`).toBe(200);
      expect(pageOf(largest.json()).pagination.per_page).toBe(1000);
    }
  });

  it('answer an empty page past the end, with the totals still counted', async () => {
    for (const operation of pagedBy('page', 'per_page').filter(answerable)) {
      const all = pageOf((await get(operation, '?per_page=1000')).json());
      const total = all.items.length;
      const past = await get(operation, '?page=1000000');
      expect(past.statusCode, `${operation.path}: ${past.body}`).toBe(200);
      const { items, pagination } = pageOf(past.json());
      expect(items, operation.path).toEqual([]);
      expect(pagination, operation.path).toEqual({
        page: 1_000_000,
        per_page: 50,
        total_items: total,
        total_pages: Math.ceil(total / 50),
        has_next: false,
        has_prev: true,
      });
    }
  });

  it('walked two at a time, show every row once, in the order of the whole list', async () => {
    for (const operation of pagedBy('page', 'per_page').filter(answerable)) {
      const all = pageOf((await get(operation, '?per_page=1000')).json()).items.map((item) => item.id);
      const totalPages = Math.ceil(all.length / 2);
      const walked: number[] = [];
      for (let page = 1; page <= Math.max(totalPages, 1); page++) {
        const { items, pagination } = pageOf((await get(operation, `?page=${page}&per_page=2`)).json());
        expect(pagination, `${operation.path} page ${page}`).toEqual({
          page,
          per_page: 2,
          total_items: all.length,
          total_pages: totalPages,
          has_next: page < totalPages,
          has_prev: page > 1,
        });
        expect(items.length).toBe(Math.min(2, Math.max(all.length - (page - 1) * 2, 0)));
        walked.push(...items.map((item) => item.id));
      }
      expect(walked, operation.path).toEqual(all);
    }
  });

  it('have rows to walk where rows were seeded (the walk above is not vacuous)', async () => {
    for (const path of ['/api/v1/campaigns', '/api/v1/campaigns/{campaign_id}/executions']) {
      const operation = pagedBy('page', 'per_page').find((o) => o.path === path)!;
      expect(pageOf((await get(operation)).json()).items.length, path).toBe(3);
    }
    const contacts = pagedBy('page', 'per_page').find((o) => o.path.endsWith('/contacts'))!;
    expect(pageOf((await get(contacts)).json()).items.length).toBe(5);
  });
});

describe('offset lists (skip, limit)', () => {
  it('refuse a skip or limit outside its documented bounds or not an integer (422 at the parameter)', async () => {
    expect(pagedBy('skip', 'limit').length).toBeGreaterThanOrEqual(5);
    for (const operation of pagedBy('skip', 'limit')) {
      const query = queryOf(operation);
      expect(query.get('skip')?.schema, operation.path).toMatchObject({ type: 'integer', minimum: 0 });
      expect(query.get('limit')?.schema, operation.path).toMatchObject({ type: 'integer', minimum: 1 });
      for (const name of ['skip', 'limit']) {
        const schema = query.get(name)!.schema as { minimum: number; maximum: number };
        expect(schema.maximum, `${operation.path} ${name}`).toBeTypeOf('number');
        for (const [value, type] of refusedValues(schema)) {
          expectValidation(await get(operation, `?${name}=${value}`), ['query', name], type);
        }
      }
    }
  });

  it('take the largest documented limit', async () => {
    for (const operation of pagedBy('skip', 'limit').filter(answerable)) {
      const limit = (queryOf(operation).get('limit')!.schema as { maximum: number }).maximum;
      const response = await get(operation, `?skip=0&limit=${limit}`);
      expect(response.statusCode, `${operation.path}: ${response.body}`).toBe(200);
    }
  });
});
