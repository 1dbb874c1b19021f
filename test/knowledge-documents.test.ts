/**
 * The documents API of knowledge bases (issue 20, item 1): upload (stored as it arrives, its row and
 * job together), list with include_processing, read, status, delete (with the stored file), reprocess,
 * a rag_settings change that re-processes, deleting the assistant; every refusal of an upload (400,
 * 413 with a small limit, 415, 422) leaving nothing stored; and who may do what. No workers run here:
 * jobs are counted, not run (processing is test/knowledge-processing.test.ts).
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { updateForGeneration } from '../src/domains/knowledge/document-store.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

const LIMIT = 64 * 1024;
// The tests share one database (no workers: jobs stay queued); each makes its own assistants.
const t = useTestPlatform({ KNOWLEDGE_MAX_UPLOAD_BYTES: String(LIMIT) }, { workers: false });
let f: Factories;
let owner: TestUser;
let other: TestUser;

beforeAll(async () => {
  f = new Factories(t);
  owner = await f.user();
  other = await f.user();
});

type Headers = Record<string, string>;
interface FilePart {
  content: string | Uint8Array;
  filename?: string;
  type?: string;
  field?: string;
}

const TEXT = 'Refunds are paid within 14 days of a return.\n\nShipping is free over 50 euros.\n';

async function form(file: FilePart | null, fields: Record<string, string> = {}) {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  if (file)
    data.append(
      file.field ?? 'file',
      new Blob([file.content], { type: file.type ?? 'text/plain' }),
      file.filename ?? 'policies.txt',
    );
  const encoded = new Response(data);
  return {
    payload: Buffer.from(await encoded.arrayBuffer()),
    headers: { 'content-type': encoded.headers.get('content-type')! },
  };
}

async function upload(
  assistantId: number,
  file: FilePart | null = { content: TEXT },
  fields: Record<string, string> = {},
  headers: Headers = owner.headers,
) {
  const body = await form(file, fields);
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/assistants/${assistantId}/documents/upload`,
    headers: { ...headers, ...body.headers },
    payload: body.payload,
  });
}

const call = (method: 'GET' | 'POST' | 'DELETE', url: string, headers: Headers = owner.headers) =>
  t.app.inject({ method, url, headers });

let assistantSerial = 0;
const newAssistant = (user: TestUser = owner) => f.assistant(user, `Knowledge ${++assistantSerial}`);

/** Every stored object under the knowledge prefix. */
function storedObjects(): string[] {
  if (t.config.storage.backend !== 'files') throw new Error('files storage expected');
  const root = path.join(t.config.storage.dir, 'knowledge');
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

async function queuedJobs(): Promise<number> {
  const counts = await t.platform.queue.counts('knowledge.process');
  return counts.created ?? 0;
}

describe('POST …/documents/upload', () => {
  it('stores the file, answers 201 with a pending document, and queues its job in the same step', async () => {
    const assistantId = await newAssistant();
    const before = storedObjects().length;
    const jobs = await queuedJobs();
    const response = await upload(
      assistantId,
      { content: TEXT, filename: 'policies.txt' },
      {
        category: 'support',
        tags: 'refunds, shipping, refunds',
      },
    );
    expect(response.statusCode, response.body).toBe(201);
    const doc = response.json();
    expect(doc).toMatchObject({
      assistant_id: assistantId,
      name: 'policies.txt',
      category: 'support',
      tags: ['refunds', 'shipping'],
      file_name: 'policies.txt',
      format: 'text',
      size_bytes: Buffer.byteLength(TEXT),
      status: 'pending',
      generation: 1,
      processed_chunks: 0,
      total_chunks: null,
      progress: 0,
      processing_settings: {
        chunking_strategy: 'recursive',
        chunk_size: 1000,
        chunk_overlap: 200,
        embedding_model: 'text-embedding-3-small',
      },
    });
    expect(storedObjects().length).toBe(before + 1);
    expect(await queuedJobs()).toBe(jobs + 1);
  });

  it('takes a name, tags as a JSON array, and auto_process=false (pending, no job)', async () => {
    const assistantId = await newAssistant();
    const jobs = await queuedJobs();
    const response = await upload(
      assistantId,
      { content: '# Title\n\nSome words.\n', filename: 'notes.md', type: 'text/markdown' },
      { name: 'Notes', tags: '["a","b"]', auto_process: 'false' },
    );
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json()).toMatchObject({
      name: 'Notes',
      tags: ['a', 'b'],
      format: 'markdown',
      status: 'pending',
    });
    expect(await queuedJobs()).toBe(jobs);
  });

  it('accepts a file of exactly the limit, and refuses one byte more with 413 naming the limit, storing nothing', async () => {
    const assistantId = await newAssistant();
    expect((await upload(assistantId, { content: 'a'.repeat(LIMIT) })).statusCode).toBe(201);
    const before = storedObjects().length;
    const response = await upload(assistantId, { content: 'a'.repeat(LIMIT + 1) });
    expectError(response, 413, new RegExp(String(LIMIT)));
    expect(storedObjects().length).toBe(before);
  });

  it('refuses a type it cannot read (415, the reason), an empty file and a missing file (400)', async () => {
    const assistantId = await newAssistant();
    const before = storedObjects().length;
    const png = Uint8Array.from([
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52,
    ]);
    const refused = await upload(assistantId, { content: png, filename: 'logo.png', type: 'image/png' });
    expectError(refused, 415);
    expect(refused.json().detail.length).toBeGreaterThan(10);
    const empty = await upload(assistantId, { content: '' });
    expect(empty.statusCode, empty.body).toBe(400);
    expect(JSON.stringify(empty.json())).toMatch(/empty/);
    const missing = await upload(assistantId, null, { name: 'No file' });
    expect(missing.statusCode, missing.body).toBe(400);
    expect(missing.json().detail).toEqual([
      { loc: ['body', 'file'], msg: 'Field required', type: 'missing' },
    ]);
    expect(storedObjects().length).toBe(before);
  });

  it('refuses a body that is not multipart with 415', async () => {
    const assistantId = await newAssistant();
    const response = await t.app.inject({
      method: 'POST',
      url: `/api/v1/assistants/${assistantId}/documents/upload`,
      headers: owner.headers,
      payload: { file: 'text' },
    });
    expectError(response, 415, /multipart/);
  });

  it('refuses bad fields with 422 naming each, and removes the stored file', async () => {
    const assistantId = await newAssistant();
    const before = storedObjects().length;
    const many = Array.from({ length: 21 }, (_, i) => `t${i}`).join(',');
    expectValidation(await upload(assistantId, undefined, { tags: many }), ['body', 'tags']);
    expectValidation(await upload(assistantId, undefined, { tags: 'x'.repeat(51) }), ['body', 'tags']);
    expectValidation(await upload(assistantId, undefined, { tags: '["a", "b"' }), ['body', 'tags']);
    expectValidation(await upload(assistantId, undefined, { tags: '[1,2]' }), ['body', 'tags']);
    expectValidation(await upload(assistantId, undefined, { name: 'n'.repeat(256) }), ['body', 'name']);
    expectValidation(await upload(assistantId, undefined, { category: 'c'.repeat(101) }), [
      'body',
      'category',
    ]);
    expectValidation(await upload(assistantId, undefined, { auto_process: 'maybe' }), [
      'body',
      'auto_process',
    ]);
    expectValidation(
      await upload(assistantId, undefined, { colour: 'red' }),
      ['body', 'colour'],
      'extra_forbidden',
    );
    expect(storedObjects().length).toBe(before);
  });
});

