/**
 * Knowledge-base documents (issue 20, item 1): upload (streamed to the storage interface as it
 * arrives, its format decided by its first bytes), list, read, status, delete and re-process — and
 * what the assistants domain tells it: `rag_settings` changed (documents processed with other
 * settings get a new generation and, with `auto_process`, a job, in the assistant's own transaction)
 * or the assistant is being deleted (rows cascade; the stored objects go after the commit).
 *
 * A document's row and its `knowledge.process` job are written in one transaction, so a job exists
 * exactly when its document does. A new generation deletes the old chunks in that same transaction;
 * a job still running for the old one finds its generation gone and writes nothing (processing.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Static } from 'typebox';
import { Value } from 'typebox/value';
import type { Db, Tx } from '../../db/client.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { ProcessingSettings } from '../../db/schema/knowledge.js';
import type { Tenant } from '../../db/tenant.js';
import type { Page } from '../../lib/page.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import type { Storage } from '../../storage/storage.js';
import { findAssistant } from '../assistants/reads.js';
import { RagSettings } from '../assistants/schemas.js';
import { notFound, tooLarge, unsupported, ValidationFailed, type ValidationIssue } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import { deleteDocumentChunks } from './chunk-store.js';
import * as store from './document-store.js';
import { detectFormat, HEAD_BYTES } from './formats.js';
import type { DocumentFormat } from './types.js';

export type { DocumentRow } from './document-store.js';

const MAX_TAGS = 20;
const MAX_TAG_LENGTH = 50;
const MAX_NAME_LENGTH = 255;
const MAX_CATEGORY_LENGTH = 100;

/** An assistant's rag_settings with every default filled in (stored configs may predate a field). */
export function ragSettingsOf(config: unknown): Rag {
  const rag = (config as { rag_settings?: unknown } | null)?.rag_settings;
  return Value.Default(RagSettings, structuredClone(typeof rag === 'object' && rag ? rag : {})) as Rag;
}
type Rag = Static<typeof RagSettings>;

/** The rag_settings that decide how a document is split and embedded: a change to one re-processes it. */
export function processingSettingsOf(config: unknown): ProcessingSettings {
  const rag = ragSettingsOf(config);
  return {
    chunking_strategy: rag.chunking_strategy,
    chunk_size: rag.chunk_size,
    chunk_overlap: rag.chunk_overlap,
    embedding_model: rag.embedding_model,
  };
}

const sameSettings = (a: ProcessingSettings, b: ProcessingSettings) =>
  a.chunking_strategy === b.chunking_strategy &&
  a.chunk_size === b.chunk_size &&
  a.chunk_overlap === b.chunk_overlap &&
  a.embedding_model === b.embedding_model;

/** The file of an upload as it arrives: its own name and type, and its bytes as a stream. */
export interface IncomingFile {
  fileName: string;
  contentType: string;
  body: Readable;
}

/** An upload's bytes, in storage under `key`, not yet a document. */
export interface StoredFile {
  key: string;
  fileName: string;
  contentType: string;
  format: DocumentFormat;
  bytes: number;
}

/** The upload's other form fields, as sent (text). */
export interface DocumentFields {
  name?: string;
  category?: string;
  tags?: string;
  autoProcess?: boolean;
}

export interface KnowledgeServiceDeps {
  db: Db;
  queue: JobQueue;
  storage: Storage;
  /** KNOWLEDGE_MAX_UPLOAD_BYTES. */
  maxUploadBytes: number;
  log: { warn(details: object, message: string): void };
}

export class KnowledgeService {
  constructor(private readonly deps: KnowledgeServiceDeps) {}

  /** 404 unless the assistant is the caller's organization's. */
  async assertAssistant(principal: Principal, assistantId: number): Promise<void> {
    if (!(await findAssistant(this.deps.db, principal.tenant, assistantId)))
      throw notFound('Assistant not found');
  }

