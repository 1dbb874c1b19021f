/**
 * The knowledge-base domain's parts as the platform builds them from its configuration: the service
 * behind the documents routes, the processor the `knowledge.process` jobs run, the sweep that hands
 * stalled documents to new jobs, the retriever live calls and the search route share (its cache of
 * exact-scan vectors is kept once), and the search route's service.
 */
import type { Config } from '../../config.js';
import type { Db } from '../../db/client.js';
import type { SecretBox } from '../../lib/secrets.js';
import { embeddingsAdapter } from '../../providers/embeddings/index.js';
import type { JobLogger, JobQueue } from '../../queue/queue.js';
import type { Storage } from '../../storage/storage.js';
import { DocumentProcessor } from './processing.js';
import { KnowledgeRecovery } from './recovery.js';
import { KnowledgeRetriever } from './retrieval.js';
import { KnowledgeSearch } from './search.js';
import { KnowledgeService } from './service.js';

export interface KnowledgeParts {
  service: KnowledgeService;
  processor: DocumentProcessor;
  recovery: KnowledgeRecovery;
  retriever: KnowledgeRetriever;
  search: KnowledgeSearch;
}

export function createKnowledge(deps: {
  db: Db;
  queue: JobQueue;
  storage: Storage;
  secrets: SecretBox;
  config: Pick<Config, 'knowledge' | 'providers'>;
  log: JobLogger;
}): KnowledgeParts {
  const { db, queue, storage, secrets, log } = deps;
  const { knowledge, providers: urls } = deps.config;
  const retriever = new KnowledgeRetriever({
    db,
    adapter: embeddingsAdapter(),
    efSearch: knowledge.efSearch,
  });
  return {
    service: new KnowledgeService({ db, queue, storage, maxUploadBytes: knowledge.maxUploadBytes, log }),
    processor: new DocumentProcessor({
      db,
      storage,
      secrets,
      urls,
      maxBytes: knowledge.maxUploadBytes,
      log,
      heartbeatMs: (knowledge.recoverAfterSeconds * 1000) / 4,
    }),
    recovery: new KnowledgeRecovery({
      db,
      queue,
      log,
      sweepIntervalSeconds: knowledge.sweepIntervalSeconds,
      recoverAfterSeconds: knowledge.recoverAfterSeconds,
    }),
    retriever,
    search: new KnowledgeSearch({ db, secrets, urls, retriever }),
  };
}
