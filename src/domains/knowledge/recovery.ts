/**
 * The knowledge sweep: a document whose process died mid-way (kill -9, a lost machine) is left
 * `processing`, and its pg-boss job stays `active` until the job expires (15 minutes). Every
 * KNOWLEDGE_SWEEP_INTERVAL_SECONDS each worker process looks for `processing` documents whose
 * `updated_at` — the job's heartbeat (processing.ts) — is older than KNOWLEDGE_RECOVER_AFTER_SECONDS,
 * and gives each a new `knowledge.process` job for its current generation. That job resumes after
 * the chunks already stored.
 *
 * Idempotent, so two processes sweeping at once do no harm: the document is touched (a conditional
 * update that only one of them wins) in the transaction that enqueues, and the touch makes the next
 * sweeps wait their turn. Should the first process only have been slow, two jobs process the document
 * at once, which processing.ts keeps correct; the dead job's own retry, once it expires, finds the
 * document completed and does nothing.
 */
import type { Db } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import { Periodic } from '../../lib/periodic.js';
import type { JobLogger, JobQueue } from '../../queue/queue.js';
import * as store from './document-store.js';

export class KnowledgeRecovery {
  readonly #periodic: Periodic;

  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      log: JobLogger;
      sweepIntervalSeconds: number;
      recoverAfterSeconds: number;
    },
  ) {
    this.#periodic = new Periodic(() => this.sweep(), {
      intervalSeconds: deps.sweepIntervalSeconds,
      onError: (error) => deps.log.error({ err: error }, 'knowledge sweep failed'),
    });
  }

  /** Sweeps now and then every interval, until stop(). */
  start(): void {
    this.#periodic.start();
  }

  async stop(): Promise<void> {
    await this.#periodic.stop();
  }

  /** One pass; returns how many documents got a new job. */
  async sweep(): Promise<number> {
    const { db, queue, recoverAfterSeconds } = this.deps;
    let recovered = 0;
    for (const stale of await store.unscoped.staleProcessing(db, recoverAfterSeconds)) {
      if (!queue.running) break;
      const tenant = new Tenant(stale.organizationId);
      const claimed = await queue.retryingTransaction(async (tx, jobs) => {
        if (!(await store.claimStale(tx, tenant, stale.id, stale.generation, recoverAfterSeconds))) {
          return false;
        }
        await jobs.enqueue('knowledge.process', {
          document_id: stale.id,
          organization_id: stale.organizationId,
          generation: stale.generation,
        });
        return true;
      });
      if (claimed) {
        recovered += 1;
        this.deps.log.warn(
          { documentId: stale.id, generation: stale.generation },
          'document processing stood still: handed to a new job',
        );
      }
    }
    return recovered;
  }
}