  /**
   * Streams an upload to storage: the first bytes decide the format (a refused one stores nothing),
   * an empty file is refused, and one past the limit is removed again. Returns where it went.
   */
  async storeFile(principal: Principal, assistantId: number, file: IncomingFile): Promise<StoredFile> {
    const { maxUploadBytes } = this.deps;
    const source = file.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const head: Buffer[] = [];
    let headLength = 0;
    let ended = false;
    while (headLength < HEAD_BYTES) {
      const next = await source.next();
      if (next.done) {
        ended = true;
        break;
      }
      head.push(next.value);
      headLength += next.value.length;
    }
    if (headLength === 0)
      throw new ValidationFailed(
        [{ loc: ['body', 'file'], msg: 'The file is empty', type: 'value_error' }],
        400,
      );
    const detected = detectFormat({
      fileName: file.fileName,
      contentType: file.contentType,
      head: Buffer.concat(head),
    });
    if (typeof detected === 'object') {
      await source.return?.();
      throw unsupported(detected.refused);
    }
    const key = `knowledge/${principal.tenant.organizationId}/${assistantId}/${randomUUID()}`;
    let bytes = 0;
    async function* counted(): AsyncGenerator<Buffer> {
      const all = async function* () {
        yield* head;
        if (ended) return;
        try {
          for (;;) {
            const next = await source.next();
            if (next.done) return;
            yield next.value;
          }
        } finally {
          // Stopped early (too large, storage failed): the upload's stream is let go of, not left paused.
          await source.return?.();
        }
      };
      for await (const chunk of all()) {
        bytes += chunk.length;
        if (bytes > maxUploadBytes) throw tooLarge(tooLargeDetail(maxUploadBytes));
        yield chunk;
      }
    }
    try {
      await this.deps.storage.put(key, counted(), {
        contentType: file.contentType || 'application/octet-stream',
      });
    } catch (error) {
      // A failed put leaves nothing behind by the storage contract; deleting again costs little.
      await this.deps.storage.delete(key).catch(() => {});
      throw error;
    }
    return { key, fileName: file.fileName, contentType: file.contentType, format: detected, bytes };
  }

  /** Removes a stored upload that will not become a document (its form turned out invalid). */
  async discardFile(stored: StoredFile): Promise<void> {
    await this.#deleteObject(stored.key);
  }

  /**
   * The document of a stored upload, with its job when it is to be processed now (the upload's
   * `auto_process`, else the assistant's). The stored object is removed when this fails.
   */
  async createDocument(
    principal: Principal,
    assistantId: number,
    stored: StoredFile,
    fields: DocumentFields,
  ): Promise<store.DocumentRow> {
    const { tenant } = principal;
    try {
      const values = documentValues(stored, fields);
      return await this.deps.queue.transaction(async (tx, jobs) => {
        // Locked: a rag_settings change meanwhile would re-process the documents it sees, not this one.
        const assistant = await findAssistant(tx, tenant, assistantId, { forUpdate: true });
        if (!assistant) throw notFound('Assistant not found');
        const rag = ragSettingsOf(assistant.config);
        const row = await store.insertDocument(tx, tenant, {
          ...values,
          assistantId,
          settings: processingSettingsOf(assistant.config),
        });
        if (fields.autoProcess ?? rag.auto_process) await enqueueProcessing(jobs, tenant, row);
        return row;
      });
    } catch (error) {
      await this.#deleteObject(stored.key);
      if (isForeignKeyViolation(error)) throw notFound('Assistant not found');
      throw error;
    }
  }

  async list(
    principal: Principal,
    assistantId: number,
    page: Page,
    options: { includeProcessing: boolean },
  ): Promise<{ rows: store.DocumentRow[]; total: number }> {
    await this.assertAssistant(principal, assistantId);
    return store.listDocuments(this.deps.db, principal.tenant, assistantId, page, {
      completedOnly: !options.includeProcessing,
    });
  }

  async get(principal: Principal, assistantId: number, documentId: number): Promise<store.DocumentRow> {
    await this.assertAssistant(principal, assistantId);
    const row = await store.findDocument(this.deps.db, principal.tenant, documentId, { assistantId });
    if (!row) throw notFound('Document not found');
    return row;
  }

  /** Deletes the document (its chunks cascade), then its stored bytes; a failure there is only logged. */
  async remove(principal: Principal, assistantId: number, documentId: number): Promise<void> {
    await this.assertAssistant(principal, assistantId);
    const key = await store.deleteDocument(this.deps.db, principal.tenant, documentId, assistantId);
    if (key === undefined) throw notFound('Document not found');
    await this.#deleteObject(key);
  }

  /** A new generation of the document with the assistant's current settings, and its job. */
  async reprocess(principal: Principal, assistantId: number, documentId: number): Promise<store.DocumentRow> {
    const { tenant } = principal;
    return this.deps.queue.transaction(async (tx, jobs) => {
      const assistant = await findAssistant(tx, tenant, assistantId, { forUpdate: true });
      if (!assistant) throw notFound('Assistant not found');
      const row = await store.findDocument(tx, tenant, documentId, { assistantId, forUpdate: true });
      if (!row) throw notFound('Document not found');
      const [next] = await this.#newGeneration(tx, tenant, [row.id], processingSettingsOf(assistant.config));
      await enqueueProcessing(jobs, tenant, next!);
      return next!;
    });
  }

