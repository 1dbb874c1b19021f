/**
 * The `knowledge.process` job (issue 20, item 2): one document, one generation — read its bytes from
 * storage, parse, split with the settings the generation was started with, embed in batches and store
 * each batch with the progress in one transaction, then complete.
 *
 * Resumable: splitting is deterministic, so an attempt after a crash splits the same chunks and starts
 * after those already stored (`storedChunkCount`); a batch's chunks and its `processed_chunks` commit
 * together, and a repeated position is ignored by the chunk store. Every write first locks the
 * document and re-checks its generation: a document deleted or re-processed meanwhile is left alone.
 *
 * Two processors of one document at once (a job handed out again by the sweep, recovery.ts, while
 * the first was only slow; the dead job's own retry after it expires) stay correct: writes are
 * serialised by the row lock, a position is stored once, `processed_chunks` is counted from what is
 * stored rather than incremented, and only the first to finish completes the document (the others
 * find it no longer `processing` and write nothing).
 *
 * The heartbeat: `updated_at` moves with every stored batch and, whatever the job is doing (parsing a
 * large PDF, embedding sentences for semantic splitting, waiting out a 429), at least every
 * `heartbeatMs`; a document `processing` whose `updated_at` stands still has lost its process, and
 * the sweep gives it a new job (KNOWLEDGE_RECOVER_AFTER_SECONDS).
 *
 * Without an embeddings key the chunks are stored without vectors and the document is found by words
 * only (`full_text`, with a notice saying so). A parse error or an embeddings failure no retry can cure
 * (a refused key, an unknown model) fails the document at once with the reason; a failure that may pass
 * (429, 5xx, time-out) is tried again twice within the attempt (a short rate limit costs seconds, not
 * the job's 15-second retry delay), then fails the attempt so the job retries, and on the last try
 * fails the document.
 */
import type { ProviderUrls } from '../../config.js';
import type { Db, Tx } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import type { SecretBox } from '../../lib/secrets.js';
import { embeddingsAdapter } from '../../providers/embeddings/index.js';
import { ProviderError } from '../../providers/errors.js';
import { jobPolicies } from '../../queue/jobs.js';
import type { Storage } from '../../storage/storage.js';
import { resolveEmbeddings } from '../runtime/resolve-embeddings.js';
import { insertChunks, maintainChunkIndexes, storedChunkCount } from './chunk-store.js';
import { splitDocument } from './chunking.js';
import * as store from './document-store.js';
import { embedTexts } from './embedder.js';
import { DocumentParseError, parseDocument } from './parse/index.js';
import type { ChunkingStrategy, EmbeddingsChoice, TextChunk } from './types.js';

/** Chunks embedded (and stored) together: one embeddings request, one transaction. */
const DEFAULT_BATCH_SIZE = 32;
/** The longest one embeddings request may take. */
const DEFAULT_EMBED_TIMEOUT_MS = 30_000;
/** Tries of one embeddings request within an attempt, and the longest wait between two. */
const EMBED_TRIES = 3;
const MAX_EMBED_WAIT_MS = 10_000;
/** How often a running job touches its document at least (a quarter of the default recover-after). */
const DEFAULT_HEARTBEAT_MS = 30_000;

export const NO_KEY_NOTICE =
  'No embeddings key (llm_a) was found for this assistant or its organization, so this document is ' +
  'found by words only (full-text search), not by meaning. Add a key and reprocess the document.';

export interface DocumentProcessorDeps {
  db: Db;
  storage: Storage;
  secrets: SecretBox;
  urls: ProviderUrls;
  /** Bytes read from storage at most (KNOWLEDGE_MAX_UPLOAD_BYTES: nothing larger was accepted). */
  maxBytes: number;
  log: { warn(details: object, message: string): void };
  batchSize?: number;
  embedTimeoutMs?: number;
  /** `updated_at` is touched at least this often while a job runs (well below the recover-after). */
  heartbeatMs?: number;
  /** Retries after the first attempt (default: the `knowledge.process` job policy). */
  retryLimit?: number;
}

/** A failure no retry can cure: the document fails with this reason at once. */
class Permanent extends Error {}

/** An embeddings failure, described for the document's `error`; `permanent` when no retry can cure it. */
class EmbeddingsFailure extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    options: { cause: unknown },
  ) {
    super(message, options);
  }
}

export class DocumentProcessor {
  readonly #retryLimit: number;
  /** Embedding lengths whose vector index exists in this processor's database (insertChunks). */
  readonly #indexedLengths = new Set<number>();