describe('listing, reading and the status', () => {
  it('lists newest first in pages; include_processing=false shows only completed documents', async () => {
    const assistantId = await newAssistant();
    const first = (await upload(assistantId, { content: TEXT }, { name: 'First' })).json();
    const second = (await upload(assistantId, { content: TEXT }, { name: 'Second' })).json();
    const all = await call('GET', `/api/v1/assistants/${assistantId}/documents`);
    expect(all.statusCode, all.body).toBe(200);
    expect(all.json().documents.map((d: { name: string }) => d.name)).toEqual(['Second', 'First']);
    expect(all.json().pagination).toMatchObject({ page: 1, total_items: 2, has_next: false });
    const paged = await call('GET', `/api/v1/assistants/${assistantId}/documents?per_page=1&page=2`);
    expect(paged.json().documents.map((d: { name: string }) => d.name)).toEqual(['First']);
    expect(paged.json().pagination).toMatchObject({ total_items: 2, total_pages: 2, has_prev: true });

    const none = await call('GET', `/api/v1/assistants/${assistantId}/documents?include_processing=false`);
    expect(none.json().documents).toEqual([]);
    await updateForGeneration(t.database.db, new Tenant(owner.organizationId), first.id, 1, {
      status: 'completed',
      totalChunks: 1,
      processedChunks: 1,
    });
    const completed = await call(
      'GET',
      `/api/v1/assistants/${assistantId}/documents?include_processing=false`,
    );
    expect(completed.json().documents.map((d: { id: number }) => d.id)).toEqual([first.id]);
    expect(second.status).toBe('pending');
  });

  it('reads one document and its status, with progress from processed and total chunks', async () => {
    const assistantId = await newAssistant();
    const doc = (await upload(assistantId)).json();
    await updateForGeneration(t.database.db, new Tenant(owner.organizationId), doc.id, 1, {
      status: 'processing',
      totalChunks: 8,
      processedChunks: 3,
    });
    const one = await call('GET', `/api/v1/assistants/${assistantId}/documents/${doc.id}`);
    expect(one.statusCode, one.body).toBe(200);
    expect(one.json()).toMatchObject({
      id: doc.id,
      status: 'processing',
      total_chunks: 8,
      processed_chunks: 3,
    });
    const status = await call('GET', `/api/v1/assistants/${assistantId}/documents/${doc.id}/status`);
    expect(status.statusCode, status.body).toBe(200);
    expect(status.json()).toEqual({
      document_id: doc.id,
      status: 'processing',
      processed_chunks: 3,
      total_chunks: 8,
      progress: 37,
      retrieval_mode: null,
      notice: null,
      error: null,
      updated_at: expect.any(String),
    });
  });
});