  /**
   * The assistant's rag_settings were written (in the update's transaction, the assistant locked):
   * every document processed with other chunking or embedding settings gets a new generation, and a
   * job when `auto_process` is on.
   */
  async ragSettingsChanged(
    tx: Tx,
    jobs: JobEnqueuer,
    tenant: Tenant,
    assistantId: number,
    config: unknown,
  ): Promise<void> {
    const settings = processingSettingsOf(config);
    const documents = await store.lockAssistantDocuments(tx, tenant, assistantId);
    const stale = documents.filter((doc) => !sameSettings(doc.settings, settings)).map((doc) => doc.id);
    const rows = await this.#newGeneration(tx, tenant, stale, settings);
    if (!ragSettingsOf(config).auto_process) return;
    for (const row of rows) await enqueueProcessing(jobs, tenant, row);
  }

  /**
   * The assistant is being deleted (in that transaction): its documents' rows cascade with it; what
   * is returned deletes their stored bytes, to be run once the deletion committed.
   */
  async assistantDeleting(tx: Tx, tenant: Tenant, assistantId: number): Promise<() => Promise<void>> {
    const keys = await store.storageKeysOfAssistant(tx, tenant, assistantId);
    return async () => {
      for (const key of keys) await this.#deleteObject(key);
    };
  }

  async #newGeneration(
    tx: Tx,
    tenant: Tenant,
    ids: number[],
    settings: ProcessingSettings,
  ): Promise<store.DocumentRow[]> {
    for (const id of ids) await deleteDocumentChunks(tx, tenant, id);
    return store.startGeneration(tx, tenant, ids, settings);
  }

  async #deleteObject(key: string): Promise<void> {
    try {
      await this.deps.storage.delete(key);
    } catch (error) {
      // The row is gone already: an orphaned object costs space, not correctness.
      this.deps.log.warn({ err: error, storageKey: key }, 'could not delete a knowledge document object');
    }
  }
}

async function enqueueProcessing(jobs: JobEnqueuer, tenant: Tenant, row: store.DocumentRow): Promise<void> {
  await jobs.enqueue('knowledge.process', {
    document_id: row.id,
    organization_id: tenant.organizationId,
    generation: row.generation,
  });
}

function tooLargeDetail(maxBytes: number): string {
  return `The file is larger than the ${maxBytes} bytes (KNOWLEDGE_MAX_UPLOAD_BYTES) a document may have`;
}

/** The row's own fields from the upload and its form; 422 naming each field that breaks a rule. */
function documentValues(stored: StoredFile, fields: DocumentFields) {
  const issues: ValidationIssue[] = [];
  const issue = (field: string, msg: string) =>
    issues.push({ loc: ['body', field], msg, type: 'value_error' });
  const name = (fields.name ?? '').trim() || stored.fileName.trim() || 'document';
  if (name.length > MAX_NAME_LENGTH) issue('name', `name has at most ${MAX_NAME_LENGTH} characters`);
  const category = fields.category?.trim() || null;
  if (category && category.length > MAX_CATEGORY_LENGTH)
    issue('category', `category has at most ${MAX_CATEGORY_LENGTH} characters`);
  const tags = parseTags(fields.tags);
  if (typeof tags === 'string') issue('tags', tags);
  if (issues.length > 0) throw new ValidationFailed(issues);
  return {
    name,
    category,
    tags: tags as string[],
    fileName: stored.fileName,
    contentType: stored.contentType || 'application/octet-stream',
    format: stored.format,
    bytes: stored.bytes,
    storageKey: stored.key,
  };
}

/** Tags from `a, b` or `["a","b"]`: trimmed, empty ones dropped, repeats once; or why they cannot be. */
export function parseTags(text: string | undefined): string[] | string {
  if (text === undefined || text.trim() === '') return [];
  let list: unknown[];
  if (text.trim().startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (!Array.isArray(parsed)) return 'tags must be a JSON array of strings or a comma-separated list';
      list = parsed;
    } catch {
      return 'tags must be a JSON array of strings or a comma-separated list';
    }
  } else list = text.split(',');
  if (list.some((tag) => typeof tag !== 'string')) return 'Each tag must be a string';
  const tags = [...new Set((list as string[]).map((tag) => tag.trim()).filter((tag) => tag !== ''))];
  if (tags.length > MAX_TAGS) return `At most ${MAX_TAGS} tags`;
  if (tags.some((tag) => tag.length > MAX_TAG_LENGTH))
    return `A tag has at most ${MAX_TAG_LENGTH} characters`;
  return tags;
}
