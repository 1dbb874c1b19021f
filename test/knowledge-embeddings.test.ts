/**
 * Knowledge processing with an embeddings key (issue 20, item 2), against the embeddings simulator
 * at EMBEDDINGS_BASE_URL: documents complete `hybrid` with a vector of the model's length per chunk;
 * a rate limit is waited out; a refused key fails the document once, saying which key; progress shows
 * while a slow vendor embeds; semantic chunking embeds sentences; the sweep hands a document whose
 * process stood still to a new job. The tests share one platform and simulator, one at a time.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import * as documentStore from '../src/domains/knowledge/document-store.js';
import { KnowledgeRecovery } from '../src/domains/knowledge/recovery.js';
import { dimensionsOf } from '../src/sim/embedding-vectors.js';
import { EmbeddingsSimulator } from '../src/sim/embeddings.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform, waitFor } from './support/harness.js';
import { knowledgeDocs, paragraphs } from './support/knowledge-docs.js';
import { textFile } from './support/knowledge-files.js';
import { secret } from './support/secrets.js';

const sim = new EmbeddingsSimulator();
const KEY = secret('embeddings');
beforeAll(async () => {
  await sim.start();
  sim.addKey(KEY);
});
afterAll(() => sim.stop());

// The platform's own sweep ticks once at start only: the sweep test below runs one of its own.
const t = useTestPlatform(() => ({ EMBEDDINGS_BASE_URL: sim.url, KNOWLEDGE_SWEEP_INTERVAL_SECONDS: '3600' }));
const docs = knowledgeDocs(t);
let owner: TestUser;
let f: Factories;

beforeAll(async () => {
  f = new Factories(t);
  owner = await f.user();
  await withKey(owner, KEY);
});
beforeEach(() => sim.reset());

async function withKey(user: TestUser, key: string) {
  const response = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: user.headers,
    payload: { api_keys: { llm_a: { api_key: key } } },
  });
  expect(response.statusCode, response.body).toBe(200);
}

const file = (texts: string[]) => ({
  fileName: 'policy.txt',
  contentType: 'text/plain',
  bytes: textFile(texts.join('\n\n')),
});
const SMALL = { chunk_size: 100, chunk_overlap: 0 };
const MODEL = 'text-embedding-3-small';
/** Texts the simulator was asked to embed, over every request it answered. */
const embedded = () =>
  sim.requests.filter((r) => r.status === 200).flatMap((r) => (r.body?.input as string[]) ?? []);

describe('processing with an embeddings key', () => {
  it('completes hybrid: the model and its dimensions recorded, a vector of that length on every chunk', async () => {
    const assistantId = await docs.assistant(owner, SMALL);
    const doc = await docs.upload(owner, assistantId, file(paragraphs(40)));
    const done = await docs.settled(owner, assistantId, doc.id);
    const dimensions = dimensionsOf(MODEL);
    expect(done, JSON.stringify(done)).toMatchObject({
      status: 'completed',
      retrieval_mode: 'hybrid',
      embedding_model: MODEL,
      embedding_dimensions: dimensions,
      notice: null,
      error: null,
      total_chunks: 40,
      processed_chunks: 40,
    });
    const chunks = await docs.chunksOf(doc.id, 1);
    expect(chunks.map((c) => c.position)).toEqual(chunks.map((_, i) => i));
    for (const chunk of chunks) expect([chunk.length, chunk.dimensions]).toEqual([dimensions, dimensions]);
    expect(new Set(sim.requests.map((r) => r.key))).toEqual(new Set([KEY]));
    expect(embedded()).toHaveLength(40);
  });

  it('waits out two 429s within the attempt: completed, every position stored once', async () => {
    const assistantId = await docs.assistant(owner, SMALL);
    sim.failNext(2, { error: { status: 429, retryAfterSeconds: 0.05 } });
    const doc = await docs.upload(owner, assistantId, file(paragraphs(70)));
    const done = await docs.settled(owner, assistantId, doc.id);
    expect(done).toMatchObject({ status: 'completed', retrieval_mode: 'hybrid', processed_chunks: 70 });
    const chunks = await docs.chunksOf(doc.id, 1);
    expect(chunks.map((c) => c.position)).toEqual(Array.from({ length: 70 }, (_, i) => i));
    expect(sim.requests.filter((r) => r.status === 429)).toHaveLength(2);
    expect(embedded()).toHaveLength(70);
    expect(await docs.jobRetries(doc.id)).toEqual([0]);
  });

  it('fails at once on a refused key (401), naming the key, with one request and no retry', async () => {
    const other = await f.user();
    const wrong = secret('revoked');
    await withKey(other, wrong);
    const assistantId = await docs.assistant(other, SMALL);
    const doc = await docs.upload(other, assistantId, file(paragraphs(10)));
    const done = await docs.settled(other, assistantId, doc.id);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/refused the key \(401\).*organization's llm_a key.*reprocess/);
    expect(String(done.error)).not.toContain(wrong);
    expect(await docs.chunksOf(doc.id, 1)).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sim.requests.filter((r) => r.key === wrong)).toHaveLength(1);
    expect(await docs.jobRetries(doc.id)).toEqual([0]);
  });

  it('shows progress while a slow vendor embeds: processed_chunks between 0 and the total', async () => {
    const assistantId = await docs.assistant(owner, SMALL);
    sim.failNext(20, { delayMs: 500 });
    const doc = await docs.upload(owner, assistantId, file(paragraphs(96)));
    const midway = await waitFor(async () => {
      const status = await docs.status(owner, assistantId, doc.id);
      return status.status === 'processing' &&
        status.processed_chunks > 0 &&
        status.processed_chunks < (status.total_chunks ?? 0)
        ? status
        : undefined;
    }, 20_000);
    expect(midway.total_chunks).toBe(96);
    expect(midway.progress).toBe(Math.floor((midway.processed_chunks / 96) * 100));
    const done = await docs.settled(owner, assistantId, doc.id);
    expect(done).toMatchObject({ status: 'completed', processed_chunks: 96 });
  });

  it('semantic chunking embeds the sentences to find where the meaning shifts', async () => {
    const assistantId = await docs.assistant(owner, {
      chunking_strategy: 'semantic',
      chunk_size: 400,
      chunk_overlap: 0,
    });
    const sentences = [
      'Refunds are paid within fourteen days.',
      'A refund needs the original receipt.',
      'Refunds go back to the card that paid.',
      'Our warranty lasts two years.',
      'The warranty covers parts and labour.',
      'A warranty claim needs the serial number.',
    ];
    const doc = await docs.upload(owner, assistantId, file([sentences.join(' ')]));
    const done = await docs.settled(owner, assistantId, doc.id);
    expect(done).toMatchObject({ status: 'completed', retrieval_mode: 'hybrid' });
    const inputs = embedded();
    // Each sentence alone (for the split), then each chunk (for retrieval).
    for (const sentence of sentences) expect(inputs).toContain(sentence);
    expect(inputs.length).toBe(sentences.length + (done.total_chunks as number));
  });
});

