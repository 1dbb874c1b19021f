/**
 * Call search's rule on an organization with thousands of calls: "the newest 1,000 matching calls,
 * ranked by relevance; ties newest first" (src/domains/calls/search.ts). Every answer of
 * GET /api/v1/calls/search is compared with that rule written as one plain statement — all matches,
 * the newest 1,000, ranked — whichever way the search found them (walking the newest documents for
 * a common word, the GIN index for a selective one, the index after a walk that found too few).
 * The tests in each describe share its seeded calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSearchQuery } from '../src/domains/calls/search-terms.js';
import { expectValidation } from './support/assertions.js';
import { seedBulkCalls, seedCall } from './support/call-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const WINDOW = 1000;
const BULK_CALLS = 6000;

let t: TestPlatform;
let f: Factories;

beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(async () => {
  await t.close();
});

async function found(user: TestUser, q: string, limit = 50): Promise<number[]> {
  const response = await t.app.inject({
    method: 'GET',
    url: `/api/v1/calls/search?q=${encodeURIComponent(q)}&limit=${limit}`,
    headers: user.headers,
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().map((call: { id: number }) => call.id);
}

/**
 * The rule, written the obvious way: every call of the organization whose document or assistant's
 * name matches, the newest `window` of them, ranked (the same score expression as the search), ties
 * newest first. `window` null ranks every match.
 */
async function byTheRule(organizationId: number, q: string, limit: number, window: number | null = WINDOW) {
  const query = readSearchQuery(q);
  const tsquery =
    query.kind === 'number' ? `to_tsquery('simple', $2 || ':*')` : `websearch_to_tsquery('english', $2)`;
  const result = await t.database.executeSql(
    `with matches as (
       select d.call_id,
         case when d.document @@ ${tsquery} then ts_rank(d.document, ${tsquery}) else 0 end
         + case when to_tsvector('english', coalesce(a.name, '')) @@ ${tsquery} then 0.5::real else 0 end as score
       from call_search_documents d left join assistants a on a.id = d.assistant_id
       where d.organization_id = $1
         and (d.document @@ ${tsquery} or to_tsvector('english', coalesce(a.name, '')) @@ ${tsquery})
       order by d.call_id desc
       limit $4
     )
     select call_id from matches order by score desc, call_id desc limit $3`,
    [organizationId, query.kind === 'number' ? query.digits : query.text, limit, window],
  );
  return result.rows.map((row) => Number((row as { call_id: number }).call_id));
}

async function matchCount(organizationId: number, q: string): Promise<number> {
  const result = await t.database.executeSql(
    `select count(*)::int as n from call_search_documents d left join assistants a on a.id = d.assistant_id
     where d.organization_id = $1 and (d.document @@ websearch_to_tsquery('english', $2)
       or to_tsvector('english', coalesce(a.name, '')) @@ websearch_to_tsquery('english', $2))`,
    [organizationId, q],
  );
  return Number((result.rows[0] as { n: number }).n);
}

