/**
 * `usage_count` and `last_used_at` of API keys. Writing them on every request would put a write on
 * the hot path of every API call, so uses are counted in memory and added to the rows in one
 * statement every second (and on stop). A crash loses at most the last second of counts.
 */
import type { Db } from '../../db/client.js';
import { addUsage } from './store.js';

export interface UsageLogger {
  error(details: object, message: string): void;
}

export class ApiKeyUsage {
  #pending = new Map<number, { uses: number; lastUsedAt: Date }>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly log: UsageLogger,
    private readonly intervalMs = 1000,
  ) {}

  start(): void {
    this.#timer ??= setInterval(() => void this.flush(), this.intervalMs).unref();
  }

  record(keyId: number): void {
    const entry = this.#pending.get(keyId);
    if (entry) {
      entry.uses += 1;
      entry.lastUsedAt = new Date();
    } else {
      this.#pending.set(keyId, { uses: 1, lastUsedAt: new Date() });
    }
  }

  /** Writes what has been counted so far; concurrent calls run one after the other. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(() => this.#write());
    return this.#flushing;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
  }

  async #write(): Promise<void> {
    if (this.#pending.size === 0) return;
    const batch = this.#pending;
    this.#pending = new Map();
    try {
      await addUsage(
        this.db,
        [...batch].map(([keyId, { uses, lastUsedAt }]) => ({ keyId, uses, lastUsedAt })),
      );
    } catch (error) {
      this.log.error({ err: error }, 'could not record API key usage; will retry');
      for (const [keyId, { uses, lastUsedAt }] of batch) {
        const entry = this.#pending.get(keyId);
        this.#pending.set(keyId, {
          uses: uses + (entry?.uses ?? 0),
          lastUsedAt: entry?.lastUsedAt ?? lastUsedAt,
        });
      }
    }
  }
}