describe('the knowledge sweep', () => {
  it('gives a document whose processing stood still a new job, once; fresh and settled ones are left alone', async () => {
    const assistantId = await docs.assistant(owner, SMALL);
    const upload = (n: number) =>
      docs.upload(owner, assistantId, file(paragraphs(n, `topic ${n}`)), { auto_process: 'false' });
    const [stale, fresh, done] = [await upload(5), await upload(6), await upload(7)];
    const { db } = t.database;
    const tenant = new Tenant(owner.organizationId);
    // As a killed process leaves them: `processing`, and (the stale one) untouched for ten minutes.
    for (const doc of [stale, fresh]) {
      await documentStore.updateForGeneration(db, tenant, doc.id, 1, { status: 'processing' });
    }
    await documentStore.updateForGeneration(db, tenant, done.id, 1, { status: 'completed' });
    await t.database.executeSql(
      `update knowledge_documents set updated_at = now() - interval '10 minutes' where id = any($1)`,
      [[stale.id, done.id]],
    );
    const recovery = new KnowledgeRecovery({
      db,
      queue: t.platform.queue,
      log: { warn() {}, error() {} },
      sweepIntervalSeconds: 60,
      recoverAfterSeconds: 120,
    });
    expect(await recovery.sweep()).toBe(1);
    expect(await recovery.sweep()).toBe(0);
    const completed = await docs.settled(owner, assistantId, stale.id);
    expect(completed).toMatchObject({ status: 'completed', processed_chunks: 5, total_chunks: 5 });
    expect(await docs.jobRetries(stale.id)).toEqual([0]);
    expect(await docs.jobRetries(fresh.id)).toEqual([]);
    expect((await docs.status(owner, assistantId, fresh.id)).status).toBe('processing');
    expect(await docs.jobRetries(done.id)).toEqual([]);

    // The dead job's own retry (or any duplicate) comes later: it finds the document completed and
    // changes nothing.
    await t.platform.queue.enqueue('knowledge.process', {
      document_id: stale.id,
      organization_id: owner.organizationId,
      generation: 1,
    });
    await waitFor(async () => {
      const { rows } = await t.database.executeSql(
        `select state from pgboss.job where name = 'knowledge.process' and (data->>'document_id')::int = $1`,
        [stale.id],
      );
      return rows.length === 2 && rows.every((row) => row.state === 'completed');
    });
    const after = await documentStore.findDocument(db, tenant, stale.id);
    expect(after).toMatchObject({ status: 'completed', processedChunks: 5 });
    expect(after?.updatedAt).toEqual(new Date(completed.updated_at as string));
    expect(await docs.chunksOf(stale.id, 1)).toHaveLength(5);
  });
});
