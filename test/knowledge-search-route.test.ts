/**
 * POST /api/v1/assistants/{assistant_id}/knowledge/search over HTTP, with the embeddings simulator as
 * the vendor (the assistant's llm_a key is what resolveEmbeddings finds): the answer's shape, the
 * overrides, words alone without a key, include_metadata, bad input, and security (401, an API key
 * without the assistants area 403, another organization's assistant 404).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { embeddingsRig } from './support/knowledge-embeddings.js';
import { ANSWERS, DISTRACTORS, seedDocument } from './support/knowledge-seed.js';

const rig = embeddingsRig();
const t = useTestPlatform(() => ({ EMBEDDINGS_BASE_URL: rig.url() }), { workers: false });

const url = (assistantId: number) => `/api/v1/assistants/${assistantId}/knowledge/search`;

async function assistantWith(user: TestUser, payload: Record<string, unknown>): Promise<number> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: `Knowledge ${Math.random().toString(36).slice(2)}`, ...payload },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

describe('knowledge search route', () => {
  let factories: Factories;
  let admin: TestUser;
  let keyed: number;
  let keyless: number;
  let bare: number;

  beforeAll(async () => {
    factories = new Factories(t);
    admin = await factories.user();
    const llm = { llm_provider: 'llm_a', llm_provider_config: { api_key: 'sk-test-embeddings' } };
    keyed = await assistantWith(admin, llm);
    keyless = await assistantWith(admin, {});
    bare = await assistantWith(admin, { ...llm, rag_settings: { include_metadata: false } });
    const passages = [...Object.values(ANSWERS), ...DISTRACTORS];
    for (const id of [keyed, keyless, bare])
      await seedDocument(t, admin.organizationId, id, passages, {
        name: 'Handbook',
        category: 'support',
        tags: ['faq'],
      });
  });

  const search = (assistantId: number, payload: Record<string, unknown>, headers = admin.headers) =>
    t.app.inject({ method: 'POST', url: url(assistantId), headers, payload });

  it('answers the passages a live turn would get, with scores and timing', async () => {
    const response = await search(keyed, {
      query: 'How long is the guarantee good for?',
      similarity_threshold: 0.1,
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body.mode).toBe('hybrid');
    expect(body.notice).toBeUndefined();
    expect(body.passages[0]).toMatchObject({
      content: ANSWERS.warranty,
      document_name: 'Handbook',
      category: 'support',
      tags: ['faq'],
      heading: 'Help',
      page: 1,
    });
    expect(body.passages[0].similarity).toBeGreaterThanOrEqual(0.1);
    expect(body.passages[0].text_rank).toBeGreaterThan(0);
    expect(body.passages[0].score).toBeGreaterThan(0);
    expect(body.timing.embedding_ms).toBeGreaterThanOrEqual(0);
    expect(body.timing.total_ms).toBeGreaterThanOrEqual(body.timing.search_ms);
    // The vendor was asked with the assistant's key.
    expect(rig.simulator.requests.at(-1)?.key).toBe('sk-test-embeddings');
  });

  it('takes limit and similarity_threshold as overrides of the assistant’s settings', async () => {
    const defaults = await search(keyed, { query: 'warranty refund weekend delivery' });
    // search_limit defaults to 3.
    expect(defaults.json().passages).toHaveLength(3);
    const seven = await search(keyed, {
      query: 'warranty refund weekend delivery',
      limit: 7,
      similarity_threshold: 0,
    });
    expect(seven.json().passages).toHaveLength(7);
    const strict = await search(keyed, { query: 'xylophones zeppelins', similarity_threshold: 1 });
    expect(strict.json().passages).toEqual([]);
  });

  it('searches by words alone without an embeddings key, and says so', async () => {
    const response = await search(keyless, { query: 'How long is the guarantee good for?' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.mode).toBe('full_text');
    expect(body.notice).toMatch(/No embeddings key/);
    expect(body.timing.embedding_ms).toBeNull();
    expect(body.passages[0]).toMatchObject({ content: ANSWERS.warranty, similarity: null });
  });

  it('leaves document name and place out when include_metadata is off', async () => {
    const body = (
      await search(bare, { query: 'Can I send a purchase back?', similarity_threshold: 0.1 })
    ).json();
    expect(body.passages[0]).toMatchObject({
      content: ANSWERS.returns,
      document_name: null,
      category: null,
      tags: [],
      page: null,
      heading: null,
    });
  });

  it('lets members and read-level API keys search', async () => {
    const member = await factories.member(admin.organizationId, 'user');
    expect((await search(keyed, { query: 'weekend' }, member.headers)).statusCode).toBe(200);
    const key = await factories.apiKey(admin, { permissions: { assistants: 'read' } });
    expect((await search(keyed, { query: 'weekend' }, key.headers)).statusCode).toBe(200);
  });

  it.each([
    ['an empty query', { query: '' }],
    ['a query over 2000 characters', { query: 'a'.repeat(2001) }],
    ['no query', { limit: 3 }],
    ['a limit of 0', { query: 'weekend', limit: 0 }],
    ['a limit over 50', { query: 'weekend', limit: 51 }],
    ['a fractional limit', { query: 'weekend', limit: 2.5 }],
    ['a threshold below 0', { query: 'weekend', similarity_threshold: -0.1 }],
    ['a threshold over 1', { query: 'weekend', similarity_threshold: 1.5 }],
    ['an unknown field', { query: 'weekend', top_k: 3 }],
  ])('answers 422 for %s', async (_label, payload) => {
    const response = await search(keyed, payload);
    expect(response.statusCode, response.body).toBe(422);
  });

  it('answers 401 without credentials', async () => {
    const response = await t.app.inject({ method: 'POST', url: url(keyed), payload: { query: 'weekend' } });
    expect(response.statusCode).toBe(401);
  });

  it('answers 403 to an API key without the assistants area', async () => {
    const key = await factories.apiKey(admin, { permissions: { calls: 'read_write' } });
    expect((await search(keyed, { query: 'weekend' }, key.headers)).statusCode).toBe(403);
  });

  it('answers 404 for another organization’s assistant and never returns its passages', async () => {
    const other = await factories.user();
    expect((await search(keyed, { query: 'weekend' }, other.headers)).statusCode).toBe(404);
    expect((await search(2_000_000_000, { query: 'weekend' })).statusCode).toBe(404);
    const theirs = await assistantWith(other, {});
    await seedDocument(t, other.organizationId, theirs, [
      'Their weekend secret: the vault opens on Sundays.',
    ]);
    const mine = (
      await search(keyed, { query: 'weekend secret vault Sundays', limit: 50, similarity_threshold: 0 })
    ).json();
    expect(mine.passages.some((p: { content: string }) => p.content.includes('vault'))).toBe(false);
  });
});
