/**
 * What the knowledge processing tests share, over one test platform: an assistant made through the
 * API, an upload as a browser sends it (multipart), the document followed to its end, its stored
 * chunks and its jobs.
 */
import { and, eq, sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { knowledgeChunks } from '../../src/db/schema/index.js';
import type { TestUser } from './factories.js';
import { type TestPlatform, waitFor } from './harness.js';

export interface UploadFile {
  fileName: string;
  contentType: string;
  bytes: Uint8Array;
}

export type DocumentView = Record<string, unknown> & {
  id: number;
  generation: number;
  status: string;
  total_chunks: number | null;
  processed_chunks: number;
};

let serial = 0;

export function knowledgeDocs(t: TestPlatform) {
  return {
    async assistant(user: TestUser, rag: object = {}): Promise<number> {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/v1/assistants',
        headers: user.headers,
        payload: { name: `Processing ${++serial}`, rag_settings: rag },
      });
      expect(response.statusCode, response.body).toBe(201);
      return response.json().id;
    },

    async upload(
      user: TestUser,
      assistantId: number,
      file: UploadFile,
      fields: Record<string, string> = {},
    ): Promise<DocumentView> {
      const data = new FormData();
      for (const [name, value] of Object.entries(fields)) data.append(name, value);
      data.append('file', new Blob([file.bytes], { type: file.contentType }), file.fileName);
      const encoded = new Response(data);
      const response = await t.app.inject({
        method: 'POST',
        url: `/api/v1/assistants/${assistantId}/documents/upload`,
        headers: { ...user.headers, 'content-type': encoded.headers.get('content-type')! },
        payload: Buffer.from(await encoded.arrayBuffer()),
      });
      expect(response.statusCode, response.body).toBe(201);
      return response.json();
    },

    async status(user: TestUser, assistantId: number, documentId: number): Promise<DocumentView> {
      const response = await t.app.inject({
        method: 'GET',
        url: `/api/v1/assistants/${assistantId}/documents/${documentId}/status`,
        headers: user.headers,
      });
      expect(response.statusCode, response.body).toBe(200);
      return response.json();
    },

    /** The document once it settled (completed or failed) at `generation`. */
    async settled(user: TestUser, assistantId: number, documentId: number, generation = 1) {
      return waitFor(async () => {
        const response = await t.app.inject({
          method: 'GET',
          url: `/api/v1/assistants/${assistantId}/documents/${documentId}`,
          headers: user.headers,
        });
        const body = response.json() as DocumentView;
        return body.generation === generation && ['completed', 'failed'].includes(body.status)
          ? body
          : undefined;
      }, 30_000);
    },

    /** The stored chunks of one generation, in position order, with their vectors' lengths. */
    async chunksOf(documentId: number, generation: number) {
      return t.database.db
        .select({
          position: knowledgeChunks.position,
          content: knowledgeChunks.content,
          dimensions: knowledgeChunks.dimensions,
          length: sql<number | null>`array_length(${knowledgeChunks.embedding}, 1)`,
        })
        .from(knowledgeChunks)
        .where(and(eq(knowledgeChunks.documentId, documentId), eq(knowledgeChunks.generation, generation)))
        .orderBy(knowledgeChunks.position);
    },

    /** The retry counts of the document's `knowledge.process` jobs, oldest first. */
    async jobRetries(documentId: number): Promise<number[]> {
      const { rows } = await t.database.executeSql(
        `select retry_count from pgboss.job where name = 'knowledge.process'
          and (data->>'document_id')::int = $1 order by created_on`,
        [documentId],
      );
      return rows.map((row) => Number(row.retry_count));
    },
  };
}

/** `count` paragraphs of about 90 characters, each different, each its own chunk at chunk_size 100. */
export function paragraphs(count: number, topic = 'refunds'): string[] {
  return Array.from(
    { length: count },
    (_, i) => `Paragraph ${i} explains ${topic} case ${i * 7}: parcels come back within ${i % 30} days.`,
  );
}