describe('delete and reprocess', () => {
  it('deletes the document and its stored file (204), then 404', async () => {
    const assistantId = await newAssistant();
    const before = storedObjects().length;
    const doc = (await upload(assistantId)).json();
    expect(storedObjects().length).toBe(before + 1);
    const url = `/api/v1/assistants/${assistantId}/documents/${doc.id}`;
    const deleted = await call('DELETE', url);
    expect(deleted.statusCode, deleted.body).toBe(204);
    expect(storedObjects().length).toBe(before);
    expectError(await call('GET', url), 404);
    expectError(await call('DELETE', url), 404);
  });

  it('reprocess answers 202 with the next generation, pending, and queues its job', async () => {
    const assistantId = await newAssistant();
    const doc = (await upload(assistantId, undefined, { auto_process: 'false' })).json();
    const jobs = await queuedJobs();
    const response = await call('POST', `/api/v1/assistants/${assistantId}/documents/${doc.id}/reprocess`);
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json()).toMatchObject({
      id: doc.id,
      generation: 2,
      status: 'pending',
      processed_chunks: 0,
    });
    expect(await queuedJobs()).toBe(jobs + 1);
  });

  it('a rag_settings change of chunking re-processes every document; one of retrieval does not', async () => {
    const assistantId = await newAssistant();
    const doc = (await upload(assistantId)).json();
    const put = (rag: object) =>
      t.app.inject({
        method: 'PUT',
        url: `/api/v1/assistants/${assistantId}`,
        headers: owner.headers,
        payload: { rag_settings: rag },
      });
    const documentUrl = `/api/v1/assistants/${assistantId}/documents/${doc.id}`;
    expect((await put({ search_limit: 5 })).statusCode).toBe(200);
    expect((await call('GET', documentUrl)).json().generation).toBe(1);

    let jobs = await queuedJobs();
    expect((await put({ chunk_size: 400, chunk_overlap: 50 })).statusCode).toBe(200);
    expect((await call('GET', documentUrl)).json()).toMatchObject({
      generation: 2,
      status: 'pending',
      processing_settings: { chunk_size: 400, chunk_overlap: 50 },
    });
    expect(await queuedJobs()).toBe(jobs + 1);

    jobs = await queuedJobs();
    expect(
      (await put({ chunk_size: 400, chunk_overlap: 50, embedding_model: 'other', auto_process: false }))
        .statusCode,
    ).toBe(200);
    expect((await call('GET', documentUrl)).json()).toMatchObject({ generation: 3, status: 'pending' });
    expect(await queuedJobs()).toBe(jobs);
  });

  it('deleting the assistant deletes its documents’ stored files', async () => {
    const assistantId = await newAssistant();
    const before = storedObjects().length;
    await upload(assistantId);
    await upload(assistantId);
    expect(storedObjects().length).toBe(before + 2);
    expect((await call('DELETE', `/api/v1/assistants/${assistantId}`)).statusCode).toBe(204);
    expect(storedObjects().length).toBe(before);
  });
});