describe('an organization with thousands of calls', () => {
  let owner: TestUser;
  let neighbour: TestUser;
  let oldBest: number;
  let oldRare: number;

  beforeAll(async () => {
    owner = await f.user();
    neighbour = await f.user();
    const assistantIds = [
      await f.assistant(owner, 'Billing'),
      await f.assistant(owner, 'Scheduling'),
      await f.assistant(owner, 'Zoo Keeper'),
    ];
    // The oldest calls: the best "refund" match of all, and a word said nowhere else.
    oldBest = (
      await seedCall(t.database, owner.organizationId, {
        transcript: [['user', 'Refund! A refund, refunded, my refund, refunds, the refund.']],
      })
    ).id;
    oldRare = (
      await seedCall(t.database, owner.organizationId, {
        transcript: [['user', 'The narwhal tank leaks.']],
      })
    ).id;
    await seedBulkCalls(t.database, {
      organizationId: owner.organizationId,
      assistantIds,
      count: BULK_CALLS,
      segmentsPerCall: 4,
      referenceCodes: BULK_CALLS / 20,
    });
    // Newer than all of the owner's calls, the same words and assistant names: a walk of the
    // newest documents that lost the organization filter would meet these first.
    await seedBulkCalls(t.database, {
      organizationId: neighbour.organizationId,
      assistantIds: [await f.assistant(neighbour, 'Billing'), await f.assistant(neighbour, 'Zoo Keeper')],
      count: 1500,
      segmentsPerCall: 4,
    });
    await t.database.executeSql('analyze call_search_documents');
  });

  it('ranks only the newest 1,000 matches of a common word: an older, better match is left out', async () => {
    expect(await matchCount(owner.organizationId, 'refund')).toBeGreaterThan(WINDOW);
    // Ranked over every match, the old call would come first: the window is what leaves it out.
    expect((await byTheRule(owner.organizationId, 'refund', 50, null))[0]).toBe(oldBest);
    const answer = await found(owner, 'refund');
    expect(answer).toHaveLength(50);
    expect(answer).not.toContain(oldBest);
    expect(answer).toEqual(await byTheRule(owner.organizationId, 'refund', 50));
  });

  it('answers what the rule gives for every kind of query', async () => {
    const queries = [
      'refund', // a sentence's word: a fifth of the calls
      'help', // in two sentences
      '"book an appointment" -invoice',
      'zx7', // a reference code, said on 20 calls
      'narwhal', // one old call
      '646', // every call's number
      '6460004', // the thousand numbers +1646 0004xxx, and their suffixes elsewhere
      '+1 646 000 1234', // one whole number
      'billing', // an assistant's name, and a sentence's word
      'zoo', // an assistant's name only: 2,000 calls
      'zoo billing', // both at once
      'platypus', // nothing
    ];
    for (const q of queries)
      for (const limit of [50, 200])
        expect(await found(owner, q, limit), `${q} (limit ${limit})`).toEqual(
          await byTheRule(owner.organizationId, q, limit),
        );
    expect(await found(owner, 'narwhal')).toEqual([oldRare]);
    expect(await found(owner, 'platypus')).toEqual([]);
  });

  it('finds a name-only match among the window’s calls, newest first', async () => {
    // "zoo" matches 2,000 calls by their assistant's name alone: all score the same.
    const zoo = await found(owner, 'zoo', 200);
    expect(zoo).toHaveLength(200);
    expect(zoo).toEqual([...zoo].sort((a, b) => b - a));
  });

  it('never answers another organization’s calls', async () => {
    const neighbours = await t.database.executeSql(
      'select call_id from call_search_documents where organization_id = $1',
      [neighbour.organizationId],
    );
    const theirs = new Set(neighbours.rows.map((row) => Number((row as { call_id: number }).call_id)));
    for (const q of ['refund', 'billing', 'zoo', '646', 'hello'])
      for (const id of await found(owner, q, 200)) expect(theirs.has(id), q).toBe(false);
    const mine = await found(neighbour, 'refund', 200);
    expect(mine.length).toBeGreaterThan(0);
    for (const id of mine) expect(theirs.has(id)).toBe(true);
  });

  it('answers 422 to bad input as before', async () => {
    const search = (query: string) =>
      t.app.inject({ method: 'GET', url: `/api/v1/calls/search?${query}`, headers: owner.headers });
    expectValidation(await search(''), ['query', 'q'], 'missing');
    expectValidation(await search('q=ab'), ['query', 'q'], 'string_too_short');
    expectValidation(await search(`q=${'x'.repeat(201)}`), ['query', 'q'], 'string_too_long');
    expectValidation(await search('q=refund&limit=0'), ['query', 'limit']);
    expectValidation(await search('q=refund&limit=201'), ['query', 'limit']);
  });
});

describe('a word common among the newest calls and rare before', () => {
  // More documents than the newest-first walk reads (25,000), so the walk finds only the recent
  // matches and the GIN index must supply the rest of the window.
  const CALLS = 26_000;
  let owner: TestUser;
  let oldest: number;

  beforeAll(async () => {
    owner = await f.user();
    await seedBulkCalls(t.database, { organizationId: owner.organizationId, assistantIds: [], count: CALLS });
    // The oldest 1,000 documents say "walrus" three times (the oldest of all five times); every
    // tenth of the newest 1,000 says it once.
    await t.database.executeSql(
      `with ranked as (
         select call_id, row_number() over (order by call_id) as age_rank, count(*) over () as total
         from call_search_documents where organization_id = $1
       )
       update call_search_documents d
       set document = d.document || setweight(to_tsvector('english',
         case when r.age_rank = 1 then 'walrus walrus walrus walrus walrus'
              when r.age_rank <= 1000 then 'walrus walrus walrus' else 'walrus' end), 'C')
       from ranked r
       where d.call_id = r.call_id and (r.age_rank <= 1000 or (r.age_rank > r.total - 1000 and r.call_id % 10 = 0))`,
      [owner.organizationId],
    );
    oldest = Number(
      (
        (
          await t.database.executeSql(
            'select min(call_id) as id from call_search_documents where organization_id = $1',
            [owner.organizationId],
          )
        ).rows[0] as { id: number }
      ).id,
    );
    await t.database.executeSql('analyze call_search_documents');
  }, 240_000);

  it('still ranks exactly the newest 1,000 matches', async () => {
    expect(await matchCount(owner.organizationId, 'walrus')).toBe(1100);
    const answer = await found(owner, 'walrus', 200);
    expect(answer).toEqual(await byTheRule(owner.organizationId, 'walrus', 200));
    // The old matches rank first (the walk alone would have found only the recent ones), but the
    // very oldest, the best of all, is outside the window.
    expect(answer[0]).toBeLessThan(oldest + 1000);
    expect(answer).not.toContain(oldest);
    expect((await byTheRule(owner.organizationId, 'walrus', 1, null))[0]).toBe(oldest);
  });
});
