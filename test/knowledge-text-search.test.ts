/**
 * The words half of retrieval (domains/knowledge/text-search.ts): the coordination ladder puts
 * passages holding more of the question's words first, ranks within a level by cover density, fills
 * k from lower levels, treats whatever a caller says as words (never tsquery syntax), and answers
 * nothing for a question made of stop words only.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { maintainChunkIndexes } from '../src/domains/knowledge/chunk-store.js';
import { atLeastQuery, ladderOf, textSearch } from '../src/domains/knowledge/text-search.js';
import { Factories } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { seedDocument } from './support/knowledge-seed.js';

const t = useTestPlatform({}, { workers: false });

describe('atLeastQuery', () => {
  it('is an OR of every m-word AND, each lexeme quoted', () => {
    expect(atLeastQuery(['a', 'b', 'c'], 3)).toBe("('a' & 'b' & 'c')");
    expect(atLeastQuery(['a', 'b', 'c'], 2)).toBe("('a' & 'b') | ('a' & 'c') | ('b' & 'c')");
    expect(atLeastQuery(['a', 'b', 'c'], 1)).toBe("'a' | 'b' | 'c'");
    expect(atLeastQuery(["o'brien"], 1)).toBe("'o''brien'");
  });
});

describe('ladderOf', () => {
  const shares: Record<string, number> = { a: 0, b: 0.001, c: 0.3, d: 0.05, e: 0 };
  const frequency = (lexeme: string) => shares[lexeme] ?? 0;

  it('climbs on the rare words, rarest first (ties in the order said), leaving the common ones for last', () => {
    expect(ladderOf(['c', 'b', 'd', 'a', 'e'], frequency)).toEqual({
      rare: ['a', 'e', 'b'],
      common: ['d', 'c'],
    });
  });

  it('keeps two words however common, and at most seven', () => {
    expect(ladderOf(['c', 'd'], frequency)).toEqual({ rare: ['d', 'c'], common: [] });
    expect(ladderOf(['c', 'd', 'b'], frequency)).toEqual({ rare: ['b', 'd'], common: ['c'] });
    const many = ['l1', 'l2', 'l3', 'l4', 'l5', 'l6', 'l7', 'l8', 'l9'];
    expect(ladderOf(many, () => 0)).toEqual({ rare: many.slice(0, 7), common: [] });
  });
});

describe('full-text search', () => {
  let tenant: Tenant;
  let assistantId: number;
  const ids = new Map<string, number>();
  const REPEATS = 'Kettle kettle kettle: the kettle aisle has every kettle, kettle after kettle.';
  const THREE = 'A kettle bought here carries a warranty you may claim at the service desk.';
  const TWO = 'The warranty card lists the service centres near you.';
  const NONE = 'Parking is free for customers on Sundays.';

  beforeAll(async () => {
    const factories = new Factories(t);
    const admin = await factories.user();
    tenant = new Tenant(admin.organizationId);
    assistantId = await factories.assistant(admin, 'Words');
    const seeded = await seedDocument(t, admin.organizationId, assistantId, [REPEATS, THREE, TWO, NONE], {
      embed: false,
    });
    for (const [content, id] of seeded.chunks) ids.set(content, id);
  });

  const search = (question: string, k = 10) => textSearch(t.database.db, tenant, assistantId, question, k);

  it('puts the passage holding most of the words first, before one repeating a single word', async () => {
    // THREE holds claim, kettle and warranty; REPEATS and TWO one word each, REPEATS many times.
    const found = await search('How do I claim the kettle warranty?');
    expect(found.map((c) => c.chunkId)).toEqual([ids.get(THREE), ids.get(REPEATS), ids.get(TWO)]);
    expect(found.every((c) => c.textRank > 0)).toBe(true);
  });

  it('fills k from the lower levels, and stops at k', async () => {
    const found = await search('kettle warranty service', 2);
    expect(found.map((c) => c.chunkId)).toEqual([ids.get(THREE), ids.get(TWO)]);
    const all = await search('kettle warranty service', 10);
    expect(all.map((c) => c.chunkId)).toEqual([ids.get(THREE), ids.get(TWO), ids.get(REPEATS)]);
  });

  it('ranks passages of one level by cover density', async () => {
    // No passage holds both words: all three are of level 1, and the one saying "kettle" seven times
    // ranks above those saying one of the words once.
    const found = await search('kettle parking', 10);
    expect(found[0]?.chunkId).toBe(ids.get(REPEATS));
    expect(new Set(found.slice(1).map((c) => c.chunkId))).toEqual(new Set([ids.get(THREE), ids.get(NONE)]));
  });

  it('reads tsquery syntax in a question as words', async () => {
    const found = await search("kettle & !warranty | (service:*) <-> 'desk");
    expect(found[0]?.chunkId).toBe(ids.get(THREE));
  });

  it('finds nothing for a question of stop words or no words', async () => {
    expect(await search('is it that which was there?')).toEqual([]);
    expect(await search('?!… —')).toEqual([]);
  });

  it('finds nothing in another organization or for another assistant', async () => {
    expect(
      await textSearch(t.database.db, new Tenant(tenant.organizationId + 1000), assistantId, 'kettle', 5),
    ).toEqual([]);
    expect(await textSearch(t.database.db, tenant, assistantId + 1000, 'kettle', 5)).toEqual([]);
  });
});

describe('full-text search by rare words first', () => {
  it('puts the passage holding the rare words first, then fills k from the common ones', async () => {
    const factories = new Factories(t);
    const admin = await factories.user();
    const tenant = new Tenant(admin.organizationId);
    const assistantId = await factories.assistant(admin, 'Rare words');
    const RARE = 'The zephyr quasar model was discontinued last spring.';
    // A hundred passages share the two common words: together they are most of the table.
    const commons = Array.from(
      { length: 100 },
      (_, i) => `Device ${i}: its setting page lists each setting.`,
    );
    const seeded = await seedDocument(t, admin.organizationId, assistantId, [...commons, RARE], {
      embed: false,
    });
    await maintainChunkIndexes(t.database.db, 1_000_000); // statistics, as processing gathers them
    const found = await textSearch(t.database.db, tenant, assistantId, 'zephyr quasar device setting', 3);
    // Counting words alone, a passage holding "device" and "setting" would tie with RARE: the rare
    // words decide.
    expect(found[0]?.chunkId).toBe(seeded.chunks.get(RARE));
    expect(found).toHaveLength(3);
    expect(found.slice(1).every((candidate) => candidate.content.startsWith('Device'))).toBe(true);
  });
});