describe('who may do what', () => {
  it('answers 401 without credentials on every route', async () => {
    const assistantId = await newAssistant();
    const doc = (await upload(assistantId)).json();
    const base = `/api/v1/assistants/${assistantId}/documents`;
    for (const [method, url] of [
      ['GET', base],
      ['GET', `${base}/${doc.id}`],
      ['GET', `${base}/${doc.id}/status`],
      ['DELETE', `${base}/${doc.id}`],
      ['POST', `${base}/${doc.id}/reprocess`],
    ] as const)
      expectError(await call(method, url, {}), 401);
    expectError(await upload(assistantId, undefined, {}, {}), 401);
  });

  it('lets a plain member read and write; an API key needs the assistants area (read to read)', async () => {
    const assistantId = await newAssistant();
    const member = await f.member(owner.organizationId, 'user');
    expect((await upload(assistantId, undefined, {}, member.headers)).statusCode).toBe(201);
    const reader = await f.apiKey(owner, { permissions: { assistants: 'read' } });
    const writer = await f.apiKey(owner, { permissions: { assistants: 'read_write' } });
    const outsider = await f.apiKey(owner, { permissions: { calls: 'read_write' } });
    const list = `/api/v1/assistants/${assistantId}/documents`;
    expect((await call('GET', list, reader.headers)).statusCode).toBe(200);
    expectError(await call('GET', list, outsider.headers), 403);
    expectError(await upload(assistantId, undefined, {}, reader.headers), 403);
    expect((await upload(assistantId, undefined, {}, writer.headers)).statusCode).toBe(201);
  });

  it('answers 404 for another organization’s assistant and document, and another assistant’s document', async () => {
    const mine = await newAssistant();
    const sibling = await newAssistant();
    const theirs = await newAssistant(other);
    const myDoc = (await upload(mine)).json();
    const theirDoc = (await upload(theirs, undefined, {}, other.headers)).json();
    expectError(await upload(theirs), 404);
    expectError(await call('GET', `/api/v1/assistants/${theirs}/documents`), 404);
    for (const [assistant, doc] of [
      [theirs, theirDoc.id],
      [mine, theirDoc.id],
      [sibling, myDoc.id],
    ]) {
      const base = `/api/v1/assistants/${assistant}/documents/${doc}`;
      expectError(await call('GET', base), 404);
      expectError(await call('GET', `${base}/status`), 404);
      expectError(await call('POST', `${base}/reprocess`), 404);
      expectError(await call('DELETE', base), 404);
    }
    // Nothing of theirs was touched.
    const still = await call('GET', `/api/v1/assistants/${theirs}/documents/${theirDoc.id}`, other.headers);
    expect(still.json()).toMatchObject({ generation: 1 });
  });
});
