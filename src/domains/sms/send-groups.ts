/**
 * Group commit for queued sends: while one organization's statement is in flight, the sends that
 * arrive wait and are written together by its next statement (send-store.ts `writeSends`). A send is
 * answered only after the statement holding it committed, with its own outcome; a send alone is
 * written at once, so a quiet system waits for nothing. This is what lets a queued send cost less
 * than a one-row read: under load many requests share a round trip and a commit.
 *
 * One group per organization keeps every statement scoped to its tenant. The process's pool still
 * runs several organizations' statements side by side.
 */
import type { Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { type GroupedSend, type SendWritten, writeSends } from './send-store.js';

/** Sends one statement writes at most: its parameter stays small and its locks short. */
const MAX_GROUP = 200;

interface Waiting {
  send: GroupedSend;
  resolve: (written: SendWritten) => void;
  reject: (error: unknown) => void;
}

interface Group {
  tenant: Tenant;
  waiting: Waiting[];
  flushing: boolean;
}

export class SendGroups {
  readonly #groups = new Map<number, Group>();

  /**
   * `wake`: called after a statement wrote a drain wake-up (the sends' numbers had none waiting), so
   * that a worker of this process looks at once instead of at its next poll.
   */
  constructor(
    private readonly db: Db,
    private readonly wake: () => void = () => {},
  ) {}

  /** Writes a queued send together with whichever sends of its organization are waiting. */
  write(tenant: Tenant, send: GroupedSend): Promise<SendWritten> {
    let group = this.#groups.get(tenant.organizationId);
    if (!group) {
      group = { tenant, waiting: [], flushing: false };
      this.#groups.set(tenant.organizationId, group);
    }
    const written = new Promise<SendWritten>((resolve, reject) => {
      group.waiting.push({ send, resolve, reject });
    });
    if (!group.flushing) void this.#flush(group);
    return written;
  }

  async #flush(group: Group): Promise<void> {
    group.flushing = true;
    try {
      while (group.waiting.length > 0) {
        const batch = takeBatch(group.waiting);
        await this.#writeBatch(group.tenant, batch);
      }
    } finally {
      group.flushing = false;
      if (group.waiting.length === 0) this.#groups.delete(group.tenant.organizationId);
      else void this.#flush(group);
    }
  }

  async #writeBatch(tenant: Tenant, batch: Waiting[]): Promise<void> {
    if (batch.length === 1) return this.#writeAlone(tenant, batch[0]!);
    let outcomes: SendWritten[];
    try {
      const written = await writeSends(
        this.db,
        tenant,
        batch.map((waiting) => waiting.send),
      );
      outcomes = written.outcomes;
      if (written.wakeUps > 0) this.wake();
    } catch {
      // One row broke a constraint (its number or assistant removed meanwhile, say) and took the
      // statement with it: write each alone, so the error reaches only the request it belongs to.
      await Promise.all(batch.map((waiting) => this.#writeAlone(tenant, waiting)));
      return;
    }
    for (const [index, waiting] of batch.entries()) waiting.resolve(outcomes[index]!);
  }

  async #writeAlone(tenant: Tenant, waiting: Waiting): Promise<void> {
    try {
      const written = await writeSends(this.db, tenant, [waiting.send]);
      if (written.wakeUps > 0) this.wake();
      waiting.resolve(written.outcomes[0]!);
    } catch (error) {
      waiting.reject(error);
    }
  }
}

/**
 * Takes the next batch off the line, oldest first: at most MAX_GROUP sends, and of two sends naming
 * the same idempotency key only the first (the other waits for the next statement, which finds the
 * key taken and answers as a repeat does).
 */
function takeBatch(waiting: Waiting[]): Waiting[] {
  const batch: Waiting[] = [];
  const keys = new Set<string>();
  for (let index = 0; index < waiting.length && batch.length < MAX_GROUP; ) {
    const key = waiting[index]!.send.idempotency?.key;
    if (key !== undefined && keys.has(key)) {
      index++;
      continue;
    }
    if (key !== undefined) keys.add(key);
    batch.push(waiting.splice(index, 1)[0]!);
  }
  return batch;
}
