/**
 * Hybrid retrieval (domains/knowledge/retrieval.ts) over passages embedded by the embeddings
 * simulator's vectors: paraphrased questions find their passage among ~30 distractors; the threshold,
 * the limit, the token budget and include_metadata are honoured; without a key or when the vendor
 * fails retrieval is by words alone and says so; the pgvector path and the exact path agree; only the
 * assistant's own visible chunks are ever returned.
 *
 * The simulator's vectors are feature hashes of words: a paraphrase must share at least a stem with
 * its passage. A question that shares no word with its answer and is found by meaning alone cannot be
 * tested with it (a real model would find it; the simulator has no meaning beyond spelling).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import {
  KnowledgeRetriever,
  type RetrieveRequest,
  retrievalOptions,
} from '../src/domains/knowledge/retrieval.js';
import type { EmbeddingsChoice } from '../src/domains/knowledge/types.js';
import { vectorInstalled } from '../src/domains/knowledge/vector-index.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { embeddingsRig } from './support/knowledge-embeddings.js';
import { ANSWERS, DISTRACTORS, PARAPHRASES, seedDocument } from './support/knowledge-seed.js';

const rig = embeddingsRig();
const t = useTestPlatform({}, { workers: false });

describe('knowledge retrieval', () => {
  let admin: TestUser;
  let tenant: Tenant;
  let assistantId: number;
  let choice: EmbeddingsChoice;
  let retriever: KnowledgeRetriever;
  const ids = new Map<string, number>();

  const ask = (
    question: string,
    options: Partial<RetrieveRequest['options']> = {},
    more: Partial<RetrieveRequest> = {},
  ) =>
    retriever.retrieve({
      tenant,
      assistantId,
      question,
      options: { ...retrievalOptions({ similarity_threshold: 0.1 }), ...options },
      embeddings: choice,
      ...more,
    });

  beforeAll(async () => {
    const factories = new Factories(t);
    admin = await factories.user();
    tenant = new Tenant(admin.organizationId);
    assistantId = await factories.assistant(admin, 'Helpdesk');
    choice = rig.choice();
    retriever = new KnowledgeRetriever({ db: t.database.db, adapter: rig.adapter() });
    const seeded = await seedDocument(
      t,
      admin.organizationId,
      assistantId,
      [...Object.values(ANSWERS), ...DISTRACTORS],
      {
        name: 'Store handbook',
        category: 'support',
        tags: ['faq', 'store'],
        location: (i) => (i % 2 ? { page: i + 1 } : { heading: `Section ${i}` }),
      },
    );
    for (const [content, id] of seeded.chunks) ids.set(content, id);
  });

  it.each(PARAPHRASES)('finds the passage for the paraphrase %j', async (question, answer) => {
    const retrieval = await ask(question);
    expect(retrieval.mode).toBe('hybrid');
    expect(retrieval.notice).toBeUndefined();
    expect(retrieval.passages[0]?.chunkId).toBe(ids.get(ANSWERS[answer]));
    expect(retrieval.passages[0]?.similarity).toBeGreaterThanOrEqual(0.1);
    expect(retrieval.timing.embeddingMs).toBeGreaterThanOrEqual(0);
    expect(retrieval.timing.totalMs).toBeGreaterThanOrEqual(retrieval.timing.searchMs);
  });

  it('keeps only passages at or above the similarity threshold in the vector list', async () => {
    // Words no passage has: nothing matches by words, so every passage comes from the vector list.
    const loose = await ask('xylophones zeppelins', { similarityThreshold: 0, searchLimit: 5 });
    expect(loose.passages).toHaveLength(5);
    expect(loose.passages.every((p) => p.textRank === null && p.similarity !== null)).toBe(true);
    const strict = await ask('xylophones zeppelins', { similarityThreshold: 0.9 });
    expect(strict.passages).toEqual([]);
    const warranty = await ask('How long is the guarantee good for?', {
      similarityThreshold: 0.15,
      searchLimit: 10,
    });
    expect(warranty.passages.every((p) => p.similarity === null || p.similarity >= 0.15)).toBe(true);
  });

  it('returns at most search_limit passages, best first', async () => {
    const retrieval = await ask('warranty refund weekend delivery mixer', {
      searchLimit: 2,
      similarityThreshold: 0,
    });
    expect(retrieval.passages).toHaveLength(2);
    expect(retrieval.passages[0]?.score).toBeGreaterThanOrEqual(retrieval.passages[1]?.score ?? 0);
    const more = await ask('warranty refund weekend delivery mixer', {
      searchLimit: 7,
      similarityThreshold: 0,
    });
    expect(more.passages).toHaveLength(7);
  });

  it('fits context_window_tokens, cutting the first passage rather than dropping it', async () => {
    const all = await ask('warranty refund weekend delivery', { searchLimit: 6, similarityThreshold: 0 });
    const [first, second] = all.passages;
    const budget = (first?.tokens ?? 0) + (second?.tokens ?? 0) + 1;
    const fitted = await ask('warranty refund weekend delivery', {
      searchLimit: 6,
      similarityThreshold: 0,
      contextWindowTokens: budget,
    });
    expect(fitted.passages.map((p) => p.chunkId)).toEqual([first?.chunkId, second?.chunkId]);
    const cut = await ask('warranty refund weekend delivery', {
      similarityThreshold: 0,
      contextWindowTokens: 5,
    });
    expect(cut.passages).toHaveLength(1);
    expect(cut.passages[0]).toMatchObject({
      chunkId: first?.chunkId,
      tokens: 5,
      content: first?.content.slice(0, 20),
    });
  });

  it('carries document name, category, tags, page and heading only with include_metadata', async () => {
    const withMetadata = await ask('How long is the guarantee good for?', { includeMetadata: true });
    expect(withMetadata.passages[0]).toMatchObject({
      documentName: 'Store handbook',
      category: 'support',
      tags: ['faq', 'store'],
      heading: 'Section 0',
      position: 0,
    });
    const returns = await ask('Can I send a purchase back?', { includeMetadata: true });
    expect(returns.passages[0]).toMatchObject({ page: 2 });
    const bare = await ask('How long is the guarantee good for?', { includeMetadata: false });
    const [passage] = bare.passages;
    expect(passage).toMatchObject({
      chunkId: ids.get(ANSWERS.warranty),
      documentName: '',
      category: null,
      tags: [],
    });
    expect(passage?.page).toBeUndefined();
    expect(passage?.heading).toBeUndefined();
  });

  it('searches by words alone without an embeddings key, and says so', async () => {
    const retrieval = await ask('How long is the guarantee good for?', {}, { embeddings: null });
    expect(retrieval.mode).toBe('full_text');
    expect(retrieval.notice).toMatch(/No embeddings key/);
    expect(retrieval.timing.embeddingMs).toBeNull();
    expect(retrieval.passages[0]).toMatchObject({ chunkId: ids.get(ANSWERS.warranty), similarity: null });
    expect(retrieval.passages[0]?.textRank).toBeGreaterThan(0);
  });

  it('searches by words alone when the embeddings vendor fails, and says so', async () => {
    rig.failNext(1);
    const failed = await ask('Can I send a purchase back?');
    expect(failed.mode).toBe('full_text');
    expect(failed.notice).toMatch(/embeddings service .*words only/);
    expect(failed.passages[0]?.chunkId).toBe(ids.get(ANSWERS.returns));
    const unreachable = await ask(
      'Can I send a purchase back?',
      {},
      { embeddings: { ...choice, baseUrl: 'http://127.0.0.1:9/v1' } },
    );
    expect(unreachable.mode).toBe('full_text');
    expect(unreachable.notice).toMatch(/words only/);
  });

  it('gives the same top passages by the pgvector index as by the exact scan', async () => {
    const exact = new KnowledgeRetriever({ db: t.database.db, adapter: rig.adapter(), vectorPath: 'exact' });
    for (const [question] of PARAPHRASES) {
      const options = { ...retrievalOptions({ similarity_threshold: 0, search_limit: 5 }) };
      const request = { tenant, assistantId, question, options, embeddings: choice };
      const [indexed, scanned] = await Promise.all([retriever.retrieve(request), exact.retrieve(request)]);
      expect(indexed.passages.map((p) => p.chunkId)).toEqual(scanned.passages.map((p) => p.chunkId));
      for (const [i, p] of indexed.passages.entries())
        expect(p.similarity).toBeCloseTo(scanned.passages[i]?.similarity ?? Number.NaN, 5);
    }
    // Where pgvector is installed (PGlite) the default retriever used the index; on a server without
    // it both took the exact path, and this test still checks the exact path against itself.
    if (await vectorInstalled(t.database.db)) expect(await vectorPathOf(retriever)).toBe('pgvector');
  });

  it('sees a new document at once on the exact path (its vector cache is invalidated)', async () => {
    const exact = new KnowledgeRetriever({ db: t.database.db, adapter: rig.adapter(), vectorPath: 'exact' });
    const before = await exact.retrieve({
      tenant,
      assistantId,
      question: 'pizza oven temperature',
      options: retrievalOptions({ similarity_threshold: 0.3 }),
      embeddings: choice,
    });
    expect(before.passages.map((p) => p.content)).not.toContain(
      'The pizza oven reaches a temperature of 500 degrees.',
    );
    await seedDocument(t, admin.organizationId, assistantId, [
      'The pizza oven reaches a temperature of 500 degrees.',
    ]);
    const after = await exact.retrieve({
      tenant,
      assistantId,
      question: 'pizza oven temperature',
      options: retrievalOptions({ similarity_threshold: 0.3 }),
      embeddings: choice,
    });
    expect(after.passages[0]?.content).toBe('The pizza oven reaches a temperature of 500 degrees.');
  });

  it('answers only from the assistant’s own visible chunks', async () => {
    const factories = new Factories(t);
    const other = await factories.user();
    const otherAssistant = await factories.assistant(other, 'Other');
    const secret = 'The guarantee of the other company lasts ten years on every part.';
    await seedDocument(t, other.organizationId, otherAssistant, [secret]);
    const sibling = await factories.assistant(admin, 'Sibling');
    await seedDocument(t, admin.organizationId, sibling, [`Sibling: ${secret}`]);
    await seedDocument(t, admin.organizationId, assistantId, [`Failed: ${secret}`], { status: 'failed' });
    await seedDocument(t, admin.organizationId, assistantId, [`Pending: ${secret}`], { status: 'pending' });
    for (const path of ['auto', 'exact'] as const) {
      const r = new KnowledgeRetriever({ db: t.database.db, adapter: rig.adapter(), vectorPath: path });
      const found = await r.retrieve({
        tenant,
        assistantId,
        question: secret,
        options: retrievalOptions({ similarity_threshold: 0, search_limit: 50 }),
        embeddings: choice,
      });
      expect(found.passages.length).toBeGreaterThan(0);
      expect(found.passages.some((p) => p.content.includes('ten years'))).toBe(false);
      // Another organization's tenant asking for this assistant finds nothing at all.
      const foreign = await r.retrieve({
        tenant: new Tenant(other.organizationId),
        assistantId,
        question: secret,
        options: retrievalOptions({ similarity_threshold: 0 }),
        embeddings: choice,
      });
      expect(foreign.passages).toEqual([]);
    }
  });
});

async function vectorPathOf(retriever: KnowledgeRetriever): Promise<string> {
  return retriever.vectorPath(1536);
}
