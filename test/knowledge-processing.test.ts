/**
 * The `knowledge.process` job through the real queue and workers (issue 20, item 2), without an
 * embeddings key: every format uploaded and followed to `completed` (by words only, with the notice
 * saying so), its chunks stored once each and found by full-text search; a rag_settings change that
 * re-splits a document; a file that cannot be parsed failing at once with the reason.
 */
import { and, eq, sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { knowledgeChunks } from '../src/db/schema/index.js';
import { DOCUMENT_FORMATS } from '../src/db/schema/knowledge.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { knowledgeDocs, type UploadFile } from './support/knowledge-docs.js';
import { brokenPdf, sampleFile } from './support/knowledge-files.js';

const t = useTestPlatform();
let f: Factories;
let owner: TestUser;

beforeAll(async () => {
  f = new Factories(t);
  owner = await f.user();
});

const docs = knowledgeDocs(t);
const assistant = (rag: object = {}) => docs.assistant(owner, rag);
const upload = (assistantId: number, file: UploadFile) => docs.upload(owner, assistantId, file);
const settled = (assistantId: number, documentId: number, generation = 1) =>
  docs.settled(owner, assistantId, documentId, generation);
const chunksOf = (documentId: number, generation: number) => docs.chunksOf(documentId, generation);

const PARAGRAPHS = [
  'Refunds are paid within fourteen days of a returned parcel.',
  'Shipping is free for orders over fifty euros.',
  'Our support line answers on weekdays from nine to five.',
];

describe('processing without an embeddings key', () => {
  it.each(DOCUMENT_FORMATS)(
    '%s: completes by words only, every chunk stored once and found by full-text search',
    async (format) => {
      const assistantId = await assistant();
      const doc = await upload(assistantId, await sampleFile(format, 'Refund policy', PARAGRAPHS, 'policy'));
      const done = await settled(assistantId, doc.id);
      expect(done, JSON.stringify(done)).toMatchObject({
        status: 'completed',
        retrieval_mode: 'full_text',
        progress: 100,
        error: null,
        embedding_model: null,
      });
      expect(done.notice).toMatch(/No embeddings key \(llm_a\).*words only.*reprocess/);
      const chunks = await chunksOf(doc.id, 1);
      expect(chunks.length).toBeGreaterThan(0);
      expect(done.total_chunks).toBe(chunks.length);
      expect(done.processed_chunks).toBe(chunks.length);
      expect(chunks.map((c) => c.position)).toEqual(chunks.map((_, i) => i));
      const found = await t.database.db
        .select({ content: knowledgeChunks.content })
        .from(knowledgeChunks)
        .where(
          and(
            eq(knowledgeChunks.documentId, doc.id),
            sql`${knowledgeChunks.searchVector} @@ plainto_tsquery('english', 'refund parcel')`,
          ),
        );
      expect(found.map((c) => c.content).join(' ')).toMatch(/Refunds are paid within fourteen days/);
    },
  );

  it('re-splits a document when chunk_size changes: a new generation, a new chunk count, the old chunks gone', async () => {
    const assistantId = await assistant({ chunk_size: 1000, chunk_overlap: 0 });
    const long = Array.from(
      { length: 30 },
      (_, i) => `Sentence number ${i} says something about refunds and parcels.`,
    );
    const doc = await upload(assistantId, await sampleFile('text', 'Long policy', [long.join(' ')]));
    const first = await settled(assistantId, doc.id);
    expect(first.status).toBe('completed');
    const put = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/assistants/${assistantId}`,
      headers: owner.headers,
      payload: { rag_settings: { chunk_size: 200, chunk_overlap: 0 } },
    });
    expect(put.statusCode, put.body).toBe(200);
    const second = await settled(assistantId, doc.id, 2);
    expect(second.status).toBe('completed');
    expect(second.total_chunks).toBeGreaterThan(first.total_chunks ?? 0);
    expect(await chunksOf(doc.id, 2)).toHaveLength(second.total_chunks ?? -1);
    expect(await chunksOf(doc.id, 1)).toHaveLength(0);
  });

  it('fails a file that cannot be parsed at once, with the reason, and does not retry it', async () => {
    const assistantId = await assistant();
    const doc = await upload(assistantId, {
      fileName: 'broken.pdf',
      contentType: 'application/pdf',
      bytes: brokenPdf(),
    });
    const done = await settled(assistantId, doc.id);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/PDF/);
    expect(await chunksOf(doc.id, 1)).toHaveLength(0);
    expect(await docs.jobRetries(doc.id)).toEqual([0]);
  });
});