  constructor(private readonly deps: DocumentProcessorDeps) {
    this.#retryLimit = deps.retryLimit ?? jobPolicies['knowledge.process'].retryLimit;
  }

  /** `knowledge.process`: see the file comment. Harmless when run twice or for a stale generation. */
  async run(
    payload: { document_id: number; organization_id: number; generation: number },
    job: { retryCount: number },
  ): Promise<void> {
    const tenant = new Tenant(payload.organization_id);
    const { document_id: id, generation } = payload;
    const started = await store.updateForGeneration(this.deps.db, tenant, id, generation, {
      status: 'processing',
    });
    if (!started) return;
    const heartbeat = setInterval(() => {
      store
        .updateForGeneration(this.deps.db, tenant, id, generation, {}, ['processing'])
        .catch((error) => this.deps.log.warn({ documentId: id, err: error }, 'document heartbeat failed'));
    }, this.deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
    heartbeat.unref();
    try {
      await this.#process(tenant, started);
    } catch (error) {
      const permanent =
        error instanceof Permanent || error instanceof DocumentParseError || isPermanent(error);
      if (!permanent && job.retryCount < this.#retryLimit) {
        // Waiting for the job's retry (15 s and more): `pending`, so the sweep, which looks for
        // `processing` documents that stand still, does not hand it out again meanwhile.
        await store.updateForGeneration(this.deps.db, tenant, id, generation, { status: 'pending' }, [
          'processing',
        ]);
        throw error;
      }
      const reason = error instanceof Error ? error.message : String(error);
      this.deps.log.warn(
        { documentId: id, err: error, attempt: job.retryCount + 1 },
        'document processing failed',
      );
      await store.updateForGeneration(
        this.deps.db,
        tenant,
        id,
        generation,
        { status: 'failed', error: reason.slice(0, 1000) },
        ['processing'],
      );
    } finally {
      clearInterval(heartbeat);
    }
  }

  async #process(tenant: Tenant, doc: store.DocumentRow): Promise<void> {
    const bytes = await this.#read(doc.storageKey);
    const parsed = await parseDocument(doc.format, bytes);
    const choice = await resolveEmbeddings(
      { db: this.deps.db, secrets: this.deps.secrets, urls: this.deps.urls },
      tenant,
      doc.assistantId,
    );
    const embed = choice ? this.#embedder(choice) : undefined;
    const chunks = await splitDocument(parsed, {
      strategy: doc.settings.chunking_strategy as ChunkingStrategy,
      chunkSize: doc.settings.chunk_size,
      chunkOverlap: doc.settings.chunk_overlap,
      ...(embed ? { embed: async (texts: string[]) => (await embed(texts)).vectors } : {}),
    });
    const total = chunks.length;
    const first = await this.#write(tenant, doc, async (tx) => {
      const stored = await storedChunkCount(tx, tenant, doc.id, doc.generation);
      await store.updateForGeneration(tx, tenant, doc.id, doc.generation, {
        totalChunks: total,
        processedChunks: stored,
      });
      return stored;
    });
    if (first === undefined) return;

    let model: string | null = null;
    let dimensions: number | null = null;
    const size = this.deps.batchSize ?? DEFAULT_BATCH_SIZE;
    for (let from = first; from < total; from += size) {
      const batch = chunks.slice(from, from + size);
      const vectors = embed ? await embed(batch.map((chunk) => chunk.content)) : undefined;
      if (vectors) {
        model = vectors.model;
        dimensions = vectors.dimensions;
      }
      const written = await this.#write(tenant, doc, async (tx) => {
        await insertChunks(tx, tenant, rowsOf(doc, batch, vectors?.vectors), this.#indexedLengths);
        const stored = await storedChunkCount(tx, tenant, doc.id, doc.generation);
        await store.updateForGeneration(tx, tenant, doc.id, doc.generation, { processedChunks: stored });
        return true;
      });
      if (!written) return;
    }
    // Completes once: #write and the update both require `processing` at this generation, so a second
    // processor of the document finishing later writes nothing.
    await this.#write(tenant, doc, async (tx) => {
      const stored = await storedChunkCount(tx, tenant, doc.id, doc.generation);
      await store.updateForGeneration(
        tx,
        tenant,
        doc.id,
        doc.generation,
        {
          status: 'completed',
          totalChunks: total,
          processedChunks: stored,
          retrievalMode: choice ? 'hybrid' : 'full_text',
          embeddingModel: choice ? (model ?? choice.model) : null,
          embeddingDimensions: choice ? dimensions : null,
          notice: choice ? null : NO_KEY_NOTICE,
          error: null,
          processedAt: new Date(),
        },
        ['processing'],
      );
      return true;
    });
    // The document is searchable either way; this keeps searches on their fast plans (chunk-store.ts).
    await maintainChunkIndexes(this.deps.db, total).catch((error) =>
      this.deps.log.warn({ documentId: doc.id, err: error }, 'upkeep of the chunk indexes failed'),
    );
  }

  /**
   * Runs `body` in a transaction holding the document's row lock, if the document is still at this
   * generation and being processed; undefined (nothing written) when it is not.
   */
  async #write<T>(
    tenant: Tenant,
    doc: store.DocumentRow,
    body: (tx: Tx) => Promise<T>,
  ): Promise<T | undefined> {
    return this.deps.db.transaction(async (tx) => {
      const current = await store.findDocument(tx, tenant, doc.id, { forUpdate: true });
      if (current?.generation !== doc.generation || current.status !== 'processing') return undefined;
      return body(tx);
    });
  }

  /**
   * Embeds texts with `choice`: a retryable failure is tried again (after the vendor's retry-after,
   * else 1 s then 2 s) up to EMBED_TRIES times; what still fails becomes an EmbeddingsFailure whose
   * message says what to do about it.
   */
  #embedder(choice: EmbeddingsChoice) {
    const adapter = embeddingsAdapter();
    const timeoutMs = this.deps.embedTimeoutMs ?? DEFAULT_EMBED_TIMEOUT_MS;
    return async (texts: string[]) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await embedTexts(adapter, choice, texts, { timeoutMs });
        } catch (error) {
          if (!(error instanceof ProviderError)) throw error;
          if (!error.retryable || attempt >= EMBED_TRIES) {
            throw new EmbeddingsFailure(describeFailure(error, choice, attempt), !error.retryable, {
              cause: error,
            });
          }
          const waitMs = (error.options.retryAfterSeconds ?? 2 ** (attempt - 1)) * 1000;
          await new Promise((resolve) => setTimeout(resolve, Math.min(waitMs, MAX_EMBED_WAIT_MS)));
        }
      }
    };
  }

  /** The stored bytes, whole (parsers need them so), at most `maxBytes`. */
  async #read(key: string): Promise<Buffer> {
    const object = await this.deps.storage.get(key);
    if (object.size > this.deps.maxBytes) {
      object.body.destroy();
      throw new Permanent(
        `The stored file is larger than the ${this.deps.maxBytes} bytes a document may have`,
      );
    }
    const parts: Buffer[] = [];
    let length = 0;
    for await (const chunk of object.body as AsyncIterable<Buffer>) {
      length += chunk.length;
      if (length > this.deps.maxBytes) {
        object.body.destroy();
        throw new Permanent(
          `The stored file is larger than the ${this.deps.maxBytes} bytes a document may have`,
        );
      }
      parts.push(chunk);
    }
    return Buffer.concat(parts);
  }
}

/** An embeddings failure the vendor will answer the same way every time (a refused key, an unknown model). */
function isPermanent(error: unknown): boolean {
  if (error instanceof ProviderError) return !error.retryable;
  return typeof error === 'object' && error !== null && (error as { permanent?: unknown }).permanent === true;
}

const KEY_NAMES: Record<EmbeddingsChoice['source'], string> = {
  assistant: "the assistant's own API key (llm_provider_config.api_key)",
  organization: "the organization's llm_a key (api_keys.llm_a)",
  fallback: "the organization's first enabled llm_a fallback key",
};

/** What the document's `error` says about an embeddings failure: what happened and what to do. */
function describeFailure(error: ProviderError, choice: EmbeddingsChoice, tries: number): string {
  if (error.status === 401 || error.status === 403) {
    return (
      `The embeddings service refused the key (${error.status}): ${KEY_NAMES[choice.source]} is wrong, ` +
      'revoked or not allowed to embed. Replace it, then reprocess the document.'
    );
  }
  if (!error.retryable) return `The embeddings service refused the request: ${error.message}`;
  return `The embeddings service failed ${tries} times in a row: ${error.message}`;
}

function rowsOf(doc: store.DocumentRow, batch: TextChunk[], vectors: Float32Array[] | undefined) {
  return batch.map((chunk, index) => ({
    assistantId: doc.assistantId,
    documentId: doc.id,
    generation: doc.generation,
    position: chunk.position,
    content: chunk.content,
    tokens: chunk.tokens,
    location: {
      ...(chunk.page !== undefined ? { page: chunk.page } : {}),
      ...(chunk.heading !== undefined ? { heading: chunk.heading } : {}),
    },
    embedding: vectors?.[index] ?? null,
  }));
}
